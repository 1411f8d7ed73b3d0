package engine

import (
	"github.com/iocache/iocache/server/netio"
	"github.com/iocache/iocache/server/resp"
)

// ioEngine is what the I/O threads (package netio) see of the server: command execution on the
// main thread, and the limits and accounting their socket work must respect. It is a type of its
// own so that these methods stay out of Server's exported surface.
type ioEngine struct{ s *Server }

func owner(c *netio.Conn) *client { return c.Owner.(*client) }

func (e ioEngine) Execute(c *netio.Conn) (held bool) {
	cl := owner(c)
	e.s.process(cl)
	if e.s.tracking.bcastPending != nil {
		// Before this client's replies can go out: see returnClient.
		e.s.trackingBroadcast()
	}
	if !cl.mainOwned && e.s.aof.holdReplies && len(e.s.aof.buf) > 0 {
		// This iteration wrote: its replies wait for the AOF write (aof.go).
		e.s.holdForAOF(cl)
	}
	return cl.mainOwned
}

func (e ioEngine) Closed(c *netio.Conn) { e.s.unlinkClient(owner(c)) }

func (e ioEngine) ParseLimits(c *netio.Conn, lim *resp.Limits) {
	lim.MaxBulkLen = e.s.protoMaxBulkLen.Load()
	lim.MaxMultibulk = 1<<31 - 1
	lim.MaxInline = 64 << 10
	lim.Unauthenticated = !owner(c).authed && e.s.authRequired.Load()
}

func (e ioEngine) CloseRequested(c *netio.Conn) (asap, afterReply bool) {
	f := owner(c).flags
	return f&flagCloseASAP != 0, f&flagCloseAfterReply != 0
}

func (e ioEngine) QueryBufferLimit() int64 { return e.s.queryBufLimit.Load() }

func (e ioEngine) QueryBufferExceeded(c *netio.Conn, start []byte) {
	cl := owner(c)
	e.s.logf(logWarning, "Closing client that reached max query buffer length: id=%d addr=%s (qbuf initial bytes: %q)", cl.id, cl.addr, start)
}

func (e ioEngine) OverOutputLimit(c *netio.Conn, class uint8, pending int64, hardOnly bool, nowMs int64) bool {
	return e.s.overOutputLimit(c, class, pending, hardOnly, nowMs)
}

func (e ioEngine) OutputLimitExceeded(c *netio.Conn) {
	cl := owner(c)
	e.s.logf(logWarning, "Client id=%d addr=%s closed for overcoming of output buffer limits.", cl.id, cl.addr)
	e.s.outputLimitKills.Add(1)
}

func (e ioEngine) BufferGrew(delta int64) { e.s.clientMem.Add(delta) }

func (e ioEngine) BigBufferReleased(n int) { e.s.bigBufferReleased(n) }

func (e ioEngine) Warnf(format string, args ...any) { e.s.logf(logWarning, format, args...) }

func (e ioEngine) HandshakeDone(c *netio.Conn, err error) { e.s.tlsHandshakeDone(owner(c), err) }
