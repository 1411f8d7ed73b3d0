package controllers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
	"github.com/iocache/iocache/server/bench"
	"github.com/iocache/iocache/server/testpeer"
)

// benchResult is a result as iocache-bench writes it for a run at ops/s with a p99 of p99ms, the
// server having spread the work over two threads.
func benchResult(ops float64, p99ms float64) string {
	two := 2
	r := &bench.Result{
		Version: bench.SchemaVersion, Tool: "iocache-bench", OK: true, Target: "cache:6379", StartedAt: "2026-05-01T12:00:00Z",
		Config:   bench.Config{Clients: 50, Threads: 2, Pipeline: 1, DataSize: 256, Keyspace: 100000, Ratio: "1:10", Tests: []string{"mixed"}, DurationSec: 30, WarmupSec: 5},
		Duration: 30, Requests: int64(ops * 30), OpsPerSec: ops,
		Latency: bench.Latency{P50: p99ms / 4, P90: p99ms / 2, P99: p99ms, P999: p99ms * 2, Max: p99ms * 5, Mean: p99ms / 3},
		Tests:   []bench.Test{{Name: "mixed", Requests: int64(ops * 30), Duration: 30, OpsPerSec: ops}},
		Server: &bench.Server{Delta: &bench.Info{IOThreadsActive: &two, Threads: []bench.IOThread{
			{ID: 0, Clients: 25, Reads: 1000, Writes: 990, CPUs: "0"},
			{ID: 1, Clients: 25, Reads: 1001, Writes: 995, CPUs: "1"},
		}}},
	}
	return string(bench.CompactJSON(r))
}

// failedBenchResult is what iocache-bench writes when it could not run.
func failedBenchResult(why string) string {
	return string(bench.CompactJSON(&bench.Result{Version: bench.SchemaVersion, Tool: "iocache-bench", OK: false, Error: why}))
}

func noValidation(ci *cachev1alpha1.CacheInstance) {
	ci.Spec.Benchmark.ValidateOnChange = ptr.To(false)
}

func benchmarkOf(ns, name, instance string, mutate ...func(*cachev1alpha1.CacheBenchmark)) *cachev1alpha1.CacheBenchmark {
	cb := &cachev1alpha1.CacheBenchmark{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       cachev1alpha1.CacheBenchmarkSpec{InstanceRef: corev1.LocalObjectReference{Name: instance}},
	}
	for _, m := range mutate {
		m(cb)
	}
	return cb
}

// readyInstance creates an instance and plays its first rollout to Ready.
func (cl *cluster) readyInstance(t *testing.T, ci *cachev1alpha1.CacheInstance) *cachev1alpha1.CacheInstance {
	t.Helper()
	if err := cl.c.Create(context.Background(), ci); err != nil {
		t.Fatal(err)
	}
	return cl.rollTo(t, ci.Namespace, ci.Name, 0)
}

// rollOut waits until the instance rolls to a config with io-threads n (0: any), that is until its
// StatefulSet has a template with the instance's current config hash that no pod runs yet, then
// plays that rollout as the StatefulSet controller and the kubelet would.
func (cl *cluster) rollOut(t *testing.T, ns, name string, n int32) {
	t.Helper()
	unchanged := false
	eventually(t, fmt.Sprintf("%s rolls to io-threads %d", name, n), func() error {
		ci := &cachev1alpha1.CacheInstance{}
		sts := &appsv1.StatefulSet{}
		if err := cl.get(t, ns, name, ci); err != nil {
			return err
		}
		if err := cl.get(t, ns, name, sts); err != nil {
			return err
		}
		ready := meta.FindStatusCondition(ci.Status.Conditions, cachev1alpha1.ConditionReady)
		switch {
		case n != 0 && ci.Status.IOThreads != n:
			return fmt.Errorf("io-threads %d", ci.Status.IOThreads)
		case sts.Spec.Template.Annotations["cache.iocache.dev/config-hash"] == ci.Status.RestartHash &&
			sts.Status.ObservedGeneration >= sts.Generation && ready != nil && ready.Status == metav1.ConditionTrue &&
			ready.ObservedGeneration == ci.Generation:
			// Nothing the server reads changed (only the config's comments): no rollout to play.
			unchanged = true
			return nil
		case ready == nil || ready.Reason != "RollingOut" || ready.ObservedGeneration != ci.Generation:
			return fmt.Errorf("Ready %+v", ready)
		case sts.Spec.Template.Annotations["cache.iocache.dev/config-hash"] != ci.Status.RestartHash || sts.Status.ObservedGeneration >= sts.Generation:
			return fmt.Errorf("StatefulSet generation %d (observed %d) with config %s, instance config %s",
				sts.Generation, sts.Status.ObservedGeneration, sts.Spec.Template.Annotations["cache.iocache.dev/config-hash"], ci.Status.RestartHash)
		}
		return nil
	})
	if !unchanged {
		cl.simulateRollout(t, ns, name)
	}
}

// rollTo plays the rollout to io-threads n (0: any) and waits until the instance is Ready with it.
// Where a benchmark moves the instance on at once, Ready may not last long enough to be seen: use
// rollOut there.
func (cl *cluster) rollTo(t *testing.T, ns, name string, n int32) *cachev1alpha1.CacheInstance {
	t.Helper()
	cl.rollOut(t, ns, name, n)
	return cl.waitCondition(t, ns, name, cachev1alpha1.ConditionReady, metav1.ConditionTrue, "PodsReady")
}

func (cl *cluster) waitJob(t *testing.T, ns, name string) *batchv1.Job {
	t.Helper()
	job := &batchv1.Job{}
	eventually(t, "Job "+name, func() error { return cl.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, job) })
	return job
}

