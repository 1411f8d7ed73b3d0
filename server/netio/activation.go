package netio

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// I/O threads pay only when the main thread is the bottleneck and a CPU is free to run them: on a
// small box shared with its clients, handing sockets to another thread costs more than it gives
// (Redis 7 and Valkey 8 lose a quarter to a third of their requests/s with io-threads 2 on two
// cores). So with io-threads-activation load (the default) the main thread serves the sockets
// itself, and the activation policy below hands them to I/O threads, one thread at a time, only
// when
//
//   - the threads serving the sockets were busy at least igniteBusy of the time for
//     igniteWindows windows in a row: the main thread while it serves them all, else the I/O
//     threads on average (once they serve the sockets the main thread only executes commands, a
//     tenth of a command's CPU, so its own busy share says nothing about whether they keep up),
//   - the CPUs the server threads may run on had at least spareCPUNeeded of a CPU idle (and the
//     cgroup quota as much left), since a thread without a CPU of its own only adds hand-offs;
//
// and keeps the new thread only if requests/s rose by at least keepGain over the windows before
// (a trial, as the decision is only a guess from the signals above). A trial that did not pay is
// undone and not tried again for a backoff that doubles, up to maxBackoff. When the work of the
// main and I/O threads together would leave the main thread headroom on its own (below
// coolWork for coolWindows windows), the threads are switched off again; when the I/O threads
// idle below shedBusy each, one goes, so a load that fell keeps no more threads than it needs.
// INFO threads says what the policy decided and why.
//
// igniteBusy is low because busy time undercounts a loop that keeps up with nothing to spare:
// time in epoll_wait counts as idle even when events were waiting, and on a 16-core VM a main
// thread serving 400 connections flat out read 0.76 busy (docs/scaling.md). The trial, not
// the threshold, decides whether a thread stays, so a low bar costs at most a short trial.
// PolicyWindow is how often the main loop calls Tick.
const PolicyWindow = 100 * time.Millisecond

const (
	igniteBusy     = 0.50
	igniteWindows  = 3
	spareCPUNeeded = 0.5
	trialWindows   = 3 // measured after one window for the move itself
	keepGain       = 1.03
	coolWork       = 0.5
	coolWindows    = 10
	shedBusy       = 0.25
	firstBackoff   = 5 * time.Second
	maxBackoff     = time.Minute
)

type activation struct {
	lastNs                 int64
	lastMainBusy, lastCmds int64
	lastIOBusy             int64
	lastCPU                cpuTimes
	lastProcCPU            time.Duration
	rates                  []float64 // requests/s of the recent windows at the current count
	hot, cool, shed        int
	trial                  struct {
		on      bool
		from    int     // the count before the trial
		before  float64 // requests/s before it
		windows int
		rates   []float64
	}
	retryAt int64 // unix ms before which no thread is activated
	backoff time.Duration
	reason  string
}

// cpuTimes is the busy and total jiffies of a set of CPUs, from /proc/stat.
type cpuTimes struct{ busy, total int64 }

// resetActivation starts the policy afresh after the group's size or the activation mode
// changed.
func (g *Group) resetActivation() {
	a := &g.act
	a.rates, a.hot, a.cool, a.shed, a.trial.on = a.rates[:0], 0, 0, 0, false
	a.backoff, a.retryAt = 0, 0
	switch {
	case g.size <= 1:
		g.setActive(0)
		a.reason = "io-threads 1: the main thread serves every socket"
	case g.activation == "always":
		g.setActive(g.size - 1)
		a.reason = "io-threads-activation always"
	default:
		g.setActive(min(g.active, g.size-1))
		a.reason = "waiting for the first measurement"
	}
}

func (g *Group) setActive(n int) {
	if n != g.active {
		g.active = n
		g.layoutDirty = true
		g.act.rates = g.act.rates[:0]
	}
}

// ActivationReason says why as many I/O threads serve sockets as do, for INFO threads.
func (g *Group) ActivationReason() string { return g.act.reason }

