// Command bgsavebench measures what a background save costs the clients of redis-server (fork)
// and of iocache-server (forkless) on the same data: a BGSAVE, and a BGREWRITEAOF of a server
// with appendonly yes. Both servers are filled with the same keys, then writers overwrite random
// keys with pipelined SETs while a probe client sends PING once a millisecond. It reports the
// writers' throughput before and during the save and the longest probe round trip during the
// save (the worst pause a client saw), as a markdown table. `make bench` runs it; pass -keys to
// change the data set size (1,000,000 by default).
package main

import (
	"bufio"
	"flag"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// saveKind is one kind of background save: the command that starts it, the reply that says it
// started, the INFO persistence fields that say it runs and how it ended, and the server
// arguments it needs.
type saveKind struct {
	name, command, started string
	inProgress, lastStatus string
	args                   []string
}

var saveKinds = []saveKind{
	{name: "BGSAVE", command: "BGSAVE", started: "Background saving started",
		inProgress: "rdb_bgsave_in_progress:0", lastStatus: "rdb_last_bgsave_status:ok",
		args: []string{"--appendonly", "no"}},
	// The log's writes go on while it is rewritten, fsynced every second as most users run it;
	// the base is an RDB (aof-use-rdb-preamble yes, both servers' default). No automatic rewrite
	// may start before the measured one.
	{name: "BGREWRITEAOF", command: "BGREWRITEAOF", started: "Background append only file rewriting started",
		inProgress: "aof_rewrite_in_progress:0", lastStatus: "aof_last_bgrewrite_status:ok",
		args: []string{"--appendonly", "yes", "--appendfsync", "everysec", "--auto-aof-rewrite-percentage", "0"}},
}

type result struct {
	name, kind             string
	before, during         float64 // writes per second
	worstPause, p99Pause   time.Duration
	saveSeconds            float64
	probesBefore, probesIn int
	worstBefore            time.Duration
}

func main() {
	keys := flag.Int("keys", 1_000_000, "keys to fill each server with")
	valueSize := flag.Int("value-size", 32, "bytes per value")
	writers := flag.Int("writers", 4, "writer connections")
	pipeline := flag.Int("pipeline", 32, "SETs per writer round trip")
	baseline := flag.Duration("baseline", 3*time.Second, "how long to measure before the save")
	redisBin := flag.String("redis-server", "redis-server", "redis-server binary")
	ioBin := flag.String("iocache-server", "bin/iocache-server", "iocache-server binary")
	flag.Parse()
	var results []result
	for _, kind := range saveKinds {
		for _, srv := range []struct{ name, bin string }{{"redis-server (fork)", *redisBin}, {"iocache-server (forkless)", *ioBin}} {
			results = append(results, measure(srv.name, srv.bin, kind, *keys, *valueSize, *writers, *pipeline, *baseline))
		}
	}
	fmt.Printf("# Background saves under write load, %d keys of %d bytes\n\n", *keys, *valueSize)
	fmt.Printf("%d writer connections pipelining %d SETs of random existing keys; a probe sends PING every millisecond.\n", *writers, *pipeline)
	fmt.Printf("BGREWRITEAOF runs with appendonly yes and appendfsync everysec, before and during the rewrite.\n")
	fmt.Printf("Pause: the longest PING round trip while the save ran. Machine: %d CPUs, load %s.\n\n", numCPU(), loadavg())
	fmt.Println("| save | server | writes/s before | writes/s during save | ratio | worst pause during save | p99 probe during save | worst probe before | save took |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|")
	for _, r := range results {
		fmt.Printf("| %s | %s | %.0f | %.0f | %.2fx | %.2f ms | %.2f ms | %.2f ms | %.2f s |\n", r.kind, r.name, r.before, r.during, r.during/r.before,
			ms(r.worstPause), ms(r.p99Pause), ms(r.worstBefore), r.saveSeconds)
	}
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

func measure(name, bin string, kind saveKind, keys, valueSize, writers, pipeline int, baseline time.Duration) result {
	dir, err := os.MkdirTemp("", "bgsavebench")
	check(err)
	defer func() { _ = os.RemoveAll(dir) }()
	port := freePort()
	args := append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--dir", dir}, kind.args...)
	if strings.Contains(name, "iocache") {
		args = append(args, "--metrics-port", "0")
	}
	cmd := exec.Command(bin, args...)
	check(cmd.Start())
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	addr := fmt.Sprintf("127.0.0.1:%d", port)
	waitUp(addr)
	fill(addr, keys, valueSize)

	var ops atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func(seed int) {
			defer wg.Done()
			write(addr, seed, keys, valueSize, pipeline, &ops, stop)
		}(w)
	}
	probe := newProbe(addr)
	go probe.run(stop)
	time.Sleep(500 * time.Millisecond) // warm up
	t0, o0 := time.Now(), ops.Load()
	probe.mark()
	time.Sleep(baseline)
	before := float64(ops.Load()-o0) / time.Since(t0).Seconds()
	beforeRTTs := probe.mark()

	ctl := dial(addr)
	saveStart := time.Now()
	if reply := ctl.do(kind.command); !strings.Contains(reply, kind.started) {
		fail("%s: %s: %q", name, kind.command, reply)
	}
	o1 := ops.Load()
	for {
		time.Sleep(5 * time.Millisecond)
		if strings.Contains(ctl.do("INFO", "persistence"), kind.inProgress) {
			break
		}
		if time.Since(saveStart) > 5*time.Minute {
			fail("%s: %s did not finish", name, kind.command)
		}
	}
	saveTook := time.Since(saveStart)
	during := float64(ops.Load()-o1) / saveTook.Seconds()
	saveRTTs := probe.mark()
	close(stop)
	wg.Wait()
	if !strings.Contains(ctl.do("INFO", "persistence"), kind.lastStatus) {
		fail("%s: %s failed", name, kind.command)
	}
	r := result{name: name, kind: kind.name, before: before, during: during, saveSeconds: saveTook.Seconds(), probesBefore: len(beforeRTTs), probesIn: len(saveRTTs)}
	r.worstBefore = maxOf(beforeRTTs)
	r.worstPause = maxOf(saveRTTs)
	r.p99Pause = percentile(saveRTTs, 0.99)
	return r
}

func maxOf(xs []time.Duration) time.Duration {
	var m time.Duration
	for _, x := range xs {
		m = max(m, x)
	}
	return m
}

func percentile(xs []time.Duration, p float64) time.Duration {
	if len(xs) == 0 {
		return 0
	}
	s := append([]time.Duration(nil), xs...)
	sort.Slice(s, func(i, j int) bool { return s[i] < s[j] })
	return s[int(float64(len(s)-1)*p)]
}

// probe sends PING once a millisecond and records each round trip.
type probe struct {
	c    *conn
	mu   sync.Mutex
	rtts []time.Duration
}

func newProbe(addr string) *probe { return &probe{c: dial(addr)} }

func (p *probe) run(stop chan struct{}) {
	t := time.NewTicker(time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
		}
		start := time.Now()
		p.c.do("PING")
		rtt := time.Since(start)
		p.mu.Lock()
		p.rtts = append(p.rtts, rtt)
		p.mu.Unlock()
	}
}

