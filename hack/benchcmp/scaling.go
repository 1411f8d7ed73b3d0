package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"

	"github.com/iocache/iocache/server/cpuset"
)

// The scaling measurement (`make bench-scaling`, `benchcmp --scaling`): requests/s against
// io-threads for iocache-server and redis-server, each server pinned to one half of the CPUs
// and redis-benchmark to the other, so that what is measured is what more I/O threads give a
// server whose cores are its own: the shape of the published curves the project grew from
// (Redis gaining about 2× with 4 to 8 I/O threads on 8 to 32 cores). It needs 8 CPUs or more;
// on fewer it says so and runs a smoke version (io-threads 1 and 2, one short run each, shared
// CPUs, written to the temporary directory rather than docs/), which CI runs so that the
// command keeps working between the rare borrowed big machines.

// scalingMinCPUs is the fewest CPUs that give the server four cores and the client four.
const scalingMinCPUs = 8

// scalingPlan is what one invocation measures, decided from the CPUs it may use.
type scalingPlan struct {
	smoke                  bool
	serverCPUs, clientCPUs string // taskset lists; empty in the smoke run
	serverCores            int
	clientThreads          int
	sweep                  []int // io-threads settings, ascending
	tests                  []string
	clients                int
	runs                   int
	runSeconds             float64 // the length each run aims at; -n follows the last rate seen
}

func planScaling(cpus []int, runs int) scalingPlan {
	if len(cpus) < scalingMinCPUs {
		return scalingPlan{smoke: true, serverCores: len(cpus), clientThreads: 1, sweep: []int{1, 2},
			tests: []string{"GET"}, clients: 50, runs: 1, runSeconds: 0.5}
	}
	half := len(cpus) / 2
	p := scalingPlan{serverCPUs: cpuList(cpus[:half]), clientCPUs: cpuList(cpus[half:]), serverCores: half,
		clientThreads: len(cpus) - half, tests: []string{"GET", "SET"}, clients: 400, runs: runs, runSeconds: 1.5}
	for _, t := range []int{1, 2, 4, 6, 8, cpuset.AutoIOThreads(half)} {
		if t <= half && !slices.Contains(p.sweep, t) {
			p.sweep = append(p.sweep, t)
		}
	}
	slices.Sort(p.sweep)
	return p
}

// allowedCPUs lists the CPUs this process may run on, in order.
func allowedCPUs() []int {
	var set unix.CPUSet
	if err := unix.SchedGetaffinity(0, &set); err != nil {
		fatalf("sched_getaffinity: %v", err)
	}
	var cpus []int
	for c := 0; c < len(set)*64 && len(cpus) < set.Count(); c++ {
		if set.IsSet(c) {
			cpus = append(cpus, c)
		}
	}
	return cpus
}

// cpuList writes CPU ids in taskset's list syntax (commas only: taskset takes them as they are).
func cpuList(cpus []int) string {
	s := make([]string, len(cpus))
	for i, c := range cpus {
		s[i] = strconv.Itoa(c)
	}
	return strings.Join(s, ",")
}

// scalingPoint is one server, test and io-threads setting: the median rps of its runs.
type scalingPoint struct {
	rps    float64
	spread string
}

