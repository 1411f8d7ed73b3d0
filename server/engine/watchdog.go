package engine

import (
	"bytes"
	"runtime"
	"sync/atomic"
	"time"
)

// The watchdog (watchdog-period, as in Redis) reports a main thread that has not returned to its
// event loop for longer than the period: it logs a warning with the main goroutine's stack, once
// per stall, which shows the command or script holding every client up. Redis arms a timer
// signal and prints the stack from its handler; here a goroutine compares the time with the
// moment the main loop last woke, which the loop stores once on waking and clears before it
// waits again (idle is not a stall), so the loop costs two atomic stores an iteration and a
// command nothing.

type watchdog struct {
	period    atomic.Int64 // milliseconds, 0 when off
	busySince atomic.Int64 // nanotime the main loop woke, 0 while it waits
	stalls    atomic.Int64
	mainGoID  []byte // "goroutine N [" of the main goroutine, what its stack dump begins with
	quit      chan struct{}
}

// watchdogMinPeriod is Redis's minimum period: two cron ticks. A shorter one is raised to it.
func watchdogMinPeriod(hz int) int { return 2000 / max(hz, 1) }

// startWatchdog records the calling goroutine as the main one and starts the monitor, which
// ends when the server stops.
func (s *Server) startWatchdog() {
	buf := make([]byte, 64)
	buf = buf[:runtime.Stack(buf, false)]
	if i := bytes.IndexByte(buf, '['); i > 0 {
		s.watchdog.mainGoID = append([]byte(nil), buf[:i+1]...)
	}
	s.watchdog.quit = make(chan struct{})
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		s.watchdogLoop()
	}()
}

func (s *Server) watchdogLoop() {
	w := &s.watchdog
	var reported int64
	tick := time.NewTimer(0)
	defer tick.Stop()
	for {
		period := time.Duration(w.period.Load()) * time.Millisecond
		wait := 100 * time.Millisecond // for CONFIG SET to turn it on
		if period > 0 {
			wait = max(period/4, time.Millisecond)
		}
		tick.Reset(wait)
		select {
		case <-w.quit:
			return
		case <-tick.C:
		}
		if period == 0 {
			continue
		}
		since := w.busySince.Load()
		if since == 0 || since == reported || time.Duration(nanotime()-since) < period {
			continue
		}
		reported = since
		w.stalls.Add(1)
		s.logf(logWarning, "\n--- WATCHDOG TIMER EXPIRED ---\nThe main thread has not returned to its event loop for %v (watchdog-period %v).\n%s\n--------",
			time.Duration(nanotime()-since).Round(time.Millisecond), period, s.mainStack())
	}
}

// stopWatchdog ends the monitor.
func (s *Server) stopWatchdog() {
	if s.watchdog.quit != nil {
		close(s.watchdog.quit)
	}
}

// mainStack is the main goroutine's stack, cut from a dump of all goroutines (the runtime dumps
// another goroutine's stack only that way).
func (s *Server) mainStack() []byte {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) || len(buf) >= 64<<20 {
			buf = buf[:n]
			break
		}
		buf = make([]byte, 2*len(buf))
	}
	id := s.watchdog.mainGoID
	i := bytes.Index(buf, id)
	if len(id) == 0 || i < 0 {
		return buf
	}
	stack := buf[i:]
	if end := bytes.Index(stack, []byte("\n\ngoroutine ")); end >= 0 {
		stack = stack[:end]
	}
	return stack
}

// applyWatchdogPeriod raises a period below Redis's minimum to it, as CONFIG GET then shows.
func (s *Server) applyWatchdogPeriod() {
	if p := s.cfg.WatchdogPeriod; p > 0 && p < watchdogMinPeriod(s.cfg.HZ) {
		s.cfg.WatchdogPeriod = watchdogMinPeriod(s.cfg.HZ)
	}
	s.watchdog.period.Store(int64(s.cfg.WatchdogPeriod))
}
