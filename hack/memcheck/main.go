// Command memcheck runs iocache-server (and, for comparison, redis-server) inside a memory
// cgroup with maxmemory at 90% of the cgroup's limit, writes three times the limit in values of
// mixed sizes with allkeys-lru eviction, and samples resident memory (RSS) against used_memory.
// It shows that a cache at its limit is not OOM-killed, the property the operator relies on when
// it sets maxmemory to 90% of a pod's memory limit. It needs root and a cgroup memory controller;
// `make bench` runs it.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"
)

func fatalf(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "memcheck: "+format+"\n", a...)
	os.Exit(1)
}

// cgroup is a memory cgroup this tool creates and removes.
type cgroup struct {
	dir   string
	v2    bool
	limit int64
}

func newCgroup(limit int64) (*cgroup, error) {
	name := fmt.Sprintf("iocache-memcheck-%d", os.Getpid())
	if _, err := os.Stat("/sys/fs/cgroup/memory"); err == nil {
		dir := filepath.Join("/sys/fs/cgroup/memory", name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			return nil, err
		}
		if err := os.WriteFile(filepath.Join(dir, "memory.limit_in_bytes"), []byte(strconv.FormatInt(limit, 10)), 0o644); err != nil {
			return nil, err
		}
		return &cgroup{dir: dir, limit: limit}, nil
	}
	dir := filepath.Join("/sys/fs/cgroup", name)
	if err := os.Mkdir(dir, 0o755); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(dir, "memory.max"), []byte(strconv.FormatInt(limit, 10)), 0o644); err != nil {
		return nil, err
	}
	return &cgroup{dir: dir, v2: true, limit: limit}, nil
}

func (c *cgroup) remove() { _ = os.Remove(c.dir) }

// ooms counts OOM kills in the cgroup.
func (c *cgroup) ooms() string {
	file := "memory.oom_control"
	if c.v2 {
		file = "memory.events"
	}
	b, _ := os.ReadFile(filepath.Join(c.dir, file))
	m := regexp.MustCompile(`oom_kill (\d+)`).FindSubmatch(b)
	if m == nil {
		return "0"
	}
	return string(m[1])
}

