package netio

// A conn's buffers: how its query buffer grows and shrinks, when its output buffer is released,
// and how their sizes reach the engine, which keeps the total that maxmemory-clients is checked
// against. Plaintext and TLS conns share all of it; TLS adds only its record buffer to the
// output size (outputBufferSize).

// Buffer sizing: a read asks for at least readChunk bytes; a query buffer that grew past
// bigBuffer while serving a large request is released once empty; a batch holds at most
// maxCmdsPerBatch commands of one client; an argument vector longer than bigArgv is released
// once its commands ran.
const (
	readChunk       = 16 << 10
	bigBuffer       = 256 << 10
	bigArgv         = 16 << 10
	maxCmdsPerBatch = 1024
)

// readBudget is how many bytes one turn may add to c's query buffer: Redis's 16 KiB chunk, or
// more of a large argument. The rest of a large argument is read in steps that at most double
// what has arrived: a client that announces a 512 MB argument (or 100 GB, under a raised
// proto-max-bulk-len) and sends nothing more costs a read chunk, not the size it announced.
func readBudget(c *Conn) int {
	if c.qpos > 0 && c.qpos == len(c.qbuf) {
		c.qbuf, c.qpos, c.need = c.qbuf[:0], 0, 0
	}
	want := readChunk
	if rest := c.need - len(c.qbuf); rest > want {
		want = min(rest, max(readChunk, len(c.qbuf)-c.qpos))
	}
	return want
}

// querySpace is the next n bytes of c's query buffer past its end, grown first if need be, for a
// read to fill.
func (t *thread) querySpace(c *Conn, n int) []byte {
	if cap(c.qbuf)-len(c.qbuf) < n {
		t.growQuery(c, n)
	}
	return c.qbuf[len(c.qbuf) : len(c.qbuf)+n]
}

// growQuery makes room for at least want more bytes, first by moving unparsed bytes to the front,
// then by growing. A client is only read when it is not inFlight, and then no parsed arguments
// point into qbuf, so moving its bytes is safe.
func (t *thread) growQuery(c *Conn, want int) {
	unparsed := len(c.qbuf) - c.qpos
	if c.qpos > 0 && cap(c.qbuf)-unparsed >= want {
		copy(c.qbuf, c.qbuf[c.qpos:])
		c.qbuf = c.qbuf[:unparsed]
		c.need -= c.qpos
		c.qpos = 0
		return
	}
	size := 2 * cap(c.qbuf)
	if size < unparsed+want {
		size = unparsed + want
	}
	if size < 2*readChunk {
		size = 2 * readChunk
	}
	nb := make([]byte, unparsed, size)
	copy(nb, c.qbuf[c.qpos:])
	c.need -= c.qpos
	c.qbuf, c.qpos = nb, 0
}

// queryConsumed empties c's query buffer once its commands ran and nothing is left to parse,
// and gives up one a large request grew.
func (t *thread) queryConsumed(c *Conn) {
	if c.qpos > 0 && c.qpos == len(c.qbuf) {
		c.qbuf, c.qpos, c.need = c.qbuf[:0], 0, 0
		if cap(c.qbuf) > bigBuffer {
			t.g.eng.BigBufferReleased(cap(c.qbuf))
			c.qbuf = nil
		}
	}
}

// outputSent empties c's output buffer once all of it is on the wire, and gives up one a large
// reply grew.
func (t *thread) outputSent(c *Conn) {
	c.outPos = 0
	if cap(c.Out.Buf) > bigBuffer {
		t.g.eng.BigBufferReleased(cap(c.Out.Buf))
		c.Out.Buf = nil
	} else {
		c.Out.Buf = c.Out.Buf[:0]
	}
}

// outputBufferSize is what c's output costs in memory, for CLIENT LIST's omem and
// maxmemory-clients: its output buffer and, for TLS, the record buffer kept for the next reply
// (a chunk and its records' overhead).
func outputBufferSize(c *Conn) int64 {
	n := cap(c.Out.Buf)
	if c.tls != nil {
		n += cap(c.tls.out)
	}
	return int64(n)
}

// noteQueryBuffer and noteOutputBuffer publish a conn's buffer sizes and tell the engine.
func (t *thread) noteQueryBuffer(c *Conn) {
	if n := int64(len(c.qbuf) - c.qpos); c.QbufLen.Load() != n {
		t.g.eng.BufferGrew(n - c.QbufLen.Swap(n))
	}
}

func (t *thread) noteOutputBuffer(c *Conn) {
	if n := outputBufferSize(c); c.Omem.Load() != n {
		t.g.eng.BufferGrew(n - c.Omem.Swap(n))
	}
}

func firstBytes(b []byte, n int) []byte {
	if len(b) > n {
		return b[:n]
	}
	return b
}
