package netio

import (
	"crypto/tls"
	"io"
	"net"
	"time"
)

// TLS on the I/O threads. A TLS conn keeps one crypto/tls Conn for its whole life, over a
// TLSLink that is its transport in two modes:
//
//   - blocking, during the handshake: a short-lived goroutine (Group.Handshake, or the replica's
//     link to its primary) runs the handshake over a Go net.Conn on the same socket, with a
//     deadline. crypto/tls makes handshake errors sticky (Conn.handshakeErr), so a handshake
//     cannot be driven by an event loop that stops at "would block"; a goroutine parked in the
//     runtime's poller costs no OS thread while it waits.
//   - non-blocking, afterwards: the conn's I/O thread calls tls.Conn.Read, which reads the
//     socket through the link; when the socket has nothing more (or the read budget of this turn
//     is spent) the link returns errWouldBlock, a net.Error whose Temporary() is true, which
//     crypto/tls does not record as the conn's error for record reads (readRecordOrCCS): the
//     next Read resumes where it stopped, a partial record kept in its buffer. tls.Conn.Write
//     appends the records to the link's out, which the thread writes to the socket as it writes
//     plaintext replies, under the same output limits.
//
// In steady state the link is only the wire under the thread's reads and writes (readwrite.go):
// readPlaintext, unsentRecords and the record count in sent. Buffers, counters and limits are
// the plaintext path's. So no goroutine per connection, and the plaintext path pays a nil check
// per read and write.

// errWouldBlock is what the link's Read returns when the socket has no more bytes for now.
var errWouldBlock net.Error = wouldBlock{}

type wouldBlock struct{}

func (wouldBlock) Error() string   { return "tls transport: would block" }
func (wouldBlock) Timeout() bool   { return true }
func (wouldBlock) Temporary() bool { return true }

// tlsChunk is how much plaintext one tls.Conn.Write encrypts before the records are written
// to the socket: records are 16 KiB, and output waits as plaintext (where the output limits
// see it) rather than as ciphertext while the socket is full.
const tlsChunk = 64 << 10

// TLSLink is a TLS conn's transport and its crypto/tls state. Its fields are the serving
// thread's in steady state; before that, the handshake goroutine's.
type TLSLink struct {
	tc       *tls.Conn
	fd       int
	blocking net.Conn // the handshake's transport; nil once the I/O thread drives the conn

	out    []byte // records waiting for the socket (non-blocking mode)
	outPos int
	budget int  // socket bytes Read may still take this turn
	again  bool // the socket said EAGAIN this turn: wait for an edge
	failed bool // end of stream or a socket error
}

// NewTLSClient makes the client side of a TLS link over nc, a connected socket the caller
// blocks on (with deadlines) until it hands the link to an I/O thread with Attach.
func NewTLSClient(nc net.Conn, cfg *tls.Config) *TLSLink {
	l := &TLSLink{fd: -1, blocking: nc}
	l.tc = tls.Client(l, cfg)
	return l
}

// TLS is the link's crypto/tls conn, for the blocking phase.
func (l *TLSLink) TLS() *tls.Conn { return l.tc }

// Attach switches the link to non-blocking mode on fd (a descriptor of the same socket, owned
// by the caller) and makes it c's transport. The blocking conn is the caller's to close.
func (l *TLSLink) Attach(c *Conn, fd int) {
	l.fd, l.blocking = fd, nil
	c.tls = l
	// crypto/tls may hold records it read past the handshake (a client's first command, the
	// primary's first stream bytes): the thread reads them when it adopts the conn.
	c.readPending = true
}

// State describes the negotiated session, for logs and tests.
func (l *TLSLink) State() tls.ConnectionState { return l.tc.ConnectionState() }

