package controllers

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
	"github.com/iocache/iocache/server/bench"
	"github.com/iocache/iocache/server/cpuset"
)

// The winner rule of a sweep. A setting qualifies when its p99 latency is at most p99Bound times the
// lowest p99 of the sweep: throughput bought with much worse tail latency is no win for a cache.
// Among those, a setting with more threads must beat the best one with fewer by more than
// minThreadGain, because every I/O thread costs a core (and on small machines costs throughput).
const (
	p99Bound      = 1.5
	minThreadGain = 0.05
)

// maxQuotedError bounds what the status repeats of iocache-bench's own error text.
const maxQuotedError = 200

// parseResult reads and checks the result iocache-bench left as its termination message. The
// message itself is never repeated in errors: it is the pod's output, not the operator's to publish.
func parseResult(message string) (*bench.Result, error) {
	msg := bytes.TrimSpace([]byte(message))
	if len(msg) == 0 {
		return nil, errors.New("the pod left no termination message")
	}
	var r bench.Result
	dec := json.NewDecoder(bytes.NewReader(msg))
	if err := dec.Decode(&r); err != nil {
		return nil, fmt.Errorf("the termination message (%d bytes) is not an iocache-bench JSON result: %w", len(msg), err)
	}
	if dec.More() {
		return nil, fmt.Errorf("the termination message (%d bytes) holds more than one JSON value", len(msg))
	}
	l := r.Latency
	percentiles := []float64{l.P50, l.P90, l.P99, l.P999, l.Max}
	switch {
	case r.Version != bench.SchemaVersion:
		return nil, fmt.Errorf("the result has schema version %d; this operator reads version %d", r.Version, bench.SchemaVersion)
	case !r.OK:
		return nil, fmt.Errorf("iocache-bench reports a failed run: %s", quoteError(r.Error))
	case math.IsNaN(r.OpsPerSec) || math.IsInf(r.OpsPerSec, 0) || r.OpsPerSec <= 0:
		return nil, fmt.Errorf("the result reports no throughput (ops_per_sec %v)", r.OpsPerSec)
	case slices.ContainsFunc(percentiles, func(v float64) bool { return math.IsNaN(v) || math.IsInf(v, 0) || v < 0 }):
		return nil, fmt.Errorf("the result has a latency percentile that is not a non-negative number: %v", percentiles)
	case !slices.IsSorted(percentiles):
		return nil, fmt.Errorf("the result's latency percentiles are out of order (p50 %v, p90 %v, p99 %v, p99.9 %v, max %v ms)",
			l.P50, l.P90, l.P99, l.P999, l.Max)
	}
	return &r, nil
}

// failureOf says why a failed run failed, from its termination message when that is a result.
func failureOf(message string) string {
	var r bench.Result
	if err := json.Unmarshal(bytes.TrimSpace([]byte(message)), &r); err == nil && r.Error != "" {
		return "iocache-bench: " + quoteError(r.Error)
	}
	return ""
}

// quoteError shortens iocache-bench's error text to one line of bounded length.
func quoteError(s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if len(s) > maxQuotedError {
		s = s[:maxQuotedError] + "…"
	}
	if s == "" {
		return "no reason given"
	}
	return s
}

// msDuration turns the result's milliseconds into a duration, to the nanosecond.
func msDuration(ms float64) *metav1.Duration {
	return &metav1.Duration{Duration: time.Duration(math.Round(ms * float64(time.Millisecond)))}
}

// summarize turns a checked result into the status entry of one step; pod is the Job's pod that
// wrote it (nil when gone).
func summarize(r *bench.Result, cb *cachev1alpha1.CacheBenchmark, step *cachev1alpha1.BenchmarkStep, finished time.Time, pod *corev1.Pod) cachev1alpha1.BenchmarkResult {
	out := cachev1alpha1.BenchmarkResult{
		BenchmarkSummary: cachev1alpha1.BenchmarkSummary{
			Benchmark:    cb.Name,
			IOThreads:    step.IOThreads,
			Cores:        step.Cores,
			ConfigHash:   step.ConfigHash,
			OpsPerSecond: int64(math.Round(r.OpsPerSec)),
			Latency: cachev1alpha1.LatencySummary{
				P50: msDuration(r.Latency.P50), P90: msDuration(r.Latency.P90), P99: msDuration(r.Latency.P99),
				P999: msDuration(r.Latency.P999), Max: msDuration(r.Latency.Max),
			},
			Errors:         r.Errors,
			CompletionTime: ptrTime(finished),
		},
		Job: step.Job,
	}
	describeRun(&out.BenchmarkSummary, r, cb, pod)
	if r.Server != nil && r.Server.Delta != nil {
		for _, t := range r.Server.Delta.Threads {
			out.Threads = append(out.Threads, cachev1alpha1.ThreadCounts{
				Thread: int32(t.ID), Reads: t.Reads, Writes: t.Writes, CPUs: t.CPUs,
			})
		}
	}
	return out
}