// Tick measures the last window and applies the activation policy. The main loop calls it once
// a PolicyWindow with the clock, the commands executed so far and the effective core count
// (cgroup quota included).
func (g *Group) Tick(nowNs, nowMs, commands int64, cores int) {
	a := &g.act
	dt := float64(nowNs - a.lastNs)
	mainBusyNs := g.threads[0].counters.busyNs.Load()
	var ioBusyNs int64
	for _, t := range g.threads[1:] {
		ioBusyNs += t.counters.busyNs.Load()
	}
	first := a.lastNs == 0
	m := loadSample{
		mainBusy: float64(mainBusyNs-a.lastMainBusy) / dt,
		ioBusy:   float64(ioBusyNs-a.lastIOBusy) / dt,
		rate:     float64(commands-a.lastCmds) / dt * 1e9,
		nowMs:    nowMs,
	}
	a.lastNs, a.lastMainBusy, a.lastIOBusy, a.lastCmds = nowNs, mainBusyNs, ioBusyNs, commands
	maxActive := g.size - 1
	if first || maxActive == 0 || g.activation == "always" {
		return
	}
	if g.active < maxActive && !a.trial.on {
		m.spare = g.spareCPUs(dt, cores)
	}
	g.setActive(a.step(m, g.active, maxActive))
}

// loadSample is one policy window's measurements.
type loadSample struct {
	mainBusy, ioBusy float64 // share of a CPU the main thread, and the I/O threads together, used
	spare            float64 // idle CPUs the server threads could have used
	rate             float64 // commands per second
	nowMs            int64
}

// step applies the policy to one window and returns how many I/O threads should serve sockets.
func (a *activation) step(m loadSample, active, maxActive int) int {
	if a.trial.on {
		return a.trialStep(m, active)
	}
	a.rates = append(a.rates, m.rate)
	if len(a.rates) > trialWindows {
		a.rates = a.rates[1:]
	}

	// Switch off when the main thread alone would have headroom again.
	if active > 0 && m.mainBusy+m.ioBusy < coolWork {
		if a.cool++; a.cool >= coolWindows {
			a.cool = 0
			a.reason = fmt.Sprintf("load fell (main thread and I/O threads busy %.2f of a CPU together): the main thread serves every socket", m.mainBusy+m.ioBusy)
			return 0
		}
		return active
	}
	a.cool = 0

	// The threads that serve the sockets: the main thread alone, or the active I/O threads, whose
	// connections are spread evenly (pickThread), so their mean is each one's share.
	serving, busy := "main thread", m.mainBusy
	if active > 0 {
		serving, busy = "I/O threads", m.ioBusy/float64(active)
	}

	// Shed one thread when the I/O threads idle: fewer of them serve the same load.
	if active > 1 && busy < shedBusy {
		if a.shed++; a.shed >= coolWindows {
			a.shed = 0
			a.reason = fmt.Sprintf("I/O threads busy %.2f each: %d serve the sockets", busy, active-1)
			return active - 1
		}
	} else {
		a.shed = 0
	}

	// Switch on one more thread when the serving threads are the bottleneck and a CPU is free.
	switch {
	case active >= maxActive:
		a.hot = 0
	case busy < igniteBusy:
		a.hot = 0
		if active == 0 {
			a.reason = fmt.Sprintf("the main thread has headroom (busy %.2f): it serves every socket", busy)
		}
	case m.spare < spareCPUNeeded:
		a.hot = 0
		a.reason = fmt.Sprintf("%s busy %.2f, but only %.2f CPU idle for another thread", serving, busy, m.spare)
	case m.nowMs < a.retryAt:
		a.hot = 0
	default:
		if a.hot++; a.hot >= igniteWindows && len(a.rates) == trialWindows {
			a.hot = 0
			next := active + 1
			if active == 0 && maxActive >= 2 && m.spare >= 2*spareCPUNeeded {
				// The first I/O thread alone only moves the socket work off the main thread,
				// with a hand-off each way: on a 16-core VM it measured 1.01x, a trial that
				// never pays, while the second measured 1.70x over the first. So the first
				// trial starts two, when there is room for both.
				next = 2
			}
			a.trial.on, a.trial.from, a.trial.windows = true, active, 0
			a.trial.before = mean(a.rates)
			a.trial.rates = a.trial.rates[:0]
			a.reason = fmt.Sprintf("%s busy %.2f with %.2f CPU idle: trying %d I/O threads", serving, busy, m.spare, next)
			return next
		}
	}
	return active
}