// finishJob does what the Job controller and the kubelet would: run one pod from the template that
// terminates with exit code and message, then mark the Job Complete, or Failed with jobReason.
func (cl *cluster) finishJob(t *testing.T, job *batchv1.Job, exitCode int32, message, jobReason string) {
	t.Helper()
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: job.Name + "-", Namespace: job.Namespace,
			Labels:          map[string]string{batchv1.JobNameLabel: job.Name},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, batchv1.SchemeGroupVersion.WithKind("Job"))},
		},
		Spec: *job.Spec.Template.Spec.DeepCopy(),
	}
	// Pod Security "restricted" is enforced in the test namespaces: this is where it would refuse.
	if err := cl.c.Create(ctx, pod); err != nil {
		t.Fatalf("creating the benchmark pod: %v", err)
	}
	now := metav1.Now()
	phase := corev1.PodSucceeded
	if exitCode != 0 {
		phase = corev1.PodFailed
	}
	c := pod.Spec.Containers[0]
	pod.Status = corev1.PodStatus{Phase: phase, ContainerStatuses: []corev1.ContainerStatus{{
		Name: c.Name, Image: c.Image, ImageID: "sha256:0123", ContainerID: "containerd://abc",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: exitCode, Message: message, StartedAt: now, FinishedAt: now, Reason: "Completed",
		}},
	}}}
	if err := cl.c.Status().Update(ctx, pod); err != nil {
		t.Fatalf("writing the pod's termination message: %v", err)
	}

	job.Status.StartTime = &now
	if jobReason == "" {
		job.Status.Succeeded = 1
		job.Status.CompletionTime = &now
		job.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, Reason: "CompletionsReached", LastTransitionTime: now},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, Reason: "CompletionsReached", LastTransitionTime: now},
		}
	} else {
		job.Status.Failed = 1
		job.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: jobReason, LastTransitionTime: now},
			{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: jobReason, Message: "Job has reached the specified backoff limit", LastTransitionTime: now},
		}
	}
	if err := cl.c.Status().Update(ctx, job); err != nil {
		t.Fatalf("finishing Job %s: %v", job.Name, err)
	}
}

// waitBenchmark waits until the benchmark reaches state, and returns it.
func (cl *cluster) waitBenchmark(t *testing.T, ns, name string, state cachev1alpha1.BenchmarkState) *cachev1alpha1.CacheBenchmark {
	t.Helper()
	cb := &cachev1alpha1.CacheBenchmark{}
	eventually(t, fmt.Sprintf("CacheBenchmark %s %s", name, state), func() error {
		if err := cl.get(t, ns, name, cb); err != nil {
			return err
		}
		if cb.Status.State != state {
			return fmt.Errorf("state %q, conditions %+v", cb.Status.State, cb.Status.Conditions)
		}
		return nil
	})
	return cb
}

func complete(t *testing.T, cb *cachev1alpha1.CacheBenchmark, status metav1.ConditionStatus, reason string) *metav1.Condition {
	t.Helper()
	c := meta.FindStatusCondition(cb.Status.Conditions, cachev1alpha1.ConditionComplete)
	if c == nil || c.Status != status || c.Reason != reason {
		t.Fatalf("Complete = %+v, want %s/%s", c, status, reason)
	}
	return c
}

// gauge reads one series of the operator's registry; ok is false when it does not exist.
func gauge(t *testing.T, name string, labels map[string]string) (float64, bool) {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() != name {
			continue
		}
	series:
		for _, m := range f.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue series
				}
			}
			return value(m), true
		}
	}
	return 0, false
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Gauge != nil:
		return m.Gauge.GetValue()
	case m.Counter != nil:
		return m.Counter.GetValue()
	}
	return 0
}