// scaling runs the sweep and writes the table to out and the plot beside it (out with .svg).
// A sweep given on the command line replaces the planned one (settings above the server's cores
// are dropped).
func scaling(bench, redisBin, ioBin, out string, runs int, sweep []int) {
	start0 := time.Now()
	p := planScaling(allowedCPUs(), runs)
	if len(sweep) > 0 {
		p.sweep = slices.DeleteFunc(slices.Sorted(slices.Values(sweep)), func(t int) bool { return t < 1 || t > max(p.serverCores, 2) })
	}
	if p.smoke {
		dir := filepath.Join(os.TempDir(), "iocache-bench-scaling-smoke")
		fmt.Printf("bench-scaling: only %d CPUs here; the measurement needs %d or more (half for the server, half for redis-benchmark).\n"+
			"Running the smoke version instead (io-threads 1 and 2, one short GET run each, shared CPUs), written to %s, not %s.\n",
			p.serverCores, scalingMinCPUs, dir, out)
		out = filepath.Join(dir, filepath.Base(out))
	}
	pinning.server, pinning.client = p.serverCPUs, p.clientCPUs

	results := map[string]map[string][]scalingPoint{} // server → test → point per sweep entry
	for _, kind := range []string{"redis", "iocache"} {
		results[kind] = map[string][]scalingPoint{}
	}
	requests := map[string]int{} // the next run's -n per server and test, from the last rate
	for _, t := range p.sweep {
		rs := start(redisKind, redisBin, t)
		is := start(iocacheKind, ioBin, t, "--io-threads-activation", "always")
		for _, test := range p.tests {
			c := cell{ioThreads: t, clients: p.clients, pipeline: 1, test: test, size: 3}
			rs.flushAll()
			is.flushAll()
			var rr, ir []float64
			for i := 0; i < p.runs; i++ {
				// The servers alternate which goes first, as in make bench.
				order := []*server{rs, is}
				if i%2 == 1 {
					order = []*server{is, rs}
				}
				for _, s := range order {
					key := string(s.kind) + test
					n := requests[key]
					if n == 0 {
						n = int(50000 * p.runSeconds * 2)
					}
					r := run(bench, s, c, n, p.clientThreads)
					requests[key] = int(min(max(r.rps*p.runSeconds, 20000), 20e6))
					if s == rs {
						rr = append(rr, r.rps)
					} else {
						ir = append(ir, r.rps)
					}
				}
			}
			results["redis"][test] = append(results["redis"][test], scalingPoint{median(rr), rpsSpread(rr)})
			results["iocache"][test] = append(results["iocache"][test], scalingPoint{median(ir), rpsSpread(ir)})
			fmt.Printf("io-threads %d %s: redis %.0f, iocache %.0f requests/s (%s)\n", t, test, median(rr), median(ir), time.Since(start0).Round(time.Second))
		}
		rs.stop()
		is.stop()
	}
	policy := ""
	if !p.smoke {
		var estimate float64
		if i := slices.Index(p.sweep, cpuset.AutoIOThreads(p.serverCores)); i >= 0 {
			estimate = results["iocache"]["GET"][i].rps
		}
		policy = loadPolicyRun(bench, ioBin, p, estimate)
	}

	var b strings.Builder
	fmt.Fprintf(&b, "# Requests/s against io-threads, iocache-server and redis-server\n\n")
	fmt.Fprintf(&b, "Generated by `make bench-scaling` (`go run ./hack/benchcmp %s`) on %s, in %s.\n\n", strings.Join(os.Args[1:], " "),
		time.Now().UTC().Format("2006-01-02 15:04 MST"), time.Since(start0).Round(time.Second))
	redisVersion, _ := exec.Command(redisBin, "--version").Output()
	fmt.Fprintf(&b, "- Machine: %s. Load average at the end: %s.\n", machine(), loadavg())
	if p.smoke {
		fmt.Fprintf(&b, "- **Smoke run**: fewer than %d CPUs, so server and client share them and the figures say nothing about scaling.\n", scalingMinCPUs)
	} else {
		fmt.Fprintf(&b, "- Servers pinned with `taskset -c %s` (%d cores), redis-benchmark with `taskset -c %s`.\n", p.serverCPUs, p.serverCores, p.clientCPUs)
	}
	fmt.Fprintf(&b, "- Peer: %s with `--save '' --appendonly no --io-threads N --io-threads-do-reads yes`; iocache-server with `--io-threads N --io-threads-activation always` (the sweep measures what N threads give; the load policy's own choice is the line after the table).\n", strings.TrimSpace(string(redisVersion)))
	fmt.Fprintf(&b, "- Load: `redis-benchmark -t TEST -c %d -d 3 --threads %d`, -n sized for about %.1f s a run; the servers alternate run by run; each cell is the median of %d runs (range in brackets), requests/s from the server's own total_commands_processed over the steady part of each run.\n\n", p.clients, p.clientThreads, p.runSeconds, p.runs)
	fmt.Fprintf(&b, "| io-threads |")
	for _, test := range p.tests {
		fmt.Fprintf(&b, " redis %s | iocache %s | ratio |", test, test)
	}
	fmt.Fprintf(&b, "\n|---:|")
	for range p.tests {
		fmt.Fprintf(&b, "---:|---:|---:|")
	}
	fmt.Fprintf(&b, "\n")
	for i, t := range p.sweep {
		fmt.Fprintf(&b, "| %d |", t)
		for _, test := range p.tests {
			r, c := results["redis"][test][i], results["iocache"][test][i]
			fmt.Fprintf(&b, " %.0f %s | %.0f %s | %.2f× |", r.rps, r.spread, c.rps, c.spread, c.rps/r.rps)
		}
		fmt.Fprintf(&b, "\n")
	}
	fmt.Fprintf(&b, "\nGain over io-threads 1 at the best setting:")
	for _, kind := range []string{"redis", "iocache"} {
		for _, test := range p.tests {
			pts := results[kind][test]
			best := 0
			for i := range pts {
				if pts[i].rps > pts[best].rps {
					best = i
				}
			}
			fmt.Fprintf(&b, " %s %s %.2f× (io-threads %d);", kind, test, pts[best].rps/pts[0].rps, p.sweep[best])
		}
	}
	fmt.Fprintf(&b, "\n")
	if policy != "" {
		fmt.Fprintf(&b, "\n%s\n", policy)
	}
	plotPath := strings.TrimSuffix(out, filepath.Ext(out)) + ".svg"
	fmt.Fprintf(&b, "\n![requests/s against io-threads](%s)\n", filepath.Base(plotPath))
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		fatalf("%v", err)
	}
	writeScalingPlot(plotPath, p, results)
	if err := os.WriteFile(out, []byte(b.String()), 0o644); err != nil {
		fatalf("%v", err)
	}
	fmt.Print(b.String())
	fmt.Printf("wrote %s and %s\n", out, plotPath)
}