// trialStep measures a trial of one more I/O thread and keeps or undoes it.
func (a *activation) trialStep(m loadSample, active int) int {
	if a.trial.windows++; a.trial.windows == 1 {
		return active // the window in which clients moved
	}
	a.trial.rates = append(a.trial.rates, m.rate)
	if len(a.trial.rates) < trialWindows {
		return active
	}
	a.trial.on = false
	gain := 0.0
	if a.trial.before > 0 {
		gain = mean(a.trial.rates) / a.trial.before
	}
	if gain >= keepGain {
		a.backoff = 0
		a.reason = fmt.Sprintf("%d I/O threads active: %.2fx requests/s over %d", active, gain, a.trial.from)
		return active
	}
	a.backoff = min(max(2*a.backoff, firstBackoff), maxBackoff)
	a.retryAt = m.nowMs + a.backoff.Milliseconds()
	a.reason = fmt.Sprintf("%d I/O threads did not pay (%.2fx requests/s): back to %d, next try in %s", active, gain, a.trial.from, a.backoff)
	return a.trial.from
}

func mean(xs []float64) float64 {
	var sum float64
	for _, x := range xs {
		sum += x
	}
	return sum / float64(len(xs))
}

// spareCPUs is how much of a CPU stood idle over the last window on the CPUs the threads may
// use, and no more than the cgroup quota left to this process.
func (g *Group) spareCPUs(windowNs float64, cores int) float64 {
	a := &g.act
	var cpus []int
	for id := 0; id < g.size; id++ {
		for _, c := range g.cpus(id) {
			if !slices.Contains(cpus, c) {
				cpus = append(cpus, c)
			}
		}
	}
	if len(cpus) == 0 {
		cpus = g.allowed
	}
	now, ok := readCPUTimes(cpus)
	prev := a.lastCPU
	a.lastCPU = now
	proc := processCPU()
	procDelta := proc - a.lastProcCPU
	a.lastProcCPU = proc
	if !ok || prev.total == 0 || now.total <= prev.total {
		return 0
	}
	// Jiffies of all listed CPUs together: the idle share times the CPU count is idle CPUs.
	idle := float64((now.total-prev.total)-(now.busy-prev.busy)) / float64(now.total-prev.total) * float64(len(cpus))
	if cores < len(g.allowed) {
		idle = min(idle, float64(cores)-float64(procDelta.Nanoseconds())/windowNs)
	}
	return idle
}

// processCPU is the process's user and system CPU time.
func processCPU() time.Duration {
	var ru unix.Rusage
	if err := unix.Getrusage(unix.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// readCPUTimes sums the per-CPU lines of /proc/stat for the given CPUs.
func readCPUTimes(cpus []int) (cpuTimes, bool) {
	b, err := os.ReadFile("/proc/stat")
	if err != nil {
		return cpuTimes{}, false
	}
	want := make(map[int]bool, len(cpus))
	for _, c := range cpus {
		want[c] = true
	}
	var out cpuTimes
	for _, line := range strings.Split(string(b), "\n") {
		if !strings.HasPrefix(line, "cpu") || strings.HasPrefix(line, "cpu ") {
			continue
		}
		f := strings.Fields(line)
		id, err := strconv.Atoi(strings.TrimPrefix(f[0], "cpu"))
		if err != nil || !want[id] || len(f) < 6 {
			continue
		}
		// user nice system idle iowait irq softirq steal; guest time is already in user and nice.
		for i, v := range f[1:min(len(f), 9)] {
			n, _ := strconv.ParseInt(v, 10, 64)
			out.total += n
			if i != 3 && i != 4 { // idle and iowait
				out.busy += n
			}
		}
	}
	return out, true
}