// A CacheBenchmark of a running instance: the Job it creates, the result it reads back from the
// pod's termination message into status and metrics, and an instance left as it was.
func TestBenchmarkMeasuresInstance(t *testing.T) {
	cl := startEnv(t)
	ns := cl.namespace(t)
	ctx := context.Background()
	ci := cl.readyInstance(t, instanceIn(ns, "cache", 4, noValidation, func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.Auth = &cachev1alpha1.AuthSpec{Generate: true}
	}))
	sec := &corev1.Secret{}
	if err := cl.get(t, ns, "cache-auth", sec); err != nil {
		t.Fatal(err)
	}
	password := string(sec.Data["password"])

	cb := benchmarkOf(ns, "manual", "cache", func(cb *cachev1alpha1.CacheBenchmark) {
		cb.Spec.Workload = cachev1alpha1.WorkloadSpec{Clients: 30, Threads: 3, Duration: &metav1.Duration{Duration: 10 * time.Second}}
	})
	if err := cl.c.Create(ctx, cb); err != nil {
		t.Fatal(err)
	}
	job := cl.waitJob(t, ns, "manual-run")
	pod := job.Spec.Template.Spec
	c := pod.Containers[0]
	args := strings.Join(c.Command, " ")
	for _, want := range []string{"/usr/local/bin/iocache-bench --host cache." + ns + ".svc --port 6379 --clients 30 --threads 3",
		"--warmup 5s --duration 10s", "--json-out /dev/termination-log", "--password-file /etc/iocache-bench/auth/password"} {
		if !strings.Contains(args, want) {
			t.Errorf("command %q lacks %q", args, want)
		}
	}
	if c.Image != testImage {
		t.Errorf("image %s, want the operator's %s", c.Image, testImage)
	}
	if cpu := c.Resources.Limits[corev1.ResourceCPU]; cpu.String() != "3" || !cpu.Equal(c.Resources.Requests[corev1.ResourceCPU]) {
		t.Errorf("resources %+v: want 3 CPUs, requests equal to limits", c.Resources)
	}
	if a := pod.Affinity; a == nil || a.PodAntiAffinity == nil || len(a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution) != 1 ||
		a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[0].PodAffinityTerm.LabelSelector.MatchLabels["app.kubernetes.io/instance"] != "cache" {
		t.Errorf("affinity %+v: want the server's pods avoided", pod.Affinity)
	}
	if sc := c.SecurityContext; sc == nil || !ptr.Deref(sc.ReadOnlyRootFilesystem, false) || !ptr.Deref(sc.RunAsNonRoot, false) ||
		pod.SecurityContext.SeccompProfile == nil || c.TerminationMessagePolicy != corev1.TerminationMessageFallbackToLogsOnError {
		t.Errorf("container security %+v, pod %+v, termination message policy %s", c.SecurityContext, pod.SecurityContext, c.TerminationMessagePolicy)
	}
	if raw, _ := json.Marshal(job); strings.Contains(string(raw), password) {
		t.Error("the Job carries the password")
	}
	if ref := metav1.GetControllerOf(job); ref == nil || ref.Kind != "CacheBenchmark" || ref.Name != "manual" {
		t.Errorf("Job owners %+v", job.OwnerReferences)
	}
	// The status follows the Job's creation.
	eventually(t, "manual is Measuring", func() error {
		running := &cachev1alpha1.CacheBenchmark{}
		if err := cl.get(t, ns, "manual", running); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(running.Status.Conditions, cachev1alpha1.ConditionComplete); running.Status.State != cachev1alpha1.BenchmarkRunning ||
			c == nil || c.Status != metav1.ConditionUnknown || c.Reason != "Measuring" {
			return fmt.Errorf("state %s, Complete %+v", running.Status.State, c)
		}
		return nil
	})
	held := &cachev1alpha1.CacheInstance{}
	if err := cl.get(t, ns, "cache", held); err != nil {
		t.Fatal(err)
	}
	if ab := held.Status.ActiveBenchmark; ab == nil || ab.Name != "manual" || ab.IOThreads != nil {
		t.Errorf("activeBenchmark %+v: want manual holding the instance without changing io-threads", ab)
	}

	cl.finishJob(t, job, 0, benchResult(123456.4, 1.25), "")
	cb = cl.waitBenchmark(t, ns, "manual", cachev1alpha1.BenchmarkSucceeded)
	complete(t, cb, metav1.ConditionTrue, "Succeeded")
	if len(cb.Status.Results) != 1 {
		t.Fatalf("results %+v", cb.Status.Results)
	}
	r := cb.Status.Results[0]
	if r.OpsPerSecond != 123456 || r.IOThreads != 3 || r.Cores != 4 || r.ConfigHash != ci.Status.ConfigHash || r.Job != "manual-run" ||
		r.Latency.P99.Duration != 1250*time.Microsecond || len(r.Threads) != 2 || r.Threads[1].Reads != 1001 {
		t.Errorf("result %+v", r)
	}
	if ptr.Deref(cb.Status.BestIOThreads, 0) != 3 || cb.Status.BestOpsPerSecond != 123456 || ptr.Deref(cb.Status.OriginalIOThreads, 0) != 3 ||
		!strings.Contains(cb.Status.Explanation, "123456 ops/s") || cb.Status.StartTime == nil || cb.Status.CompletionTime == nil || cb.Status.Current != nil {
		t.Errorf("status %+v", cb.Status)
	}
	after := cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionReady, metav1.ConditionTrue, "PodsReady")
	if after.Status.ActiveBenchmark != nil || after.Status.IOThreads != 3 || after.Status.ConfigHash != ci.Status.ConfigHash || after.Status.LastBenchmark != nil {
		t.Errorf("instance after a manual run: %+v", after.Status)
	}

	labels := map[string]string{"namespace": ns, "instance": "cache", "io_threads": "3"}
	if v, ok := gauge(t, "iocache_benchmark_ops_per_second", labels); !ok || v != 123456 {
		t.Errorf("iocache_benchmark_ops_per_second %v (exported: %v)", v, ok)
	}
	labels["quantile"] = "0.99"
	if v, ok := gauge(t, "iocache_benchmark_latency_seconds", labels); !ok || v != 0.00125 {
		t.Errorf("iocache_benchmark_latency_seconds{quantile=0.99} %v (exported: %v)", v, ok)
	}
	if v, _ := gauge(t, "iocache_benchmark_runs_total", map[string]string{"namespace": ns, "instance": "cache", "result": "succeeded"}); v != 1 {
		t.Errorf("succeeded runs %v, want 1", v)
	}
	cl.noSecretIn(t, ns, password)
}

