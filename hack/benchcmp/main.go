// Command benchcmp runs Debian's redis-server and iocache-server side by side under
// redis-benchmark, interleaving them, and writes a markdown table of requests per second and
// requests per second of server CPU time, with the ratio to redis-server in every cell. It also
// measures resident memory per key with 1,000,000 small keys. `make bench` runs it. With
// --ceiling it measures instead how much of a command's CPU stays on the main thread when the
// I/O threads are on (ceiling.go; `make bench-ceiling`); with --scaling, requests/s against
// io-threads on a machine with cores to spare (scaling.go; `make bench-scaling`).
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"math"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
)

type serverKind string

const (
	redisKind   serverKind = "redis"
	iocacheKind serverKind = "iocache"
)

type server struct {
	kind serverKind
	cmd  *exec.Cmd
	port int
}

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func start(kind serverKind, bin string, ioThreads int, extra ...string) *server {
	return startWithEnv(kind, bin, ioThreads, nil, extra...)
}

// startWithEnv starts a server with env added to this process's environment.
func startWithEnv(kind serverKind, bin string, ioThreads int, env []string, extra ...string) *server {
	port := freePort()
	var args []string
	switch kind {
	case redisKind:
		args = []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
			"--io-threads", strconv.Itoa(ioThreads), "--io-threads-do-reads", "yes", "--protected-mode", "no"}
	case iocacheKind:
		args = []string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--io-threads", strconv.Itoa(ioThreads), "--metrics-port", "0"}
	}
	args = append(args, extra...)
	cmd := pinned(pinning.server, bin, args...)
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.Stdout, cmd.Stderr = io.Discard, io.Discard
	if err := cmd.Start(); err != nil {
		fatalf("starting %s: %v", bin, err)
	}
	for i := 0; i < 100; i++ {
		if c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			c.Close()
			return &server{kind: kind, cmd: cmd, port: port}
		}
		time.Sleep(50 * time.Millisecond)
	}
	fatalf("%s did not start", bin)
	return nil
}

// pinning holds the CPU lists (taskset syntax) that servers and redis-benchmark run on: empty,
// they share every CPU (make bench, make bench-ceiling); make bench-scaling gives each its own.
var pinning struct{ server, client string }

// pinned is the command bin args, run through taskset on cpus when cpus is set. taskset execs
// bin, so the process's PID, and with it /proc/PID/stat, is bin's own.
func pinned(cpus, bin string, args ...string) *exec.Cmd {
	if cpus == "" {
		return exec.Command(bin, args...)
	}
	return exec.Command("taskset", append([]string{"-c", cpus, bin}, args...)...)
}

// flushAll empties the server, so that each cell starts from the same keyspace: a collection
// test's small cell must not find the collection its large cell grew.
func (s *server) flushAll() {
	c, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", s.port))
	if err != nil {
		fatalf("FLUSHALL: %v", err)
	}
	defer c.Close()
	if _, err := c.Write([]byte("*1\r\n$8\r\nFLUSHALL\r\n")); err != nil {
		fatalf("FLUSHALL: %v", err)
	}
	if line, err := bufio.NewReader(c).ReadString('\n'); err != nil || line != "+OK\r\n" {
		fatalf("FLUSHALL: %q %v", line, err)
	}
}

func (s *server) stop() {
	_ = s.cmd.Process.Kill()
	_ = s.cmd.Wait()
}

// cpuSeconds is the server process's user+system CPU time so far, from /proc/PID/stat.
func (s *server) cpuSeconds() float64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", s.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	f := strings.Fields(string(b[strings.LastIndexByte(string(b), ')')+1:]))
	ut, _ := strconv.ParseFloat(f[11], 64)
	st, _ := strconv.ParseFloat(f[12], 64)
	return (ut + st) / 100
}

func (s *server) rssBytes() int64 {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", s.cmd.Process.Pid))
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if strings.HasPrefix(sc.Text(), "VmRSS:") {
			kb, _ := strconv.ParseInt(strings.Fields(sc.Text())[1], 10, 64)
			return kb * 1024
		}
	}
	return 0
}

