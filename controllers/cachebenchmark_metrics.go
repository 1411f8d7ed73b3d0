package controllers

import (
	"strconv"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
)

// Results of a benchmark run (one measured io-threads setting), as the runs counter labels them.
const (
	runSucceeded = "succeeded"
	runFailed    = "failed"
)

// The last figures measured per instance and io-threads setting, so a dashboard shows what each
// setting gave, and a count of runs by result for the IOCacheBenchmarkFailing alert.
var (
	benchmarkOpsPerSecond = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "iocache_benchmark_ops_per_second",
		Help: "Throughput the last benchmark run measured, per CacheInstance and io-threads setting.",
	}, []string{"namespace", "instance", "io_threads"})
	benchmarkLatency = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "iocache_benchmark_latency_seconds",
		Help: "Request latency percentiles the last benchmark run measured, per CacheInstance and io-threads setting.",
	}, []string{"namespace", "instance", "io_threads", "quantile"})
	benchmarkRuns = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "iocache_benchmark_runs_total",
		Help: "Benchmark runs per CacheInstance by result: succeeded (a valid result) or failed (Job failed, deadline exceeded, invalid result, instance not ready).",
	}, []string{"namespace", "instance", "result"})
)

func init() {
	metrics.Registry.MustRegister(benchmarkOpsPerSecond, benchmarkLatency, benchmarkRuns)
}

// recordRun exports one measured result.
func recordRun(namespace, instance string, r *cachev1alpha1.BenchmarkSummary) {
	threads := strconv.Itoa(int(r.IOThreads))
	benchmarkOpsPerSecond.WithLabelValues(namespace, instance, threads).Set(float64(r.OpsPerSecond))
	l := r.Latency
	for _, q := range []struct {
		quantile string
		value    *metav1.Duration
	}{{"0.5", l.P50}, {"0.9", l.P90}, {"0.99", l.P99}, {"0.999", l.P999}} {
		if q.value != nil {
			benchmarkLatency.WithLabelValues(namespace, instance, threads, q.quantile).Set(q.value.Seconds())
		}
	}
	benchmarkRuns.WithLabelValues(namespace, instance, runSucceeded).Inc()
}

// recordFailedRun counts a run that ended its benchmark without a result.
func recordFailedRun(namespace, instance string) {
	benchmarkRuns.WithLabelValues(namespace, instance, runFailed).Inc()
}
