package netio

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/iocache/iocache/server/cpuset"
	"github.com/iocache/iocache/server/resp"
)

// A thread owns a set of connections and does their socket work: reads and writes (readwrite.go),
// RESP parsing. Connections move between threads only when the layout changes (see group.go).
// Thread 0 is the main thread; the connections it serves (all of them while no I/O thread is
// active) have their commands executed inline. Other threads hand parsed commands to the main thread in batches and
// get the conns back, replies appended, in batches: one mutex acquisition per batch, no channel
// operation, and a wake-up (an eventfd write) only when the other side is asleep. Nothing spins:
// a thread with no work blocks in epoll_wait.

type msgKind uint8

const (
	msgAdopt  msgKind = iota // serve this client from now on (a new connection, or one moving here)
	msgReturn                // main executed the client's commands; write the replies
	msgPush                  // main has out-of-band output for the client (pub/sub, MONITOR)
	msgKill                  // main wants the client closed (CLIENT KILL, timeout, limits)
	msgDetach                // stop serving the client and hand it back: it moves to another thread
	msgStop                  // the thread is no longer needed, or the server is shutting down
)

type msg struct {
	kind  msgKind
	class uint8 // msgPush: the client's output-limit class
	c     *Conn
	data  []byte
}

// nanotime is a monotonic clock in nanoseconds.
func nanotime() int64 { return int64(time.Since(monoStart)) }

var monoStart = time.Now()

// threadCounters are published by the owning thread once per loop iteration and read by INFO and
// /metrics; the padding keeps each thread's counters on cache lines of their own.
type threadCounters struct {
	_        [64]byte
	reads    atomic.Int64
	writes   atomic.Int64
	clients  atomic.Int64
	batches  atomic.Int64
	batched  atomic.Int64 // commands handed to the main thread
	inBytes  atomic.Int64
	outBytes atomic.Int64
	busyNs   atomic.Int64 // time spent outside epoll_wait
	_        [64]byte
}

type thread struct {
	id     int
	g      *Group
	p      *poller
	cpus   []int
	tid    atomic.Int64
	exited atomic.Bool // set when run returns, its counters final

	conns    []*Conn // indexed by fd
	nclients int
	reads    int64
	writes   int64
	inBytes  int64
	outBytes int64
	batches  int64
	batched  int64
	counters threadCounters

	// Hand-off, guarded by mu. toMain carries clients with parsed commands (or closed) to the
	// main thread, toMainDetached the clients this thread stopped serving (see detach); inbox
	// carries messages from the main thread.
	mu             sync.Mutex
	toMain         []*Conn
	toMainDetached []*Conn
	inbox          []msg
	inboxN         atomic.Int32
	sleeping       atomic.Int32

	batch    []*Conn // this iteration's clients for the main thread (thread-local)
	detached []*Conn // this iteration's detached clients for the main thread (thread-local)
	// replied (main thread only) holds its own clients whose commands ran in this iteration:
	// their replies are written together once the iteration's input is read (writeReplies).
	replied []*Conn
	// pending holds clients with buffered commands or unread socket data (see schedule);
	// pendingList those processPending is processing, from pendingNext on.
	pending      []*Conn
	pendingSpare []*Conn
	pendingList  []*Conn
	pendingNext  int
	spare        []msg
	lim          resp.Limits

	// Main-thread state: assigned counts the clients this thread serves, for balancing; leaving
	// those it was asked to detach and has not handed back. A thread being removed stops when
	// both are zero.
	assigned int
	leaving  int
}

func newThread(g *Group, id int, cpus []int) (*thread, error) {
	p, err := newPoller()
	if err != nil {
		return nil, err
	}
	return &thread{id: id, g: g, p: p, cpus: cpus}, nil
}

// run is the loop of an I/O thread (not the main thread, whose loop is the engine's). cpus
// is where it pins itself; later changes of server_cpulist re-pin it from the main thread.
// The goroutine stays locked to its OS thread when it returns, so the runtime ends that thread
// rather than reusing a thread pinned to server CPUs.
func (t *thread) run(wg, started *sync.WaitGroup, cpus []int) {
	defer wg.Done()
	runtime.LockOSThread()
	t.tid.Store(int64(cpuset.Gettid()))
	if err := cpuset.PinThread(cpus); err != nil {
		t.g.eng.Warnf("io thread %d: pinning to %s failed: %v", t.id, cpuset.Format(cpus), err)
	}
	started.Done()
	lastYield := nanotime()
	for {
		t.sleeping.Store(1)
		timeout := -1
		if t.inboxN.Load() > 0 || len(t.pending) > 0 {
			timeout = 0
		}
		evs := t.p.Wait(timeout)
		t.sleeping.Store(0)
		start := nanotime()
		for i := range evs {
			t.onEvent(evs[i].Fd, evs[i].Events)
		}
		if !t.drainInbox() {
			t.shutdown()
			t.publish(nanotime() - start)
			t.exited.Store(true)
			return
		}
		t.processPending()
		t.flushBatch()
		now := nanotime()
		t.publish(now - start)
		YieldIfDue(now, &lastYield)
	}
}