func ptrTime(t time.Time) *metav1.Time {
	mt := metav1.NewTime(t)
	return &mt
}

// tuningCandidates are the io-threads settings the Tuned policy sweeps: one thread, half, the Auto
// value (about three quarters) and all of the cores, each no more than limit (the CPUs of an explicit
// server cpulist, else the cores), deduplicated, fewest first.
func tuningCandidates(cores, limit int) []int32 {
	if limit <= 0 || limit > cores {
		limit = cores
	}
	var out []int32
	for _, n := range []int{1, cores / 2, cpuset.AutoIOThreads(cores), cores} {
		n = max(1, min(n, limit))
		if !slices.Contains(out, int32(n)) {
			out = append(out, int32(n))
		}
	}
	slices.Sort(out)
	return out
}

// chooseBest applies the winner rule to a sweep's results and says why in words. It returns the
// index of the winner, or -1 when there are no results.
func chooseBest(results []cachev1alpha1.BenchmarkResult) (int, string) {
	if len(results) == 0 {
		return -1, "Nothing was measured."
	}
	if len(results) == 1 {
		r := results[0].BenchmarkSummary
		return 0, fmt.Sprintf("Measured io-threads %d on %d cores (config %s): %s.", r.IOThreads, r.Cores, r.ConfigHash, figures(&r))
	}
	order := make([]int, len(results))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return int(results[a].IOThreads) - int(results[b].IOThreads) })

	lowest := time.Duration(math.MaxInt64)
	for _, r := range results {
		if p := r.Latency.P99; p != nil && p.Duration < lowest {
			lowest = p.Duration
		}
	}
	// Results written by this operator always have a p99; without any, latency cannot exclude one.
	haveP99 := lowest != time.Duration(math.MaxInt64)
	bound := time.Duration(float64(lowest) * p99Bound)
	var measured, excluded []string
	best := -1
	for _, i := range order {
		r := &results[i]
		measured = append(measured, fmt.Sprintf("io-threads %d: %s", r.IOThreads, figures(&r.BenchmarkSummary)))
		if haveP99 && (r.Latency.P99 == nil || r.Latency.P99.Duration > bound) {
			excluded = append(excluded, strconv.Itoa(int(r.IOThreads)))
			continue
		}
		if best < 0 || float64(r.OpsPerSecond) > float64(results[best].OpsPerSecond)*(1+minThreadGain) {
			best = i
		}
	}
	var b strings.Builder
	fmt.Fprintf(&b, "Measured %s. ", strings.Join(measured, "; "))
	if haveP99 {
		fmt.Fprintf(&b, "A setting qualifies when its p99 is at most %.1f× the lowest p99 (%s), so at most %s",
			p99Bound, lowest, bound)
		if len(excluded) > 0 {
			fmt.Fprintf(&b, "; io-threads %s exceeded that", strings.Join(excluded, ", "))
		}
	} else {
		b.WriteString("No p99 was measured, so every setting qualifies")
	}
	w := &results[best]
	fmt.Fprintf(&b, ". io-threads %d won with %d ops/s: the highest throughput among those that qualify, counting a setting with more threads only when it beats fewer by more than %d%%.",
		w.IOThreads, w.OpsPerSecond, int(minThreadGain*100))
	return best, b.String()
}

// figures is one result in words.
func figures(r *cachev1alpha1.BenchmarkSummary) string {
	s := fmt.Sprintf("%d ops/s", r.OpsPerSecond)
	if l := r.Latency; l.P50 != nil && l.P99 != nil {
		s += fmt.Sprintf(", p50 %s, p99 %s", l.P50.Duration, l.P99.Duration)
	}
	if r.Errors > 0 {
		s += fmt.Sprintf(", %d errors", r.Errors)
	}
	return s
}
