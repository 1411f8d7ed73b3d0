package engine

import (
	"fmt"
	"slices"
	"sync"

	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/cpuset"
)

// The I/O-thread group changes while it serves: CONFIG SET io-threads starts threads, or drains
// and stops them, and CONFIG SET of a cpulist re-pins them. Connections move between threads at
// a batch boundary, never in the middle of a command:
//
//   - the main thread marks a client moving and asks its thread to detach it (msgDetach, queued
//     in order behind any earlier message for that client);
//   - the thread takes the socket out of its poller and hands the client back (toMainDetached),
//     after any batch that holds it, with its unparsed input and unwritten output;
//   - the main thread gives it to its new thread (msgAdopt), which registers the socket
//     edge-triggered (so readiness that arrived meanwhile is reported again) and resumes.
//
// While a client moves, what the main thread would send its old thread (replies, pub/sub
// messages, a kill) waits on the client and follows it, in order. A client the main thread holds
// (blocked, paused) moves too: only its socket changes threads. The main thread's own clients
// (threads[0], which executes their commands inline) move synchronously.

// isMainThread says whether t is the main thread's own socket loop.
func (s *Server) isMainThread(t *ioThread) bool { return t == s.threads[0] }

// post queues a message for an I/O thread; flushOutbox delivers each thread's queue under one
// lock acquisition, so messages about one client arrive in the order they were posted.
func (s *Server) post(t *ioThread, m threadMsg) {
	s.outbox[t.id] = append(s.outbox[t.id], m)
}

func (s *Server) flushOutbox() {
	for id := 1; id < len(s.outbox); id++ {
		if len(s.outbox[id]) > 0 {
			s.threads[id].sendBatch(s.outbox[id])
			clear(s.outbox[id])
			s.outbox[id] = s.outbox[id][:0]
		}
	}
}

// pickThread chooses the serving thread with the fewest clients. While I/O threads are active the
// main thread serves no sockets, as in Redis 8.
func (s *Server) pickThread() *ioThread {
	if s.activeIO == 0 {
		return s.threads[0]
	}
	best := s.threads[1]
	for _, t := range s.threads[2 : 1+s.activeIO] {
		if t.assigned < best.assigned {
			best = t
		}
	}
	return best
}

// assign gives a client (new, or moving) to the least loaded serving thread.
func (s *Server) assign(c *client) {
	t := s.pickThread()
	t.assigned++
	c.thread = t
	if s.isMainThread(t) {
		t.adopt(c)
		return
	}
	s.post(t, threadMsg{kind: msgAdopt, c: c})
}

// rehome gives a detached client to its new thread and replays what waited during the move.
func (s *Server) rehome(c *client) {
	c.thread.leaving--
	c.moving = false
	s.assign(c)
	if c.deferReturn {
		c.deferReturn = false
		s.returnClient(c)
	}
	for i, data := range c.deferPush {
		s.pushTo(c, data)
		c.deferPush[i] = nil
	}
	c.deferPush = c.deferPush[:0]
	if c.deferKill {
		c.deferKill = false
		s.killClient(c)
	}
}

// rebalance moves clients so that only serving threads hold them, evenly. It runs at a safe
// point of the main loop (no command executing), after the layout changed.
func (s *Server) rebalance() {
	s.layoutDirty = false
	serving := s.threads[1 : 1+s.activeIO]
	if s.activeIO == 0 {
		serving = s.threads[:1]
	}
	settled := 0
	for _, c := range s.clients {
		if !c.moving {
			settled++
		}
	}
	quota := (settled + len(serving) - 1) / len(serving)
	kept := make(map[*ioThread]int, len(serving))
	var movers []*client
	for _, c := range s.clients {
		if c.moving {
			continue
		}
		if slices.Contains(serving, c.thread) && kept[c.thread] < quota {
			kept[c.thread]++
			continue
		}
		movers = append(movers, c)
	}
	// Take every mover off its thread's count first, so that assign sees the final counts.
	for _, c := range movers {
		c.moving = true
		c.thread.assigned--
		c.thread.leaving++
	}
	for _, c := range movers {
		if s.isMainThread(c.thread) {
			c.thread.detach(c)
			s.rehome(c)
		} else {
			s.post(c.thread, threadMsg{kind: msgDetach, c: c})
		}
	}
	s.stopDrainedThreads()
}

// stopDrainedThreads stops threads beyond io-threads once no client is theirs any more, from the
// last one down, so that a thread's id stays its index.
func (s *Server) stopDrainedThreads() {
	for len(s.threads) > s.plan.IOThreads {
		t := s.threads[len(s.threads)-1]
		if t.assigned > 0 || t.leaving > 0 {
			return
		}
		s.flushOutbox()
		t.send(threadMsg{kind: msgStop})
		s.stopped = append(s.stopped, t)
		s.threads = s.threads[:len(s.threads)-1]
		s.outbox = s.outbox[:len(s.threads)]
	}
}