// Read is crypto/tls's transport read.
func (l *TLSLink) Read(p []byte) (int, error) {
	if l.blocking != nil {
		return l.blocking.Read(p)
	}
	if l.failed {
		return 0, io.EOF
	}
	if l.budget <= 0 {
		return 0, errWouldBlock
	}
	if len(p) > l.budget {
		p = p[:l.budget]
	}
	n, again := readSocket(l.fd, p)
	switch {
	case n > 0:
		l.budget -= n
		if n < len(p) {
			// A short read drained the socket, as for plaintext: the next byte comes with a
			// new edge, so this turn's next Read says so without a system call.
			l.budget, l.again = 0, true
		}
		return n, nil
	case again:
		l.again = true
		return 0, errWouldBlock
	}
	l.failed = true
	return 0, io.EOF
}

// Write is crypto/tls's transport write: in steady state the records queue for the thread.
func (l *TLSLink) Write(p []byte) (int, error) {
	if l.blocking != nil {
		return l.blocking.Write(p)
	}
	l.out = append(l.out, p...)
	return len(p), nil
}

// Close closes the blocking transport; in steady state the thread closes the socket itself.
func (l *TLSLink) Close() error {
	if l.blocking != nil {
		return l.blocking.Close()
	}
	return nil
}

func (l *TLSLink) LocalAddr() net.Addr {
	if l.blocking != nil {
		return l.blocking.LocalAddr()
	}
	return nil
}

func (l *TLSLink) RemoteAddr() net.Addr {
	if l.blocking != nil {
		return l.blocking.RemoteAddr()
	}
	return nil
}

func (l *TLSLink) SetDeadline(t time.Time) error {
	if l.blocking != nil {
		return l.blocking.SetDeadline(t)
	}
	return nil
}

func (l *TLSLink) SetReadDeadline(t time.Time) error {
	if l.blocking != nil {
		return l.blocking.SetReadDeadline(t)
	}
	return nil
}

func (l *TLSLink) SetWriteDeadline(t time.Time) error {
	if l.blocking != nil {
		return l.blocking.SetWriteDeadline(t)
	}
	return nil
}

// pending is the ciphertext not written yet.
func (l *TLSLink) pending() int { return len(l.out) - l.outPos }

// IsTLS says whether the conn speaks TLS.
func (c *Conn) IsTLS() bool { return c.tls != nil }

// startTurn gives Read this turn's budget of socket bytes.
func (l *TLSLink) startTurn(budget int) { l.budget, l.again = budget, false }

// readPlaintext is readWire for a TLS conn: the plaintext of the records the socket has, within
// the turn's budget. crypto/tls returns one record's plaintext a call, and an error past the
// data when a close_notify follows it.
func (l *TLSLink) readPlaintext(p []byte) (int, readState) {
	n, err := l.tc.Read(p)
	if err == nil {
		return n, readMore
	}
	if ne, ok := err.(net.Error); ok && ne.Temporary() { //nolint:staticcheck // crypto/tls's own test for a resumable read
		if l.again {
			return n, readDrained
		}
		return n, readSpent
	}
	return n, readFailed // close_notify, a bad record, end of stream, a socket error
}

// flushTLS writes what is queued (an alert) once, best effort, before a close.
func (t *thread) flushTLS(c *Conn) {
	if l := c.tls; l != nil && l.pending() > 0 && c.writable {
		_, _, _ = Write(c.FD, l.out[l.outPos:])
	}
}

// unsentRecords is unsent for a TLS conn: the records not written yet or, once they all are, the
// records of the next tlsChunk of c's output. The record buffer is emptied (released when a
// large reply grew it) before it takes the next.
func (l *TLSLink) unsentRecords(c *Conn) ([]byte, error) {
	if l.outPos == len(l.out) {
		if cap(l.out) > bigBuffer {
			l.out = nil
		} else {
			l.out = l.out[:0]
		}
		l.outPos = 0
		if c.outPos == len(c.Out.Buf) {
			return nil, nil
		}
		end := min(len(c.Out.Buf), c.outPos+tlsChunk)
		if _, err := l.tc.Write(c.Out.Buf[c.outPos:end]); err != nil {
			return nil, err
		}
		c.outPos = end
	}
	return l.out[l.outPos:], nil
}
