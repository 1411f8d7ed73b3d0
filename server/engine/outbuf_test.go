package engine

import (
	"fmt"
	"io"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Clients that never read (issue 17): a subscriber that stops reading while 1 MB messages are
// published took the server past 4 GB in 6 s (the 32 MB pub/sub limit was not applied with
// io-threads 1, nor to a RESP3 subscriber blocked in BLPOP with io-threads 2); MONITOR and
// pipelined GETs the same. Each test runs iocache-server as its own process, watches its RSS and
// a second client's PING round trips during the flood, and requires the reader-less client to
// be cut, the RSS to stay within the stated bound, and the other client to be answered.

// rssOf is a process's resident set size in bytes.
func rssOf(t testing.TB, pid int) int64 {
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "VmRSS:" {
			kb, _ := strconv.ParseInt(f[1], 10, 64)
			return kb << 10
		}
	}
	t.Fatal("no VmRSS")
	return 0
}

// floodWatch samples a server's RSS and a probe client's PING round trip until stopped.
type floodWatch struct {
	maxRSS  atomic.Int64
	maxPing atomic.Int64 // ns
	pings   atomic.Int64
	stop    chan struct{}
	wg      sync.WaitGroup
}

func watchFlood(t *testing.T, addr string, pid int) *floodWatch {
	w := &floodWatch{stop: make(chan struct{})}
	probe := dialPeer(t, addr)
	w.wg.Add(2)
	go func() {
		defer w.wg.Done()
		for {
			if r := rssOf(t, pid); r > w.maxRSS.Load() {
				w.maxRSS.Store(r)
			}
			select {
			case <-w.stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	}()
	go func() {
		defer w.wg.Done()
		for {
			start := time.Now()
			if _, err := io.WriteString(probe.c, "*1\r\n$4\r\nPING\r\n"); err != nil {
				return
			}
			_ = probe.c.SetReadDeadline(time.Now().Add(10 * time.Second))
			if l, err := probe.br.ReadString('\n'); err != nil || l != "+PONG\r\n" {
				return
			}
			if d := int64(time.Since(start)); d > w.maxPing.Load() {
				w.maxPing.Store(d)
			}
			w.pings.Add(1)
			select {
			case <-w.stop:
				return
			case <-time.After(10 * time.Millisecond):
			}
		}
	}()
	return w
}

func (w *floodWatch) finish() { close(w.stop); w.wg.Wait() }

// expectCut reads what the server sent c until it closes the connection, and fails if it does
// not within 10 s; it returns how many bytes came.
func expectCut(t *testing.T, c net.Conn, what string) int64 {
	t.Helper()
	_ = c.SetReadDeadline(time.Now().Add(10 * time.Second))
	n, err := io.Copy(io.Discard, c)
	if err != nil {
		t.Fatalf("%s: not disconnected (%v after %d bytes)", what, err, n)
	}
	return n
}

// smallReceiveBuffer keeps the kernel from absorbing much of what a non-reading client is sent,
// so the server's own buffering is what the test sees.
func smallReceiveBuffer(t *testing.T, addr string) net.Conn {
	d := net.Dialer{Control: nil}
	c, err := d.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	_ = c.(*net.TCPConn).SetReadBuffer(64 << 10)
	t.Cleanup(func() { c.Close() })
	return c
}

// flood runs fn's commands from a writer that reads its own replies, count times.
func flood(t *testing.T, addr string, count int, args ...string) {
	w := dialPeer(t, addr)
	for i := 0; i < count; i++ {
		w.do(args...)
	}
}

const (
	mb = 1 << 20
	// floodOverhead is the RSS allowed during a flood beyond twice the configured client limits
	// (the collector lets garbage grow as large as the live heap before it runs, so buffers a
	// limit allows may cost twice their size): the in-flight 1 MB messages of the writer and of
	// the I/O threads, and the runtime's own memory.
	floodOverhead = 96 * mb
)

func TestNonReadingSubscriberIsCut(t *testing.T) {
	for _, tc := range []struct {
		name    string
		threads string
		resp3   bool
	}{{"io-threads 1", "1", false}, {"io-threads 2", "2", false}, {"io-threads 2, RESP3 subscriber blocked in BLPOP", "2", true}} {
		t.Run(tc.name, func(t *testing.T) {
			addr, cmd := startProcess(t, "--io-threads", tc.threads)
			base := rssOf(t, cmd.Process.Pid)
			sub := smallReceiveBuffer(t, addr)
			setup := "*2\r\n$9\r\nSUBSCRIBE\r\n$2\r\nch\r\n"
			if tc.resp3 {
				setup = "*2\r\n$5\r\nHELLO\r\n$1\r\n3\r\n" + setup + "*3\r\n$5\r\nBLPOP\r\n$6\r\nnolist\r\n$1\r\n0\r\n"
			}
			if _, err := io.WriteString(sub, setup); err != nil {
				t.Fatal(err)
			}
			time.Sleep(100 * time.Millisecond)
			w := watchFlood(t, addr, cmd.Process.Pid)
			msg := strings.Repeat("m", mb)
			flood(t, addr, 300, "PUBLISH", "ch", msg) // 300 MB for a subscriber that reads nothing
			got := expectCut(t, sub, "subscriber")
			w.finish()
			bound := base + 2*32*mb + floodOverhead
			t.Logf("subscriber received %d MB before the cut; RSS %d MB at start, at most %d MB (bound %d MB); %d PINGs, slowest %v",
				got/mb, base/mb, w.maxRSS.Load()/mb, bound/mb, w.pings.Load(), time.Duration(w.maxPing.Load()))
			if w.maxRSS.Load() > bound {
				t.Errorf("RSS reached %d MB, over the bound of %d MB", w.maxRSS.Load()/mb, bound/mb)
			}
			if got > 200*mb {
				t.Errorf("the subscriber received %d MB: it was not cut at the 32 MB limit", got/mb)
			}
			if w.pings.Load() == 0 {
				t.Error("the probe client was not answered during the flood")
			}
			info := dialPeer(t, addr).do("INFO", "stats")
			if regexpFind(`client_output_buffer_limit_disconnections:(\d+)`, info) != "1" {
				t.Errorf("INFO stats does not count the disconnection:\n%s", info)
			}
		})
	}
}

// MONITOR and a client pipelining GETs without reading are normal clients: Redis leaves them
// unlimited by default, and they are cut by the normal class's limit when one is configured.
func TestNonReadingNormalClientsAreCut(t *testing.T) {
	for _, threads := range []string{"1", "2"} {
		t.Run("io-threads "+threads, func(t *testing.T) {
			addr, cmd := startProcess(t, "--io-threads", threads, "--client-output-buffer-limit", "normal", "16mb", "8mb", "1")
			base := rssOf(t, cmd.Process.Pid)
			value := strings.Repeat("v", mb)
			dialPeer(t, addr).do("SET", "big", value)

			mon := smallReceiveBuffer(t, addr)
			if _, err := io.WriteString(mon, "*1\r\n$7\r\nMONITOR\r\n"); err != nil {
				t.Fatal(err)
			}
			getter := smallReceiveBuffer(t, addr)
			w := watchFlood(t, addr, cmd.Process.Pid)
			go func() { // 300 pipelined GETs of 1 MB, never read
				_, _ = io.WriteString(getter, strings.Repeat("*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n", 300))
			}()
			flood(t, addr, 200, "SET", "k", value) // each SET is a 1 MB MONITOR line
			expectCut(t, mon, "MONITOR client")
			expectCut(t, getter, "pipelining client")
			w.finish()
			bound := base + 2*2*16*mb + floodOverhead
			t.Logf("RSS %d MB at start, at most %d MB (bound %d MB); %d PINGs, slowest %v",
				base/mb, w.maxRSS.Load()/mb, bound/mb, w.pings.Load(), time.Duration(w.maxPing.Load()))
			if w.maxRSS.Load() > bound {
				t.Errorf("RSS reached %d MB, over the bound of %d MB", w.maxRSS.Load()/mb, bound/mb)
			}
		})
	}
}

// maxmemory-clients closes the largest client when all clients' buffers together pass it, and
// leaves the small ones alone.
func TestMaxMemoryClientsEvictsTheLargestClient(t *testing.T) {
	addr, _ := startProcess(t, "--maxmemory-clients", "24mb")
	ctl := dialPeer(t, addr)
	ctl.do("SET", "big", strings.Repeat("v", mb))
	getter := smallReceiveBuffer(t, addr)
	if _, err := io.WriteString(getter, strings.Repeat("*2\r\n$3\r\nGET\r\n$3\r\nbig\r\n", 200)); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // not reading
	got := expectCut(t, getter, "pipelining client")
	if got > 100*mb {
		t.Errorf("the client received %d MB before eviction", got/mb)
	}
	if pong := ctl.do("PING"); pong != "+PONG\r\n" {
		t.Fatalf("the small client was not spared: %q", pong)
	}
	if n := regexpFind(`evicted_clients:(\d+)`, ctl.do("INFO", "stats")); n != "1" {
		t.Errorf("evicted_clients is %q, want 1", n)
	}
	if v := ctl.do("CONFIG", "GET", "maxmemory-clients"); !strings.Contains(v, "25165824") {
		t.Errorf("CONFIG GET maxmemory-clients: %q", v)
	}
}

// After four concurrent 160 MB replies the process stayed near 2 GB for over a minute and near
// 1 GB after three: the runtime returns freed memory to the OS slowly, and INFO memory did not
// show where it was. Under maxmemory, four clients GET a 160 MB value and read nothing for a
// while, on iocache and on redis-server 7.0, while a second client PINGs. INFO memory must put
// the replies in mem_clients_normal (as Redis does); iocache's RSS must stay under the value plus
// twice the replies plus floodOverhead, its slowest PING under max(5 × Redis's, Redis's + 500
// ms); and once the replies are read its RSS must be back within 48 MB of the value within 5 s.
func TestMemoryOfLargeRepliesIsGivenBack(t *testing.T) {
	const (
		size    = 160 * mb
		readers = 4
	)
	type figures struct {
		held, maxRSS, peak, after int64
		slowest, givenBack        time.Duration
		pings                     int64
	}
	run := func(addr string, pid int) (f figures) {
		ctl := dialPeer(t, addr)
		ctl.do("SETRANGE", "v", strconv.Itoa(size-1), "x") // 160 MB without sending them
		ctl.do("SET", "settled", "1")
		withValue := readRSS(pid)
		probe := dialPeer(t, addr)
		m := measureHold(t, addr, pid, func() time.Duration {
			var conns []net.Conn
			for i := 0; i < readers; i++ {
				c, err := net.Dial("tcp", addr)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				if _, err := io.WriteString(c, "*2\r\n$3\r\nGET\r\n$1\r\nv\r\n"); err != nil {
					t.Fatal(err)
				}
				conns = append(conns, c)
			}
			for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
				if _, err := io.WriteString(probe.c, "*2\r\n$4\r\nINFO\r\n$6\r\nmemory\r\n"); err != nil {
					t.Fatal(err)
				}
				_ = probe.c.SetReadDeadline(time.Now().Add(30 * time.Second))
				var out strings.Builder
				if err := readRawReply(probe.br, &out); err != nil {
					t.Fatalf("INFO memory: %v", err)
				}
				if f.held, _ = strconv.ParseInt(regexpFind(`mem_clients_normal:(\d+)`, out.String()), 10, 64); f.held >= readers*size*3/4 {
					break
				}
			}
			var wg sync.WaitGroup
			for _, c := range conns {
				wg.Add(1)
				go func() {
					defer wg.Done()
					_ = c.SetReadDeadline(time.Now().Add(30 * time.Second))
					if _, err := io.CopyN(io.Discard, c, size+int64(len(strconv.Itoa(size)))+5); err != nil {
						t.Error(err)
					}
				}()
			}
			wg.Wait()
			return 0
		})
		f.maxRSS, f.slowest, f.pings = m.maxRSS, m.slowestPing, m.pings
		if pid == 0 {
			return f
		}
		f.peak, f.after = readRSS(pid), readRSS(pid)
		released := time.Now()
		defer func() { f.givenBack = time.Since(released) }()
		for deadline := time.Now().Add(5 * time.Second); f.after > withValue+48*mb && time.Now().Before(deadline); {
			time.Sleep(50 * time.Millisecond)
			f.after = readRSS(pid)
		}
		return f
	}
	r := run(startRedisPeer(t, "--maxmemory", "512mb"), 0)
	addr, cmd := startProcess(t, "--maxmemory", "512mb")
	start := rssOf(t, cmd.Process.Pid)
	guard := guardRSS(cmd, start+size+2*readers*size+floodOverhead+256*mb)
	f := run(addr, cmd.Process.Pid)
	maxRSS := guard.finish()
	withValue := start + size
	bound, afterBound := withValue+2*readers*size+floodOverhead, withValue+48*mb
	t.Logf("four GETs of a 160 MB value, not read at first: redis-server: mem_clients_normal %d MB, slowest PING %v (%d PINGs); "+
		"iocache: mem_clients_normal %d MB, slowest PING %v (%d PINGs), RSS %d MB at start, at most %d MB (bound %d MB), %d MB when the replies were read, %d MB %v later (bound %d MB, 5 s)",
		r.held/mb, r.slowest.Round(time.Millisecond), r.pings, f.held/mb, f.slowest.Round(time.Millisecond), f.pings,
		start/mb, maxRSS/mb, bound/mb, f.peak/mb, f.after/mb, f.givenBack.Round(10*time.Millisecond), afterBound/mb)
	if guard.killed.Load() {
		t.Fatalf("the RSS watchdog killed the server at %d MB", maxRSS/mb)
	}
	if f.held < readers*size*3/4 {
		t.Errorf("INFO memory's mem_clients_normal is %d MB while four 160 MB replies wait", f.held/mb)
	}
	if maxRSS > bound {
		t.Errorf("RSS reached %d MB, over the bound of %d MB", maxRSS/mb, bound/mb)
	}
	if f.slowest > max(5*r.slowest, r.slowest+500*time.Millisecond) {
		t.Errorf("a PING waited %v on iocache, over max(5 × Redis's %v, Redis's + 500 ms)", f.slowest, r.slowest)
	}
	ctl := dialPeer(t, addr)
	info := ctl.do("INFO", "memory")
	if f.after > afterBound {
		t.Errorf("RSS still %d MB 5 s after the replies were read (bound %d MB)\n%s", f.after/mb, afterBound/mb, info)
	}
	for _, field := range []string{"mem_clients_normal", "go_heap_free_unreturned", "go_heap_released", "maxmemory_clients"} {
		if regexpFind(field+`:(\d+)`, info) == "" {
			t.Errorf("INFO memory lacks %s", field)
		}
	}
	if n, _ := strconv.ParseInt(regexpFind(`mem_clients_normal:(\d+)`, info), 10, 64); n > mb {
		t.Errorf("mem_clients_normal is %d once the replies were read", n)
	}
}