// YieldIfDue yields to the Go scheduler when yieldEvery has passed since *last (now and *last
// from the same monotonic clock, in nanoseconds).
func YieldIfDue(now int64, last *int64) {
	if now-*last >= yieldEvery {
		*last = now
		runtime.Gosched()
	}
}

// yieldEvery is how often a thread-locked loop (an I/O thread's, the engine's main loop) yields
// to the Go scheduler. A goroutine that has not yielded for 10 ms is preempted by the runtime's
// monitor; for one locked to its OS thread that costs a signal, a hand-off of its P to another
// thread and back, and a monitor that then polls every 20 µs for a while (2.9% of the server's
// CPU samples under redis-benchmark on 2 cores, and four times the monitor's wake-ups). A yield
// costs a hand-off too, so it comes as late as is safe: 8 ms leaves 2 ms for the iteration in
// which it falls due, and a longer iteration only brings back the preemption this avoids.
const yieldEvery = int64(8 * time.Millisecond)

func (t *thread) publish(busy int64) {
	t.counters.reads.Store(t.reads)
	t.counters.writes.Store(t.writes)
	t.counters.clients.Store(int64(t.nclients))
	t.counters.batches.Store(t.batches)
	t.counters.batched.Store(t.batched)
	t.counters.inBytes.Store(t.inBytes)
	t.counters.outBytes.Store(t.outBytes)
	t.counters.busyNs.Add(busy)
}

// onEvent handles readiness of one descriptor owned by this thread.
func (t *thread) onEvent(fd int32, events uint32) {
	if t.p.IsWake(fd) || int(fd) >= len(t.conns) {
		return
	}
	c := t.conns[fd]
	if c == nil {
		return
	}
	if events&evOut != 0 {
		c.writable = true
		if !c.inFlight && c.PendingOutput() > 0 {
			t.writeClient(c)
			if c.closed {
				return
			}
		}
	}
	if events&(evIn|evErr) != 0 {
		if c.inFlight {
			c.readPending = true
			if events&evHangUp != 0 {
				c.PeerGone.Store(true)
			}
			return
		}
		t.readClient(c)
	}
}

// register starts serving a connection on this thread. The main thread already set c.thread;
// I/O threads never read it.
func (t *thread) register(c *Conn) {
	for c.FD >= len(t.conns) {
		t.conns = append(t.conns, make([]*Conn, len(t.conns)+64)...)
	}
	t.conns[c.FD] = c
	t.nclients++
	if err := t.p.addConn(c.FD); err != nil {
		t.closeClient(c)
		return
	}
	// Edge-triggered registration reports data that is already there, and EPOLLOUT when the
	// socket has room, so nothing else to do for reading or for output left by another thread.
}

// adopt starts serving a client that another thread served until now. If the main thread holds
// it (blocked, paused), only the socket is watched until it comes back with msgReturn; otherwise
// parsing resumes where the previous thread stopped.
func (t *thread) adopt(c *Conn) {
	c.writable = true // an EAGAIN seen by the previous thread is retried here, then waits for an edge
	t.register(c)
	if c.closed || c.inFlight {
		return
	}
	if c.PendingOutput() > 0 {
		t.writeClient(c)
		if c.closed {
			return
		}
	}
	if c.moreToParse || c.readPending {
		t.schedule(c)
	}
}

// detach stops serving c: it leaves this thread's poller and lists, and from then on this
// thread never touches it. Its socket state (unparsed input, unwritten output, pushes that
// arrived while the main thread held it) travels with the client to its next thread.
func (t *thread) detach(c *Conn) {
	t.p.Del(c.FD)
	if c.FD < len(t.conns) && t.conns[c.FD] == c {
		t.conns[c.FD] = nil
	}
	t.nclients--
	if c.scheduled {
		c.scheduled = false
		for i, p := range t.pending {
			if p == c {
				t.pending = append(t.pending[:i], t.pending[i+1:]...)
				break
			}
		}
	}
}

// schedule puts a client on the pending list: it has buffered commands left to parse or socket
// data left to read, which no new epoll edge will announce.
func (t *thread) schedule(c *Conn) {
	if !c.scheduled {
		c.scheduled = true
		t.pending = append(t.pending, c)
	}
}

