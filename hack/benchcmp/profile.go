package main

import (
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/google/pprof/profile"
)

// The main thread's profile split (benchcmp --ceiling): one run of a cell against an
// iocache-server started with IOCACHE_CPUPROFILE, then the samples whose stack passes through
// the main loop, grouped by what the main thread was doing: executing commands (execute), the
// dispatch around them (process: lookup, checks, accounting), or the step of the loop they fell
// in (waiting for events, serving the I/O threads' batches, beforeSleep, cron...). It says what
// in the main thread's share is not command execution, the part engine work can remove.

const mainLoopFrame = "engine.(*Server).mainLoop"

// mainThreadSplit runs c once against a profiled server and returns each part's share of the
// main thread's samples, largest first, as "name 41%".
func mainThreadSplit(bench, ioBin string, c cell, requests, clientThreads int) []string {
	dir, err := os.MkdirTemp("", "benchcmp-profile")
	if err != nil {
		fatalf("%v", err)
	}
	defer func() { _ = os.RemoveAll(dir) }()
	path := filepath.Join(dir, "cpu.pprof")
	s := startWithEnv(iocacheKind, ioBin, 2, []string{"IOCACHE_CPUPROFILE=" + path}, "--io-threads-activation", "always")
	measureCPU(bench, s, c, requests, clientThreads)
	s.shutdown()
	f, err := os.Open(path)
	if err != nil {
		fatalf("profile: %v", err)
	}
	defer f.Close()
	p, err := profile.Parse(f)
	if err != nil {
		fatalf("profile: %v", err)
	}
	cpu := slices.IndexFunc(p.SampleType, func(t *profile.ValueType) bool { return t.Type == "cpu" })
	if cpu < 0 {
		fatalf("profile has no cpu samples")
	}
	parts := map[string]int64{}
	var total, samples int64
	for _, smp := range p.Sample {
		if part, ok := mainThreadPart(smp); ok {
			parts[part] += smp.Value[cpu]
			total += smp.Value[cpu]
			samples += smp.Value[0]
		}
	}
	if total == 0 {
		fatalf("no main-thread samples in the profile")
	}
	names := make([]string, 0, len(parts))
	for n := range parts {
		names = append(names, n)
	}
	slices.SortFunc(names, func(a, b string) int { return int(parts[b] - parts[a]) })
	out := []string{fmt.Sprintf("%d samples", samples)}
	for _, n := range names {
		if share := float64(parts[n]) / float64(total); share >= 0.01 {
			out = append(out, fmt.Sprintf("%s %.0f%%", n, 100*share))
		}
	}
	return out
}

// mainThreadPart names what a sample's stack was doing on the main thread; ok is false for a
// sample of another thread.
func mainThreadPart(smp *profile.Sample) (part string, ok bool) {
	var frames []string // leaf first
	for _, loc := range smp.Location {
		for _, l := range loc.Line {
			frames = append(frames, l.Function.Name)
		}
	}
	loop := slices.IndexFunc(frames, func(f string) bool { return strings.HasSuffix(f, mainLoopFrame) })
	if loop < 0 {
		return "", false
	}
	has := func(suffix string) bool {
		return slices.ContainsFunc(frames[:loop], func(f string) bool { return strings.HasSuffix(f, suffix) })
	}
	switch {
	case has("engine.(*Server).execute"):
		return "command execution", true
	case has("engine.(*Server).process"):
		return "command dispatch", true
	case loop == 0:
		return "main loop", true
	}
	// The step of the loop: the frame mainLoop called, without its package path.
	step := frames[loop-1]
	step = step[strings.LastIndexByte(step, '/')+1:]
	if name, ok := loopSteps[step]; ok {
		return name, true
	}
	return step, true
}

// loopSteps names the main loop's steps (server.go's mainLoop) for the split.
var loopSteps = map[string]string{
	"netio.(*Group).Wait":             "epoll_wait (its CPU, not the time blocked)",
	"netio.(*Group).Serve":            "taking the I/O threads' batches and handing replies back",
	"engine.(*Server).handleEvents":   "the main thread's own events (accepts, wake-ups)",
	"engine.(*Server).beforeSleep":    "beforeSleep",
	"engine.(*Server).cron":           "cron",
	"engine.(*Server).updateClock":    "reading the clock",
	"netio.(*Group).Tick":             "the activation policy",
	"engine.(*Server).persistTick":    "persistence tick",
	"engine.(*Server).resumeYielded":  "clients resumed after a yield",
	"netio.YieldIfDue":                "yielding to the Go scheduler",
	"engine.(*Server).serveSnapshots": "snapshots",
	"engine.(*Server).pollTimeout":    "timers",
	"engine.nanotime":                 "reading the clock",
	"netio.(*Group).MainBusy":         "the activation policy",
	"runtime.morestack":               "stack growth",
}

// shutdown stops a server with SHUTDOWN NOSAVE and waits for it to exit, so that what it writes
// on the way out (a profile) is complete.
func (s *server) shutdown() {
	if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", s.port)); err == nil {
		_, _ = c.Write([]byte("*2\r\n$8\r\nSHUTDOWN\r\n$6\r\nNOSAVE\r\n"))
		c.Close()
	}
	_ = s.cmd.Wait()
}
