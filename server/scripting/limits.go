package scripting

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strings"
	"sync/atomic"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// Limits on what one script may cost. Time is bounded as Redis bounds it, softly: past
// busy-reply-threshold the script goes on, and the host serves the other clients meanwhile
// (Host.Busy: they are answered BUSY, and SCRIPT KILL, FUNCTION KILL or SHUTDOWN NOSAVE may end
// it, Kill). Memory, which Redis does not bound, is bounded here, so that no script takes the
// server down. The host gives the limits (Host.Limits); this file applies them.
//
// Strings: a library call that builds a string in one step (string.rep, table.concat) may not
// build one longer than proto-max-bulk-len, which no command could store or return anyway, and
// string.format takes Lua 5.1's two-digit widths, so a single call cannot ask for terabytes.
//
// Memory: strings a script grows step by step (s = s .. s) and tables it fills are checked
// while it runs. A timer samples the heap every guardCheckEvery; when it holds more than the
// script's budget beyond what it held at the start, a collection tells garbage from live data,
// and once the live heap is over, the script is stopped with errMemory. A single instruction
// is not interrupted, so s = s .. s may overshoot the budget by one doubling. The budget is
// twice proto-max-bulk-len (room to build one largest value from pieces), and never more than
// the headroom below the runtime's memory limit (the cgroup's, which the engine sets in
// memlimit.go), which a script must not push a cache near its limit over. A script stopped at
// its limits leaves what it built behind (a string.gsub grown to the time limit left 1.5 GB):
// the run's end gives it back to the system at once, on the host's background thread, as
// MEMORY PURGE does, rather than when the collector and scavenger get to it.
//
// Time: the same timer, once the run is past busy-reply-threshold, asks the script's goroutine
// every busyEvery to call Host.Busy, as Redis's Lua hook calls processEventsWhileBlocked. The
// request is read between two instructions: gopher-lua has no hooks, but it asks its context
// whether it is done before each instruction, and the guard is that context (Done). A pattern
// match, which may run long inside one instruction, asks too (lualib.Patterns). A library's top
// level (FUNCTION LOAD) is not served past a threshold: as in Redis, it is stopped after
// loadTimeout.

const (
	guardCheckEvery = 10 * time.Millisecond
	// busyEvery is how often a run past busy-reply-threshold lets the host serve other clients.
	busyEvery = time.Millisecond
	// loadTimeout is how long a library's top level may run (Redis's LOAD_TIMEOUT_MS).
	loadTimeout = 500 * time.Millisecond
)

var (
	errMemory      = errors.New("script ran out of memory")
	errKilled      = errors.New("Script killed by user with SCRIPT KILL...")
	errLoadTimeout = errors.New("FUNCTION LOAD timeout")
)

// What the timer asks of the script's goroutine (guard.asks).
const (
	askBusy = 1 << iota // call Host.Busy
	askStop             // stop the run: see guard.cause
)

// closedDone is the Done channel of a run that must stop.
var closedDone = func() chan struct{} {
	c := make(chan struct{})
	close(c)
	return c
}()

// guard watches one run. It is the run's context.Context (see Done): gopher-lua stops the run
// with Err's text when Done returns a closed channel.
type guard struct {
	host    Host
	timer   *time.Timer // the first check's
	start   time.Time
	limit   time.Duration // busy-reply-threshold (0 for none), or loadTimeout for a library load
	load    bool          // a library's top level: stopped at limit rather than served
	ceiling uint64        // heap bytes past which the script is out of memory
	budget  int64

	asks       atomic.Int32 // askBusy | askStop, set by the timer (askStop by Kill too)
	cause      atomic.Pointer[error]
	finished   atomic.Bool // stop ran: the timer does nothing more
	collecting atomic.Bool // a collection that check forced is running
}

