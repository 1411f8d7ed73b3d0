package e2eutil

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
)

// Benchmarks are the CacheBenchmarks that measure the instance.
func (e *Env) Benchmarks(ctx context.Context, ci *cachev1alpha1.CacheInstance) ([]cachev1alpha1.CacheBenchmark, error) {
	var list cachev1alpha1.CacheBenchmarkList
	if err := e.Client.List(ctx, &list, client.InNamespace(ci.Namespace)); err != nil {
		return nil, err
	}
	var out []cachev1alpha1.CacheBenchmark
	for _, cb := range list.Items {
		if cb.Spec.InstanceRef.Name == ci.Name {
			out = append(out, cb)
		}
	}
	return out, nil
}

// BenchmarkPod is the pod of the benchmark's current Job, nil while there is none.
func (e *Env) BenchmarkPod(ctx context.Context, cb *cachev1alpha1.CacheBenchmark) (*corev1.Pod, error) {
	if cb.Status.Current == nil || cb.Status.Current.Job == "" {
		return nil, nil
	}
	var pods corev1.PodList
	if err := e.Client.List(ctx, &pods, client.InNamespace(cb.Namespace), client.MatchingLabels{"batch.kubernetes.io/job-name": cb.Status.Current.Job}); err != nil {
		return nil, err
	}
	if len(pods.Items) == 0 {
		return nil, nil
	}
	return &pods.Items[len(pods.Items)-1], nil
}

// Unschedulable returns the scheduler's message when the pod cannot be placed on any node.
func Unschedulable(p *corev1.Pod) (string, bool) {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return c.Message, true
		}
	}
	return "", false
}

// BenchmarkState describes a benchmark in a few words: its state, the Complete condition's reason,
// and its Job pod's state when it has one.
func (e *Env) BenchmarkState(ctx context.Context, cb *cachev1alpha1.CacheBenchmark) string {
	s := fmt.Sprintf("%s %s %s", cb.Spec.Purpose, cb.Name, cb.Status.State)
	if c := apimeta.FindStatusCondition(cb.Status.Conditions, cachev1alpha1.ConditionComplete); c != nil {
		s += "(" + c.Reason + ")"
	}
	if p, err := e.BenchmarkPod(ctx, cb); err == nil && p != nil {
		if msg, ok := Unschedulable(p); ok {
			s += ", its pod is unschedulable: " + msg
		} else {
			s += ", its pod " + podState(p)
		}
	}
	return s
}

// CPUCapacity sums what the node of pod offers and what pods on it request, in millicores.
func (e *Env) CPUCapacity(ctx context.Context, nodeName string) (allocatable, requested int64, err error) {
	var node corev1.Node
	if err := e.Client.Get(ctx, client.ObjectKey{Name: nodeName}, &node); err != nil {
		return 0, 0, err
	}
	var pods corev1.PodList
	if err := e.Client.List(ctx, &pods); err != nil {
		return 0, 0, err
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName != nodeName || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			continue
		}
		for _, c := range p.Spec.Containers {
			requested += c.Resources.Requests.Cpu().MilliValue()
		}
	}
	return node.Status.Allocatable.Cpu().MilliValue(), requested, nil
}

// PodCPURequest is what the pod's containers ask for, in millicores.
func PodCPURequest(p *corev1.Pod) int64 {
	var m int64
	for _, c := range p.Spec.Containers {
		m += c.Resources.Requests.Cpu().MilliValue()
	}
	return m
}

