package controllers

import (
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
	"github.com/iocache/iocache/server/bench"
)

// sampleResult is what iocache-bench reports for a healthy run against a server with two threads.
func sampleResult() *bench.Result {
	two := 2
	return &bench.Result{
		Version: bench.SchemaVersion, Tool: "iocache-bench", OK: true, Target: "cache.ns.svc:6379",
		StartedAt: "2026-05-01T12:00:00Z",
		Config:    bench.Config{Clients: 50, Threads: 2, Pipeline: 1, DataSize: 256, Keyspace: 100000, Ratio: "1:10", Tests: []string{"mixed"}, DurationSec: 30, WarmupSec: 5},
		Duration:  30, Requests: 3_000_000, Errors: 3, OpsPerSec: 99_999.6,
		Latency: bench.Latency{P50: 0.412, P90: 0.8, P99: 1.25, P999: 3.5, Max: 12.1, Mean: 0.5},
		Tests:   []bench.Test{{Name: "mixed", Requests: 3_000_000, Duration: 30, OpsPerSec: 99_999.6}},
		Server: &bench.Server{Delta: &bench.Info{IOThreadsActive: &two, Threads: []bench.IOThread{
			{ID: 0, Clients: 25, Reads: 1_500_000, Writes: 1_499_000, CPUs: "2"},
			{ID: 1, Clients: 25, Reads: 1_500_003, Writes: 1_500_997, CPUs: "3"},
		}}},
	}
}

func TestParseResult(t *testing.T) {
	valid := string(bench.CompactJSON(sampleResult()))
	if len(valid) > bench.MaxCompactBytes {
		t.Fatalf("the sample does not fit a termination message: %d bytes", len(valid))
	}
	with := func(m func(*bench.Result)) string {
		r := sampleResult()
		m(r)
		return string(bench.CompactJSON(r))
	}
	for _, tc := range []struct {
		name, message, wantErr string
	}{
		{"compact result", valid, ""},
		{"result with surrounding whitespace", "\n" + valid + "\n", ""},
		{"empty", "", "no termination message"},
		{"logs instead of JSON", "iocache-bench: dial tcp: connection refused\n", "not an iocache-bench JSON result"},
		{"two values", valid + valid, "more than one JSON value"},
		{"cut short", valid[:len(valid)/2], "not an iocache-bench JSON result"},
		{"newer schema", with(func(r *bench.Result) { r.Version = bench.SchemaVersion + 1 }), "schema version 2"},
		{"failed run", with(func(r *bench.Result) { r.OK, r.Error = false, "AUTH: WRONGPASS invalid username-password pair" }),
			"reports a failed run: AUTH: WRONGPASS"},
		{"no throughput", with(func(r *bench.Result) { r.OpsPerSec = 0 }), "no throughput"},
		{"p99 below p50", with(func(r *bench.Result) { r.Latency.P99 = 0.1 }), "out of order"},
		{"max below p99.9", with(func(r *bench.Result) { r.Latency.Max = 2 }), "out of order"},
		{"negative latency", with(func(r *bench.Result) { r.Latency.P50 = -1 }), "not a non-negative number"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r, err := parseResult(tc.message)
			switch {
			case tc.wantErr == "" && err != nil:
				t.Fatalf("refused: %v", err)
			case tc.wantErr == "":
				if r.OpsPerSec != 99_999.6 {
					t.Errorf("ops/s %v", r.OpsPerSec)
				}
			case err == nil:
				t.Fatalf("accepted; want an error with %q", tc.wantErr)
			case !strings.Contains(err.Error(), tc.wantErr):
				t.Fatalf("error %q, want %q", err, tc.wantErr)
			}
			// The pod's output is not repeated: only its length and what is wrong with it.
			if err != nil && len(tc.message) > 40 && strings.Contains(err.Error(), tc.message[:40]) {
				t.Errorf("the error repeats the termination message: %v", err)
			}
		})
	}
}

func TestFailureOf(t *testing.T) {
	r := sampleResult()
	r.OK, r.Error = false, "connecting to cache.ns.svc:6379:\n  connection refused"
	if got := failureOf(string(bench.CompactJSON(r))); got != "iocache-bench: connecting to cache.ns.svc:6379: connection refused" {
		t.Errorf("failureOf = %q", got)
	}
	if got := failureOf("panic: runtime error\ngoroutine 1 [running]"); got != "" {
		t.Errorf("failureOf(logs) = %q, want nothing quoted from logs", got)
	}
	r.Error = strings.Repeat("x", 500)
	if got := failureOf(string(bench.CompactJSON(r))); len(got) > len("iocache-bench: ")+maxQuotedError+len("…") {
		t.Errorf("failureOf keeps %d bytes", len(got))
	}
}