// startGuard starts watching a run that is about to begin, within lim; stop ends it. A load's
// run (a library's top level) has loadTimeout for its time limit.
func startGuard(host Host, lim Limits, load bool) *guard {
	g := &guard{host: host, start: time.Now(), limit: lim.Time, load: load}
	if load {
		g.limit = loadTimeout
	}
	heap := heapObjectBytes()
	g.budget = 2 * lim.MaxBulkLen
	if memLimit := debug.SetMemoryLimit(-1); memLimit < 1<<62 {
		g.budget = min(g.budget, max(memLimit-int64(heap), 0))
	}
	g.ceiling = heap + uint64(g.budget)
	g.timer = time.AfterFunc(g.nextCheck(0), g.check)
	return g
}

// stop ends the watch and says whether the run was stopped. A later check, already scheduled,
// does nothing.
func (g *guard) stop() (stopped bool) {
	g.finished.Store(true)
	g.timer.Stop()
	return g.stopped() != nil
}

// kill stops the run at its next instruction with why, unless it was stopped already.
func (g *guard) kill(why error) {
	if g.cause.CompareAndSwap(nil, &why) {
		g.asks.Or(askStop)
	}
}

// nextCheck is when the timer looks again, elapsed into the run: every guardCheckEvery, at the
// time limit, and every busyEvery once past it.
func (g *guard) nextCheck(elapsed time.Duration) time.Duration {
	switch {
	case g.limit <= 0:
		return guardCheckEvery
	case elapsed >= g.limit:
		return busyEvery
	default:
		return min(guardCheckEvery, g.limit-elapsed)
	}
}

// check runs on a timer goroutine while the script runs, and schedules itself again.
func (g *guard) check() {
	if g.finished.Load() || g.cause.Load() != nil {
		return
	}
	elapsed := time.Since(g.start)
	if g.limit > 0 && elapsed >= g.limit {
		if g.load {
			g.kill(errLoadTimeout)
			return
		}
		g.asks.Or(askBusy)
	}
	if heapLiveBytes() > g.ceiling {
		g.kill(errMemory)
		return
	}
	// The runtime collects on its own as the heap grows, and each collection updates the live
	// size read above; a collection forced here answers sooner. It runs aside, as it waits for
	// the script's goroutine, which may be copying a large string, and checks go on meanwhile.
	if heapObjectBytes() > g.ceiling && g.collecting.CompareAndSwap(false, true) {
		go func() {
			runtime.GC()
			g.collecting.Store(false)
		}()
	}
	time.AfterFunc(g.nextCheck(elapsed), g.check) // not g.timer, which the first check may not see set yet
}

// stopped is why the run was stopped, or nil.
func (g *guard) stopped() error {
	if p := g.cause.Load(); p != nil {
		return *p
	}
	return nil
}

// Done is what gopher-lua asks before each instruction: nil goes on, a closed channel stops the
// run (with Err). It is the run's hook: when the timer asks, the host serves other clients here,
// on the script's goroutine, between two instructions. It costs one atomic load otherwise.
func (g *guard) Done() <-chan struct{} {
	if g.asks.Load() == 0 {
		return nil
	}
	return g.interrupt()
}

func (g *guard) interrupt() <-chan struct{} {
	if g.asks.Load()&askBusy != 0 && g.cause.Load() == nil {
		g.asks.And(^int32(askBusy))
		g.host.Busy()
	}
	if g.cause.Load() != nil {
		return closedDone
	}
	return nil
}

// Err is why the run stops, as gopher-lua raises it.
func (g *guard) Err() error { return g.stopped() }

// Deadline is none: the guard decides when a run stops.
func (g *guard) Deadline() (time.Time, bool) { return time.Time{}, false }

// Value holds nothing.
func (g *guard) Value(any) any { return nil }

// heapObjectBytes is the heap's size in objects, live and not yet collected; reading it does not
// stop the world, as runtime.ReadMemStats would.
func heapObjectBytes() uint64 { return readMetric("/memory/classes/heap/objects:bytes") }

