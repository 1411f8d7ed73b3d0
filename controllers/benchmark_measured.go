package controllers

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
	"github.com/iocache/iocache/server/bench"
)

// What a benchmark figure measured. A throughput figure is the server's only when the client had CPU
// to spare: a client on a fraction of a shared CPU, or one whose threads were busy all the time,
// measures itself. Every figure in a status therefore carries its workload, the client's placement
// and the CPU both sides used, so that two figures are compared only when they measured the same.

// clientBound is the share of its threads' (or its limit's) CPU above which the client, not the
// server, set the figure.
const clientBound = 0.9

// describeRun fills in what a result measured: its purpose, the client's placement and CPU, the
// server's CPU and, in words, all of it with the workload.
func describeRun(sum *cachev1alpha1.BenchmarkSummary, r *bench.Result, cb *cachev1alpha1.CacheBenchmark, pod *corev1.Pod) {
	sum.Purpose = cb.Spec.Purpose
	w := &cb.Spec.Workload
	c := &cachev1alpha1.BenchmarkClient{Threads: min(w.Threads, w.Clients), CPUUsed: cores(r.ClientCPU.Cores)}
	if pod != nil {
		c.Node = pod.Spec.NodeName
		for _, ct := range pod.Spec.Containers {
			if ct.Name != benchContainerName {
				continue
			}
			if q, ok := ct.Resources.Requests[corev1.ResourceCPU]; ok {
				c.CPURequest = &q
			}
			if q, ok := ct.Resources.Limits[corev1.ResourceCPU]; ok {
				c.CPULimit = &q
			}
		}
	}
	sum.Client = c
	if s := r.Server; s != nil && s.Delta != nil && s.Delta.CPU != nil && r.Duration > 0 {
		sum.ServerCPU = cores((s.Delta.CPU.User + s.Delta.CPU.Sys) / r.Duration)
	}

	var b strings.Builder
	fmt.Fprintf(&b, "%s run: SET:GET %s from %d connections on %d client threads, pipeline %d, %d-byte values over %d keys; %s measured after a %s warm-up; server io-threads %d on %d cores",
		sum.Purpose, w.Ratio, w.Clients, c.Threads, w.Pipeline, w.DataSize, w.Keyspace,
		durationOf(w.Duration), durationOf(w.Warmup), sum.IOThreads, sum.Cores)
	if sum.ServerCPU != nil {
		fmt.Fprintf(&b, ", which used %s CPU", sum.ServerCPU)
	}
	b.WriteString("; client")
	if c.Node != "" {
		fmt.Fprintf(&b, " on node %s", c.Node)
	}
	switch {
	case pod == nil:
		b.WriteString(" (its pod is gone: placement unknown)")
	case c.CPURequest == nil && c.CPULimit == nil:
		b.WriteString(" with no CPU request or limit (any idle CPU of the shared pool)")
	case c.CPULimit == nil:
		fmt.Fprintf(&b, " with CPU request %s and no limit (any idle CPU of the shared pool)", c.CPURequest)
	default:
		fmt.Fprintf(&b, " with CPU request %s, limit %s", orNone(c.CPURequest), c.CPULimit)
	}
	fmt.Fprintf(&b, ", used %s CPU", c.CPUUsed)
	if clientWasTheLimit(c) {
		b.WriteString(": the client, not the server, was the limit")
	}
	sum.Measured = b.String()
}

// clientWasTheLimit is true when the client used nearly all the CPU it could: its threads' cores, or
// its CPU limit when lower.
func clientWasTheLimit(c *cachev1alpha1.BenchmarkClient) bool {
	could := float64(c.Threads)
	if c.CPULimit != nil && c.CPULimit.AsApproximateFloat64() < could {
		could = c.CPULimit.AsApproximateFloat64()
	}
	return could > 0 && c.CPUUsed != nil && c.CPUUsed.AsApproximateFloat64() >= clientBound*could
}

// cores turns a CPU figure in cores into a quantity to the millicore ("970m").
func cores(v float64) *resource.Quantity {
	return resource.NewMilliQuantity(int64(v*1000+0.5), resource.DecimalSI)
}

func orNone(q *resource.Quantity) string {
	if q == nil {
		return "none"
	}
	return q.String()
}

func durationOf(d *metav1.Duration) time.Duration {
	if d == nil {
		return 0
	}
	return d.Duration
}