// noSecretIn fails when the password shows in any CacheBenchmark, CacheInstance status or event
// of the namespace.
func (cl *cluster) noSecretIn(t *testing.T, ns, password string) {
	t.Helper()
	ctx := context.Background()
	var cbs cachev1alpha1.CacheBenchmarkList
	var cis cachev1alpha1.CacheInstanceList
	var evs eventsv1.EventList
	for _, l := range []client.ObjectList{&cbs, &cis, &evs} {
		if err := cl.c.List(ctx, l, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		if raw, _ := json.Marshal(l); strings.Contains(string(raw), password) {
			t.Errorf("the password is in a %T", l)
		}
	}
}

// Failures are reported with their reason, the runs are counted as failed, and the instance keeps
// serving at its own setting.
func TestBenchmarkFailuresAreReported(t *testing.T) {
	cl := startEnv(t)
	ns := cl.namespace(t)
	ctx := context.Background()
	ci := cl.readyInstance(t, instanceIn(ns, "cache", 4, noValidation))
	failed := func() float64 {
		v, _ := gauge(t, "iocache_benchmark_runs_total", map[string]string{"namespace": ns, "instance": "cache", "result": "failed"})
		return v
	}

	for i, tc := range []struct {
		name, message, jobReason string
		exitCode                 int32
		reason, says             string
	}{
		{"deadline", "", "DeadlineExceeded", 137, "DeadlineExceeded", "ran longer than its deadline"},
		{"bench failed", failedBenchResult("connecting to cache:6379: connection refused"), "BackoffLimitExceeded", 1, "JobFailed",
			"iocache-bench: connecting to cache:6379: connection refused"},
		{"garbage", "Segmentation fault (core dumped)", "", 0, "InvalidResult", "not an iocache-bench JSON result"},
		{"unordered percentiles", strings.Replace(benchResult(1000, 1), `"p99":1,`, `"p99":0.01,`, 1), "", 0, "InvalidResult", "out of order"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			name := fmt.Sprintf("fail-%d", i)
			if err := cl.c.Create(ctx, benchmarkOf(ns, name, "cache")); err != nil {
				t.Fatal(err)
			}
			before := failed()
			cl.finishJob(t, cl.waitJob(t, ns, name+"-run"), tc.exitCode, tc.message, tc.jobReason)
			cb := cl.waitBenchmark(t, ns, name, cachev1alpha1.BenchmarkFailed)
			c := complete(t, cb, metav1.ConditionFalse, tc.reason)
			if !strings.Contains(c.Message, tc.says) || !strings.Contains(cb.Status.Explanation, tc.says) {
				t.Errorf("message %q / explanation %q lack %q", c.Message, cb.Status.Explanation, tc.says)
			}
			if strings.Contains(c.Message, "Segmentation") {
				t.Error("the pod's output is repeated in the status")
			}
			// Counted just after the status is written.
			eventually(t, "the failed run is counted", func() error {
				if got := failed(); got != before+1 {
					return fmt.Errorf("failed runs %v, want %v", got, before+1)
				}
				return nil
			})
			inst := cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionReady, metav1.ConditionTrue, "PodsReady")
			if inst.Status.ActiveBenchmark != nil || inst.Status.ConfigHash != ci.Status.ConfigHash {
				t.Errorf("instance after a failed run: hold %+v, hash %s (was %s)", inst.Status.ActiveBenchmark, inst.Status.ConfigHash, ci.Status.ConfigHash)
			}
		})
	}

	t.Run("instance not found", func(t *testing.T) {
		if err := cl.c.Create(ctx, benchmarkOf(ns, "orphan", "nope")); err != nil {
			t.Fatal(err)
		}
		cb := cl.waitBenchmark(t, ns, "orphan", cachev1alpha1.BenchmarkFailed)
		if c := complete(t, cb, metav1.ConditionFalse, "InstanceNotFound"); !strings.Contains(c.Message, "CacheInstance nope does not exist") {
			t.Errorf("message %q", c.Message)
		}
	})
	t.Run("more io-threads than cores", func(t *testing.T) {
		if err := cl.c.Create(ctx, benchmarkOf(ns, "toomany", "cache", func(cb *cachev1alpha1.CacheBenchmark) { cb.Spec.IOThreads = []int32{2, 8} })); err != nil {
			t.Fatal(err)
		}
		cb := cl.waitBenchmark(t, ns, "toomany", cachev1alpha1.BenchmarkFailed)
		if c := complete(t, cb, metav1.ConditionFalse, "InvalidSpec"); !strings.Contains(c.Message, "io-threads 8 exceeds the 4 cores") {
			t.Errorf("message %q", c.Message)
		}
		if err := cl.get(t, ns, "toomany-io2", &batchv1.Job{}); err == nil {
			t.Error("a Job ran although the sweep could never finish")
		}
	})
	t.Run("spec is immutable", func(t *testing.T) {
		cb := &cachev1alpha1.CacheBenchmark{}
		if err := cl.get(t, ns, "toomany", cb); err != nil {
			t.Fatal(err)
		}
		cb.Spec.IOThreads = []int32{2}
		if err := cl.c.Update(ctx, cb); err == nil || !strings.Contains(err.Error(), "spec is immutable") {
			t.Errorf("changing the spec: %v", err)
		}
	})
}