// heapLiveBytes is the heap the last collection found live.
func heapLiveBytes() uint64 { return readMetric("/gc/heap/live:bytes") }

func readMetric(name string) uint64 {
	sample := []metrics.Sample{{Name: name}}
	metrics.Read(sample)
	if sample[0].Value.Kind() != metrics.KindUint64 {
		return 0
	}
	return sample[0].Value.Uint64()
}

// boundStrings replaces the library functions that build a string in one step with versions
// that refuse a result longer than proto-max-bulk-len, as the host's limits say it now. It runs
// before the tables are protected.
func (st *State) boundStrings(L *lua.LState, str, tab *lua.LTable) {
	tooBig := func(L *lua.LState) {
		L.RaiseError("string exceeds maximum allowed size (proto-max-bulk-len)")
	}
	str.RawSetString("rep", L.NewFunction(func(L *lua.LState) int {
		v := L.CheckString(1)
		n := L.CheckInt(2)
		if n > 0 && len(v) > 0 && int64(n) > st.host.Limits().MaxBulkLen/int64(len(v)) {
			tooBig(L)
		}
		L.Push(lua.LString(strings.Repeat(v, max(n, 0))))
		return 1
	}))
	format := str.RawGetString("format")
	str.RawSetString("format", L.NewFunction(func(L *lua.LState) int {
		if err := checkFormatWidths(L.CheckString(1)); err != "" {
			L.RaiseError("%s", err)
		}
		return callWith(L, format)
	}))
	tab.RawSetString("concat", L.NewFunction(func(L *lua.LState) int {
		t := L.CheckTable(1)
		sep := L.OptString(2, "")
		i, j := L.OptInt(3, 1), L.OptInt(4, t.Len())
		size := int64(0)
		for k := i; k <= j; k++ {
			v := t.RawGetInt(k)
			if !lua.LVCanConvToString(v) {
				L.RaiseError("invalid value (%s) at index %d in table for 'concat'", v.Type().String(), k)
			}
			size += int64(len(lua.LVAsString(v)))
			if k < j {
				size += int64(len(sep))
			}
			if size > st.host.Limits().MaxBulkLen {
				tooBig(L)
			}
		}
		var b strings.Builder
		b.Grow(int(size))
		for k := i; k <= j; k++ {
			b.WriteString(lua.LVAsString(t.RawGetInt(k)))
			if k < j {
				b.WriteString(sep)
			}
		}
		L.Push(lua.LString(b.String()))
		return 1
	}))
}

// checkFormatWidths applies Lua 5.1's limit on string.format specifications: at most two digits
// of width and two of precision.
func checkFormatWidths(f string) string {
	for i := 0; i < len(f); i++ {
		if f[i] != '%' {
			continue
		}
		i++
		if i < len(f) && f[i] == '%' {
			continue
		}
		for i < len(f) && strings.IndexByte("-+ #0", f[i]) >= 0 {
			i++
		}
		for _, part := range []bool{false, true} {
			if part {
				if i >= len(f) || f[i] != '.' {
					break
				}
				i++
			}
			digits := 0
			for i < len(f) && f[i] >= '0' && f[i] <= '9' {
				i++
				digits++
			}
			if digits > 2 {
				return "invalid format (width or precision too long)"
			}
		}
	}
	return ""
}

// stoppedReply is the error reply for a run the guard stopped, as Redis words it for SCRIPT KILL
// and FUNCTION LOAD's timeout ("... script: <name>, on @user_script:<line>.").
func (st *State) stoppedReply(why error) string {
	switch why {
	case errMemory:
		return fmt.Sprintf("ERR Script stopped: out of memory, it grew the heap by more than its budget (%d bytes) script: %s", st.guard.budget, st.name)
	case errLoadTimeout:
		return "ERR Error registering functions: ERR FUNCTION LOAD timeout"
	}
	return fmt.Sprintf("ERR %s script: %s, on @%s:%d.", why, st.name, st.chunk, st.line)
}
