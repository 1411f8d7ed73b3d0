package netio

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"

	"github.com/iocache/iocache/server/cpuset"
	"github.com/iocache/iocache/server/resp"
)

// Engine is what the I/O threads need from the server that executes commands. The methods in the
// first group run on the main thread; the others on whichever thread owns the conn's socket state
// at that moment, so they may read the engine's per-client state only as far as it is stable
// while the conn is not held (flags set by a command that has finished).
type Engine interface {
	// Execute runs the conn's parsed commands (Argv, CmdEnds, ProtoErr) and appends the replies
	// to Out. held says the engine keeps the conn (a blocked or paused client): it calls Return
	// when done.
	Execute(c *Conn) (held bool)
	// Closed tells the engine a conn's socket was closed: it forgets the client.
	Closed(c *Conn)

	// ParseLimits sets the bounds for parsing the conn's next requests.
	ParseLimits(c *Conn, lim *resp.Limits)
	// CloseRequested says whether the conn is to close at once, or once its replies are out.
	CloseRequested(c *Conn) (asap, afterReply bool)
	QueryBufferLimit() int64
	QueryBufferExceeded(c *Conn, start []byte) // the thread closes the conn; the engine logs
	// OverOutputLimit applies the conn's output-limit class to pending bytes; hardOnly while the
	// engine holds the conn (the soft limit's clock is the engine's then).
	OverOutputLimit(c *Conn, class uint8, pending int64, hardOnly bool, nowMs int64) bool
	OutputLimitExceeded(c *Conn) // the thread closes the conn; the engine logs and counts
	BufferGrew(delta int64)      // a conn's buffers changed size by delta bytes
	BigBufferReleased(n int)
	Warnf(format string, args ...any)

	// HandshakeDone tells the main thread a TLS handshake started by Handshake ended: err nil,
	// the engine assigns the conn; otherwise it closes the socket (Close(c.FD)).
	HandshakeDone(c *Conn, err error)
}

// Group is the server's socket-serving threads: the main thread's own loop (thread 0) and the I/O
// threads. Its methods are for the main thread only.
//
// The group changes while it serves: Resize starts threads, or drains and stops them, and
// re-pins them; the activation policy (activation.go) decides how many of them serve sockets.
// Connections move between threads at a batch boundary, never in the middle of a command:
//
//   - the main thread marks a conn moving and asks its thread to detach it (msgDetach, queued in
//     order behind any earlier message for that conn);
//   - the thread takes the socket out of its poller and hands the conn back (toMainDetached),
//     after any batch that holds it, with its unparsed input and unwritten output;
//   - the main thread gives it to its new thread (msgAdopt), which registers the socket
//     edge-triggered (so readiness that arrived meanwhile is reported again) and resumes.
//
// While a conn moves, what the main thread would send its old thread (replies, out-of-band
// output, a kill) waits on the conn and follows it, in order. A conn the engine holds (blocked,
// paused) moves too: only its socket changes threads. The main thread's own conns move at once.
type Group struct {
	eng        Engine
	mainPoller *poller
	// threads[0] is the main thread; threads[1:size] the I/O threads, and any beyond are being
	// drained after Resize shrank the group. Conns go to threads[1:1+active], or to the main
	// thread when active is 0.
	threads     []*thread
	size        int
	active      int
	layoutDirty bool // conns must be rebalanced at the next safe point
	cpus        func(id int) []int
	allowed     []int
	started     bool
	conns       map[*Conn]struct{}

	// Hand-off signals: ioWork counts batches handed over since the main thread last looked;
	// mainSleeping says it is (about to be) in epoll_wait and needs a wake-up.
	ioWork       atomic.Int32
	mainSleeping atomic.Int32

	outbox       [][]msg // per thread, messages to send this iteration, in order
	taken        []*Conn // the batch serveIOThreads executes, from takenNext on
	takenNext    int
	takenMoved   []*Conn
	pendingWrite []*Conn // the main thread's own conns with out-of-band output to write
	wg           sync.WaitGroup

	// Threads stopped after the group shrank, until their counters are folded into the totals.
	stopped                     []*thread
	retiredReads, retiredWrites int64

	act        activation
	activation string // "load" or "always"

	hs handshakes // TLS handshakes that ended (handshake.go)
}

