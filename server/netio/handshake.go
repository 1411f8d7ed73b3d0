package netio

import (
	"crypto/tls"
	"errors"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// TLS handshakes of accepted connections. Each runs in a goroutine of its own, blocked in the
// runtime's poller on a duplicate of the socket, under a deadline: a client that connects and
// never finishes its handshake is closed when the deadline passes and holds nothing else
// meanwhile. The engine bounds how many run at once (they count against maxclients). When one
// ends, the main thread hears of it at its next Serve (Engine.HandshakeDone) and assigns the conn
// to an I/O thread, whose poller sees the socket from then on.

// handshakes is the group's list of finished handshakes, guarded by mu.
type handshakes struct {
	mu      sync.Mutex
	done    []handshakeResult
	stopped bool // the group stopped: a handshake ending now closes its socket itself
	ready   atomic.Bool
}

type handshakeResult struct {
	c   *Conn
	err error
}

// Handshake runs the server side of a TLS handshake on an accepted conn, with cfg, for at most
// timeout. The engine hears the outcome through HandshakeDone; until then the conn is the
// handshake's.
func (g *Group) Handshake(c *Conn, cfg *tls.Config, timeout time.Duration) error {
	nc, err := blockingConn(c.FD)
	if err != nil {
		return err
	}
	l := &TLSLink{fd: c.FD, blocking: nc}
	l.tc = tls.Server(l, cfg)
	go g.handshake(c, l, nc, timeout)
	return nil
}

func (g *Group) handshake(c *Conn, l *TLSLink, nc net.Conn, timeout time.Duration) {
	_ = nc.SetDeadline(time.Now().Add(timeout))
	err := l.tc.Handshake()
	_ = nc.Close() // the duplicate only: the socket stays open on c.FD
	if err == nil {
		l.Attach(c, c.FD)
	}
	h := &g.hs
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.stopped {
		Close(c.FD)
		return
	}
	h.done = append(h.done, handshakeResult{c: c, err: err})
	h.ready.Store(true)
	// Under the lock: Stop marks the group stopped before it closes the poller, so this never
	// writes to a closed (perhaps reused) descriptor.
	g.mainPoller.Wake()
}

// serveHandshakes tells the engine about the handshakes that ended since the last call.
func (g *Group) serveHandshakes() {
	h := &g.hs
	if !h.ready.Load() {
		return
	}
	h.ready.Store(false)
	h.mu.Lock()
	done := h.done
	h.done = nil
	h.mu.Unlock()
	for _, r := range done {
		g.eng.HandshakeDone(r.c, r.err)
	}
}

// stopHandshakes closes the sockets of handshakes that ended and were not served; those still
// running close theirs when they end.
func (g *Group) stopHandshakes() {
	h := &g.hs
	h.mu.Lock()
	h.stopped = true
	done := h.done
	h.done = nil
	h.mu.Unlock()
	for _, r := range done {
		Close(r.c.FD)
	}
}

// blockingConn is a Go net.Conn on a duplicate of fd, for a goroutine to block on.
func blockingConn(fd int) (net.Conn, error) {
	dup, err := dupFD(fd)
	if err != nil {
		return nil, err
	}
	f := os.NewFile(uintptr(dup), "")
	if f == nil {
		Close(dup)
		return nil, errors.New("bad descriptor")
	}
	defer f.Close() // FileConn made its own duplicate
	return net.FileConn(f)
}