// mark returns the round trips since the last mark.
func (p *probe) mark() []time.Duration {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := p.rtts
	p.rtts = nil
	return out
}

func write(addr string, seed, keys, valueSize, pipeline int, ops *atomic.Int64, stop chan struct{}) {
	c := dial(addr)
	val := strings.Repeat("w", valueSize)
	x := uint64(seed)*0x9e3779b97f4a7c15 + 1
	var b []byte
	for {
		select {
		case <-stop:
			return
		default:
		}
		b = b[:0]
		for i := 0; i < pipeline; i++ {
			x ^= x << 13
			x ^= x >> 7
			x ^= x << 17
			k := "key:" + strconv.Itoa(int(x%uint64(keys)))
			b = fmt.Appendf(b, "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", len(k), k, len(val), val)
		}
		if _, err := c.c.Write(b); err != nil {
			fail("write: %v", err)
		}
		for i := 0; i < pipeline; i++ {
			if _, err := c.r.ReadString('\n'); err != nil {
				fail("read: %v", err)
			}
		}
		ops.Add(int64(pipeline))
	}
}

func fill(addr string, keys, valueSize int) {
	c := dial(addr)
	val := strings.Repeat("v", valueSize)
	const batch = 1000
	var b []byte
	for i := 0; i < keys; i += batch {
		b = b[:0]
		n := min(batch, keys-i)
		for j := 0; j < n; j++ {
			k := "key:" + strconv.Itoa(i+j)
			b = fmt.Appendf(b, "*3\r\n$3\r\nSET\r\n$%d\r\n%s\r\n$%d\r\n%s\r\n", len(k), k, len(val), val)
		}
		if _, err := c.c.Write(b); err != nil {
			fail("fill: %v", err)
		}
		for j := 0; j < n; j++ {
			if _, err := c.r.ReadString('\n'); err != nil {
				fail("fill: %v", err)
			}
		}
	}
}

type conn struct {
	c net.Conn
	r *bufio.Reader
}

func dial(addr string) *conn {
	c, err := net.Dial("tcp", addr)
	check(err)
	return &conn{c: c, r: bufio.NewReaderSize(c, 1<<16)}
}

// do sends one command and returns its reply (simple, error, integer or bulk).
func (c *conn) do(args ...string) string {
	var b []byte
	b = fmt.Appendf(b, "*%d\r\n", len(args))
	for _, a := range args {
		b = fmt.Appendf(b, "$%d\r\n%s\r\n", len(a), a)
	}
	_, err := c.c.Write(b)
	check(err)
	line, err := c.r.ReadString('\n')
	check(err)
	if line[0] != '$' {
		return line
	}
	n, _ := strconv.Atoi(strings.TrimSpace(line[1:]))
	buf := make([]byte, n+2)
	_, err = io.ReadFull(c.r, buf)
	check(err)
	return string(buf)
}

func waitUp(addr string) {
	for i := 0; i < 500; i++ {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	fail("nothing listens on %s", addr)
}

func freePort() int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	check(err)
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

func numCPU() int {
	b, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return 0
	}
	return strings.Count(string(b), "processor\t:")
}

func loadavg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	return strings.Join(strings.Fields(string(b))[:3], " ")
}

func check(err error) {
	if err != nil {
		fail("%v", err)
	}
}

func fail(format string, a ...any) {
	fmt.Fprintf(os.Stderr, "bgsavebench: "+format+"\n", a...)
	os.Exit(1)
}
