//go:build benchcompare

package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"

	"github.com/iocache/iocache/server/testpeer"
)

// TestCompareWithRedisBenchmark runs Debian's redis-benchmark and iocache-bench against one
// redis-server with the same settings, interleaved round by round, and checks that the median
// ratio of their requests per second is within 10%. It is a timed comparison, so it is built only
// when asked (build tag benchcompare) and make test neither runs nor skips it: on a small shared
// machine, client and server compete for the same cores and a single round can be off by more than
// that. docs/bench.md has its figures.
//
//	go test -tags benchcompare -run CompareWithRedisBenchmark -v ./server/bench
//
// IOCACHE_BENCH_ROUNDS sets the rounds per setting (3).
func TestCompareWithRedisBenchmark(t *testing.T) {
	rb := testpeer.Require(t, "redis-benchmark")
	rounds := 3
	if n, err := strconv.Atoi(os.Getenv("IOCACHE_BENCH_ROUNDS")); err == nil && n > 0 {
		rounds = n
	}
	port := startRedis(t)
	settings := []struct {
		pipeline, threads int
		requests          int
	}{
		{1, 1, 100000},
		{16, 1, 1000000},
		{1, 2, 100000},
		{16, 2, 1000000},
	}
	for _, s := range settings {
		name := fmt.Sprintf("c50-P%d-threads%d", s.pipeline, s.threads)
		ratios := map[string][]float64{}
		for round := 1; round <= rounds; round++ {
			rbArgs := []string{"-h", "127.0.0.1", "-p", strconv.Itoa(port), "-q", "-t", "set,get", "-n", strconv.Itoa(s.requests),
				"-c", "50", "-d", "256", "-r", "100000", "-P", strconv.Itoa(s.pipeline)}
			if s.threads > 1 {
				rbArgs = append(rbArgs, "--threads", strconv.Itoa(s.threads))
			}
			theirs := runRedisBenchmark(t, rb, rbArgs)
			ours := runOurs(t, portArgs(port, "--tests", "set,get", "--requests", strconv.Itoa(s.requests),
				"--clients", "50", "--data-size", "256", "--keyspace", "100000",
				"--pipeline", strconv.Itoa(s.pipeline), "--threads", strconv.Itoa(s.threads)))
			for _, test := range []string{"SET", "GET"} {
				r := ours[test] / theirs[test]
				ratios[test] = append(ratios[test], r)
				t.Logf("%s round %d %s: redis-benchmark %.0f, iocache-bench %.0f requests/s, ratio %.3f",
					name, round, test, theirs[test], ours[test], r)
			}
		}
		for _, test := range []string{"SET", "GET"} {
			m := median(ratios[test])
			t.Logf("%s %s: median ratio iocache-bench/redis-benchmark %.3f over %d rounds", name, test, m, rounds)
			if m < 0.9 || m > 1.1 {
				t.Errorf("%s %s: median ratio %.3f is not within 10%%", name, test, m)
			}
		}
	}
}

var rbLine = regexp.MustCompile(`(?m)^\s*([A-Z_]+): ([0-9.]+) requests per second`)

func runRedisBenchmark(t *testing.T, bin string, args []string) map[string]float64 {
	t.Helper()
	out, err := exec.Command(bin, args...).Output()
	if err != nil {
		t.Fatalf("redis-benchmark %v: %v", args, err)
	}
	// -q still redraws a progress line with \r before each final line.
	got := map[string]float64{}
	for _, m := range rbLine.FindAllStringSubmatch(strings.ReplaceAll(string(out), "\r", "\n"), -1) {
		got[m[1]], _ = strconv.ParseFloat(m[2], 64)
	}
	if got["SET"] == 0 || got["GET"] == 0 {
		t.Fatalf("redis-benchmark printed no SET/GET figures:\n%s", out)
	}
	return got
}

func runOurs(t *testing.T, args []string) map[string]float64 {
	t.Helper()
	var out, errb bytes.Buffer
	if code := Main(append(args, "--json"), &out, &errb); code != 0 {
		t.Fatalf("iocache-bench %v: exit %d: %s", args, code, errb.String())
	}
	var r Result
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		t.Fatal(err)
	}
	got := map[string]float64{}
	for _, tr := range r.Tests {
		got[strings.ToUpper(tr.Name)] = tr.OpsPerSec
	}
	return got
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}