// addThreads creates (without starting) the I/O threads io-threads asks for beyond those there.
// On failure nothing was added.
func (s *Server) addThreads() error {
	var added []*ioThread
	for id := len(s.threads); id < s.plan.IOThreads; id++ {
		t, err := newIOThread(s, id, false, s.threadCPUs(id))
		if err != nil {
			for _, a := range added {
				a.p.Close()
			}
			return err
		}
		added = append(added, t)
	}
	s.threads = append(s.threads, added...)
	for len(s.outbox) < len(s.threads) {
		s.outbox = append(s.outbox, nil)
	}
	return nil
}

// startThreads runs new I/O threads and waits until each has pinned itself (so that bio's
// confinement of the runtime's threads never mistakes one for a runtime thread).
func (s *Server) startThreads(ts []*ioThread) {
	var started sync.WaitGroup
	for _, t := range ts {
		s.wg.Add(1)
		started.Add(1)
		go t.run(&s.wg, &started, t.cpus)
	}
	started.Wait()
}

// planFor resolves io-threads and the cpulists of a candidate configuration against the CPUs
// the process may use (as found at startup: the main thread's own mask is narrower once pinned).
func (s *Server) planFor(cfg *config.Config) (cpuset.Plan, error) {
	return cpuset.BuildPlan(cpuset.Request{
		IOThreads: cfg.IOThreads, Server: cfg.ServerCPUList, Bio: cfg.BioCPUList,
		AOFRewrite: cfg.AOFRewriteCPUList, BGSave: cfg.BGSaveCPUList, Mode: cpuset.Mode(cfg.CPUListMode),
	}, s.plan.Allowed, s.plan.Cores)
}

// layoutChanged says whether a configuration change touches the thread layout.
func layoutChanged(a, b *config.Config) bool {
	return a.IOThreads != b.IOThreads || a.ServerCPUList != b.ServerCPUList || a.BioCPUList != b.BioCPUList ||
		a.AOFRewriteCPUList != b.AOFRewriteCPUList || a.BGSaveCPUList != b.BGSaveCPUList
}

// layoutArgument names the directive a failed layout change is most likely about, for the error.
func layoutArgument(a, b *config.Config) string {
	switch {
	case a.ServerCPUList != b.ServerCPUList:
		return "server_cpulist"
	case a.BioCPUList != b.BioCPUList:
		return "bio_cpulist"
	case a.AOFRewriteCPUList != b.AOFRewriteCPUList:
		return "aof_rewrite_cpulist"
	case a.BGSaveCPUList != b.BGSaveCPUList:
		return "bgsave_cpulist"
	}
	return "io-threads"
}

// applyPlan puts a new thread layout in effect: threads are created and started at once, and
// re-pinned; clients move at the next safe point of the main loop, and threads no longer needed
// stop once they are empty. On error (no thread could be created) nothing changed.
func (s *Server) applyPlan(p cpuset.Plan) error {
	old := s.plan
	s.plan = p
	first := len(s.threads)
	if err := s.addThreads(); err != nil {
		s.plan = old
		return fmt.Errorf("starting I/O threads: %w", err)
	}
	if len(s.threads) > first {
		s.startThreads(s.threads[first:])
	}
	s.resetActivation()
	s.repin()
	s.layoutDirty = true
	s.logf(logNotice, "Thread layout: io-threads %d, server CPUs %s, bio CPUs %s", s.plan.IOThreads, cpuset.Format(s.plan.Server), cpuset.Format(s.plan.Bio))
	return nil
}

// repin moves every server thread and the background thread to the CPUs the plan gives them. An
// empty list means no pinning: the thread may run on every allowed CPU again.
func (s *Server) repin() {
	for i, t := range s.threads {
		cpus := s.threadCPUs(i)
		if slices.Equal(cpus, t.cpus) {
			continue
		}
		t.cpus = cpus
		target := cpus
		if len(target) == 0 {
			target = s.plan.Allowed
		}
		if err := cpuset.PinTID(int(t.tid.Load()), target); err != nil {
			s.logf(logWarning, "io thread %d: pinning to %s failed: %v", i, cpuset.Format(target), err)
		}
	}
	s.bio.setCPUs(s.plan.Bio, s.plan.Allowed)
}

// totalReadsWrites sums the socket reads and writes of every thread, stopped ones included, so
// that INFO's totals never go down when io-threads shrinks.
func (s *Server) totalReadsWrites() (reads, writes int64) {
	reads, writes = s.retiredReads, s.retiredWrites
	for _, ts := range [][]*ioThread{s.threads, s.stopped} {
		for _, t := range ts {
			reads += t.counters.reads.Load()
			writes += t.counters.writes.Load()
		}
	}
	return reads, writes
}

// foldStoppedThreads adds the final counters of threads that have exited to the totals and
// forgets the threads.
func (s *Server) foldStoppedThreads() {
	kept := s.stopped[:0]
	for _, t := range s.stopped {
		if !t.exited.Load() {
			kept = append(kept, t)
			continue
		}
		s.retiredReads += t.counters.reads.Load()
		s.retiredWrites += t.counters.writes.Load()
	}
	clear(s.stopped[len(kept):])
	s.stopped = kept
}