// NewGroup makes a group of one: the main thread's loop, whose poller also watches the engine's
// listening sockets (AddListener).
func NewGroup(eng Engine) (*Group, error) {
	p, err := newPoller()
	if err != nil {
		return nil, err
	}
	g := &Group{eng: eng, mainPoller: p, size: 1, activation: "load", conns: map[*Conn]struct{}{},
		cpus: func(int) []int { return nil }}
	g.threads = []*thread{{id: 0, g: g, p: p}}
	g.outbox = make([][]msg, 1)
	return g, nil
}

// AddListener has the main thread's Wait report connections to accept on a listening socket.
func (g *Group) AddListener(l *Listener) error { return g.mainPoller.addListener(l.FD) }

// RemoveListener stops watching a listening socket (before the engine closes it).
func (g *Group) RemoveListener(l *Listener) { g.mainPoller.Del(l.FD) }

// Resize sets the number of threads (the main thread included) and where each runs: cpus(id) is
// thread id's CPU list (empty: any of allowed). New threads start at once if the group runs;
// conns move at the next Serve; threads no longer needed stop once empty. On error (a thread
// could not be created) nothing changed.
func (g *Group) Resize(size int, cpus func(id int) []int, allowed []int) error {
	oldSize, oldCPUs, oldAllowed := g.size, g.cpus, g.allowed
	g.size, g.cpus, g.allowed = size, cpus, allowed
	first := len(g.threads)
	if err := g.addThreads(); err != nil {
		g.size, g.cpus, g.allowed = oldSize, oldCPUs, oldAllowed
		return fmt.Errorf("starting I/O threads: %w", err)
	}
	if g.started && len(g.threads) > first {
		g.startThreads(g.threads[first:])
	}
	g.resetActivation()
	g.repin()
	g.layoutDirty = true
	return nil
}

// Size is the number of threads Resize asked for, the main thread included.
func (g *Group) Size() int { return g.size }

// Active is the number of I/O threads serving sockets now (0: the main thread serves them all).
func (g *Group) Active() int { return g.active }

// SetActivation chooses the activation policy: "load" (I/O threads serve sockets only while
// they pay) or "always".
func (g *Group) SetActivation(mode string) {
	if mode != g.activation {
		g.activation = mode
		g.resetActivation()
	}
}

// Start pins the calling goroutine's thread, which must be the main thread and locked to it, and
// starts the I/O threads, returning once each has pinned itself.
func (g *Group) Start() {
	main := g.threads[0]
	main.tid.Store(int64(cpuset.Gettid()))
	main.cpus = g.cpus(0)
	if err := cpuset.PinThread(main.cpus); err != nil {
		g.eng.Warnf("main thread: pinning to %s failed: %v", cpuset.Format(main.cpus), err)
	}
	g.started = true
	g.startThreads(g.threads[1:])
}

// Stop stops every thread and closes every connection.
func (g *Group) Stop() {
	for _, t := range g.threads[1:] {
		t.send(msg{kind: msgStop})
	}
	g.wg.Wait()
	g.stopHandshakes() // before the main poller closes: see handshake
	g.threads[0].shutdown()
}

// Wait blocks the main thread in epoll_wait for up to timeoutMs, less when there is work.
func (g *Group) Wait(timeoutMs int) []Event {
	if len(g.threads[0].pending) > 0 {
		timeoutMs = 0
	}
	g.mainSleeping.Store(1)
	if g.ioWork.Load() != 0 {
		timeoutMs = 0
	}
	evs := g.mainPoller.Wait(timeoutMs)
	g.mainSleeping.Store(0)
	return evs
}

// WakeMain makes the main thread's Wait return, from any goroutine.
func (g *Group) WakeMain() { g.mainPoller.Wake() }

// OnMainEvent handles readiness of one of the main thread's own conns.
func (g *Group) OnMainEvent(ev Event) { g.threads[0].onEvent(ev.Fd, ev.Events) }

