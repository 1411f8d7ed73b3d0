package engine

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"

	"github.com/iocache/iocache/server/netio"
)

// reservedFDs are the descriptors the server keeps for itself beyond its clients (listeners,
// the I/O threads' epoll and event descriptors, AOF and RDB files, replication, the metrics
// endpoint), as Redis's CONFIG_MIN_RESERVED_FDS.
const reservedFDs = 32

// fitOpenFiles makes the descriptor limit hold maxclients clients, raising the soft limit up to
// the hard one when it must, as Redis's adjustOpenFilesLimit does. It returns the most clients
// the limit allows (maxclients when it fits) and the limit.
func fitOpenFiles(maxclients int) (allowed int, limit uint64, err error) {
	var lim unix.Rlimit
	if err := unix.Getrlimit(unix.RLIMIT_NOFILE, &lim); err != nil {
		return maxclients, 0, err
	}
	want := uint64(maxclients) + reservedFDs
	if lim.Cur < want {
		raised := lim
		raised.Cur = min(want, lim.Max)
		if err = unix.Setrlimit(unix.RLIMIT_NOFILE, &raised); err == nil {
			lim.Cur = raised.Cur
		}
	}
	if lim.Cur >= want {
		return maxclients, lim.Cur, nil
	}
	return max(int(lim.Cur)-reservedFDs, 1), lim.Cur, err
}

// fitMaxClientsAtStart lowers maxclients to what the descriptor limit allows, with Redis's
// warnings: a flood of connections then meets "max number of clients reached", not a process
// out of descriptors.
func (s *Server) fitMaxClientsAtStart() {
	allowed, limit, err := fitOpenFiles(s.cfg.MaxClients)
	if allowed >= s.cfg.MaxClients {
		return
	}
	s.logf(logWarning, "You requested maxclients of %d requiring at least %d max file descriptors.", s.cfg.MaxClients, s.cfg.MaxClients+reservedFDs)
	if err != nil {
		s.logf(logWarning, "Server can't set maximum open files to %d because of OS error: %v.", s.cfg.MaxClients+reservedFDs, err)
	}
	s.logf(logWarning, "Current maximum open files is %d. maxclients has been reduced to %d to compensate for low ulimit. If you need higher maxclients increase 'ulimit -n'.", limit, allowed)
	s.cfg.MaxClients = allowed
}

// checkMaxClients is CONFIG SET maxclients's test: the descriptor limit must hold the new value.
func checkMaxClients(maxclients int) error {
	if allowed, _, _ := fitOpenFiles(maxclients); allowed < maxclients {
		return fmt.Errorf("The operating system is not able to handle the specified number of clients, try with %d", allowed)
	}
	return nil
}

// A spare descriptor, held open so that when accept fails for want of descriptors (EMFILE,
// ENFILE: files the server opened besides its clients, or the system's table), the server can
// still take the pending connection and close it. Otherwise it stays pending, the listener
// stays readable, and the event loop spins on the failing accept (libev's and nginx's remedy).
type acceptShedder struct {
	spare    int // -1 when none could be opened
	shed     int64
	loggedAt int64 // unix seconds of the last log line: one a second at most
}

func (a *acceptShedder) open() {
	fd, err := unix.Open("/dev/null", unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		fd = -1
	}
	a.spare = fd
}

func (a *acceptShedder) close() {
	if a.spare >= 0 {
		unix.Close(a.spare)
		a.spare = -1
	}
}

func outOfDescriptors(err error) bool {
	return errors.Is(err, unix.EMFILE) || errors.Is(err, unix.ENFILE)
}

// shedOne frees the spare, accepts one pending connection on l and closes it, and takes the
// spare back. It reports whether a connection was shed.
func (a *acceptShedder) shedOne(l *netio.Listener) bool {
	if a.spare < 0 {
		return false
	}
	unix.Close(a.spare)
	a.spare = -1
	fd, _, _ := l.Accept()
	if fd >= 0 {
		netio.Close(fd)
		a.shed++
	}
	a.open()
	return fd >= 0
}