// StopValidation turns the instance's validateOnChange off and deletes its Validation benchmarks,
// so a benchmark that cannot run on this node no longer holds the instance.
func (e *Env) StopValidation(ctx context.Context, key client.ObjectKey) error {
	var ci cachev1alpha1.CacheInstance
	if err := e.Client.Get(ctx, key, &ci); err != nil {
		return err
	}
	patch := client.MergeFrom(ci.DeepCopy())
	ci.Spec.Benchmark.ValidateOnChange = ptr.To(false)
	if err := e.Client.Patch(ctx, &ci, patch); err != nil {
		return err
	}
	cbs, err := e.Benchmarks(ctx, &ci)
	if err != nil {
		return err
	}
	for i := range cbs {
		if cbs[i].Spec.Purpose != cachev1alpha1.PurposeValidation {
			continue
		}
		if err := e.Client.Delete(ctx, &cbs[i], client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	return Poll(ctx, time.Second, 2*time.Minute, func(ctx context.Context) (bool, error) {
		var cur cachev1alpha1.CacheInstance
		if err := e.Client.Get(ctx, key, &cur); err != nil {
			return false, err
		}
		cbs, err := e.Benchmarks(ctx, &cur)
		if err != nil {
			return false, err
		}
		for _, cb := range cbs {
			if cb.Spec.Purpose == cachev1alpha1.PurposeValidation {
				return false, fmt.Errorf("validation benchmark %s still there", cb.Name)
			}
		}
		if cur.Status.ActiveBenchmark != nil {
			return false, fmt.Errorf("instance still held by %s", cur.Status.ActiveBenchmark.Name)
		}
		return true, nil
	})
}

// SmallBenchmark is a Manual CacheBenchmark a small node can schedule beside a 1-core instance:
// one client thread on a fraction of the shared CPU (the default asks for a whole exclusive CPU per
// client thread), 8 connections, 2 s of warm-up and 10 s measured.
func SmallBenchmark(ci *cachev1alpha1.CacheInstance, name string) *cachev1alpha1.CacheBenchmark {
	return &cachev1alpha1.CacheBenchmark{
		ObjectMeta: metav1.ObjectMeta{Namespace: ci.Namespace, Name: name},
		Spec: cachev1alpha1.CacheBenchmarkSpec{
			InstanceRef: corev1.LocalObjectReference{Name: ci.Name},
			Purpose:     cachev1alpha1.PurposeManual,
			Workload: cachev1alpha1.WorkloadSpec{
				Clients: 8, Threads: 1,
				Warmup:   &metav1.Duration{Duration: 2 * time.Second},
				Duration: &metav1.Duration{Duration: 10 * time.Second},
			},
			Resources: &corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m"), corev1.ResourceMemory: resource.MustParse("192Mi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("192Mi")},
			},
		},
	}
}

// RunBenchmark creates cb (replacing one of the same name) and waits until it finishes, printing
// its progress.
func (e *Env) RunBenchmark(ctx context.Context, cb *cachev1alpha1.CacheBenchmark, timeout time.Duration) (*cachev1alpha1.CacheBenchmark, error) {
	old := &cachev1alpha1.CacheBenchmark{}
	if err := e.Client.Get(ctx, client.ObjectKeyFromObject(cb), old); err == nil {
		if err := e.Client.Delete(ctx, old, client.PropagationPolicy(metav1.DeletePropagationForeground)); err != nil && !apierrors.IsNotFound(err) {
			return nil, err
		}
		if err := Poll(ctx, time.Second, 2*time.Minute, func(ctx context.Context) (bool, error) {
			return apierrors.IsNotFound(e.Client.Get(ctx, client.ObjectKeyFromObject(cb), &cachev1alpha1.CacheBenchmark{})), nil
		}); err != nil {
			return nil, err
		}
	}
	if err := e.Client.Create(ctx, cb); err != nil {
		return nil, err
	}
	start := time.Now()
	last := ""
	var cur cachev1alpha1.CacheBenchmark
	err := Poll(ctx, time.Second, timeout, func(ctx context.Context) (bool, error) {
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(cb), &cur); err != nil {
			return false, err
		}
		if d := e.BenchmarkState(ctx, &cur); d != last {
			fmt.Fprintf(e.Out, "  [%5.1fs] %s\n", time.Since(start).Seconds(), d)
			last = d
		}
		return cur.Status.State == cachev1alpha1.BenchmarkSucceeded || cur.Status.State == cachev1alpha1.BenchmarkFailed, nil
	})
	return &cur, err
}

// ResultLine describes one measured run.
func ResultLine(r *cachev1alpha1.BenchmarkResult) string {
	d := func(x *metav1.Duration) string {
		if x == nil {
			return "-"
		}
		return x.Duration.Round(time.Microsecond).String()
	}
	var threads []string
	for _, t := range r.Threads {
		threads = append(threads, fmt.Sprintf("thread %d: %d reads on CPUs %s", t.Thread, t.Reads, t.CPUs))
	}
	s := fmt.Sprintf("%d ops/s with io-threads %d, latency p50 %s p99 %s p99.9 %s max %s, %d errors",
		r.OpsPerSecond, r.IOThreads, d(r.Latency.P50), d(r.Latency.P99), d(r.Latency.P999), d(r.Latency.Max), r.Errors)
	if len(threads) > 0 {
		s += " (" + strings.Join(threads, "; ") + ")"
	}
	return s
}