// Serve does the socket work due on the main thread: its own conns scheduled for more reading,
// the batches I/O threads handed over (executed through the engine), and conns that must move.
func (g *Group) Serve() {
	g.serveHandshakes()
	main := g.threads[0]
	main.writeReplies()
	main.processPending()
	main.writeReplies()
	g.serveIOThreads()
	if g.layoutDirty {
		g.rebalance()
	} else if len(g.threads) > g.size {
		g.stopDrainedThreads()
	}
}

// Flush writes the out-of-band output of the main thread's own conns and delivers the messages
// queued for I/O threads. The main loop calls it before it waits again.
func (g *Group) Flush() {
	main := g.threads[0]
	main.writeReplies() // those of commands run since Serve (none today: a safety net)
	for i, c := range g.pendingWrite {
		if c.thread == main && !c.moving && !c.closed && !c.inFlight {
			main.writeClient(c)
		}
		g.pendingWrite[i] = nil
	}
	g.pendingWrite = g.pendingWrite[:0]
	g.flushOutbox()
}

// ServeBusy is Serve from inside a command that runs long (a script past busy-reply-threshold),
// for the engine to answer other clients meanwhile, as Redis's processEventsWhileBlocked does.
// It may run while Serve or OnMainEvent is executing that command: it first executes what they
// had taken and not reached (never the conn being executed, which its thread holds), and it
// moves no conn, as no layout change may happen in the middle of a command.
func (g *Group) ServeBusy() {
	g.serveHandshakes()
	main := g.threads[0]
	main.writeReplies()
	main.processPending()
	main.writeReplies()
	g.serveIOThreads()
}

// serveIOThreads takes every batch the I/O threads handed over, executes it, and returns the
// conns to their threads, one lock acquisition per thread in each direction. Conns a thread
// detached come after that thread's batch, so a conn that is in both is executed first and
// moves afterwards. It is re-entrant (ServeBusy): what a call took is in g.taken and
// g.takenMoved, and a call made while one of those conns executes finishes them first.
func (g *Group) serveIOThreads() {
	g.finishTaken()
	if g.ioWork.Load() == 0 {
		return
	}
	g.ioWork.Store(0)
	for _, t := range g.threads[1:] {
		t.mu.Lock()
		g.taken, t.toMain = t.toMain, g.taken[:0]
		g.takenMoved, t.toMainDetached = t.toMainDetached, g.takenMoved[:0]
		t.mu.Unlock()
		g.takenNext = 0
		g.finishTaken()
	}
	g.flushOutbox()
}

// finishTaken executes the conns of g.taken from g.takenNext on, then rehomes g.takenMoved.
func (g *Group) finishTaken() {
	for g.takenNext < len(g.taken) {
		c := g.taken[g.takenNext]
		g.taken[g.takenNext] = nil
		g.takenNext++
		if c.closed {
			g.forget(c)
			g.eng.Closed(c)
		} else if !g.eng.Execute(c) {
			g.Return(c)
		}
	}
	g.taken, g.takenNext = g.taken[:0], 0
	for i, c := range g.takenMoved {
		g.rehome(c)
		g.takenMoved[i] = nil
	}
	g.takenMoved = g.takenMoved[:0]
}

// MainBusy adds the main thread's time outside epoll_wait in one loop iteration, for INFO and
// the activation policy.
func (g *Group) MainBusy(ns int64) { g.threads[0].publish(ns) }

// OnMainThread says whether the main thread serves the conn's socket itself (and it is not
// moving): then the engine may append out-of-band output to Out directly and call WriteLater.
func (g *Group) OnMainThread(c *Conn) bool { return c.thread.id == 0 && !c.moving }

// WriteLater has Flush write a main-thread conn's output.
func (g *Group) WriteLater(c *Conn) { g.pendingWrite = append(g.pendingWrite, c) }

// Assign starts serving a new connection on the least loaded serving thread.
func (g *Group) Assign(c *Conn) {
	g.conns[c] = struct{}{}
	g.assign(c)
}

// Return gives a conn the engine executed or held back to its thread, which writes the replies
// and reads on.
func (g *Group) Return(c *Conn) {
	switch {
	case c.moving:
		c.deferReturn = true
	case c.thread.id == 0:
		c.thread.afterProcess(c)
	default:
		g.post(c.thread, msg{kind: msgReturn, c: c})
	}
}