// A manual sweep runs each setting in turn through the instance's status, never its spec, measures
// each once the pods are ready with it, and lets the instance return to its own setting.
func TestManualSweepRestoresInstance(t *testing.T) {
	cl := startEnv(t)
	ns := cl.namespace(t)
	ctx := context.Background()
	ci := cl.readyInstance(t, instanceIn(ns, "cache", 4, noValidation))
	if err := cl.c.Create(ctx, benchmarkOf(ns, "sweep", "cache", func(cb *cachev1alpha1.CacheBenchmark) { cb.Spec.IOThreads = []int32{1, 2} })); err != nil {
		t.Fatal(err)
	}
	for _, step := range []struct {
		n      int32
		result string
	}{{1, benchResult(100000, 1)}, {2, benchResult(150000, 1.1)}} {
		inst := cl.rollTo(t, ns, "cache", step.n)
		if inst.Spec.IOThreads.Policy != cachev1alpha1.IOThreadsAuto || inst.Spec.IOThreads.Count != nil {
			t.Errorf("the sweep changed the spec: %+v", inst.Spec.IOThreads)
		}
		if ab := inst.Status.ActiveBenchmark; ab == nil || ab.Name != "sweep" || ptr.Deref(ab.IOThreads, 0) != step.n {
			t.Errorf("activeBenchmark %+v", ab)
		}
		cm := &corev1.ConfigMap{}
		if err := cl.get(t, ns, "cache-config", cm); err != nil {
			t.Fatal(err)
		}
		if want := fmt.Sprintf("io-threads %d\n", step.n); !strings.Contains(cm.Data["iocache.conf"], want) {
			t.Errorf("config lacks %q:\n%s", want, cm.Data["iocache.conf"])
		}
		job := cl.waitJob(t, ns, fmt.Sprintf("sweep-io%d", step.n))
		if got := job.Annotations["cache.iocache.dev/io-threads"]; got != fmt.Sprint(step.n) {
			t.Errorf("Job measures io-threads %s, want %d", got, step.n)
		}
		cl.finishJob(t, job, 0, step.result, "")
	}
	cb := cl.waitBenchmark(t, ns, "sweep", cachev1alpha1.BenchmarkSucceeded)
	if ptr.Deref(cb.Status.BestIOThreads, 0) != 2 || cb.Status.BestOpsPerSecond != 150000 || len(cb.Status.Results) != 2 ||
		ptr.Deref(cb.Status.OriginalIOThreads, 0) != 3 || !strings.Contains(cb.Status.Explanation, "io-threads 2 won") {
		t.Errorf("status %+v", cb.Status)
	}
	// Back to the Auto value: the config the instance had before the sweep.
	eventually(t, "the instance returns to its own setting", func() error {
		inst := &cachev1alpha1.CacheInstance{}
		if err := cl.get(t, ns, "cache", inst); err != nil {
			return err
		}
		if inst.Status.IOThreads != 3 || inst.Status.ConfigHash != ci.Status.ConfigHash || inst.Status.ActiveBenchmark != nil {
			return fmt.Errorf("io-threads %d hash %s hold %+v", inst.Status.IOThreads, inst.Status.ConfigHash, inst.Status.ActiveBenchmark)
		}
		return nil
	})
	for _, n := range []string{"1", "2"} {
		if _, ok := gauge(t, "iocache_benchmark_ops_per_second", map[string]string{"namespace": ns, "instance": "cache", "io_threads": n}); !ok {
			t.Errorf("no ops/s series for io-threads %s", n)
		}
	}
}

// Tuned: the operator sweeps the candidates, applies the winner and records why, validates the
// rollout that follows against minOpsPerSecond, validates again after the next config change, and
// tunes again when the cores change.
func TestTunedPolicyAndValidation(t *testing.T) {
	cl := startEnv(t)
	ns := cl.namespace(t)
	ci := instanceIn(ns, "cache", 2, func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.IOThreads.Policy = cachev1alpha1.IOThreadsTuned
		ci.Spec.Benchmark.MinOpsPerSecond = ptr.To[int64](150000)
	})
	if err := cl.c.Create(context.Background(), ci); err != nil {
		t.Fatal(err)
	}
	// The first rollout (the Auto value) is Ready only until the tuning sweep moves the instance.
	cl.rollOut(t, ns, "cache", 1)
	first := &appsv1.StatefulSet{}
	if err := cl.get(t, ns, "cache", first); err != nil {
		t.Fatal(err)
	}
	tuning := cl.waitBenchmark(t, ns, "cache-tuning-2c", cachev1alpha1.BenchmarkRunning)
	if tuning.Spec.Purpose != cachev1alpha1.PurposeTuning || !slices.Equal(tuning.Spec.IOThreads, []int32{1, 2}) || !metav1.IsControlledBy(tuning, ci) {
		t.Errorf("tuning benchmark %+v owned by %+v", tuning.Spec, tuning.OwnerReferences)
	}
	// io-threads 2 is 80% faster with a p99 within 1.5× the best.
	for _, step := range []struct {
		n      int32
		result string
	}{{1, benchResult(100000, 1)}, {2, benchResult(180000, 1.2)}} {
		cl.rollTo(t, ns, "cache", step.n)
		cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionProgressing, metav1.ConditionTrue, "TuningPending")
		cl.finishJob(t, cl.waitJob(t, ns, fmt.Sprintf("cache-tuning-2c-io%d", step.n)), 0, step.result, "")
	}
	var validations cachev1alpha1.CacheBenchmarkList
	if err := cl.c.List(context.Background(), &validations, client.InNamespace(ns)); err != nil || len(validations.Items) != 1 {
		t.Errorf("benchmarks during the tuning: %d (%v); a validation must wait for it", len(validations.Items), err)
	}
	cl.waitBenchmark(t, ns, "cache-tuning-2c", cachev1alpha1.BenchmarkSucceeded)
	ci = cl.rollTo(t, ns, "cache", 2)
	if tu := ci.Status.Tuning; tu == nil || ptr.Deref(tu.ChosenIOThreads, 0) != 2 || tu.Cores != 2 || len(tu.Results) != 2 ||
		!strings.Contains(tu.Explanation, "io-threads 2 won") {
		t.Errorf("status.tuning %+v", tu)
	}
	if note := cl.waitEvent(t, ns, "cache", "Tuned"); !strings.Contains(note, "io-threads 2 chosen for 2 cores") {
		t.Errorf("Tuned event %q", note)
	}
	cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionProgressing, metav1.ConditionFalse, "RolloutComplete")
	// io-threads changes live: the sweep and the winner never touched the pod template, so no pod
	// was replaced and the cache stayed warm.
	sts := &appsv1.StatefulSet{}
	if err := cl.get(t, ns, "cache", sts); err != nil {
		t.Fatal(err)
	}
	if sts.Generation != first.Generation || !reflect.DeepEqual(sts.Spec.Template, first.Spec.Template) {
		t.Errorf("the tuning sweep changed the pod template (generation %d -> %d)", first.Generation, sts.Generation)
	}

	// The winner, applied live, is validated.
	validation := "cache-validate-" + ci.Status.ConfigHash
	cl.finishJob(t, cl.waitJob(t, ns, validation+"-run"), 0, benchResult(160000, 1.1), "")
	ci = cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionThroughputValidated, metav1.ConditionTrue, "MinimumMet")
	if lb := ci.Status.LastBenchmark; lb == nil || lb.OpsPerSecond != 160000 || lb.Benchmark != validation || lb.IOThreads != 2 {
		t.Errorf("lastBenchmark %+v", lb)
	}
	condition := func(status string) float64 {
		v, _ := gauge(t, "iocache_instance_condition", map[string]string{"namespace": ns, "instance": "cache", "condition": "ThroughputValidated", "status": status})
		return v
	}
	// The gauge follows the status the reconcile wrote, a moment after it.
	eventually(t, "iocache_instance_condition{ThroughputValidated} True", func() error {
		if condition("True") != 1 || condition("False") != 0 || condition("Unknown") != 0 {
			return fmt.Errorf("True %v False %v Unknown %v", condition("True"), condition("False"), condition("Unknown"))
		}
		return nil
	})

	// A config change rolls the pods and is validated again; this time below the minimum.
	cl.update(t, ns, "cache", func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.Config = map[string]cachev1alpha1.ConfigValue{"hz": "20"}
	})
	cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionThroughputValidated, metav1.ConditionUnknown, "ConfigChanged")
	ci = cl.rollTo(t, ns, "cache", 2)
	cl.finishJob(t, cl.waitJob(t, ns, "cache-validate-"+ci.Status.ConfigHash+"-run"), 0, benchResult(120000, 1.1), "")
	ci = cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionThroughputValidated, metav1.ConditionFalse, "BelowMinimum")
	if msg := meta.FindStatusCondition(ci.Status.Conditions, cachev1alpha1.ConditionThroughputValidated).Message; !strings.Contains(msg, "120000 ops/s") ||
		!strings.Contains(msg, "minOpsPerSecond 150000") {
		t.Errorf("ThroughputValidated message %q lacks the figures", msg)
	}
	// What IOCacheThroughputBelowValidated fires on.
	eventually(t, "iocache_instance_condition{ThroughputValidated} False", func() error {
		if condition("False") != 1 || condition("True") != 0 {
			return fmt.Errorf("True %v False %v", condition("True"), condition("False"))
		}
		return nil
	})
	cl.waitEvent(t, ns, "cache", "ThroughputBelowMinimum")

	// New cores, new tuning.
	cl.update(t, ns, "cache", func(ci *cachev1alpha1.CacheInstance) { ci.Spec.Cores = 4 })
	cl.rollOut(t, ns, "cache", 3)
	retune := cl.waitBenchmark(t, ns, "cache-tuning-4c", cachev1alpha1.BenchmarkRunning)
	if !slices.Equal(retune.Spec.IOThreads, []int32{1, 2, 3, 4}) {
		t.Errorf("candidates for 4 cores %v", retune.Spec.IOThreads)
	}

	// Deleting the instance drops its series.
	if err := cl.c.Delete(context.Background(), ci); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the instance's series are dropped", func() error {
		if _, ok := gauge(t, "iocache_instance_condition", map[string]string{"namespace": ns, "instance": "cache"}); ok {
			return fmt.Errorf("iocache_instance_condition still has series")
		}
		if _, ok := gauge(t, "iocache_benchmark_ops_per_second", map[string]string{"namespace": ns, "instance": "cache"}); ok {
			return fmt.Errorf("iocache_benchmark_ops_per_second still has series")
		}
		return nil
	})
}

