package engine

import (
	"errors"
	"net"
	"strconv"
	"time"

	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/netio"
	"github.com/iocache/iocache/server/tlsconfig"
)

// TLS on the server side: the tls-port listeners, accepted conns' handshakes (which run off the
// main thread and the I/O threads, see netio/handshake.go), and CONFIG SET of the tls-*
// directives, which rebuilds the material as Redis re-creates its SSL context: conns accepted
// afterwards get the new certificates, established ones keep their session.

// tlsState is the main thread's.
type tlsState struct {
	mat         *tlsconfig.Material // nil while the configuration asks for no TLS
	listeners   []*netio.Listener
	port        int // what listeners are bound to
	handshaking int // accepted conns whose handshake has not ended: they count as clients
}

// tlsHandshakeTimeout bounds a handshake: a client that connects to the tls-port and never
// completes it is closed after this long. Tests shorten it.
var tlsHandshakeTimeout = 10 * time.Second

const errTLSStart = "Failed to configure TLS. Check logs for more info."

// setupTLS builds the material at start when the configuration asks for TLS; an error stops
// the server with Redis's message, after Redis's warning in the log.
func (s *Server) setupTLS() error {
	if !tlsconfig.Wanted(s.cfg) {
		return nil
	}
	mat, err := tlsconfig.Build(s.cfg)
	if err != nil {
		s.logf(logWarning, "%v", err)
		return errors.New(errTLSStart)
	}
	s.tls.mat = mat
	return nil
}

// listenTLS opens the tls-port listeners on every bind address.
func (s *Server) listenTLS(port int) ([]*netio.Listener, error) {
	var out []*netio.Listener
	for _, b := range s.cfg.Bind {
		addr, optional := isIPv6Optional(b)
		l, err := netio.ListenTCP(addr, port, s.cfg.TCPBacklog)
		if err != nil {
			if optional {
				continue
			}
			for _, o := range out {
				o.Close()
			}
			return nil, errors.New("Warning: Could not create server TLS listening socket " + addr + ":" + strconv.Itoa(port) + ": " + err.Error())
		}
		l.TLS = true
		out = append(out, l)
	}
	return out, nil
}

// TLSAddr is the address of the first tls-port listener, for tests that bind port 0.
func (s *Server) TLSAddr() string {
	for _, l := range s.tls.listeners {
		return l.Addr
	}
	return ""
}

// startHandshake hands an accepted tls-port conn to its handshake goroutine.
func (s *Server) startHandshake(c *client) {
	if err := s.io.Handshake(c.conn, s.tls.mat.Server, tlsHandshakeTimeout); err != nil {
		s.logf(logWarning, "Error accepting a client connection: %v", err)
		netio.Close(c.conn.FD)
		return
	}
	s.tls.handshaking++
}

// tlsHandshakeDone admits a client whose handshake succeeded, as Redis's clientAcceptHandler
// does once the TLS connection is established.
func (s *Server) tlsHandshakeDone(c *client, err error) {
	s.tls.handshaking--
	if err != nil {
		s.logf(logVerbose, "Error accepting a client connection: %v (addr=%s laddr=%s)", err, c.addr, c.laddr)
		netio.Close(c.conn.FD)
		return
	}
	s.clients[c.id] = c
	s.io.Assign(c.conn)
}

// reconfigureTLS applies CONFIG SET of tls-* directives (next is the configuration with them):
// the material is rebuilt from the files (all or nothing) and the tls-port listeners follow
// tls-port. On failure it returns the CONFIG SET error and nothing changed.
func (s *Server) reconfigureTLS(next *config.Config, args [][]byte) string {
	// Any tls-* directive named, changed or not: setting a file to the path it already has
	// reloads it, which is how certificates rotated in place (a mounted Secret) take effect, as
	// with Redis 7.0.
	changed := ""
	for i := 0; i < len(args) && changed == ""; i += 2 {
		if name := config.CanonicalName(string(args[i])); config.EffectsOf(name)&config.EffectTLS != 0 {
			changed = name
		}
	}
	if changed == "" {
		return ""
	}
	fail := func(why string) string {
		return "ERR CONFIG SET failed (possibly related to argument '" + changed + "') - " + why
	}
	var mat *tlsconfig.Material
	if tlsconfig.Wanted(next) {
		var err error
		if mat, err = tlsconfig.Build(next); err != nil {
			s.logf(logWarning, "%v", err)
			s.logf(logWarning, "Failed applying new configuration. Possibly related to new %s setting. Restoring previous settings.", changed)
			return fail("Unable to update TLS configuration. Check server logs.")
		}
	}
	if port := next.TLSPort; port != s.tls.port || (port != 0 && len(s.tls.listeners) == 0) {
		var ls []*netio.Listener
		if port != 0 {
			var err error
			if ls, err = s.listenTLS(port); err == nil {
				for _, l := range ls {
					if err = s.io.AddListener(l); err != nil {
						break
					}
				}
			}
			if err != nil {
				for _, l := range ls {
					s.io.RemoveListener(l)
					l.Close()
				}
				s.logf(logWarning, "%v", err)
				return fail("Unable to listen on this port. Check server logs.")
			}
		}
		s.closeTLSListeners()
		s.tls.listeners, s.tls.port = ls, port
		s.listeners = append(s.listeners, ls...)
	}
	s.tls.mat = mat
	return ""
}

// closeTLSListeners stops accepting on the tls-port.
func (s *Server) closeTLSListeners() {
	kept := s.listeners[:0]
	for _, l := range s.listeners {
		if !l.TLS {
			kept = append(kept, l)
			continue
		}
		s.io.RemoveListener(l)
		l.Close()
	}
	clear(s.listeners[len(kept):])
	s.listeners = kept
	s.tls.listeners = nil
}

// replicationListeningPort is the port a replica announces: its tls-port when it replicates
// over TLS, as Redis's replicas do.
func (s *Server) replicationListeningPort() int {
	if s.cfg.TLSReplication {
		return s.cfg.TLSPort
	}
	_, port, _ := net.SplitHostPort(s.Addr())
	p, _ := strconv.Atoi(port)
	return p
}