// Kill closes a conn the engine does not hold: at once on the main thread, else through its
// thread (which closes it when the engine returns it, if it holds it by then).
func (g *Group) Kill(c *Conn) {
	switch {
	case c.moving:
		c.deferKill = true
	case c.thread.id == 0:
		c.thread.closeClient(c)
	default:
		g.post(c.thread, msg{kind: msgKill, c: c})
	}
}

// Push delivers out-of-band output (pub/sub messages, MONITOR lines) to a conn the engine does
// not hold, under output-limit class class.
func (g *Group) Push(c *Conn, data []byte, class uint8) {
	switch {
	case c.moving:
		c.deferPush = append(c.deferPush, msg{kind: msgPush, c: c, data: data, class: class})
	case c.thread.id == 0:
		c.thread.push(c, data, class)
	default:
		g.post(c.thread, msg{kind: msgPush, c: c, data: data, class: class})
	}
}

// forget drops a closed conn from the group's bookkeeping, before the engine hears of it.
func (g *Group) forget(c *Conn) {
	delete(g.conns, c)
	if c.moving {
		c.thread.leaving--
		c.moving = false
	} else {
		c.thread.assigned--
	}
}

// post queues a message for an I/O thread; flushOutbox delivers each thread's queue under one
// lock acquisition, so messages about one conn arrive in the order they were posted.
func (g *Group) post(t *thread, m msg) {
	g.outbox[t.id] = append(g.outbox[t.id], m)
}

func (g *Group) flushOutbox() {
	for id := 1; id < len(g.outbox); id++ {
		if len(g.outbox[id]) > 0 {
			g.threads[id].sendBatch(g.outbox[id])
			clear(g.outbox[id])
			g.outbox[id] = g.outbox[id][:0]
		}
	}
}

// pickThread chooses the serving thread with the fewest conns. While I/O threads are active the
// main thread serves no sockets, as in Redis 8.
func (g *Group) pickThread() *thread {
	if g.active == 0 {
		return g.threads[0]
	}
	best := g.threads[1]
	for _, t := range g.threads[2 : 1+g.active] {
		if t.assigned < best.assigned {
			best = t
		}
	}
	return best
}

// assign gives a conn (new, or moving) to the least loaded serving thread.
func (g *Group) assign(c *Conn) {
	t := g.pickThread()
	t.assigned++
	c.thread = t
	if t.id == 0 {
		t.adopt(c)
		return
	}
	g.post(t, msg{kind: msgAdopt, c: c})
}

// rehome gives a detached conn to its new thread and replays what waited during the move.
func (g *Group) rehome(c *Conn) {
	c.thread.leaving--
	c.moving = false
	g.assign(c)
	if c.deferReturn {
		c.deferReturn = false
		g.Return(c)
	}
	for i, m := range c.deferPush {
		g.Push(c, m.data, m.class)
		c.deferPush[i] = msg{}
	}
	c.deferPush = c.deferPush[:0]
	if c.deferKill {
		c.deferKill = false
		g.Kill(c)
	}
}

// rebalance moves conns so that only serving threads hold them, evenly. It runs at a safe point
// of the main loop (no command executing), after the layout changed.
func (g *Group) rebalance() {
	g.layoutDirty = false
	serving := g.threads[1 : 1+g.active]
	if g.active == 0 {
		serving = g.threads[:1]
	}
	settled := 0
	for c := range g.conns {
		if !c.moving {
			settled++
		}
	}
	quota := (settled + len(serving) - 1) / len(serving)
	kept := make(map[*thread]int, len(serving))
	var movers []*Conn
	for c := range g.conns {
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
		if c.thread.id == 0 {
			c.thread.detach(c)
			g.rehome(c)
		} else {
			g.post(c.thread, msg{kind: msgDetach, c: c})
		}
	}
	g.stopDrainedThreads()
}

// stopDrainedThreads stops threads beyond the group's size once no conn is theirs any more, from
// the last one down, so that a thread's id stays its index.
func (g *Group) stopDrainedThreads() {
	for len(g.threads) > g.size {
		t := g.threads[len(g.threads)-1]
		if t.assigned > 0 || t.leaving > 0 {
			return
		}
		g.flushOutbox()
		t.send(msg{kind: msgStop})
		g.stopped = append(g.stopped, t)
		g.threads = g.threads[:len(g.threads)-1]
		g.outbox = g.outbox[:len(g.threads)]
	}
}