type cell struct {
	ioThreads int
	clients   int
	pipeline  int
	test      string
	size      int
	// members is redis-benchmark's -r for the collection tests: 0 writes one member again and
	// again (a collection that stays small: the compact, inline encodings), N spreads the writes
	// over N random members (one collection that grows large: hashtable, skiplist, many nodes).
	members int
}

func (c cell) load() string {
	if c.pipeline > 1 {
		return fmt.Sprintf("%d conns, pipeline %d", c.clients, c.pipeline)
	}
	return fmt.Sprintf("%d conns", c.clients)
}

// testName is the test column: a collection test says which shape of collection it wrote.
func (c cell) testName() string {
	switch {
	case c.test == "GET" || c.test == "SET":
		return c.test
	case c.members == 0:
		return c.test + " (small)"
	}
	return fmt.Sprintf("%s (large, -r %d)", c.test, c.members)
}

type sample struct{ rps, rpsCPU float64 }

// run is one redis-benchmark run; it returns requests/s and requests per server-CPU-second.
//
// The rate is the server's own: total_commands_processed from INFO, sampled every 50 ms while
// the client runs, over the steady part of the run (between 5% and 95% of the requests done).
// redis-benchmark's figure cannot be used: with --threads its process only notices the end of
// the run on a 250 ms timer, so both its printed rate and its wall time move in 250 ms steps,
// 12% of a 2-second run; two servers within a few percent of each other would print the same
// number, or numbers 12% apart.
func run(bench string, s *server, c cell, requests, clientThreads int) sample {
	args := []string{"-h", "127.0.0.1", "-p", strconv.Itoa(s.port), "-t", strings.ToLower(c.test), "-n", strconv.Itoa(requests),
		"-c", strconv.Itoa(c.clients), "-P", strconv.Itoa(c.pipeline), "-d", strconv.Itoa(c.size), "--threads", strconv.Itoa(clientThreads), "--csv"}
	if c.members > 0 {
		args = append(args, "-r", strconv.Itoa(c.members))
	}
	probe := dialInfo(s)
	defer probe.close()
	base := probe.commands()
	before := s.cpuSeconds()
	cmd := pinned(pinning.client, bench, args...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		fatalf("redis-benchmark: %v", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	var rate steadyRate
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for done := false; !done; {
		select {
		case err := <-exited:
			if err != nil {
				fatalf("redis-benchmark %v: %v\n%s", args, err, out.String())
			}
			done = true
		case <-tick.C:
			rate.add(time.Now(), probe.commands()-base, requests)
		}
	}
	after := s.cpuSeconds()
	if !strings.Contains(out.String(), `"`+c.test+`"`) {
		fatalf("no result in redis-benchmark output:\n%s", out.String())
	}
	rps := rate.perSecond()
	if rps == 0 {
		fatalf("run too short to measure a rate: %v", args)
	}
	return sample{rps: rps, rpsCPU: float64(requests) / (after - before)}
}

// steadyRate keeps the first and last sample taken while between 5% and 95% of the requests
// were done, leaving out connection set-up and the tail where clients finish one by one.
type steadyRate struct {
	first, last   time.Time
	nFirst, nLast int64
	samples       int
}

func (r *steadyRate) add(t time.Time, done int64, total int) {
	if done < int64(total)/20 || done > int64(total)*19/20 {
		return
	}
	if r.samples == 0 {
		r.first, r.nFirst = t, done
	}
	r.last, r.nLast = t, done
	r.samples++
}

func (r *steadyRate) perSecond() float64 {
	if r.samples < 2 {
		return 0
	}
	return float64(r.nLast-r.nFirst) / r.last.Sub(r.first).Seconds()
}

// infoProbe reads a server's total_commands_processed over a connection of its own.
type infoProbe struct {
	conn net.Conn
	r    *bufio.Reader
}

func dialInfo(s *server) *infoProbe {
	conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", s.port))
	if err != nil {
		fatalf("dial: %v", err)
	}
	return &infoProbe{conn: conn, r: bufio.NewReader(conn)}
}

func (p *infoProbe) close() { p.conn.Close() }

// commands is total_commands_processed (each INFO call counts itself: a handful per run).
func (p *infoProbe) commands() int64 {
	_, rest, ok := strings.Cut(p.section("stats"), "total_commands_processed:")
	if !ok {
		fatalf("INFO stats has no total_commands_processed")
	}
	v, _, _ := strings.Cut(rest, "\r\n")
	n, _ := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	return n
}

// section is the text of one INFO section.
func (p *infoProbe) section(name string) string {
	if _, err := p.conn.Write([]byte("INFO " + name + "\r\n")); err != nil {
		fatalf("INFO: %v", err)
	}
	head, err := p.r.ReadString('\n')
	if err != nil || len(head) < 2 || head[0] != '$' {
		fatalf("INFO: unexpected reply %q: %v", head, err)
	}
	n, _ := strconv.Atoi(strings.TrimSpace(head[1:]))
	body := make([]byte, n+2)
	if _, err := io.ReadFull(p.r, body); err != nil {
		fatalf("INFO: %v", err)
	}
	return string(body)
}

// pairedCell is one cell's paired ratios (iocache over redis, run by run).
type pairedCell struct {
	ioThreads int
	name      string
	rps, cpu  []float64
}

// spread is the range of a cell's paired ratios, as "[min–max]".
func spread(xs []float64) string {
	return fmt.Sprintf("[%.2f–%.2f]", slices.Min(xs), slices.Max(xs))
}

// summarize says, per io-threads setting, the geometric mean of the cells' ratios and which
// cells iocache lost: in most of their runs (a median below 1), and in every run. A cell whose
// paired ratios straddle 1 is one the machine's noise cannot decide with this many runs.
func summarize(b *strings.Builder, cells []pairedCell, runs int) {
	byThreads := map[int][]pairedCell{}
	var order []int
	for _, c := range cells {
		if _, ok := byThreads[c.ioThreads]; !ok {
			order = append(order, c.ioThreads)
		}
		byThreads[c.ioThreads] = append(byThreads[c.ioThreads], c)
	}
	for _, t := range order {
		logSum, logSumCPU := 0.0, 0.0
		var below, lostAll []string
		for _, c := range byThreads[t] {
			m := median(c.rps)
			logSum += math.Log(m)
			logSumCPU += math.Log(median(c.cpu))
			if m < 1 {
				below = append(below, fmt.Sprintf("%s (%.2f×, %s)", c.name, m, spread(c.rps)))
			}
			if slices.Max(c.rps) < 1 {
				lostAll = append(lostAll, c.name)
			}
		}
		n := float64(len(byThreads[t]))
		fmt.Fprintf(b, "\n`io-threads %d`: geometric mean of the cells' ratios %.3f× in rps, %.3f× in rps/CPU. ", t, math.Exp(logSum/n), math.Exp(logSumCPU/n))
		if len(below) == 0 {
			fmt.Fprintf(b, "iocache's median ratio is at least 1.0× in every cell.")
		} else {
			fmt.Fprintf(b, "Cells with a median ratio below 1.0×: %s.", strings.Join(below, "; "))
		}
		if len(lostAll) == 0 {
			fmt.Fprintf(b, " No cell where redis-server was faster in all %d runs.\n", runs)
		} else {
			fmt.Fprintf(b, " Cells where redis-server was faster in all %d runs: %s.\n", runs, strings.Join(lostAll, "; "))
		}
	}
}

func median(xs []float64) float64 {
	s := append([]float64(nil), xs...)
	sort.Float64s(s)
	if len(s)%2 == 0 {
		return (s[len(s)/2-1] + s[len(s)/2]) / 2
	}
	return s[len(s)/2]
}

func fatalf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "benchcmp: "+format+"\n", a...)
	os.Exit(1)
}

