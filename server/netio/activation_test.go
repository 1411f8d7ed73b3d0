package netio

import (
	"strings"
	"testing"
)

// TestActivationPolicy drives the policy with measured windows and checks each decision.
func TestActivationPolicy(t *testing.T) {
	busy := loadSample{mainBusy: 0.95, spare: 0.9, rate: 100000}
	run := func(a *activation, m loadSample, active, windows int) int {
		for i := 0; i < windows; i++ {
			active = a.step(m, active, 3)
			m.nowMs += 100
		}
		return active
	}

	// A busy main thread with a free CPU gets a trial thread after igniteWindows; it stays when
	// requests/s rise enough.
	var a activation
	if got := run(&a, busy, 0, igniteWindows); got != 1 || !a.trial.on {
		t.Fatalf("busy main thread with a free CPU: %d I/O threads (trial %v), want a trial of 1", got, a.trial.on)
	}
	faster := busy
	faster.rate = 130000
	if got := run(&a, faster, 1, 1+trialWindows); got != 1 || a.trial.on || !strings.Contains(a.reason, "1.30x") {
		t.Fatalf("trial that paid: %d I/O threads, reason %q", got, a.reason)
	}

	// A trial that does not pay is undone, and not retried before the backoff.
	a = activation{}
	active := run(&a, busy, 0, igniteWindows)
	slower := busy
	slower.rate = 80000
	if active = run(&a, slower, active, 1+trialWindows); active != 0 || !strings.Contains(a.reason, "did not pay") {
		t.Fatalf("trial that did not pay: %d I/O threads, reason %q", active, a.reason)
	}
	busy.nowMs = a.retryAt - 1000
	if got := run(&a, busy, 0, 5); got != 0 {
		t.Fatalf("retried during the backoff: %d", got)
	}
	busy.nowMs = a.retryAt
	if got := run(&a, busy, 0, igniteWindows); got != 1 {
		t.Fatalf("not retried after the backoff: %d", got)
	}
	if a.backoff != firstBackoff {
		t.Fatalf("backoff %s, want %s", a.backoff, firstBackoff)
	}
	if run(&a, slower, 1, 1+trialWindows); a.backoff != 2*firstBackoff {
		t.Fatalf("second failed trial: backoff %s, want %s", a.backoff, 2*firstBackoff)
	}

	// No CPU to spare: the main thread keeps the sockets, and says why.
	a = activation{}
	noSpare := busy
	noSpare.spare, noSpare.nowMs = 0.1, 0
	if got := run(&a, noSpare, 0, 20); got != 0 || !strings.Contains(a.reason, "only 0.10 CPU idle") {
		t.Fatalf("no spare CPU: %d I/O threads, reason %q", got, a.reason)
	}
	// Headroom: nothing to do.
	if got := run(&a, loadSample{mainBusy: 0.3, spare: 1.5, rate: 1000}, 0, 20); got != 0 || !strings.Contains(a.reason, "headroom") {
		t.Fatalf("idle main thread: %d I/O threads, reason %q", got, a.reason)
	}
	// Load falls while threads are active: after coolWindows they are switched off.
	a = activation{}
	quiet := loadSample{mainBusy: 0.2, ioBusy: 0.1, rate: 1000}
	if got := run(&a, quiet, 2, coolWindows-1); got != 2 {
		t.Fatalf("switched off too early: %d", got)
	}
	if got := run(&a, quiet, 2, 1); got != 0 || !strings.Contains(a.reason, "load fell") {
		t.Fatalf("load fell: %d I/O threads, reason %q", got, a.reason)
	}
	// With room for two, the first trial starts two: one alone only adds hand-offs.
	a = activation{}
	roomy := loadSample{mainBusy: 0.95, spare: 3, rate: 100000}
	if got := run(&a, roomy, 0, igniteWindows); got != 2 || !strings.Contains(a.reason, "trying 2") {
		t.Fatalf("busy main thread with CPUs free: %d I/O threads, reason %q", got, a.reason)
	}

	// Once I/O threads serve the sockets the main thread only executes commands: its own busy
	// share is low, and the I/O threads' decides. Saturated I/O threads with CPUs free get one
	// more (on a 16-core machine this is how the load policy climbs past one I/O thread).
	a = activation{}
	ioBound := loadSample{mainBusy: 0.12, ioBusy: 0.9, spare: 2, rate: 200000}
	if got := run(&a, ioBound, 1, igniteWindows); got != 2 || !strings.Contains(a.reason, "I/O threads busy 0.90") {
		t.Fatalf("saturated I/O thread with CPUs free: %d I/O threads, reason %q", got, a.reason)
	}
	// Idle I/O threads are shed one at a time, not all at once while the load still needs some.
	a = activation{}
	light := loadSample{mainBusy: 0.1, ioBusy: 0.6, spare: 4, rate: 50000}
	if got := run(&a, light, 3, coolWindows-1); got != 3 {
		t.Fatalf("shed too early: %d", got)
	}
	if got := run(&a, light, 3, 1); got != 2 || !strings.Contains(a.reason, "busy 0.20 each") {
		t.Fatalf("idle I/O threads: %d, reason %q", got, a.reason)
	}
	// At 2 threads each is busy 0.30: above shedBusy and below igniteBusy, it stays.
	if got := run(&a, light, 2, 3*coolWindows); got != 2 {
		t.Fatalf("after shedding one: %d I/O threads, want 2 to stay", got)
	}

	// At the most threads io-threads allows, no trial.
	a = activation{}
	busy.ioBusy = 2.7
	if got := run(&a, busy, 3, 10); got != 3 || a.trial.on {
		t.Fatalf("at the maximum: %d, trial %v", got, a.trial.on)
	}
}
