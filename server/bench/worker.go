package bench

import (
	"net"
	"sync/atomic"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// This file is the request loop. Each worker goroutine owns a fixed set of connections and drives
// them round-robin: it writes a pipeline batch on every connection, then walks the ring, reading
// each connection's replies and at once writing its next batch. A connection is touched by exactly
// one goroutine and nothing crosses a channel per request: the only shared state is an atomic
// counter per batch in --requests mode. The server answers roughly in the order the batches were
// written, which is the order the ring reads them, so a reply rarely waits behind another.

// conn is one benchmark connection and its reused buffers.
type conn struct {
	nc       net.Conn
	rd       replyReader
	wbuf     []byte
	kinds    []uint8 // template index of each request of the batch in flight
	batch    int     // requests in the batch in flight
	inflight int     // of them, not yet answered
	sentAt   int64   // mono() when the batch was written
	seq      int     // position in the plan's cycle of templates
	dead     bool
}

// plan is one test as the workers share it. Only the atomics change while it runs.
type plan struct {
	templates []template
	cycle     []uint8 // template index for each step, e.g. 1 SET then 10 GETs
	pipeline  int
	keyspace  uint64
	limited   bool          // --requests mode
	remaining atomic.Int64  // --requests mode: requests not yet handed to a batch
	length    time.Duration // --duration mode: how long the test runs
	deadline  int64         // --duration mode: no batch starts after this mono()
	seqKeys   *atomic.Uint64
	stop      atomic.Bool // the watchdog gave up: issue nothing more
}

// worker is one client goroutine's state. Its counters are its own until the test ends.
type worker struct {
	conns     []*conn
	rng       rng
	hists     []*hdrhistogram.Histogram // per template
	counts    []int64                   // replies per template
	requests  int64
	errors    int64
	misses    int64
	errSample string
	progress  atomic.Int64 // batches completed, which the watchdog watches
	_         [64]byte     // keep the next worker's progress off this cache line
}

// prepare sizes the worker's buffers for a plan and clears its counters; it runs before the clock
// starts, so the loop itself never allocates.
func (w *worker) prepare(p *plan) {
	for len(w.hists) < len(p.templates) {
		w.hists = append(w.hists, newHist())
	}
	for _, h := range w.hists {
		h.Reset()
	}
	w.counts = make([]int64, len(p.templates))
	w.requests, w.errors, w.misses, w.errSample = 0, 0, 0, ""
	maxLen := 0
	for _, t := range p.templates {
		maxLen = max(maxLen, len(t.b))
	}
	for i, c := range w.conns {
		if cap(c.wbuf) < maxLen*p.pipeline {
			c.wbuf = make([]byte, 0, maxLen*p.pipeline)
		}
		if cap(c.kinds) < p.pipeline {
			c.kinds = make([]uint8, p.pipeline)
		}
		c.kinds = c.kinds[:p.pipeline]
		c.seq = i % len(p.cycle) // connections start at different points of the ratio cycle
	}
}

// run drives the worker's connections until the plan is used up or its time is over.
func (w *worker) run(p *plan) {
	active := 0
	for _, c := range w.conns {
		if !c.dead && w.send(p, c) {
			active++
		}
	}
	for active > 0 {
		for _, c := range w.conns {
			if c.inflight == 0 {
				continue
			}
			w.recv(c)
			w.progress.Add(1)
			if c.dead || !w.send(p, c) {
				active--
			}
		}
	}
}

// send writes the connection's next batch, or returns false when there is nothing left to send.
func (w *worker) send(p *plan, c *conn) bool {
	if p.stop.Load() {
		return false
	}
	n := p.pipeline
	if p.limited {
		if left := p.remaining.Add(-int64(n)); left < 0 {
			n += int(left) // the last batch takes what is left
			if n <= 0 {
				return false
			}
		}
	} else if mono() >= p.deadline {
		return false
	}
	var seqBase uint64
	if p.seqKeys != nil {
		seqBase = p.seqKeys.Add(uint64(n)) - uint64(n)
	}
	b := c.wbuf[:0]
	for i := 0; i < n; i++ {
		ti := p.cycle[c.seq]
		if c.seq++; c.seq == len(p.cycle) {
			c.seq = 0
		}
		t := &p.templates[ti]
		start := len(b)
		b = append(b, t.b...)
		if t.keyOff >= 0 {
			var k uint64
			if p.seqKeys != nil {
				k = (seqBase + uint64(i)) % p.keyspace
			} else {
				k = w.rng.below(p.keyspace)
			}
			putKey(b[start+t.keyOff:], k)
		}
		c.kinds[i] = ti
	}
	c.wbuf = b
	c.batch, c.inflight = n, n
	c.sentAt = mono()
	if _, err := c.nc.Write(b); err != nil {
		w.lose(c, err)
		return false
	}
	return true
}

// recv reads every reply of the connection's batch in flight and records its latency.
func (w *worker) recv(c *conn) {
	for c.inflight > 0 {
		kind, reply, err := c.rd.next(c.nc)
		if err != nil {
			w.lose(c, err)
			return
		}
		ti := c.kinds[c.batch-c.inflight]
		c.inflight--
		record(w.hists[ti], c.rd.readAt-c.sentAt)
		w.counts[ti]++
		w.requests++
		switch kind {
		case replyError:
			w.errors++
			if w.errSample == "" {
				w.errSample = errorText(reply)
			}
		case replyNil:
			w.misses++
		}
	}
}

// lose gives up on a connection: the requests in flight on it count as sent and failed.
func (w *worker) lose(c *conn, err error) {
	w.requests += int64(c.inflight)
	w.errors += int64(c.inflight)
	c.inflight = 0
	c.dead = true
	_ = c.nc.Close()
	if w.errSample == "" {
		w.errSample = "connection lost: " + err.Error()
	}
}