// loadPolicyRun measures what the default activation policy (io-threads-activation load) makes of
// the Auto rule's io-threads under the same GET load: one long run on the same connections (as a
// client's pool would hold them) while it adds threads one trial at a time, then the rate of a
// few runs, and how many threads it kept and why. estimate is the rate io-threads-activation
// always reached at that setting (0 when the sweep left it out); it sizes the long run.
func loadPolicyRun(bench, ioBin string, p scalingPlan, estimate float64) string {
	t := cpuset.AutoIOThreads(p.serverCores)
	s := start(iocacheKind, ioBin, t)
	defer s.stop()
	probe := dialInfo(s)
	defer probe.close()
	field := func(name string) string {
		_, rest, _ := strings.Cut(probe.section("threads"), name+":")
		v, _, _ := strings.Cut(rest, "\r\n")
		return v
	}
	c := cell{ioThreads: t, clients: p.clients, pipeline: 1, test: "GET", size: 3}
	if estimate == 0 {
		estimate = 200000
	}
	t0 := time.Now()
	climbed := make(chan string, 1)
	stop := make(chan struct{})
	go func() { climbed <- watchActivation(s, t, t0, stop) }()
	warm := run(bench, s, c, int(estimate*5), p.clientThreads)
	close(stop)
	climb := <-climbed
	warmUp := time.Since(t0).Round(time.Second)
	activeAfterWarmUp := field("io_threads_active")
	var rates []float64
	for i := 0; i < p.runs; i++ {
		rates = append(rates, run(bench, s, c, int(max(warm.rps*p.runSeconds, 20000)), p.clientThreads).rps)
	}
	return fmt.Sprintf("With the default `io-threads-activation load` and io-threads %d (the operator's Auto rule for %d cores): one GET run of %s on the same %d connections, %.0f requests/s over its steady part, ended with io_threads_active %s (%s); then %d runs (new connections each): %.0f requests/s %s, io_threads_active %s, reason: %q.",
		t, p.serverCores, warmUp, p.clients, warm.rps, activeAfterWarmUp, climb, p.runs, median(rates), rpsSpread(rates), field("io_threads_active"), field("io_threads_activation_reason"))
}

// watchActivation samples INFO threads and the command count every half second until stop,
// prints each change of the active I/O threads with the rate since the last sample, and returns
// when each count was first reached.
func watchActivation(s *server, ioThreads int, t0 time.Time, stop <-chan struct{}) string {
	probe := dialInfo(s)
	defer probe.close()
	tick := time.NewTicker(500 * time.Millisecond)
	defer tick.Stop()
	last, lastCmds, lastAt := "", probe.commands(), time.Now()
	var reached []string
	for {
		select {
		case <-stop:
			if len(reached) == 0 {
				return "no I/O thread activated"
			}
			return "reached " + strings.Join(reached, ", ")
		case now := <-tick.C:
			info := probe.section("threads")
			_, rest, _ := strings.Cut(info, "io_threads_active:")
			active, _, _ := strings.Cut(rest, "\r\n")
			_, rest, _ = strings.Cut(info, "io_threads_activation_reason:")
			reason, _, _ := strings.Cut(rest, "\r\n")
			cmds := probe.commands()
			rate := float64(cmds-lastCmds) / now.Sub(lastAt).Seconds()
			lastCmds, lastAt = cmds, now
			at := now.Sub(t0).Seconds()
			fmt.Printf("  load policy, %5.1f s: %s active, %.0f requests/s, %s\n", at, active, rate, reason)
			if active != last {
				if n, _ := strconv.Atoi(active); n > 0 && !slices.ContainsFunc(reached, func(r string) bool { return strings.HasPrefix(r, active+" ") }) {
					reached = append(reached, fmt.Sprintf("%s at %.1f s", active, at))
				}
				last = active
			}
		}
	}
}

func rpsSpread(xs []float64) string {
	return fmt.Sprintf("[%.0f–%.0f]", slices.Min(xs), slices.Max(xs))
}

// writeScalingPlot draws requests/s against io-threads, one line per server and test.
func writeScalingPlot(path string, p scalingPlan, results map[string]map[string][]scalingPoint) {
	pl := plot.New()
	pl.Title.Text = "requests/s against io-threads"
	if p.smoke {
		pl.Title.Text += " (smoke run: shared CPUs)"
	}
	pl.X.Label.Text = "io-threads"
	pl.Y.Label.Text = "requests/s"
	pl.Y.Min = 0
	var lines []any
	for _, kind := range []string{"redis", "iocache"} {
		for _, test := range p.tests {
			xys := make(plotter.XYs, len(p.sweep))
			for i, t := range p.sweep {
				xys[i] = plotter.XY{X: float64(t), Y: results[kind][test][i].rps}
			}
			lines = append(lines, kind+" "+test, xys)
		}
	}
	if err := plotutil.AddLinePoints(pl, lines...); err != nil {
		fatalf("plot: %v", err)
	}
	pl.Legend.Top, pl.Legend.Left = true, true
	if err := pl.Save(6*vg.Inch, 4*vg.Inch, path); err != nil {
		fatalf("plot: %v", err)
	}
}
