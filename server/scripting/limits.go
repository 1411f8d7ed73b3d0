package scripting

import (
	"context"
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

// Limits on what one script may cost. Redis bounds a script's time only softly (SCRIPT KILL) and
// its memory not at all; here neither may take the server down. The host gives the limits
// (Host.Limits); this file applies them.
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
// Time: the same timer stops the script at busy-reply-threshold (errTimeout). Both stop it
// through the state's context, which gopher-lua checks before each instruction.

const guardCheckEvery = 10 * time.Millisecond

var (
	errTimeout = errors.New("script ran past busy-reply-threshold")
	errMemory  = errors.New("script ran out of memory")
)

// guard watches one run.
type guard struct {
	ctx     context.Context
	cancel  context.CancelCauseFunc
	timer   *time.Timer
	start   time.Time
	limit   time.Duration // busy-reply-threshold, 0 for none
	ceiling uint64        // heap bytes past which the script is out of memory
	budget  int64

	collecting atomic.Bool // a collection that check forced is running
}

// startGuard starts watching a run that is about to begin, within lim; stop ends it.
func startGuard(lim Limits) *guard {
	ctx, cancel := context.WithCancelCause(context.Background())
	g := &guard{ctx: ctx, cancel: cancel, start: time.Now(), limit: lim.Time}
	heap := heapObjectBytes()
	g.budget = 2 * lim.MaxBulkLen
	if memLimit := debug.SetMemoryLimit(-1); memLimit < 1<<62 {
		g.budget = min(g.budget, max(memLimit-int64(heap), 0))
	}
	g.ceiling = heap + uint64(g.budget)
	g.timer = time.AfterFunc(guardCheckEvery, g.check)
	return g
}

// stop ends the watch and says whether the guard stopped the run.
func (g *guard) stop() (stopped bool) {
	g.timer.Stop()
	stopped = g.stopped() != nil
	g.cancel(nil)
	return stopped
}

// check runs on a timer goroutine while the script runs, and schedules itself again.
func (g *guard) check() {
	if g.ctx.Err() != nil {
		return
	}
	if g.limit > 0 && time.Since(g.start) >= g.limit {
		g.cancel(errTimeout)
		return
	}
	if heapLiveBytes() > g.ceiling {
		g.cancel(errMemory)
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
	time.AfterFunc(guardCheckEvery, g.check)
}

// stopped is why the script was stopped, or nil.
func (g *guard) stopped() error {
	if g.ctx.Err() == nil {
		return nil
	}
	if cause := context.Cause(g.ctx); cause != context.Canceled {
		return cause
	}
	return nil
}

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

// stoppedReply is the error reply for a run the guard stopped.
func (st *State) stoppedReply(why error) string {
	if why == errMemory {
		return fmt.Sprintf("ERR Script stopped: out of memory, it grew the heap by more than its budget (%d bytes) script: %s", st.guard.budget, st.name)
	}
	return fmt.Sprintf("ERR Script stopped: it ran longer than busy-reply-threshold (%d ms) script: %s", st.guard.limit.Milliseconds(), st.name)
}