// fill writes n small keys with valueSize-byte values with a pipelined writer and returns the RSS
// growth per key.
func fill(s *server, n, valueSize int) float64 {
	conn, err := net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", s.port))
	if err != nil {
		fatalf("dial: %v", err)
	}
	defer conn.Close()
	base := s.rssBytes()
	w := bufio.NewWriterSize(conn, 1<<16)
	r := bufio.NewReaderSize(conn, 1<<16)
	value := strings.Repeat("x", valueSize)
	done := make(chan error, 1)
	go func() {
		for i := 0; i < n; i++ {
			if _, err := r.ReadString('\n'); err != nil {
				done <- err
				return
			}
		}
		done <- nil
	}()
	for i := 0; i < n; i++ {
		k := fmt.Sprintf("key:%012d", i)
		fmt.Fprintf(w, "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", len(k), k, valueSize, value)
	}
	if err := w.Flush(); err != nil {
		fatalf("fill: %v", err)
	}
	if err := <-done; err != nil {
		fatalf("fill: %v", err)
	}
	time.Sleep(500 * time.Millisecond)
	return float64(s.rssBytes()-base) / float64(n)
}

func machine() string {
	model := "unknown CPU"
	if b, err := os.ReadFile("/proc/cpuinfo"); err == nil {
		for _, l := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(l, "model name") {
				model = strings.TrimSpace(strings.SplitN(l, ":", 2)[1])
				break
			}
		}
	}
	kernel, _ := os.ReadFile("/proc/sys/kernel/osrelease")
	return fmt.Sprintf("%d CPUs (%s), Linux %s, %s", runtime.NumCPU(), model, strings.TrimSpace(string(kernel)), runtime.Version())
}