// Every operator metric the shipped alerts and dashboards use must be exported: renaming one must
// fail here, not silently empty a panel or disarm an alert. Server metrics are checked in charts/.
func TestOperatorMetricsNamedInChartsExist(t *testing.T) {
	cl := startEnv(t)
	ns := cl.namespace(t)
	cl.readyInstance(t, instanceIn(ns, "cache", 2, noValidation))
	if err := cl.c.Create(context.Background(), benchmarkOf(ns, "once", "cache")); err != nil {
		t.Fatal(err)
	}
	cl.finishJob(t, cl.waitJob(t, ns, "once-run"), 0, benchResult(50000, 1), "")
	cl.waitBenchmark(t, ns, "once", cachev1alpha1.BenchmarkSucceeded)
	// A replicated instance, for the replication metrics (its pods need not run).
	if err := cl.c.Create(context.Background(), instanceIn(ns, "replicated", 1, noValidation, func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.Replicas = ptr.To[int32](2)
	})); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the replicated instance reconciled", func() error {
		families, err := metrics.Registry.Gather()
		if err != nil {
			return err
		}
		for _, f := range families {
			if f.GetName() == "iocache_instance_primary_changes_total" {
				return nil
			}
		}
		return fmt.Errorf("no iocache_instance_primary_changes_total yet")
	})
	// An instance with spec.tls, for the certificate's expiry (its pods need not run either).
	certs := testpeer.NewCerts(t)
	if err := cl.c.Create(context.Background(), tlsSecret(t, ns, "tls-cert", certs, certs.CertFile, certs.KeyFile)); err != nil {
		t.Fatal(err)
	}
	if err := cl.c.Create(context.Background(), instanceIn(ns, "tls", 1, noValidation, func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.TLS = &cachev1alpha1.TLSSpec{SecretName: "tls-cert"}
	})); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the TLS instance reconciled", func() error {
		if _, ok := gauge(t, "iocache_instance_tls_certificate_expiry_timestamp_seconds", map[string]string{"namespace": ns, "instance": "tls"}); !ok {
			return fmt.Errorf("no iocache_instance_tls_certificate_expiry_timestamp_seconds yet")
		}
		return nil
	})

	// An instance with a backup schedule and one completed backup, for the backup metrics.
	if err := cl.c.Create(context.Background(), instanceIn(ns, "backed-up", 1, noValidation, func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.Backup = &cachev1alpha1.BackupSpec{Schedule: "@daily",
			Storage: cachev1alpha1.BackupStorage{Endpoint: "http://127.0.0.1:1", Bucket: "backups", PathStyle: true}}
	})); err != nil {
		t.Fatal(err)
	}
	if err := cl.c.Create(context.Background(), backupOf(ns, "done", "backed-up")); err != nil {
		t.Fatal(err)
	}
	cl.finishJob(t, cl.waitJob(t, ns, "done"), 0, `{"format":"iocache-backup/v1","name":"done","object":"x/done.rdb.zst","sha256":"ab","size":10,"rdbSize":20,"keys":1}`, "")
	eventually(t, "the backup metrics", func() error {
		if _, ok := gauge(t, "iocache_backup_last_success_timestamp_seconds", map[string]string{"namespace": ns, "instance": "backed-up"}); !ok {
			return fmt.Errorf("no iocache_backup_last_success_timestamp_seconds yet")
		}
		return nil
	})

	files, _ := filepath.Glob(filepath.Join("..", "charts", "iocache", "dashboards", "*.json"))
	files = append(files, filepath.Join("..", "charts", "iocache", "files", "prometheus-rules.yaml"))
	operatorMetric := regexp.MustCompile(`\b(?:controller_runtime|workqueue|iocache_instance|iocache_benchmark|iocache_backup)_[a-z0-9_]+`)
	named := map[string][]string{}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range operatorMetric.FindAllString(string(raw), -1) {
			named[m] = append(named[m], filepath.Base(f))
		}
	}
	if len(named) < 5 || len(files) < 3 {
		t.Fatalf("found only %v in %v: has the chart moved?", named, files)
	}

	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]dto.MetricType{}
	for _, f := range families {
		exported[f.GetName()] = f.GetType()
	}
	for name, where := range named {
		if _, ok := exported[name]; ok {
			continue
		}
		// Histograms and summaries are queried through their _bucket, _sum and _count series.
		base := strings.TrimSuffix(strings.TrimSuffix(strings.TrimSuffix(name, "_bucket"), "_sum"), "_count")
		if typ, ok := exported[base]; ok && base != name && (typ == dto.MetricType_HISTOGRAM || typ == dto.MetricType_SUMMARY) {
			continue
		}
		t.Errorf("%s (used in %v) is not exported by the operator", name, slices.Compact(where))
	}
}

