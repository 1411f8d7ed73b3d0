package netio

import (
	"sync/atomic"

	"github.com/iocache/iocache/server/resp"
)

// Conn is the socket half of a client: what its thread reads, parses and writes. The engine
// keeps the session half (database, MULTI, subscriptions) in its own client, reachable through
// Owner.
//
// Ownership, which is what makes this safe without locks: a Conn's socket state belongs to the
// thread serving it, except while the engine holds it (from the batch that hands it over until
// Return): then the engine owns Argv, CmdEnds, ProtoErr and Out, and the thread only notes
// readiness. Every hand-over goes through a thread's mutex, which orders the two sides' accesses.
// The atomics are readable from anywhere.
type Conn struct {
	FD    int
	Owner any // the engine's client; netio never looks inside

	// What the engine reads and writes while it holds the conn.
	Argv       [][]byte    // the parsed commands' arguments, back to back
	CmdEnds    []int       // the end of each command in Argv
	ProtoErr   string      // a protocol error after the commands in Argv: reply, then close
	Out        resp.Writer // replies; Out.Buf is the output buffer
	ObufSoftAt int64       // the engine's output-limit bookkeeping (unix ms over the soft limit)

	// Readable from any thread.
	QbufLen  atomic.Int64 // unparsed input, as last measured by the owning thread
	Omem     atomic.Int64 // output buffer capacity, likewise
	PeerGone atomic.Bool  // the peer hung up while the engine held the conn

	// Socket state (the serving thread's, see above).
	qbuf             []byte
	qpos             int           // bytes of qbuf consumed by parsed commands
	need             int           // parse again only when len(qbuf) >= need
	progress         resp.Progress // how far the parse got into a request that has not arrived in full
	outPos           int           // bytes of Out.Buf already written
	writable         bool
	readPending      bool
	moreToParse      bool
	scheduled        bool // on its thread's pending list
	inFlight         bool // handed to the engine and not returned yet
	closed           bool
	pendingPush      [][]byte // out-of-band output that arrived while inFlight
	pendingPushBytes int64
	pushClass        uint8    // the output-limit class of the last push
	killPending      bool     // a kill arrived while inFlight
	tls              *TLSLink // nil for plaintext; see tls.go

	// The main thread's: which thread serves the conn, and a move in progress (see group.go).
	thread      *thread
	moving      bool
	deferReturn bool
	deferKill   bool
	deferPush   []msg
}

// NewConn makes the Conn of an accepted socket.
func NewConn(fd int, owner any) *Conn {
	c := &Conn{FD: fd, Owner: owner, writable: true}
	c.Out.Buf = make([]byte, 0, 1024)
	return c
}

// PendingOutput is the bytes of Out waiting to be written. For the owner of Out.
func (c *Conn) PendingOutput() int {
	if c.tls != nil {
		return len(c.Out.Buf) - c.outPos + c.tls.pending()
	}
	return len(c.Out.Buf) - c.outPos
}

// PendingPushBytes is the out-of-band output waiting for the engine to return the conn.
func (c *Conn) PendingPushBytes() int64 { return c.pendingPushBytes }

// DropOutput discards unwritten output (a client closed for its output limit); release also
// frees the buffer. For the owner of Out.
func (c *Conn) DropOutput(release bool) {
	if release {
		c.Out.Buf = nil
	} else {
		c.Out.Buf = c.Out.Buf[:0]
	}
	c.outPos = 0
	if c.tls != nil {
		c.tls.out, c.tls.outPos = c.tls.out[:0], 0
	}
}

// Closed says whether the socket was closed. The engine may ask only while it holds the conn, or
// for the main thread's own conns.
func (c *Conn) Closed() bool { return c.closed }

// ThreadID is the serving thread (0: the main thread), for CLIENT LIST. Main thread only.
func (c *Conn) ThreadID() int { return c.thread.id }