// processPending reads and parses for clients scheduled in the previous iteration. On the main
// thread it is re-entrant (Group.ServeBusy): the list being processed is pendingList, from
// pendingNext on, and a call made while one of its clients executes finishes it first.
func (t *thread) processPending() {
	t.finishPending()
	if len(t.pending) == 0 {
		return
	}
	// pendingSpare is nil while a list is processed (a re-entrant call takes a new one).
	t.pendingList, t.pending, t.pendingSpare = t.pending, t.pendingSpare[:0], nil
	t.pendingNext = 0
	t.finishPending()
}

func (t *thread) finishPending() {
	for t.pendingNext < len(t.pendingList) {
		c := t.pendingList[t.pendingNext]
		t.pendingList[t.pendingNext] = nil
		t.pendingNext++
		c.scheduled = false
		if c.closed || c.inFlight {
			continue
		}
		if c.moreToParse {
			t.parseAndDispatch(c)
		}
		// A parse that dispatched nothing (a batch ended just before an incomplete request)
		// needs the input waiting on the socket, which no edge will announce again.
		if c.readPending && !c.inFlight && !c.closed {
			c.readPending = false
			t.readClient(c)
		}
	}
	if t.pendingList != nil {
		t.pendingSpare = t.pendingList[:0]
		t.pendingList, t.pendingNext = nil, 0
	}
}

// parseAndDispatch parses the complete commands in qbuf and hands the client to the main thread
// (or, in direct mode, executes them at once).
func (t *thread) parseAndDispatch(c *Conn) {
	c.moreToParse = false
	if len(c.qbuf) < c.need {
		return
	}
	t.g.eng.ParseLimits(c, &t.lim)
	c.need = 0
	for c.qpos < len(c.qbuf) {
		if len(c.CmdEnds) >= maxCmdsPerBatch {
			c.moreToParse = true
			break
		}
		argv, n, need, err := resp.ParseCommandFrom(c.qbuf[c.qpos:], c.Argv, &t.lim, &c.progress)
		if err != nil {
			if errors.Is(err, resp.ErrIncomplete) {
				c.need = c.qpos + need
				break
			}
			c.ProtoErr = err.Error()
			break
		}
		c.qpos += n
		if len(argv) > len(c.Argv) {
			c.Argv = argv
			c.CmdEnds = append(c.CmdEnds, len(argv))
		}
		if t.lim.Unauthenticated {
			// AUTH may lift the limits for what follows: parse the rest once it has run.
			c.moreToParse = c.qpos < len(c.qbuf)
			break
		}
	}
	t.noteQueryBuffer(c)
	if len(c.CmdEnds) == 0 && c.ProtoErr == "" {
		return
	}
	t.batched += int64(len(c.CmdEnds))
	c.inFlight = true
	if t.id == 0 {
		if !t.g.eng.Execute(c) {
			t.replied = append(t.replied, c)
		}
		return
	}
	t.batch = append(t.batch, c)
}

// writeReplies writes the replies of the main thread's own clients whose commands ran since the
// last call, as Redis's beforeSleep does (handleClientsWithPendingWrites): not each right after
// its command, which would wake that client (and, on a machine where clients and server share
// the cores, let it preempt the server) while other clients' requests still wait to be read.
// Until then a client stays inFlight: output pushed to it meanwhile follows its reply.
func (t *thread) writeReplies() {
	for i, c := range t.replied {
		t.replied[i] = nil
		if !c.closed {
			t.afterProcess(c)
		}
	}
	t.replied = t.replied[:0]
}

// flushBatch hands this iteration's clients to the main thread.
func (t *thread) flushBatch() {
	if len(t.batch) == 0 && len(t.detached) == 0 {
		return
	}
	t.batches++
	t.mu.Lock()
	t.toMain = append(t.toMain, t.batch...)
	t.toMainDetached = append(t.toMainDetached, t.detached...)
	t.mu.Unlock()
	clear(t.batch)
	t.batch = t.batch[:0]
	clear(t.detached)
	t.detached = t.detached[:0]
	t.g.ioWork.Add(1)
	if t.g.mainSleeping.Load() == 1 {
		t.g.mainPoller.Wake()
	}
}

// drainInbox applies the main thread's messages. It returns false when the thread must stop.
func (t *thread) drainInbox() bool {
	if t.inboxN.Load() == 0 {
		return true
	}
	t.inboxN.Store(0)
	t.mu.Lock()
	msgs := t.inbox
	t.inbox = t.spare[:0]
	t.mu.Unlock()
	keepRunning := true
	for i := range msgs {
		m := &msgs[i]
		switch m.kind {
		case msgAdopt:
			t.adopt(m.c)
		case msgReturn:
			m.c.inFlight = false
			t.afterProcess(m.c)
		case msgPush:
			t.push(m.c, m.data, m.class)
		case msgKill:
			if m.c.closed {
				break
			}
			if m.c.inFlight {
				// The main thread holds it now (its flags are the main thread's): close it
				// when it comes back.
				m.c.killPending = true
				break
			}
			t.closeClient(m.c)
		case msgDetach:
			// A closed client is already on its way to the main thread, which forgets it. One
			// the main thread holds (inFlight) moves all the same: its socket state here is
			// this thread's part (readPending, pendingPush, killPending) and goes with it.
			if !m.c.closed {
				t.detach(m.c)
				t.detached = append(t.detached, m.c)
			}
		case msgStop:
			keepRunning = false
		}
		*m = msg{}
	}
	t.spare = msgs[:0]
	return keepRunning
}