// One benchmark at a time per instance: a second one queues until the first lets go, and deleting
// a benchmark mid-sweep hands the instance back to its own setting.
func TestOneBenchmarkAtATime(t *testing.T) {
	cl := startEnv(t)
	ns := cl.namespace(t)
	ctx := context.Background()
	ci := cl.readyInstance(t, instanceIn(ns, "cache", 4, noValidation))
	first := benchmarkOf(ns, "first", "cache", func(cb *cachev1alpha1.CacheBenchmark) { cb.Spec.IOThreads = []int32{1} })
	if err := cl.c.Create(ctx, first); err != nil {
		t.Fatal(err)
	}
	cl.waitBenchmark(t, ns, "first", cachev1alpha1.BenchmarkRunning)
	if err := cl.c.Create(ctx, benchmarkOf(ns, "second", "cache")); err != nil {
		t.Fatal(err)
	}
	second := cl.waitBenchmark(t, ns, "second", cachev1alpha1.BenchmarkPending)
	if c := complete(t, second, metav1.ConditionUnknown, "Queued"); !strings.Contains(c.Message, "CacheBenchmark first is measuring") {
		t.Errorf("Queued message %q", c.Message)
	}
	cl.rollTo(t, ns, "cache", 1)
	cl.waitJob(t, ns, "first-io1")
	if err := cl.get(t, ns, "second-run", &batchv1.Job{}); err == nil {
		t.Fatal("the second benchmark runs while the first holds the instance")
	}

	// Deleted mid-sweep: the instance goes back to the Auto value, and the second one starts.
	if err := cl.c.Delete(ctx, first); err != nil {
		t.Fatal(err)
	}
	cl.rollTo(t, ns, "cache", 3)
	cl.finishJob(t, cl.waitJob(t, ns, "second-run"), 0, benchResult(90000, 1), "")
	done := cl.waitBenchmark(t, ns, "second", cachev1alpha1.BenchmarkSucceeded)
	if r := done.Status.Results; len(r) != 1 || r[0].IOThreads != 3 || r[0].ConfigHash != ci.Status.ConfigHash {
		t.Errorf("results %+v: want io-threads 3 with the instance's own config %s", r, ci.Status.ConfigHash)
	}
}

