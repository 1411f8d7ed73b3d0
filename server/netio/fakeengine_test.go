package netio

import (
	"fmt"
	"strconv"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/iocache/iocache/server/resp"
)

// fakeEngine stands in for server/engine in these tests: it executes a handful of commands and
// records what the I/O threads told it, so that a test can check netio's side of the Engine
// contract over real sockets. Its commands:
//
//	PING            +PONG
//	ECHO arg        arg as a bulk string
//	SUB name        +OK, and the conn is known as name (for Push and Return)
//	HOLD name       the engine keeps the conn (a blocked client) until the test returns it
//	BUSY ms         runs for ms milliseconds, serving the other conns every millisecond as a
//	                busy script does (ServeBusy), then +OK
//
// Names are upper case, and each takes its argument count as given.
//
// A protocol error gets its reply and closes the conn after it, as the engine does.
type fakeEngine struct {
	g *Group

	qbufLimit atomic.Int64 // QueryBufferLimit
	obufLimit atomic.Int64 // OverOutputLimit's hard limit for every class; 0: none

	mu       sync.Mutex
	named    map[string]*Conn // main thread's, read by tests through the lock
	closed   map[*Conn]bool
	qbufOver []qbufOver
	obufOver map[*Conn]bool
	hardOnly map[*Conn]bool // OverOutputLimit was asked with hardOnly for the conn
	warnings []string
	hsFailed int
}

type qbufOver struct {
	c     *Conn
	start string
}

// fakeClient is the engine's half of a conn.
type fakeClient struct {
	closeAfterReply bool
}

func newFakeEngine() *fakeEngine {
	e := &fakeEngine{named: map[string]*Conn{}, closed: map[*Conn]bool{}, obufOver: map[*Conn]bool{},
		hardOnly: map[*Conn]bool{}}
	e.qbufLimit.Store(1 << 30) // Redis's client-query-buffer-limit
	return e
}

func (e *fakeEngine) Execute(c *Conn) (held bool) {
	start := 0
	for _, end := range c.CmdEnds {
		argv := c.Argv[start:end]
		start = end
		// A switch on the converted name allocates nothing, which TestServingAllocatesNothing
		// relies on.
		switch string(argv[0]) {
		case "PING":
			c.Out.Simple("PONG")
		case "ECHO":
			c.Out.Bulk(argv[len(argv)-1])
		case "SUB":
			e.name(c, string(argv[len(argv)-1]))
			c.Out.OK()
		case "HOLD":
			e.name(c, string(argv[len(argv)-1]))
			held = true
		case "BUSY":
			ms, _ := strconv.Atoi(string(argv[len(argv)-1]))
			e.busy(time.Duration(ms) * time.Millisecond)
			c.Out.OK()
		default:
			c.Out.Error(fmt.Sprintf("ERR unknown command '%s'", argv[0]))
		}
	}
	if c.ProtoErr != "" {
		c.Out.Error("ERR " + c.ProtoErr)
		c.ProtoErr = ""
		c.Owner.(*fakeClient).closeAfterReply = true
	}
	return held
}

// busy serves the other conns for d, as the engine does from a busy script's hook: the main
// thread's events (OnMainEvent ignores the listener's: no accepting meanwhile), then ServeBusy
// and Flush.
func (e *fakeEngine) busy(d time.Duration) {
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(time.Millisecond) {
		for _, ev := range e.g.Wait(0) {
			e.g.OnMainEvent(ev)
		}
		e.g.ServeBusy()
		e.g.Flush()
	}
}

func (e *fakeEngine) name(c *Conn, name string) {
	e.mu.Lock()
	e.named[name] = c
	e.mu.Unlock()
}

func (e *fakeEngine) Closed(c *Conn) {
	e.mu.Lock()
	e.closed[c] = true
	e.mu.Unlock()
}

func (e *fakeEngine) ParseLimits(c *Conn, lim *resp.Limits) { *lim = resp.DefaultLimits }

func (e *fakeEngine) CloseRequested(c *Conn) (asap, afterReply bool) {
	return false, c.Owner.(*fakeClient).closeAfterReply
}

func (e *fakeEngine) QueryBufferLimit() int64 { return e.qbufLimit.Load() }

func (e *fakeEngine) QueryBufferExceeded(c *Conn, start []byte) {
	e.mu.Lock()
	e.qbufOver = append(e.qbufOver, qbufOver{c, string(start)})
	e.mu.Unlock()
}

func (e *fakeEngine) OverOutputLimit(c *Conn, class uint8, pending int64, hardOnly bool, nowMs int64) bool {
	if hardOnly {
		e.mu.Lock()
		e.hardOnly[c] = true
		e.mu.Unlock()
	}
	limit := e.obufLimit.Load()
	return limit > 0 && pending > limit
}

func (e *fakeEngine) OutputLimitExceeded(c *Conn) {
	e.mu.Lock()
	e.obufOver[c] = true
	e.mu.Unlock()
}

func (e *fakeEngine) BufferGrew(delta int64)  {}
func (e *fakeEngine) BigBufferReleased(n int) {}

func (e *fakeEngine) Warnf(format string, args ...any) {
	e.mu.Lock()
	e.warnings = append(e.warnings, fmt.Sprintf(format, args...))
	e.mu.Unlock()
}

func (e *fakeEngine) HandshakeDone(c *Conn, err error) {
	if err != nil {
		e.mu.Lock()
		e.hsFailed++
		e.mu.Unlock()
		Close(c.FD)
		return
	}
	e.g.Assign(c)
}

// conn is the server side of the client that named itself name, once it has.
func (e *fakeEngine) conn(t *testing.T, name string) *Conn {
	t.Helper()
	var c *Conn
	waitUntil(t, "the engine to know conn "+name, func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		c = e.named[name]
		return c != nil
	})
	return c
}

// isClosed says whether the engine heard that c was closed.
func (e *fakeEngine) isClosed(c *Conn) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.closed[c]
}

// waitLimit bounds every wait in these tests: long enough for a loaded two-core machine, short
// enough that a hang fails the test rather than the whole run.
const waitLimit = 10 * time.Second

// waitUntil polls cond until it holds, failing the test after waitLimit.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(waitLimit)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(2 * time.Millisecond)
	}
}
