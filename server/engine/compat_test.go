package engine

import (
	"encoding/csv"
	"net"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/testpeer"
)

func hostPort(t testing.TB, addr string) (string, string) {
	t.Helper()
	h, p, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	return h, p
}

// redis-benchmark's whole default suite must run against iocache with no error replies, with and
// without I/O threads. redis-benchmark 7 exits non-zero at the first error reply.
func TestRedisBenchmarkDefaultSuite(t *testing.T) {
	bench := testpeer.Require(t, "redis-benchmark")
	want := []string{"PING_INLINE", "PING_MBULK", "SET", "GET", "INCR", "LPUSH", "RPUSH", "LPOP", "RPOP", "SADD", "HSET", "SPOP", "ZADD", "ZPOPMIN", "LPUSH (needed to benchmark LRANGE)", "LRANGE_100 (first 100 elements)", "LRANGE_300 (first 300 elements)", "LRANGE_500 (first 500 elements)", "LRANGE_600 (first 600 elements)", "MSET (10 keys)"}
	for _, threads := range []int{1, 2} {
		_, addr := startServer(t, func(c *config.Config) { c.IOThreads = threads })
		host, port := hostPort(t, addr)
		out, err := exec.Command(bench, "-h", host, "-p", port, "-n", "3000", "-c", "20", "-P", "4", "--csv").CombinedOutput()
		if err != nil {
			t.Fatalf("redis-benchmark: %v\n%s", err, out)
		}
		if strings.Contains(string(out), "rror") {
			t.Fatalf("io-threads %d: redis-benchmark saw errors:\n%s", threads, out)
		}
		rows, err := csv.NewReader(strings.NewReader(string(out))).ReadAll()
		if err != nil {
			t.Fatalf("parsing CSV: %v\n%s", err, out)
		}
		got := map[string]bool{}
		for _, r := range rows[1:] {
			got[r[0]] = true
		}
		for _, name := range want {
			if !got[name] {
				t.Errorf("io-threads %d: redis-benchmark did not report %q:\n%s", threads, name, out)
			}
		}
	}
}

func TestRedisCLI(t *testing.T) {
	cli := testpeer.Require(t, "redis-cli")
	_, addr := startServer(t, func(c *config.Config) { c.IOThreads = 2 })
	host, port := hostPort(t, addr)
	run := func(args ...string) string {
		t.Helper()
		out, err := exec.Command(cli, append([]string{"-h", host, "-p", port}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("redis-cli %v: %v\n%s", args, err, out)
		}
		return strings.TrimSpace(string(out))
	}
	if got := run("SET", "greeting", "hello world"); got != "OK" {
		t.Fatalf("SET: %q", got)
	}
	if got := run("GET", "greeting"); got != "hello world" {
		t.Fatalf("GET: %q", got)
	}
	if got := run("RPUSH", "l", "a", "b", "c"); got != "3" {
		t.Fatalf("RPUSH: %q", got)
	}
	if got := run("--no-raw", "LRANGE", "l", "0", "-1"); got != "1) \"a\"\n2) \"b\"\n3) \"c\"" {
		t.Fatalf("LRANGE: %q", got)
	}
	if got := run("-3", "HSET", "h", "f", "v"); got != "1" {
		t.Fatalf("RESP3 HSET: %q", got)
	}
	if got := run("INFO", "threads"); !strings.Contains(got, "io_thread_1:clients=1") {
		t.Fatalf("INFO threads: %q", got)
	}
	if got := run("NOSUCHCMD"); !strings.HasPrefix(got, "ERR unknown command 'NOSUCHCMD'") {
		t.Fatalf("unknown command: %q", got)
	}
	// redis-cli asks COMMAND DOCS for its hints on start in interactive mode; make sure it parses.
	if got := run("COMMAND", "COUNT"); got == "0" {
		t.Fatalf("COMMAND COUNT: %q", got)
	}
	if got := run("--scan", "--pattern", "gree*"); got != "greeting" {
		t.Fatalf("--scan: %q", got)
	}
}

func TestUnixSocket(t *testing.T) {
	cli := testpeer.Require(t, "redis-cli")
	sock := filepath.Join(t.TempDir(), "iocache.sock")
	startServer(t, func(c *config.Config) { c.UnixSocket = sock; c.UnixSocketPerm = 0o700 })
	out, err := exec.Command(cli, "-s", sock, "SET", "via", "unix").CombinedOutput()
	if err != nil || strings.TrimSpace(string(out)) != "OK" {
		t.Fatalf("redis-cli -s: %v %s", err, out)
	}
	out, _ = exec.Command(cli, "-s", sock, "CLIENT", "LIST").CombinedOutput()
	if !strings.Contains(string(out), "flags=U") {
		t.Fatalf("CLIENT LIST for a unix socket client: %s", out)
	}
}
