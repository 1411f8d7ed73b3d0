package netio

import "time"

// A conn's reads and writes, the same for plaintext and TLS: how much one turn reads, where the
// query buffer's room comes from (buffers.go), where the read and write counters go up, and where
// the query and output limits are checked. Only the wire differs, that is how bytes come off the
// socket and go onto it: readWire, unsent and sent, which for a TLS conn go through its record
// layer (tls.go) and for plaintext are the socket itself, behind one nil check.

// readState is what a read of the wire says about the rest of this turn.
type readState uint8

const (
	readMore    readState = iota // read on: the socket may have more for this turn
	readSpent                    // this turn's budget is spent: read again next turn
	readDrained                  // the socket has nothing more: wait for an edge
	readFailed                   // end of stream, a socket error, a TLS error
)

// readClient reads what the socket has (at most a turn's budget, readBudget) into the query
// buffer and dispatches the commands it completes. A turn that may have left bytes on the socket
// puts the client on the pending list, to be read again on the next loop iteration, after the
// other clients had their turn. That bounds the query buffer by the budget rather than by how
// much a client pipelines, and keeps one client from monopolising its thread.
func (t *thread) readClient(c *Conn) {
	budget := readBudget(c)
	if c.tls != nil {
		c.tls.startTurn(budget)
	}
	limit := t.g.eng.QueryBufferLimit()
	got, st := 0, readMore
	for st == readMore && got < budget {
		var n int
		n, st = readWire(c, t.querySpace(c, budget-got))
		c.qbuf = c.qbuf[:len(c.qbuf)+n]
		got += n
		if int64(len(c.qbuf)-c.qpos) > limit {
			break
		}
	}
	if st == readFailed {
		t.flushTLS(c)
		t.closeClient(c)
		return
	}
	if c.tls != nil && c.tls.pending() > 0 {
		t.writeClient(c) // what reading produced: a key update, an alert
		if c.closed {
			return
		}
	}
	if got > 0 {
		t.reads++
		t.inBytes += int64(got)
		if int64(len(c.qbuf)-c.qpos) > limit {
			t.g.eng.QueryBufferExceeded(c, firstBytes(c.qbuf[c.qpos:], 64))
			t.closeClient(c)
			return
		}
		t.parseAndDispatch(c)
	}
	if st != readDrained && !c.closed {
		c.readPending = true
		if !c.inFlight {
			t.schedule(c)
		}
	}
}

// readWire fills the start of p with c's next input: plaintext off the socket, or decrypted
// from its TLS records.
func readWire(c *Conn, p []byte) (int, readState) {
	if c.tls != nil {
		return c.tls.readPlaintext(p)
	}
	n, again := readSocket(c.FD, p)
	switch {
	case n == len(p):
		return n, readMore
	case n > 0:
		return n, readDrained // a short read drained the socket: the next byte comes with an edge
	case again:
		return 0, readDrained
	}
	return 0, readFailed
}

// writeClient writes pending output until done or the socket is full.
func (t *thread) writeClient(c *Conn) {
	for {
		b, err := unsent(c)
		if err != nil {
			t.closeClient(c)
			return
		}
		if len(b) == 0 {
			break
		}
		if !c.writable {
			t.noteOutputBuffer(c)
			return
		}
		n, full, failed := Write(c.FD, b)
		if n > 0 {
			sent(c, n)
			t.writes++
			t.outBytes += int64(n)
		}
		if full {
			c.writable = false
		} else if failed {
			t.closeClient(c)
			return
		}
	}
	t.outputSent(c)
	if _, afterReply := t.g.eng.CloseRequested(c); afterReply && !c.inFlight {
		t.closeClient(c)
		return
	}
	t.noteOutputBuffer(c)
}

// unsent is the next bytes of c's output for the socket: what is left of Out, or of its TLS
// records, encrypting the next part of Out when those are all written. Empty: all is written.
func unsent(c *Conn) ([]byte, error) {
	if c.tls != nil {
		return c.tls.unsentRecords(c)
	}
	return c.Out.Buf[c.outPos:], nil
}

// sent records that the socket took the first n bytes of unsent.
func sent(c *Conn, n int) {
	if c.tls != nil {
		c.tls.outPos += n
		return
	}
	c.outPos += n
}

// overOutputLimit applies c's output limit, class class, to what waits for it. While the engine
// holds c only pushed output is the thread's to count, against the hard limit alone (the soft
// limit's clock is the engine's then).
func (t *thread) overOutputLimit(c *Conn, class uint8) bool {
	if c.inFlight {
		return t.g.eng.OverOutputLimit(c, class, c.pendingPushBytes, true, 0)
	}
	return t.g.eng.OverOutputLimit(c, class, int64(c.PendingOutput()), false, time.Now().UnixMilli())
}