// Validations do not pile up, one per config the pods ever ran: the instance keeps the most recent
// few, and never deletes a run a user created.
func TestOldValidationsArePruned(t *testing.T) {
	cl := startEnv(t)
	ns := cl.namespace(t)
	ctx := context.Background()
	ci := cl.readyInstance(t, instanceIn(ns, "cache", 2))
	var validations []string
	var lastDone time.Time
	validate := func(ci *cachev1alpha1.CacheInstance) {
		t.Helper()
		name := "cache-validate-" + ci.Status.ConfigHash
		job := cl.waitJob(t, ns, name+"-run")
		// Completion times are stored to the second: each validation finishes in a later second
		// than the one before, so which are the most recent is not a matter of chance.
		time.Sleep(time.Until(lastDone.Truncate(time.Second).Add(time.Second)))
		cl.finishJob(t, job, 0, benchResult(100000, 1), "")
		cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionThroughputValidated, metav1.ConditionTrue, "Measured")
		lastDone = time.Now()
		validations = append(validations, name)
	}
	validate(ci)

	// A user's run, older than the validations that follow.
	if err := cl.c.Create(ctx, benchmarkOf(ns, "mine", "cache")); err != nil {
		t.Fatal(err)
	}
	cl.finishJob(t, cl.waitJob(t, ns, "mine-run"), 0, benchResult(100000, 1), "")
	cl.waitBenchmark(t, ns, "mine", cachev1alpha1.BenchmarkSucceeded)

	for i := range 3 {
		cl.update(t, ns, "cache", func(ci *cachev1alpha1.CacheInstance) {
			ci.Spec.Config = map[string]cachev1alpha1.ConfigValue{"hz": cachev1alpha1.ConfigValue(fmt.Sprint(11 + i))}
		})
		validate(cl.rollTo(t, ns, "cache", 0))
	}
	want := slices.Sorted(slices.Values(append([]string{"mine"}, validations[1:]...)))
	eventually(t, "the oldest validation is deleted", func() error {
		var list cachev1alpha1.CacheBenchmarkList
		if err := cl.c.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return err
		}
		var have []string
		for _, cb := range list.Items {
			have = append(have, cb.Name)
		}
		if slices.Sort(have); !slices.Equal(have, want) {
			return fmt.Errorf("benchmarks %v, want %v", have, want)
		}
		return nil
	})
}

// A failed validation runs once more after a backoff, one benchmark at a time still: a passing
// failure heals without a rollout, and a second failure makes ThroughputValidated False for good.
func TestFailedValidationIsRetriedOnce(t *testing.T) {
	cl := startEnv(t)
	ns := cl.namespace(t)
	ctx := context.Background()
	failValidation := func(name string) *cachev1alpha1.CacheBenchmark {
		t.Helper()
		cl.finishJob(t, cl.waitJob(t, ns, name+"-run"), 1, failedBenchResult("connecting to cache:6379: connection refused"), "BackoffLimitExceeded")
		return cl.waitBenchmark(t, ns, name, cachev1alpha1.BenchmarkFailed)
	}

	// The first failure only schedules the retry. A user's run, queued behind the validation, holds
	// the instance next: the retry waits for it even past its backoff.
	ci := cl.readyInstance(t, instanceIn(ns, "cache", 2))
	first := "cache-validate-" + ci.Status.ConfigHash
	cl.waitBenchmark(t, ns, first, cachev1alpha1.BenchmarkRunning)
	if err := cl.c.Create(ctx, benchmarkOf(ns, "mine", "cache")); err != nil {
		t.Fatal(err)
	}
	cl.waitBenchmark(t, ns, "mine", cachev1alpha1.BenchmarkPending)
	failValidation(first)
	ci = cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionThroughputValidated, metav1.ConditionUnknown, "RetryScheduled")
	if msg := meta.FindStatusCondition(ci.Status.Conditions, cachev1alpha1.ConditionThroughputValidated).Message; !strings.Contains(msg, "connection refused") ||
		!strings.Contains(msg, "as CacheBenchmark "+first+"-retry") {
		t.Errorf("RetryScheduled message %q: want the failure and the retry's name", msg)
	}
	cl.waitBenchmark(t, ns, "mine", cachev1alpha1.BenchmarkRunning)
	mine := cl.waitJob(t, ns, "mine-run")
	time.Sleep(testRetryBackoff + time.Second)
	if err := cl.get(t, ns, first+"-retry-run", &batchv1.Job{}); err == nil {
		t.Fatal("the retry runs while another benchmark holds the instance")
	}
	cl.finishJob(t, mine, 0, benchResult(90000, 1), "")
	// Then it runs, and succeeds: the failure was passing.
	cl.finishJob(t, cl.waitJob(t, ns, first+"-retry-run"), 0, benchResult(100000, 1), "")
	ci = cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionThroughputValidated, metav1.ConditionTrue, "Measured")
	if lb := ci.Status.LastBenchmark; lb == nil || lb.Benchmark != first+"-retry" {
		t.Errorf("lastBenchmark %+v, want the retry's figures", lb)
	}

	// The next config fails twice.
	cl.update(t, ns, "cache", func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.Config = map[string]cachev1alpha1.ConfigValue{"hz": "20"}
	})
	ci = cl.rollTo(t, ns, "cache", 0)
	second := "cache-validate-" + ci.Status.ConfigHash
	failed := failValidation(second)
	cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionThroughputValidated, metav1.ConditionUnknown, "RetryScheduled")
	retry := cl.waitBenchmark(t, ns, second+"-retry", cachev1alpha1.BenchmarkRunning)
	// Both times are stored to the second; the retry, counted from the stored end, cannot come sooner.
	if waited := retry.CreationTimestamp.Sub(failed.Status.CompletionTime.Time); waited < testRetryBackoff {
		t.Errorf("the retry started %s after the failure, want at least %s", waited, testRetryBackoff)
	}
	failValidation(second + "-retry")
	ci = cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionThroughputValidated, metav1.ConditionFalse, "BenchmarkFailed")
	if msg := meta.FindStatusCondition(ci.Status.Conditions, cachev1alpha1.ConditionThroughputValidated).Message; !strings.Contains(msg, "the retry of "+second) {
		t.Errorf("BenchmarkFailed message %q does not say the retry failed", msg)
	}
	// Once is all: no third run, and the condition stays False.
	time.Sleep(2 * testRetryBackoff)
	var list cachev1alpha1.CacheBenchmarkList
	if err := cl.c.List(ctx, &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, cb := range list.Items {
		if !slices.Contains([]string{"mine", first, first + "-retry", second, second + "-retry"}, cb.Name) {
			t.Errorf("unexpected CacheBenchmark %s (%s)", cb.Name, cb.Status.State)
		}
	}
	cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionThroughputValidated, metav1.ConditionFalse, "BenchmarkFailed")
}