func TestSummarize(t *testing.T) {
	at := time.Date(2026, 5, 1, 12, 0, 35, 0, time.UTC)
	step := &cachev1alpha1.BenchmarkStep{IOThreads: 2, Cores: 4, ConfigHash: "abc", Job: "bench-io2"}
	got := summarize(sampleResult(), newBenchmark(), step, at, nil)
	l := got.Latency
	if got.OpsPerSecond != 100_000 || got.IOThreads != 2 || got.Cores != 4 || got.ConfigHash != "abc" || got.Job != "bench-io2" ||
		got.Benchmark != "bench" || got.Errors != 3 || !got.CompletionTime.Time.Equal(at) {
		t.Errorf("summary %+v", got)
	}
	if l.P50.Duration != 412*time.Microsecond || l.P90.Duration != 800*time.Microsecond || l.P99.Duration != 1250*time.Microsecond ||
		l.P999.Duration != 3500*time.Microsecond || l.Max.Duration != 12100*time.Microsecond {
		t.Errorf("latency %v %v %v %v %v", l.P50, l.P90, l.P99, l.P999, l.Max)
	}
	want := []cachev1alpha1.ThreadCounts{{Thread: 0, Reads: 1_500_000, Writes: 1_499_000, CPUs: "2"}, {Thread: 1, Reads: 1_500_003, Writes: 1_500_997, CPUs: "3"}}
	if len(got.Threads) != 2 || got.Threads[0] != want[0] || got.Threads[1] != want[1] {
		t.Errorf("threads %+v, want %+v", got.Threads, want)
	}
}

// Candidates around the ¾ rule: 1, half, Auto and all, deduplicated, within an explicit server list.
func TestTuningCandidates(t *testing.T) {
	for _, tc := range []struct {
		cores, limit int
		want         []int32
	}{
		{1, 0, []int32{1}},
		{2, 0, []int32{1, 2}},
		{3, 0, []int32{1, 2, 3}},
		{4, 0, []int32{1, 2, 3, 4}},
		{8, 0, []int32{1, 4, 6, 8}},
		{16, 0, []int32{1, 8, 12, 16}},
		{64, 0, []int32{1, 16, 32, 64}},
		{8, 4, []int32{1, 4}},
		{8, 2, []int32{1, 2}},
		{8, 12, []int32{1, 4, 6, 8}},
	} {
		got := tuningCandidates(tc.cores, tc.limit)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%d cores, limit %d: %v, want %v", tc.cores, tc.limit, got, tc.want)
		}
	}
}

// run is a sweep result: io-threads, ops/s and p99 in microseconds.
func run(threads int32, ops int64, p99us int64) cachev1alpha1.BenchmarkResult {
	d := func(us int64) *metav1.Duration {
		return &metav1.Duration{Duration: time.Duration(us) * time.Microsecond}
	}
	return cachev1alpha1.BenchmarkResult{BenchmarkSummary: cachev1alpha1.BenchmarkSummary{
		IOThreads: threads, Cores: 4, OpsPerSecond: ops, Latency: cachev1alpha1.LatencySummary{P50: d(p99us / 3), P99: d(p99us)},
	}}
}

func TestChooseBest(t *testing.T) {
	for _, tc := range []struct {
		name    string
		results []cachev1alpha1.BenchmarkResult
		want    int32
		why     []string
	}{
		{"one run", []cachev1alpha1.BenchmarkResult{run(3, 100_000, 1000)}, 3, []string{"Measured io-threads 3 on 4 cores", "100000 ops/s"}},
		{"more threads clearly faster", []cachev1alpha1.BenchmarkResult{run(1, 100_000, 1000), run(2, 150_000, 900), run(4, 210_000, 1100)}, 4,
			[]string{"io-threads 4 won with 210000 ops/s"}},
		{"the order measured does not matter", []cachev1alpha1.BenchmarkResult{run(4, 210_000, 1100), run(1, 100_000, 1000), run(2, 150_000, 900)}, 4, nil},
		{"faster but tail latency beyond the bound", []cachev1alpha1.BenchmarkResult{run(1, 100_000, 1000), run(2, 130_000, 1400), run(4, 200_000, 1600)}, 2,
			[]string{"at most 1.5ms", "io-threads 4 exceeded that"}},
		{"exactly at the bound qualifies", []cachev1alpha1.BenchmarkResult{run(1, 100_000, 1000), run(2, 130_000, 1500)}, 2, nil},
		{"a 4% gain does not pay for a thread", []cachev1alpha1.BenchmarkResult{run(1, 100_000, 1000), run(2, 104_000, 1000)}, 1,
			[]string{"more than 5%"}},
		{"a 6% gain does", []cachev1alpha1.BenchmarkResult{run(1, 100_000, 1000), run(2, 106_000, 1000)}, 2, nil},
		{"small gains do not add up across settings", []cachev1alpha1.BenchmarkResult{run(1, 100_000, 1000), run(2, 104_000, 1000), run(3, 104_900, 1000)}, 1, nil},
		{"fewer threads faster", []cachev1alpha1.BenchmarkResult{run(1, 120_000, 1000), run(2, 90_000, 1000), run(4, 80_000, 1000)}, 1, nil},
		{"the lowest p99 always qualifies", []cachev1alpha1.BenchmarkResult{run(1, 50_000, 9000), run(4, 40_000, 2000)}, 4, []string{"io-threads 1 exceeded that"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			i, why := chooseBest(tc.results)
			if i < 0 || tc.results[i].IOThreads != tc.want {
				t.Fatalf("chose %d (%s), want io-threads %d", i, why, tc.want)
			}
			for _, w := range tc.why {
				if !strings.Contains(why, w) {
					t.Errorf("explanation %q lacks %q", why, w)
				}
			}
		})
	}
	if i, _ := chooseBest(nil); i != -1 {
		t.Errorf("chooseBest(nil) = %d", i)
	}
	noP99 := []cachev1alpha1.BenchmarkResult{run(1, 1, 1), run(2, 2, 1)}
	noP99[0].Latency.P99, noP99[1].Latency.P99 = nil, nil
	if i, why := chooseBest(noP99); i != 1 || !strings.Contains(why, "No p99") {
		t.Errorf("without p99: chose %d (%s)", i, why)
	}
}