// loadavg is /proc/loadavg's 1, 5 and 15 minute averages, to say how busy the machine was.
func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// parseInts reads a comma-separated list of integers, skipping empty entries.
func parseInts(list string) []int {
	var ns []int
	for _, f := range strings.Split(list, ",") {
		if strings.TrimSpace(f) == "" {
			continue
		}
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil {
			fatalf("bad list of numbers %q", list)
		}
		ns = append(ns, n)
	}
	return ns
}

func main() {
	redisBin := flag.String("redis-server", "redis-server", "redis-server to compare with")
	benchBin := flag.String("redis-benchmark", "redis-benchmark", "redis-benchmark binary")
	ioBin := flag.String("iocache-server", "bin/iocache-server", "iocache-server binary")
	requests := flag.Int("requests", 100000, "requests per run (pipelined runs use 10x)")
	runs := flag.Int("runs", 7, "runs per cell; the median of the paired ratios is reported (3 left cells of two equal servers 10% apart on a shared 2-core VM)")
	clientThreads := flag.Int("client-threads", 2, "redis-benchmark --threads")
	threadsList := flag.String("io-threads", "1,2", "io-threads settings to measure")
	collections := flag.String("collections", "HSET,SADD,ZADD,LPUSH", "redis-benchmark collection tests to measure, each on a small and a large collection (empty: none)")
	members := flag.Int("members", 100000, "-r of the large-collection cells")
	keys := flag.Int("memory-keys", 1000000, "keys for the memory-per-key measurement (0 skips it)")
	valueSize := flag.Int("memory-value-size", 16, "value size for the memory-per-key measurement (the issue's harness: 16 bytes)")
	out := flag.String("out", "docs/benchmarks.md", "markdown file to write")
	ceilingMode := flag.Bool("ceiling", false, "measure instead the main thread's share of a command's CPU with the I/O threads on, and the ceiling it sets (ceiling.go)")
	scalingMode := flag.Bool("scaling", false, "measure instead requests/s against io-threads, server and client on CPUs of their own (scaling.go; 8 CPUs or more, else a smoke run)")
	flag.Parse()
	if *scalingMode {
		var sweep []int // --io-threads given: those settings instead of the planned sweep
		flag.Visit(func(f *flag.Flag) {
			if f.Name == "io-threads" {
				sweep = parseInts(*threadsList)
			}
		})
		scaling(*benchBin, *redisBin, *ioBin, *out, *runs, sweep)
		return
	}
	if *ceilingMode {
		ceiling(*benchBin, *ioBin, *out, *requests, *runs, *clientThreads)
		return
	}

	ioThreads := parseInts(*threadsList) // --io-threads "": only the memory measurement
	var cells []cell
	for _, t := range ioThreads {
		for _, load := range []struct{ c, p int }{{50, 1}, {400, 1}, {50, 16}} {
			for _, test := range []string{"GET", "SET"} {
				for _, size := range []int{3, 256} {
					cells = append(cells, cell{ioThreads: t, clients: load.c, pipeline: load.p, test: test, size: size})
				}
			}
		}
		for _, load := range []struct{ c, p int }{{50, 1}, {50, 16}} {
			for _, test := range strings.Split(*collections, ",") {
				if test = strings.ToUpper(strings.TrimSpace(test)); test == "" {
					continue
				}
				for _, m := range []int{0, *members} {
					cells = append(cells, cell{ioThreads: t, clients: load.c, pipeline: load.p, test: test, size: 16, members: m})
				}
			}
		}
	}
	redisVersion, _ := exec.Command(*redisBin, "--version").Output()

	var b strings.Builder
	fmt.Fprintf(&b, "# iocache-server vs redis-server, side by side\n\n")
	fmt.Fprintf(&b, "Generated by `make bench` (`go run ./hack/benchcmp %s`) on %s.\n\n", strings.Join(os.Args[1:], " "), time.Now().UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "- Machine: %s. Client and servers share these CPUs, as in the seed measurements. Load average at start: %s.\n", machine(), loadavg())
	fmt.Fprintf(&b, "- Peer: %s", strings.TrimSpace(string(redisVersion)))
	fmt.Fprintf(&b, " started with `--save '' --appendonly no --io-threads N --io-threads-do-reads yes`; iocache-server with `--io-threads N`.\n")
	fmt.Fprintf(&b, "- Load: `redis-benchmark -t TEST -n %d -c CONNS -P PIPELINE -d SIZE --threads %d` (pipelined runs use -n %d); the two servers alternate run by run, in turns (redis first, then iocache first); each cell is the median of %d runs.\n", *requests, *clientThreads, *requests*10, *runs)
	fmt.Fprintf(&b, "- rps = requests per second, the server's own total_commands_processed sampled every 50 ms over the steady part of each run (redis-benchmark's figure with --threads moves in 250 ms steps); rps/CPU = requests per second of server CPU time (user+system from /proc/PID/stat), steadier when client and server share cores. Ratio = iocache / redis: the median of the %d paired ratios (each iocache run over the redis run next to it in time, so that the machine's drift between minutes cancels), with their range in brackets.\n\n", *runs)
	fmt.Fprintf(&b, "| io-threads | load | test | value | redis rps | iocache rps | ratio | redis rps/CPU | iocache rps/CPU | ratio |\n")
	fmt.Fprintf(&b, "|---|---|---|---|---:|---:|---:|---:|---:|---:|\n")

	type result struct{ redis, iocache sample }
	// iocache's io-threads N is compared with its own io-threads 1 measured in the same minutes:
	// a baseline server runs next to the two others in every phase after the first, and its runs
	// alternate with theirs. Comparing with the first phase instead would compare two moments of
	// a shared machine, whose drift (other work, CPU frequency) is as large as the effect measured.
	var selfRatios = map[int][]string{}
	var cellRatios []pairedCell
	for _, t := range ioThreads {
		rs := start(redisKind, *redisBin, t)
		is := start(iocacheKind, *ioBin, t)
		var base *server
		if t != 1 {
			base = start(iocacheKind, *ioBin, 1)
		}
		for _, c := range cells {
			if c.ioThreads != t {
				continue
			}
			n := *requests
			if c.pipeline > 1 {
				n *= 10 // a pipelined run of 1M requests still lasts about 2 s
			}
			for _, srv := range []*server{rs, is, base} {
				if srv != nil {
					srv.flushAll()
				}
			}
			var rr, ir, rc, ic, pr, pc, bp []float64
			for i := 0; i < *runs; i++ {
				// Each run of one server is paired with the next run of the other, and the order
				// turns every run (redis first, then iocache first), so that neither server is
				// always the one measured after the other.
				var a, z, base1 sample
				if i%2 == 0 {
					a = run(*benchBin, rs, c, n, *clientThreads)
					z = run(*benchBin, is, c, n, *clientThreads)
				} else {
					z = run(*benchBin, is, c, n, *clientThreads)
					a = run(*benchBin, rs, c, n, *clientThreads)
				}
				rr, rc = append(rr, a.rps), append(rc, a.rpsCPU)
				ir, ic = append(ir, z.rps), append(ic, z.rpsCPU)
				pr, pc = append(pr, z.rps/a.rps), append(pc, z.rpsCPU/a.rpsCPU)
				if base != nil {
					base1 = run(*benchBin, base, c, n, *clientThreads)
					bp = append(bp, z.rps/base1.rps)
				}
			}
			res := result{sample{median(rr), median(rc)}, sample{median(ir), median(ic)}}
			if base != nil {
				selfRatios[t] = append(selfRatios[t], fmt.Sprintf("%.2f", median(bp)))
			}
			cellRatios = append(cellRatios, pairedCell{ioThreads: t, name: fmt.Sprintf("%s %s %d B", c.load(), c.testName(), c.size), rps: pr, cpu: pc})
			line := fmt.Sprintf("| %d | %s | %s | %d B | %.0f | %.0f | %.2f× %s | %.0f | %.0f | %.2f× %s |\n", t, c.load(), c.testName(), c.size,
				res.redis.rps, res.iocache.rps, median(pr), spread(pr), res.redis.rpsCPU, res.iocache.rpsCPU, median(pc), spread(pc))
			b.WriteString(line)
			fmt.Print(line)
		}
		rs.stop()
		is.stop()
		if base != nil {
			base.stop()
		}
	}
	for _, t := range ioThreads {
		if r := selfRatios[t]; len(r) > 0 {
			fmt.Fprintf(&b, "\niocache `io-threads %d` vs its own `io-threads 1`, cell by cell (rps; medians of %d runs each, an io-threads 1 server's runs alternating with the table's in the same phase): %s.\n",
				t, *runs, strings.Join(r, ", "))
			fmt.Printf("io-threads %d vs 1: %s\n", t, strings.Join(r, ", "))
		}
	}
	summarize(&b, cellRatios, *runs)
	fmt.Fprintf(&b, "\nLoad average at the end of the runs: %s (other work on the machine lowers both servers' rps alike; rps/CPU is steadier).\n", loadavg())
	if *keys > 0 {
		rs := start(redisKind, *redisBin, 1)
		is := start(iocacheKind, *ioBin, 1)
		rk := fill(rs, *keys, *valueSize)
		ik := fill(is, *keys, *valueSize)
		rs.stop()
		is.stop()
		fmt.Fprintf(&b, "\n## Memory per key\n\n%d keys `key:NNNNNNNNNNNN` with %d-byte values, written with pipelined SETs; resident memory growth (VmRSS) per key.\n\n", *keys, *valueSize)
		fmt.Fprintf(&b, "| redis | iocache | ratio |\n|---:|---:|---:|\n| %.1f B | %.1f B | %.2f× |\n", rk, ik, ik/rk)
		fmt.Printf("memory per key: redis %.1f B, iocache %.1f B (%.2f×)\n", rk, ik, ik/rk)
	}
	if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
		fatalf("%v", err)
	}
	if err := os.WriteFile(*out, []byte(b.String()), 0o644); err != nil {
		fatalf("%v", err)
	}
	fmt.Printf("wrote %s\n", *out)
}
