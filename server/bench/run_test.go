package bench

import (
	"io"
	"net"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/testpeer"
)

// These tests run the whole benchmark against real servers on loopback. They check counts,
// ordering and parsing, never speed: the machines they run on are small and shared.

const requests = 3000

// checkResult checks what every successful run must satisfy.
func checkResult(t *testing.T, r *Result, tests ...string) {
	t.Helper()
	if !r.OK || r.Error != "" {
		t.Fatalf("run failed: %s", r.Error)
	}
	if r.Version != SchemaVersion || r.Tool != "iocache-bench" {
		t.Errorf("version %d tool %q", r.Version, r.Tool)
	}
	if len(r.Tests) != len(tests) {
		t.Fatalf("got %d tests, want %v", len(r.Tests), tests)
	}
	var sum int64
	for i, tr := range r.Tests {
		if tr.Name != tests[i] {
			t.Errorf("test %d is %q, want %q", i, tr.Name, tests[i])
		}
		// --requests mode: every request handed out is counted exactly once.
		if tr.Requests != requests || tr.Errors != 0 {
			t.Errorf("%s: %d requests %d errors, want %d and 0", tr.Name, tr.Requests, tr.Errors, requests)
		}
		if tr.OpsPerSec <= 0 || tr.Duration <= 0 {
			t.Errorf("%s: ops/s %v duration %v", tr.Name, tr.OpsPerSec, tr.Duration)
		}
		checkLatency(t, tr.Name, tr.Latency)
		sum += tr.Requests
	}
	if r.Requests != sum {
		t.Errorf("total requests %d, tests add up to %d", r.Requests, sum)
	}
	checkLatency(t, "overall", r.Latency)
	if len(CompactJSON(r)) > MaxCompactBytes {
		t.Errorf("compact JSON is %d bytes", len(CompactJSON(r)))
	}
}

// checkLatency: percentiles are ordered and plausible for loopback (above zero, under a second).
func checkLatency(t *testing.T, name string, l Latency) {
	t.Helper()
	v := []float64{l.P50, l.P90, l.P99, l.P999, l.Max}
	for i := range v {
		if v[i] <= 0 || v[i] >= 1000 {
			t.Errorf("%s: latency %v ms out of (0, 1000): %+v", name, v[i], l)
		}
		if i > 0 && v[i] < v[i-1] {
			t.Errorf("%s: percentiles out of order: %+v", name, l)
		}
	}
}

