package engine

import (
	"runtime/debug"
	"runtime/metrics"
	"slices"
	"sync/atomic"

	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/netio"
)

// Client output buffers, bounded as in Redis (client-output-buffer-limit per class, hard and
// soft; maxmemory-clients for all clients together) and, beyond Redis, by the process: when the
// Go heap nears its soft limit and client buffers are a large part of it, the largest client is
// disconnected rather than the server being killed.
//
// Limits are applied where output is appended, by whichever thread owns the client's socket
// state at that moment: the main thread after each command and for pushes to clients it holds
// (blocked, paused, executing, or all clients with io-threads 1), the client's I/O thread for
// pushes that reach it (including those queued while the main thread holds the client).

// outputLimits are client-output-buffer-limit's values, readable by every thread.
type outputLimits struct {
	hard, soft, softMs [config.NumClasses]atomic.Int64
}

func (l *outputLimits) store(cfg *config.Config) {
	for i, v := range cfg.ClientOutputBufferLimit {
		l.hard[i].Store(v.Hard)
		l.soft[i].Store(v.Soft)
		l.softMs[i].Store(v.SoftSeconds * 1000)
	}
}

// overOutputLimit reports whether pending bytes of output are past the class's hard limit, or
// have been past the soft limit for longer than allowed (unless hardOnly). The caller owns the
// conn's output, which ObufSoftAt is part of.
func (s *Server) overOutputLimit(c *netio.Conn, class uint8, pending int64, hardOnly bool, nowMs int64) bool {
	l := &s.outLimits
	if hard := l.hard[class].Load(); hard > 0 && pending > hard {
		return true
	}
	if hardOnly {
		return false
	}
	soft := l.soft[class].Load()
	if soft <= 0 || pending <= soft {
		c.ObufSoftAt = 0
		return false
	}
	if c.ObufSoftAt == 0 {
		c.ObufSoftAt = nowMs
		return false
	}
	return nowMs-c.ObufSoftAt > l.softMs[class].Load()
}

// enforceOutputLimit applies the limits on the main thread to a client it owns, after a command
// or a push. A client over its limit is closed as soon as possible (its pending output dropped
// at once, further output ignored), as Redis's closeClientOnOutputBufferLimitReached does; it is
// released from whatever holds it in beforeSleep, not in the middle of another client's command.
func (s *Server) enforceOutputLimit(c *client) bool {
	if c.flags&flagCloseASAP != 0 {
		c.conn.DropOutput(false)
		return true
	}
	s.noteOutputBuffer(c, int64(cap(c.w.Buf)))
	if limit := s.clientMemLimit; limit > 0 && s.clientMem.Load() > limit {
		// A pipeline can grow a client far within one batch: apply maxmemory-clients now, as
		// Redis does before each command, not at the next cron tick.
		s.evictClients()
		if c.flags&flagCloseASAP != 0 {
			return true
		}
	}
	if !s.overOutputLimit(c.conn, uint8(clientClass(c)), int64(c.pendingOutput())+c.conn.PendingPushBytes(), false, s.nowMs) {
		return false
	}
	s.logf(logWarning, "Client id=%d addr=%s closed for overcoming of output buffer limits.", c.id, c.addr)
	s.outputLimitKills.Add(1)
	c.flags |= flagCloseASAP
	c.conn.DropOutput(true)
	s.noteOutputBuffer(c, 0)
	s.overLimit = append(s.overLimit, c)
	return true
}

// closeOverLimit closes the clients enforceOutputLimit marked, from beforeSleep.
func (s *Server) closeOverLimit() {
	for i, c := range s.overLimit {
		s.overLimit[i] = nil
		if _, live := s.clients[c.id]; live {
			s.killClient(c)
		}
	}
	s.overLimit = s.overLimit[:0]
}

// noteOutputBuffer records the size of a client's output buffer, for CLIENT LIST and for the
// running total maxmemory-clients is checked against, when the main thread owns its output (the
// I/O threads do the same through ioEngine.BufferGrew). Swap keeps the total exact across
// threads.
func (s *Server) noteOutputBuffer(c *client, n int64) {
	if old := c.conn.Omem.Load(); old != n {
		s.clientMem.Add(n - c.conn.Omem.Swap(n))
	}
}