// push appends out-of-band output and applies the client's output limit to it. While the main
// thread holds the client (inFlight) the output waits in pendingPush, whose size alone is
// checked against the hard limit: the rest of the socket state is the main thread's then.
func (t *thread) push(c *Conn, data []byte, class uint8) {
	if c.closed || c.killPending {
		return
	}
	c.pushClass = class
	if c.inFlight {
		c.pendingPush = append(c.pendingPush, data)
		c.pendingPushBytes += int64(len(data))
		if t.overOutputLimit(c, class) {
			t.outputLimitReached(c)
		}
		return
	}
	c.Out.Buf = append(c.Out.Buf, data...)
	if t.overOutputLimit(c, class) {
		t.outputLimitReached(c)
		return
	}
	t.writeClient(c)
}

// outputLimitReached closes a client whose output passed its limit, or, while the main thread
// holds it, drops what waits for it and closes it when it comes back.
func (t *thread) outputLimitReached(c *Conn) {
	t.g.eng.OutputLimitExceeded(c)
	if c.inFlight {
		clear(c.pendingPush)
		c.pendingPush, c.pendingPushBytes = nil, 0
		c.killPending = true
		return
	}
	t.closeClient(c)
}

// afterProcess runs when the main thread is done with a client: write the replies, then go on
// reading what arrived meanwhile.
func (t *thread) afterProcess(c *Conn) {
	c.inFlight = false
	// Arguments pointed into qbuf; they are consumed now. The vector of a request with many
	// arguments is given up, as Redis frees a client's argv after each command.
	clear(c.Argv)
	c.Argv = c.Argv[:0]
	if cap(c.Argv) > bigArgv {
		c.Argv = nil
	}
	c.CmdEnds = c.CmdEnds[:0]
	pushed := len(c.pendingPush) > 0
	for _, p := range c.pendingPush {
		c.Out.Buf = append(c.Out.Buf, p...)
	}
	clear(c.pendingPush)
	c.pendingPush, c.pendingPushBytes = c.pendingPush[:0], 0
	asap, afterReply := t.g.eng.CloseRequested(c)
	if asap || c.killPending {
		t.closeClient(c)
		return
	}
	if pushed && t.overOutputLimit(c, c.pushClass) {
		t.outputLimitReached(c)
		return
	}
	t.writeClient(c)
	if c.closed {
		return
	}
	if afterReply {
		if c.PendingOutput() == 0 {
			t.closeClient(c)
		}
		return
	}
	t.queryConsumed(c)
	if c.moreToParse || c.readPending {
		t.schedule(c)
	}
}

// closeClient closes the socket and tells the main thread, which forgets the client.
func (t *thread) closeClient(c *Conn) {
	if c.closed {
		return
	}
	c.closed = true
	if c.FD < len(t.conns) && t.conns[c.FD] == c {
		t.conns[c.FD] = nil
	}
	t.nclients--
	Close(c.FD)
	t.g.eng.BigBufferReleased(cap(c.qbuf) + cap(c.Out.Buf))
	c.qbuf, c.Out.Buf, c.Argv = nil, nil, nil
	if c.tls != nil {
		c.tls.out = nil
	}
	c.progress.Reset()
	if t.id == 0 {
		t.g.forget(c)
		t.g.eng.Closed(c)
		return
	}
	t.batch = append(t.batch, c)
}

// shutdown closes every connection of the thread.
func (t *thread) shutdown() {
	for _, c := range t.conns {
		if c != nil {
			c.closed = true
			Close(c.FD)
		}
	}
	t.conns = nil
	t.p.Close()
}

// send queues a message from the main thread and wakes the thread if it sleeps.
func (t *thread) send(m msg) {
	t.mu.Lock()
	t.inbox = append(t.inbox, m)
	t.mu.Unlock()
	t.inboxN.Add(1)
	if t.sleeping.Load() == 1 {
		t.p.Wake()
	}
}

// sendBatch queues many messages under one lock acquisition.
func (t *thread) sendBatch(ms []msg) {
	if len(ms) == 0 {
		return
	}
	t.mu.Lock()
	t.inbox = append(t.inbox, ms...)
	t.mu.Unlock()
	t.inboxN.Add(1)
	if t.sleeping.Load() == 1 {
		t.p.Wake()
	}
}