// cmdCalls reads calls=N of one command from INFO commandstats.
func cmdCalls(t *testing.T, port int, cmd string) int64 {
	t.Helper()
	m := regexp.MustCompile(`cmdstat_` + cmd + `:calls=(\d+)`).FindStringSubmatch(command(t, port, "INFO", "commandstats"))
	if m == nil {
		return 0
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	return n
}

func TestIOCacheServer(t *testing.T) {
	port := startIOCache(t, func(c *config.Config) { c.IOThreads, c.IOThreadsActivation = 2, "always" })
	r, code, stderr := runJSON(t, portArgs(port, "--tests", "set,get,mixed,ping,incr,lpush",
		"--requests", strconv.Itoa(requests), "--clients", "8", "--threads", "2", "--pipeline", "4")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	checkResult(t, r, "set", "get", "mixed", "ping", "incr", "lpush")
	// The server saw exactly the requests the benchmark counted.
	if n := cmdCalls(t, port, "set"); n != requests+r.Tests[2].Commands[0].Requests {
		t.Errorf("server counted %d SETs, benchmark sent %d", n, requests+r.Tests[2].Commands[0].Requests)
	}
	if n := cmdCalls(t, port, "lpush"); n != requests {
		t.Errorf("server counted %d LPUSHes, benchmark sent %d", n, requests)
	}
	mixed := r.Tests[2]
	if len(mixed.Commands) != 2 || mixed.Commands[0].Name != "set" || mixed.Commands[1].Name != "get" {
		t.Fatalf("mixed commands: %+v", mixed.Commands)
	}
	// 1:10 within one request per connection's batch boundary.
	if set := mixed.Commands[0].Requests; set < requests/11-8*4 || set > requests/11+8*4 {
		t.Errorf("mixed sent %d SETs of %d, want about 1 in 11", set, requests)
	}
	s := r.Server
	if s == nil || s.InfoError != "" || s.Before == nil || s.After == nil || s.Delta == nil {
		t.Fatalf("server info missing: %+v", s)
	}
	if s.After.IOThreadsActive == nil || *s.After.IOThreadsActive != 1 {
		t.Errorf("io_threads_active: %v", s.After.IOThreadsActive)
	}
	if len(s.After.Threads) != 2 || s.After.Threads[0].ID != 0 || s.After.Threads[1].ID != 1 {
		t.Fatalf("threads after: %+v", s.After.Threads)
	}
	var reads, clients int64
	for _, th := range s.Delta.Threads {
		reads += th.Reads
		clients += th.Clients
		if th.CPUs == "" {
			t.Errorf("io_thread_%d has no cpus", th.ID)
		}
	}
	if reads <= 0 || s.After.Threads[0].Reads <= s.Before.Threads[0].Reads && s.After.Threads[1].Reads <= s.Before.Threads[1].Reads {
		t.Errorf("no reads recorded: delta %+v", s.Delta.Threads)
	}
	// 8 benchmark connections and the control connection.
	if clients != 9 {
		t.Errorf("threads hold %d clients, want 9", clients)
	}
	if s.Delta.CPU == nil || s.After.CPU.User+s.After.CPU.Sys <= 0 {
		t.Errorf("server cpu: %+v", s.Delta.CPU)
	}
	if !strings.Contains(s.After.Raw, "io_thread_0:") || !strings.Contains(s.After.Raw, "used_cpu_user") {
		t.Errorf("raw INFO: %q", s.After.Raw)
	}
}

func TestRedisServer(t *testing.T) {
	port := startRedis(t)
	r, code, stderr := runJSON(t, portArgs(port, "--tests", "get,set,mixed",
		"--requests", strconv.Itoa(requests), "--clients", "5", "--threads", "2", "--pipeline", "3")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	checkResult(t, r, "get", "set", "mixed")
	if n := cmdCalls(t, port, "get"); n != requests+r.Tests[2].Commands[1].Requests {
		t.Errorf("server counted %d GETs, benchmark sent %d", n, requests+r.Tests[2].Commands[1].Requests)
	}
	// Nothing was set before the get test: every GET was a miss.
	if r.Tests[0].Misses != requests {
		t.Errorf("get test: %d misses, want %d", r.Tests[0].Misses, requests)
	}
	// Redis 7 has no io_thread lines but does have INFO cpu.
	if r.Server == nil || r.Server.After == nil || r.Server.After.CPU == nil || r.Server.After.CPU.User <= 0 {
		t.Errorf("server cpu missing: %+v", r.Server)
	}
}

func TestPasswordRequired(t *testing.T) {
	servers := map[string]func(t *testing.T) int{
		"iocache": func(t *testing.T) int { return startIOCache(t, func(c *config.Config) { c.RequirePass = "s3cret" }) },
		"redis":   func(t *testing.T) int { return startRedis(t, "--requirepass", "s3cret") },
	}
	for name, start := range servers {
		t.Run(name, func(t *testing.T) {
			port := start(t)
			r, code, stderr := runJSON(t, portArgs(port, "--tests", "get", "--requests", "500", "--clients", "4")...)
			if code != exitFailed || r.OK {
				t.Fatalf("without --password: exit %d ok %v, want failure", code, r.OK)
			}
			if r.Tests[0].Requests != 500 || r.Tests[0].Errors != 500 {
				t.Errorf("got %d requests %d errors, want 500 and 500", r.Tests[0].Requests, r.Tests[0].Errors)
			}
			if !strings.Contains(r.Error, "NOAUTH") || !strings.Contains(stderr, "NOAUTH") {
				t.Errorf("error does not say NOAUTH: %q / %q", r.Error, stderr)
			}
			if r.Server == nil || !strings.Contains(r.Server.InfoError, "NOAUTH") {
				t.Errorf("info error: %+v", r.Server)
			}

			r, code, stderr = runJSON(t, portArgs(port, "--tests", "get", "--requests", "500", "--clients", "4", "--password", "s3cret")...)
			if code != 0 || !r.OK || r.Tests[0].Errors != 0 {
				t.Fatalf("with --password: exit %d %s %+v", code, stderr, r.Tests)
			}

			_, code, _ = runJSON(t, portArgs(port, "--tests", "get", "--requests", "5", "--password", "wrong")...)
			if code != exitFailed {
				t.Errorf("wrong password: exit %d", code)
			}
		})
	}
}

// TestErrorReplies makes some requests fail on the server: INCR of a value that is no integer.
func TestErrorReplies(t *testing.T) {
	port := startIOCache(t, nil)
	command(t, port, "SET", "counter:000000000000", "not-a-number")

	// Keyspace 2: about half the INCRs hit the bad key.
	r, code, _ := runJSON(t, portArgs(port, "--tests", "incr", "--requests", "2000", "--keyspace", "2", "--clients", "4")...)
	tr := r.Tests[0]
	if code != 0 || tr.Requests != 2000 || tr.Errors < 500 || tr.Errors > 1500 {
		t.Errorf("exit %d: %d requests %d errors, want 2000 and about 1000", code, tr.Requests, tr.Errors)
	}
	if !strings.Contains(tr.ErrorSample, "not an integer") {
		t.Errorf("error sample %q", tr.ErrorSample)
	}
	// Duration is printed in whole milliseconds: bound the rate by the shortest duration it can
	// stand for. Counting the errors would add about half again.
	if want := float64(tr.Requests-tr.Errors) / (tr.Duration - 0.0005); tr.OpsPerSec > want*1.001+1 {
		t.Errorf("ops/s %v counts errors (successful/duration = %v)", tr.OpsPerSec, want)
	}

	// Keyspace 1: every INCR fails, and so does the run.
	r, code, _ = runJSON(t, portArgs(port, "--tests", "incr", "--requests", "300", "--keyspace", "1")...)
	if code != exitFailed || r.OK || r.Tests[0].Errors != 300 || !strings.Contains(r.Error, "all 300 requests failed") {
		t.Errorf("exit %d ok %v errors %d error %q", code, r.OK, r.Tests[0].Errors, r.Error)
	}
}

func TestConnectionRefused(t *testing.T) {
	port := testpeer.FreePort(t) // nothing listens there now
	r, code, stderr := runJSON(t, portArgs(port, "--requests", "10")...)
	if code != exitFailed || r.OK || !strings.Contains(r.Error, "connect:") || !strings.Contains(stderr, "refused") {
		t.Errorf("exit %d ok %v error %q stderr %q", code, r.OK, r.Error, stderr)
	}
	if len(CompactJSON(r)) > MaxCompactBytes {
		t.Error("failure JSON too long")
	}
}

// TestDurationAndWarmup: --warmup fills the keyspace so GETs hit; --duration bounds the test.
func TestDurationAndWarmup(t *testing.T) {
	port := startIOCache(t, nil)
	r, code, stderr := runJSON(t, portArgs(port, "--tests", "get", "--duration", "300ms", "--warmup", "300ms",
		"--keyspace", "500", "--clients", "4", "--pipeline", "8")...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if r.Warmup == nil || !r.Warmup.Filled || r.Warmup.Requests < 500 {
		t.Fatalf("warmup did not fill 500 keys: %+v", r.Warmup)
	}
	if n := command(t, port, "DBSIZE"); n != "500" {
		t.Errorf("DBSIZE after warmup %s, want 500", n)
	}
	tr := r.Tests[0]
	if tr.Misses != 0 || tr.Requests == 0 || tr.Errors != 0 {
		t.Errorf("get after warmup: %+v", tr)
	}
	if tr.Duration < 0.3 || tr.Duration > 10 {
		t.Errorf("--duration 300ms ran %v s", tr.Duration)
	}
	checkLatency(t, "get", tr.Latency)
}

// TestTable checks the redis-benchmark -q style lines, so logs of both tools read alike.
func TestTable(t *testing.T) {
	port := startIOCache(t, nil)
	var out, errb strings.Builder
	if code := Main(portArgs(port, "--tests", "set,get", "--requests", "500", "-q"), &out, &errb); code != 0 {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	re := regexp.MustCompile(`^(SET|GET): \d+\.\d\d requests per second, p50=\d+\.\d{3} msec$`)
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 2 || !re.MatchString(lines[0]) || !re.MatchString(lines[1]) {
		t.Errorf("table:\n%s", out.String())
	}
}

// TestStalledServer: a server that accepts and reads but never answers must fail the run after
// --timeout, not hang it.
func TestStalledServer(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				_, _ = io.Copy(io.Discard, c)
			}()
		}
	}()
	start := time.Now()
	r, code, _ := runJSON(t, portArgs(l.Addr().(*net.TCPAddr).Port, "--tests", "get", "--requests", "1000",
		"--clients", "3", "--pipeline", "2", "--timeout", "300ms")...)
	if code != exitFailed || r.OK || r.Tests[0].Errors != r.Tests[0].Requests || r.Tests[0].Requests != 6 {
		t.Errorf("exit %d ok %v test %+v", code, r.OK, r.Tests[0])
	}
	if r.Server == nil || r.Server.InfoError == "" {
		t.Errorf("INFO did not time out: %+v", r.Server)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("took %v with --timeout 300ms", d)
	}
}