// forgetClientMemory takes a closed client's buffers out of the total.
func (s *Server) forgetClientMemory(c *client) {
	s.clientMem.Add(-c.conn.Omem.Swap(0) - c.conn.QbufLen.Swap(0))
}

// clientMemory is what a client's buffers hold now, as CLIENT LIST's tot-mem counts it.
func clientMemory(c *client) int64 { return c.conn.Omem.Load() + c.conn.QbufLen.Load() }

// evictClients applies maxmemory-clients and the process guard, from cron: while the clients'
// buffers together exceed the limit, the largest client (other than NO-EVICT ones) is closed,
// as Redis's evictClients does. Clients holding less than evictFloor are never chosen: they are
// not what fills memory, and a tiny limit must not cut every connection.
func (s *Server) evictClients() {
	s.clientMemLimit = s.cfg.ClientMemoryLimit()
	limit := s.clientMemLimit
	guard := s.processGuardExcess()
	excess := guard
	if limit > 0 {
		excess = max(excess, s.clientMem.Load()-limit)
	}
	if excess <= 0 {
		return
	}
	victims := make([]*client, 0, 8)
	for _, c := range s.clients {
		if c.flags&flagNoEvict == 0 && c.flags&flagCloseASAP == 0 && clientMemory(c) >= evictFloor {
			victims = append(victims, c)
		}
	}
	slices.SortFunc(victims, func(a, b *client) int { return int(clientMemory(b) - clientMemory(a)) })
	for _, c := range victims {
		if excess <= 0 {
			break
		}
		m := clientMemory(c)
		s.logf(logWarning, "Evicting client: id=%d addr=%s tot-mem=%d (client buffers over maxmemory-clients or the process memory limit)", c.id, c.addr, m)
		s.stats.evictedClients++
		excess -= m
		s.killClient(c)
		if c.mainOwned { // closing as soon as its command ends: its output is dropped now
			c.conn.DropOutput(true)
			s.noteOutputBuffer(c, 0)
		}
	}
}

// evictFloor is Redis's smallest client memory bucket (32 KiB).
const evictFloor = 32 << 10

// heapSamples reads the heap the last collection found live: client buffers nobody reads are live,
// while the garbage a busy server leaves between collections is not. Counting that garbage (heap
// objects) made the guard cut a client that was reading back a full cache in pipelines, whose
// replies left garbage near the soft limit, although the collector would have freed it.
var heapSamples = []metrics.Sample{{Name: "/gc/heap/live:bytes"}}

// processGuardExcess is how many bytes of client buffers must go for the process to stay under
// its memory limit (the runtime's soft limit, from the cgroup or GOMEMLIMIT): when the heap is
// above 90% of it and client buffers are part of the heap, the excess over 90%, at most what the
// clients hold. 0 when there is no limit or no need.
func (s *Server) processGuardExcess() int64 {
	if s.goMemLimit <= 0 {
		return 0
	}
	metrics.Read(heapSamples)
	heap := int64(heapSamples[0].Value.Uint64())
	threshold := s.goMemLimit / 10 * 9
	if heap <= threshold {
		return 0
	}
	return heap - threshold
}

// bigBufferReleased counts a large buffer given up by a client; releaseMemory later returns
// such memory to the operating system instead of leaving it to the runtime's slow scavenger
// (four 160 MB replies otherwise left the process near 2 GB for over a minute).
func (s *Server) bigBufferReleased(n int) {
	if n >= 1<<20 {
		s.releasedBytes.Add(int64(n))
	}
}

// releaseMemory runs from cron: once 64 MB of large buffers were released, or at least 4 MB and
// then none for a second, a goroutine off the main thread collects and returns free memory to
// the OS, one at a time. The second case is for a server that goes quiet: freed buffers stay
// resident until a collection finds them, and an idle server allocates too little to start one
// (eighteen clients that announced large arguments left 85 MB resident after they closed).
func (s *Server) releaseMemory() {
	n := s.releasedBytes.Load()
	if n != s.releasedSeen {
		s.releasedSeen, s.releasedSeenAt = n, s.nowMs
	}
	quiet := n >= 4<<20 && s.nowMs-s.releasedSeenAt >= 1000
	if (n < 64<<20 && !quiet) || !s.releasing.CompareAndSwap(false, true) {
		return
	}
	s.releasedBytes.Add(-n)
	go func() {
		debug.FreeOSMemory()
		s.releasing.Store(false)
	}()
}