type run struct {
	name               string
	maxRSS, maxUsed    int64
	finalRSS, finalUsd int64
	written            int64
	evicted            string
	ooms               string
	alive              bool
	elapsed            time.Duration
}

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fatalf("%v", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func rss(pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	m := regexp.MustCompile(`VmRSS:\s+(\d+) kB`).FindSubmatch(b)
	if m == nil {
		return 0
	}
	kb, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return kb * 1024
}

// conn is a minimal RESP connection for INFO and pipelined SETs.
type conn struct {
	c net.Conn
	r *bufio.Reader
	w *bufio.Writer
}

func dial(port int) *conn {
	var c net.Conn
	var err error
	for i := 0; i < 100; i++ {
		if c, err = net.Dial("tcp", fmt.Sprintf("127.0.0.1:%d", port)); err == nil {
			return &conn{c: c, r: bufio.NewReaderSize(c, 1<<16), w: bufio.NewWriterSize(c, 1<<16)}
		}
		time.Sleep(50 * time.Millisecond)
	}
	fatalf("dial: %v", err)
	return nil
}

func (c *conn) cmd(args ...string) {
	fmt.Fprintf(c.w, "*%d\r\n", len(args))
	for _, a := range args {
		fmt.Fprintf(c.w, "$%d\r\n%s\r\n", len(a), a)
	}
}

// reply reads one reply and returns it (bulk contents for bulk replies).
func (c *conn) reply() (string, error) {
	line, err := c.r.ReadString('\n')
	if err != nil {
		return "", err
	}
	line = strings.TrimRight(line, "\r\n")
	if len(line) > 0 && (line[0] == '$' || line[0] == '=') {
		n, _ := strconv.Atoi(line[1:])
		if n < 0 {
			return "", nil
		}
		buf := make([]byte, n+2)
		if _, err := io_ReadFull(c.r, buf); err != nil {
			return "", err
		}
		return string(buf[:n]), nil
	}
	return line, nil
}

func io_ReadFull(r *bufio.Reader, buf []byte) (int, error) {
	n := 0
	for n < len(buf) {
		m, err := r.Read(buf[n:])
		n += m
		if err != nil {
			return n, err
		}
	}
	return n, nil
}

func (c *conn) info(field string) string {
	c.cmd("INFO", "all")
	if err := c.w.Flush(); err != nil {
		return ""
	}
	s, err := c.reply()
	if err != nil {
		return ""
	}
	m := regexp.MustCompile(field + `:(\S+)`).FindStringSubmatch(s)
	if m == nil {
		return ""
	}
	return m[1]
}

func measure(name, bin string, args []string, limit int64, factor int) run {
	cg, err := newCgroup(limit)
	if err != nil {
		fatalf("creating a memory cgroup (needs root): %v", err)
	}
	defer cg.remove()
	port := freePort()
	maxmem := limit * 9 / 10
	all := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--maxmemory", strconv.FormatInt(maxmem, 10), "--maxmemory-policy", "allkeys-lru"}, args...)
	// Enter the cgroup before exec, so the server starts inside it and can read its limit.
	script := `echo $$ > "$0"; exec "$@"`
	procs := filepath.Join(cg.dir, "cgroup.procs")
	cmd := exec.Command("sh", append([]string{"-c", script, procs, bin}, all...)...)
	if err := cmd.Start(); err != nil {
		fatalf("starting %s: %v", bin, err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	defer func() { _ = cmd.Process.Kill(); <-exited }()
	w := dial(port)
	probe := dial(port)
	res := run{name: name}
	start := time.Now()
	// Reader goroutine drains replies; the writer keeps a bounded window in flight.
	var sent, acked int64
	done := make(chan struct{})
	go func() {
		defer close(done)
		for {
			if _, err := w.reply(); err != nil {
				return
			}
			acked++
		}
	}()
	rng := rand.New(rand.NewPCG(1, 2))
	sizes := []int{100, 1000, 10000, 100000}
	weights := []int{50, 30, 15, 5}
	target := limit * int64(factor)
	nextSample := time.Now()
	for res.written < target {
		select {
		case <-exited:
			res.alive = false
			res.elapsed = time.Since(start)
			res.ooms = cg.ooms()
			return res
		default:
		}
		p := rng.IntN(100)
		size := sizes[3]
		for i, wgt := range weights {
			if p < wgt {
				size = sizes[i]
				break
			}
			p -= wgt
		}
		key := "k:" + strconv.FormatInt(sent, 10)
		w.cmd("SET", key, strings.Repeat("x", size))
		sent++
		res.written += int64(size + len(key))
		if sent%64 == 0 {
			if err := w.w.Flush(); err != nil {
				break
			}
			for sent-acked > 2048 {
				time.Sleep(100 * time.Microsecond)
			}
		}
		if time.Now().After(nextSample) {
			nextSample = time.Now().Add(100 * time.Millisecond)
			r := rss(cmd.Process.Pid)
			used, _ := strconv.ParseInt(probe.info("used_memory"), 10, 64)
			res.maxRSS = max(res.maxRSS, r)
			res.maxUsed = max(res.maxUsed, used)
		}
	}
	_ = w.w.Flush() // a writer that failed above stopped the loop; what it measured stands
	time.Sleep(500 * time.Millisecond)
	res.finalRSS = rss(cmd.Process.Pid)
	res.finalUsd, _ = strconv.ParseInt(probe.info("used_memory"), 10, 64)
	res.maxRSS = max(res.maxRSS, res.finalRSS)
	res.evicted = probe.info("evicted_keys")
	res.alive = cmd.ProcessState == nil
	select {
	case <-exited:
		res.alive = false
	default:
	}
	res.ooms = cg.ooms()
	res.elapsed = time.Since(start)
	return res
}

func main() {
	limitMB := flag.Int64("limit-mb", 256, "memory cgroup limit (MiB)")
	factor := flag.Int("factor", 3, "bytes written as a multiple of the limit")
	ioBin := flag.String("iocache-server", "bin/iocache-server", "iocache-server binary")
	redisBin := flag.String("redis-server", "redis-server", "redis-server binary")
	out := flag.String("out", "docs/memory.md", "markdown file to write")
	flag.Parse()
	limit := *limitMB << 20
	runs := []run{
		measure("iocache-server", *ioBin, []string{"--metrics-port", "0", "--save", ""}, limit, *factor),
		measure("redis-server", *redisBin, []string{"--save", "", "--appendonly", "no"}, limit, *factor),
	}
	var b strings.Builder
	fmt.Fprintf(&b, "# Memory under a container limit: fill and evict\n\n")
	fmt.Fprintf(&b, "Generated by `make bench` (`go run ./hack/memcheck %s`) on %s.\n\n", strings.Join(os.Args[1:], " "), time.Now().UTC().Format("2006-01-02 15:04 MST"))
	fmt.Fprintf(&b, "Each server runs in a memory cgroup limited to %d MiB with `maxmemory` at 90%% of it (%d bytes) and `allkeys-lru`, as the operator configures a pod. A client writes %d× the limit in SETs of 100 B (50%%), 1 KB (30%%), 10 KB (15%%) and 100 KB (5%%), pipelined; RSS (VmRSS) and `used_memory` are sampled every 100 ms.\n\n", *limitMB, limit*9/10, *factor)
	fmt.Fprintf(&b, "| server | written | max RSS | max RSS / limit | max used_memory | final RSS / used_memory | evicted keys | OOM kills | survived | time |\n")
	fmt.Fprintf(&b, "|---|---:|---:|---:|---:|---:|---:|---:|---|---:|\n")
	for _, r := range runs {
		ratio := 0.0
		if r.finalUsd > 0 {
			ratio = float64(r.finalRSS) / float64(r.finalUsd)
		}
		line := fmt.Sprintf("| %s | %d MiB | %d MiB | %.2f | %d MiB | %.2f | %s | %s | %v | %.1f s |\n", r.name, r.written>>20, r.maxRSS>>20,
			float64(r.maxRSS)/float64(limit), r.maxUsed>>20, ratio, r.evicted, r.ooms, r.alive, r.elapsed.Seconds())
		b.WriteString(line)
		fmt.Print(line)
	}
	if err := os.MkdirAll(filepath.Dir(*out), 0o755); err != nil {
		fatalf("%v", err)
	}
	if err := os.WriteFile(*out, []byte(b.String()), 0o644); err != nil {
		fatalf("%v", err)
	}
	fmt.Printf("wrote %s\n", *out)
}
