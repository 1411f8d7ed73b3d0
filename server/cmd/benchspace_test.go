package cmd

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	benchpkg "github.com/iocache/iocache/server/bench"
)

// TestBenchmarkLeavesUserDataAlone runs the real programs as the operator does: iocache-server
// filled to near its maxmemory under allkeys-lru, then iocache-bench --benchspace against it, as a
// validation Job runs. The user's keyspace must come out exactly as it went in: the same keys with
// the same values and expiry times, no eviction, no expiry, and the same hit/miss counters. A run
// without --benchspace against the same server shows that the comparison sees the damage a
// benchmark in the user's keyspace does.
func TestBenchmarkLeavesUserDataAlone(t *testing.T) {
	if testing.Short() {
		t.Skip("builds and runs the programs")
	}
	dir := t.TempDir()
	server := buildProgram(t, dir, "iocache-server")
	bench := buildProgram(t, dir, "iocache-bench")

	const maxMemory = 48 << 20
	// Small enough that the run below fills it even on a loaded machine, where a 2-second run
	// writes fewer keys (48,000 of 256 bytes and smaller peaked at 7.4 MB on a loaded 2-core VM).
	const benchSpaceMax = 4 << 20
	port := startServerProcess(t, server, "--maxmemory", strconv.Itoa(maxMemory), "--maxmemory-policy", "allkeys-lru",
		"--benchspace-maxmemory", strconv.Itoa(benchSpaceMax), "--requirepass", "s3cret")
	ctx := context.Background()
	rdb := redis.NewClient(&redis.Options{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Password: "s3cret"})
	t.Cleanup(func() { _ = rdb.Close() })

	fillNearMaxMemory(t, ctx, rdb, maxMemory)
	keysBefore, digestBefore := digestUserKeys(t, ctx, rdb)
	statsBefore := userStats(t, ctx, rdb)
	t.Logf("user keyspace: %d keys, used_memory %s of maxmemory %d", keysBefore, statsBefore["used_memory"], maxMemory)

	// The Job's user, with the rules the operator gives it.
	setUser := append([]any{"ACL", "SETUSER", benchpkg.UserName, "on", ">bench-pw"}, toAny(benchpkg.ACLRules())...)
	if err := rdb.Do(ctx, setUser...).Err(); err != nil {
		t.Fatal(err)
	}
	asJob := []string{"--user", benchpkg.UserName, "--password", "bench-pw", "--key-prefix", benchpkg.KeyPrefix}

	// A validation Job's workload, scaled down: its keyspace (100000 keys of 256 bytes) is far
	// larger than the bench space, which must then evict its own keys, never the user's.
	out := runBench(t, bench, port, append(asJob, "--benchspace", "--clients", "20", "--threads", "2",
		"--keyspace", "100000", "--data-size", "256", "--warmup", "1s", "--duration", "2s", "--tests", "mixed,incr,lpush,get")...)
	var res struct {
		OK         bool   `json:"ok"`
		Error      string `json:"error"`
		OpsPerSec  float64
		BenchSpace *struct {
			Keys        int64  `json:"keys"`
			PeakMemory  int64  `json:"peak_memory"`
			MaxMemory   int64  `json:"maxmemory"`
			Hits        int64  `json:"hits"`
			Misses      int64  `json:"misses"`
			EvictedKeys int64  `json:"evicted_keys"`
			Error       string `json:"error"`
		} `json:"benchspace"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("iocache-bench output: %v\n%s", err, out)
	}
	if !res.OK || res.BenchSpace == nil || res.BenchSpace.Error != "" {
		t.Fatalf("bench run failed: %s", out)
	}
	bs := res.BenchSpace
	t.Logf("bench space: keys %d, peak %d of %d bytes, hits %d, misses %d, evicted %d",
		bs.Keys, bs.PeakMemory, bs.MaxMemory, bs.Hits, bs.Misses, bs.EvictedKeys)
	if bs.MaxMemory != benchSpaceMax || bs.PeakMemory > benchSpaceMax || bs.PeakMemory == 0 {
		t.Errorf("bench space peak %d bytes, bound %d: want a peak within the bound %d", bs.PeakMemory, bs.MaxMemory, benchSpaceMax)
	}
	if bs.EvictedKeys == 0 || bs.Hits == 0 || bs.Misses == 0 {
		t.Errorf("a keyspace larger than the bench space should make it evict its own keys and both hit and miss: %+v", *bs)
	}

	statsAfter := userStats(t, ctx, rdb)
	for _, f := range []string{"evicted_keys", "expired_keys", "keyspace_hits", "keyspace_misses"} {
		if statsAfter[f] != statsBefore[f] {
			t.Errorf("%s moved during the run: %s before, %s after", f, statsBefore[f], statsAfter[f])
		}
	}
	keysAfter, digestAfter := digestUserKeys(t, ctx, rdb)
	if keysAfter != keysBefore || digestAfter != digestBefore {
		t.Errorf("user keyspace changed: %d keys (digest %s) before, %d (digest %s) after", keysBefore, digestBefore, keysAfter, digestAfter)
	}
	space, err := rdb.Do(ctx, "BENCHSPACE", "STATS").Text()
	if err != nil || !strings.Contains(space, "benchspace_guests:0\r\n") || !strings.Contains(space, "benchspace_keys:0\r\n") {
		t.Errorf("the bench space should be dropped once the run's connections closed: %q %v", space, err)
	}

	// The second fence: the Job's user, outside the bench space and without the key prefix (a
	// broken Job), is refused every key, and the user's keyspace stays as it was.
	refused := exec.Command(bench, "--host", "127.0.0.1", "--port", strconv.Itoa(port), "--user", benchpkg.UserName,
		"--password", "bench-pw", "--clients", "2", "--requests", "100", "--tests", "set,get,incr,lpush")
	if out, err := refused.CombinedOutput(); err == nil || !strings.Contains(string(out), "NOPERM") {
		t.Errorf("the bench user outside its prefix: %v, want NOPERM errors:\n%s", err, out)
	}
	for _, cmd := range [][]any{{"FLUSHALL"}, {"CONFIG", "SET", "maxmemory", "1"}, {"KEYS", "*"}, {"GET", "user:0000001"}} {
		c := redis.NewClient(&redis.Options{Addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), Username: benchpkg.UserName, Password: "bench-pw", Protocol: 2})
		if err := c.Do(ctx, cmd...).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
			t.Errorf("the bench user's %v: %v, want NOPERM", cmd, err)
		}
		_ = c.Close()
	}
	if keys, digest := digestUserKeys(t, ctx, rdb); keys != keysBefore || digest != digestBefore {
		t.Errorf("user keyspace changed by the refused run: %d keys before, %d after", keysBefore, keys)
	}

	// The same run in the user's keyspace: the comparison must see what it does.
	runBench(t, bench, port, "--password", "s3cret", "--clients", "20", "--keyspace", "100000",
		"--data-size", "256", "--warmup", "3s", "--duration", "1s", "--tests", "mixed")
	damaged := userStats(t, ctx, rdb)
	keysDamaged, digestDamaged := digestUserKeys(t, ctx, rdb)
	if digestDamaged == digestAfter {
		t.Errorf("a run without --benchspace should change the user's keyspace, and the digest should show it")
	}
	t.Logf("without --benchspace: keys %d -> %d, evicted_keys %s -> %s", keysAfter, keysDamaged,
		statsAfter["evicted_keys"], damaged["evicted_keys"])
}

func toAny(s []string) []any {
	a := make([]any, len(s))
	for i, v := range s {
		a[i] = v
	}
	return a
}

func buildProgram(t *testing.T, dir, name string) string {
	t.Helper()
	bin := filepath.Join(dir, name)
	build := exec.Command("go", "build", "-o", bin, programs[name])
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build %s: %v\n%s", name, err, out)
	}
	return bin
}

// startServerProcess runs iocache-server on a free loopback port until the test ends.
func startServerProcess(t *testing.T, bin string, args ...string) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	cmd := exec.Command(bin, append([]string{"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--loglevel", "warning"}, args...)...)
	// The server saves into its working directory (dump.rdb, BGSAVE's temp files): the test's own.
	cmd.Dir = t.TempDir()
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.Dial("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
		if err == nil {
			c.Close()
			return port
		}
		if time.Now().After(deadline) {
			t.Fatalf("iocache-server did not listen on %d: %v\n%s", port, err, log.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func runBench(t *testing.T, bin string, port int, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"--host", "127.0.0.1", "--port", strconv.Itoa(port), "--json"}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("iocache-bench %v: %v\n%s\n%s", args, err, out, stderr.String())
	}
	return out
}

// fillNearMaxMemory writes 1 KiB values, a third of them with an hour's TTL, until used_memory
// reaches 85% of maxmemory: a cache about to evict. Not closer: used_memory counts client buffers,
// as Redis's does, and the test's own reads (digestUserKeys) must not be what evicts (CI once
// filled to 95% in 500-key batches and the digest's 1,000-key pipelines evicted 453 user keys).
func fillNearMaxMemory(t *testing.T, ctx context.Context, rdb *redis.Client, maxMemory int64) {
	t.Helper()
	value := strings.Repeat("v", 1024)
	for batch := 0; ; batch++ {
		used, err := strconv.ParseInt(userStats(t, ctx, rdb)["used_memory"], 10, 64)
		if err != nil {
			t.Fatal(err)
		}
		if used >= maxMemory*85/100 {
			return
		}
		if batch > 5000 {
			t.Fatalf("used_memory stays at %d, below 85%% of %d", used, maxMemory)
		}
		pipe := rdb.Pipeline()
		for i := range 100 {
			n := batch*100 + i
			ttl := time.Duration(0)
			if n%3 == 0 {
				ttl = time.Hour
			}
			pipe.Set(ctx, fmt.Sprintf("user:%07d", n), fmt.Sprintf("%d:%s", n, value), ttl)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
}

// digestUserKeys returns DBSIZE and a digest of every key of database 0 with its value and absolute
// expiry time. It reads in small pipelines, and fails if its own reads made the server evict.
func digestUserKeys(t *testing.T, ctx context.Context, rdb *redis.Client) (int64, string) {
	t.Helper()
	var keys []string
	iter := rdb.Scan(ctx, 0, "*", 1000).Iterator()
	for iter.Next(ctx) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		t.Fatal(err)
	}
	sort.Strings(keys)
	keys = slices.Compact(keys) // SCAN may return a key twice
	evictedBefore := userStats(t, ctx, rdb)["evicted_keys"]
	h := sha256.New()
	for start := 0; start < len(keys); start += 200 {
		chunk := keys[start:min(start+200, len(keys))]
		pipe := rdb.Pipeline()
		vals := make([]*redis.StringCmd, len(chunk))
		exps := make([]*redis.Cmd, len(chunk))
		for i, k := range chunk {
			vals[i] = pipe.Get(ctx, k)
			exps[i] = pipe.Do(ctx, "PEXPIRETIME", k)
		}
		if _, err := pipe.Exec(ctx); err != nil && err != redis.Nil {
			t.Fatalf("reading the user's keys: %v", err)
		}
		for i, k := range chunk {
			exp, _ := exps[i].Int64()
			fmt.Fprintf(h, "%s\x00%s\x00%d\n", k, vals[i].Val(), exp)
		}
	}
	n, err := rdb.DBSize(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	if evicted := userStats(t, ctx, rdb)["evicted_keys"]; evicted != evictedBefore {
		t.Fatalf("the digest's own reads made the server evict (evicted_keys %s -> %s): the fill leaves too little headroom",
			evictedBefore, evicted)
	}
	return n, fmt.Sprintf("%d keys, %x", len(keys), h.Sum(nil)[:8])
}

// userStats reads INFO stats and memory into a map.
func userStats(t *testing.T, ctx context.Context, rdb *redis.Client) map[string]string {
	t.Helper()
	text, err := rdb.Info(ctx, "stats", "memory").Result()
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]string{}
	for _, line := range strings.Split(text, "\n") {
		if k, v, ok := strings.Cut(strings.TrimRight(line, "\r"), ":"); ok {
			m[k] = v
		}
	}
	return m
}