// addThreads creates (without starting) the threads the size asks for beyond those there. On
// failure nothing was added.
func (g *Group) addThreads() error {
	var added []*thread
	for id := len(g.threads); id < g.size; id++ {
		t, err := newThread(g, id, g.cpus(id))
		if err != nil {
			for _, a := range added {
				a.p.Close()
			}
			return err
		}
		added = append(added, t)
	}
	g.threads = append(g.threads, added...)
	for len(g.outbox) < len(g.threads) {
		g.outbox = append(g.outbox, nil)
	}
	return nil
}

// startThreads runs new I/O threads and waits until each has pinned itself (so that the
// confinement of the runtime's other threads never mistakes one for a runtime thread).
func (g *Group) startThreads(ts []*thread) {
	var started sync.WaitGroup
	for _, t := range ts {
		g.wg.Add(1)
		started.Add(1)
		go t.run(&g.wg, &started, t.cpus)
	}
	started.Wait()
}

// repin moves every thread to the CPUs its list gives it. An empty list means no pinning: the
// thread may run on every allowed CPU again.
func (g *Group) repin() {
	for i, t := range g.threads {
		cpus := g.cpus(i)
		if slices.Equal(cpus, t.cpus) {
			continue
		}
		t.cpus = cpus
		if !g.started {
			continue // each thread pins itself when it starts
		}
		target := cpus
		if len(target) == 0 {
			target = g.allowed
		}
		if err := cpuset.PinTID(int(t.tid.Load()), target); err != nil {
			g.eng.Warnf("io thread %d: pinning to %s failed: %v", i, cpuset.Format(target), err)
		}
	}
}

// ThreadStats is one thread's line in INFO threads and /metrics.
type ThreadStats struct {
	ID, Clients                      int
	TID                              int
	CPUs                             []int
	State                            string // serving, idle or draining
	Reads, Writes, InBytes, OutBytes int64
	Batches, BatchedCommands, BusyNs int64
}

// Threads describes every running thread, the main thread first.
func (g *Group) Threads() []ThreadStats {
	out := make([]ThreadStats, len(g.threads))
	for i, t := range g.threads {
		state := "serving"
		switch {
		case i >= g.size:
			state = "draining"
		case i > g.active || (i == 0 && g.active > 0):
			state = "idle"
		}
		out[i] = ThreadStats{ID: i, Clients: t.assigned + t.leaving, TID: int(t.tid.Load()), CPUs: t.cpus, State: state,
			Reads: t.counters.reads.Load(), Writes: t.counters.writes.Load(),
			InBytes: t.counters.inBytes.Load(), OutBytes: t.counters.outBytes.Load(),
			Batches: t.counters.batches.Load(), BatchedCommands: t.counters.batched.Load(), BusyNs: t.counters.busyNs.Load()}
	}
	return out
}

// TIDs are the OS thread ids of the running threads.
func (g *Group) TIDs() []int {
	out := make([]int, len(g.threads))
	for i, t := range g.threads {
		out[i] = int(t.tid.Load())
	}
	return out
}

// TotalReadsWrites sums the socket reads and writes of every thread, stopped ones included, so
// that totals never go down when the group shrinks.
func (g *Group) TotalReadsWrites() (reads, writes int64) {
	g.foldStoppedThreads()
	reads, writes = g.retiredReads, g.retiredWrites
	for _, ts := range [][]*thread{g.threads, g.stopped} {
		for _, t := range ts {
			reads += t.counters.reads.Load()
			writes += t.counters.writes.Load()
		}
	}
	return reads, writes
}

// foldStoppedThreads adds the final counters of threads that have exited to the totals and
// forgets the threads.
func (g *Group) foldStoppedThreads() {
	kept := g.stopped[:0]
	for _, t := range g.stopped {
		if !t.exited.Load() {
			kept = append(kept, t)
			continue
		}
		g.retiredReads += t.counters.reads.Load()
		g.retiredWrites += t.counters.writes.Load()
	}
	clear(g.stopped[len(kept):])
	g.stopped = kept
}
