package engine

// Protected mode, as Redis 7.0 has it: while protected-mode is yes (the default) and the default
// user has no password, only loopback and Unix-socket clients are served; any other client gets
// the DENIED error below and is closed at accept, before it can send a command. Unlike Redis 6,
// Redis 7.0 no longer looks at bind (a non-default bind used to turn protected mode off), and
// neither does iocache: what opens the instance to others is a password, ACL users with one on
// the default user, or protected-mode no.

import (
	"net"
	"net/netip"
)

// errProtectedMode is Redis 7.0's reply, sent as is on the socket (it is not a command's reply).
const errProtectedMode = "-DENIED Redis is running in protected mode because protected mode is enabled and no password is set for the default user. In this mode connections are only accepted from the loopback interface. If you want to connect from external computers to Redis you may adopt one of the following solutions: 1) Just disable protected mode sending the command 'CONFIG SET protected-mode no' from the loopback interface by connecting to Redis from the same host the server is running, however MAKE SURE Redis is not publicly accessible from internet if you do so. Use CONFIG REWRITE to make this change permanent. 2) Alternatively you can just disable the protected mode by editing the Redis configuration file, and setting the protected mode option to 'no', and then restarting the server. 3) If you started the server manually just for testing, restart it with the '--protected-mode no' option. 4) Setup a an authentication password for the default user. NOTE: You only need to do one of the above things in order for the server to start accepting connections from the outside.\r\n"

// protectedModeDenies decides whether a new connection is refused by protected mode; remote is
// the peer's "ip:port" as accept reports it.
func protectedModeDenies(protectedMode, defaultUserNoPass, unixSocket bool, remote string) bool {
	if !protectedMode || !defaultUserNoPass || unixSocket {
		return false
	}
	return !isLoopback(remote)
}

// isLoopback reports whether a peer address ("127.0.0.1:5000", "[::1]:5000") is on the loopback
// interface, as Redis's connIsLocal does; an address that does not parse is not.
func isLoopback(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		return false
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}

// defaultUserNoPass reports whether the default user needs no password (Redis's nopass flag).
func (s *Server) defaultUserNoPass() bool { return s.acl.users.Default().NoPass() }
