package controllers

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
)

func validatedAs(status metav1.ConditionStatus) func(*cachev1alpha1.CacheInstance) {
	return func(ci *cachev1alpha1.CacheInstance) {
		ci.Status.Conditions = append(ci.Status.Conditions, metav1.Condition{Type: cachev1alpha1.ConditionThroughputValidated, Status: status, Reason: "x"})
	}
}

func retryScheduled(ci *cachev1alpha1.CacheInstance) {
	ci.Status.Conditions = append(ci.Status.Conditions, metav1.Condition{
		Type: cachev1alpha1.ConditionThroughputValidated, Status: metav1.ConditionUnknown, Reason: reasonRetryScheduled})
}

func tunedPolicy(ci *cachev1alpha1.CacheInstance) {
	ci.Spec.IOThreads.Policy = cachev1alpha1.IOThreadsTuned
}

func tunedFor(cores int32, chosen *int32) func(*cachev1alpha1.CacheInstance) {
	return func(ci *cachev1alpha1.CacheInstance) {
		ci.Status.Tuning = &cachev1alpha1.TuningStatus{Cores: cores, Benchmark: "cache-tuning", ChosenIOThreads: chosen}
	}
}

func TestWantedBenchmark(t *testing.T) {
	noValidation := func(ci *cachev1alpha1.CacheInstance) { ci.Spec.Benchmark.ValidateOnChange = ptr.To(false) }
	for _, tc := range []struct {
		name       string
		ci         *cachev1alpha1.CacheInstance
		want       string // "" for none
		purpose    cachev1alpha1.BenchmarkPurpose
		candidates []int32
		retryOf    string
	}{
		{name: "new instance is validated", ci: newInstance(4), want: "cache-validate-HASH", purpose: cachev1alpha1.PurposeValidation},
		{name: "config changed", ci: newInstance(4, validatedAs(metav1.ConditionUnknown)), want: "cache-validate-HASH", purpose: cachev1alpha1.PurposeValidation},
		{name: "validated", ci: newInstance(4, validatedAs(metav1.ConditionTrue))},
		{name: "failed validation is not repeated", ci: newInstance(4, validatedAs(metav1.ConditionFalse))},
		{name: "failed once: retried", ci: newInstance(4, retryScheduled), want: "cache-validate-HASH-retry", purpose: cachev1alpha1.PurposeValidation,
			retryOf: "cache-validate-HASH"},
		{name: "no retry once validation is off", ci: newInstance(4, retryScheduled, noValidation)},
		{name: "validation off", ci: newInstance(4, noValidation)},
		{name: "tuning before validation", ci: newInstance(8, tunedPolicy), want: "cache-tuning-8c", purpose: cachev1alpha1.PurposeTuning,
			candidates: []int32{1, 4, 6, 8}},
		{name: "tuning within the server list", ci: newInstance(8, tunedPolicy, affinity(cachev1alpha1.CPUAffinitySpec{Server: "0-1,4"})),
			want: "cache-tuning-8c", purpose: cachev1alpha1.PurposeTuning, candidates: []int32{1, 3}},
		{name: "tuning again for new cores", ci: newInstance(8, tunedPolicy, tunedFor(4, ptr.To[int32](2)), validatedAs(metav1.ConditionTrue)),
			want: "cache-tuning-8c", purpose: cachev1alpha1.PurposeTuning, candidates: []int32{1, 4, 6, 8}},
		{name: "tuned, then validated", ci: newInstance(8, tunedPolicy, tunedFor(8, ptr.To[int32](6))), want: "cache-validate-HASH", purpose: cachev1alpha1.PurposeValidation},
		{name: "tuning failed: the Auto value is validated", ci: newInstance(8, tunedPolicy, tunedFor(8, nil)), want: "cache-validate-HASH", purpose: cachev1alpha1.PurposeValidation},
		{name: "tuning even without validation", ci: newInstance(2, tunedPolicy, noValidation), want: "cache-tuning-2c", purpose: cachev1alpha1.PurposeTuning, candidates: []int32{1, 2}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := renderConfig(tc.ci)
			if err != nil {
				t.Fatal(err)
			}
			cb, retryOf := wantedBenchmark(tc.ci, cfg)
			if tc.want == "" {
				if cb != nil {
					t.Fatalf("wants %s, want none", cb.Name)
				}
				return
			}
			if want := strings.Replace(tc.retryOf, "HASH", cfg.Hash, 1); retryOf != want {
				t.Errorf("retries %q, want %q", retryOf, want)
			}
			if cb == nil {
				t.Fatalf("wants none, want %s", tc.want)
			}
			if name := strings.Replace(tc.want, "HASH", cfg.Hash, 1); cb.Name != name || cb.Namespace != "ns" || cb.Spec.Purpose != tc.purpose ||
				!slices.Equal(cb.Spec.IOThreads, tc.candidates) || cb.Spec.InstanceRef.Name != "cache" {
				t.Errorf("wants %s %s %v, want %s %s %v", cb.Name, cb.Spec.Purpose, cb.Spec.IOThreads, name, tc.purpose, tc.candidates)
			}
			if !metav1.IsControlledBy(cb, tc.ci) {
				t.Errorf("owner references %+v", cb.OwnerReferences)
			}
			if cb.Spec.Workload.Clients != 50 || cb.Spec.Workload.Duration.Duration != 30*time.Second {
				t.Errorf("workload %+v: want the instance's (defaulted) benchmark workload", cb.Spec.Workload)
			}
		})
	}
}

func TestStaleBenchmark(t *testing.T) {
	ci := newInstance(4, func(ci *cachev1alpha1.CacheInstance) {
		ci.Status.Conditions = []metav1.Condition{{Type: cachev1alpha1.ConditionReady, Status: "True", LastTransitionTime: metav1.NewTime(t0)}}
	})
	done := func(state cachev1alpha1.BenchmarkState, at time.Time) *cachev1alpha1.CacheBenchmark {
		cb := newBenchmark()
		cb.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(ci, cachev1alpha1.GroupVersion.WithKind("CacheInstance"))}
		cb.Status.State = state
		cb.Status.CompletionTime = ptrTime(at)
		return cb
	}
	for _, tc := range []struct {
		name  string
		cb    *cachev1alpha1.CacheBenchmark
		stale bool
	}{
		{"finished before the pods last became ready", done(cachev1alpha1.BenchmarkSucceeded, t0.Add(-time.Hour)), true},
		{"failed before", done(cachev1alpha1.BenchmarkFailed, t0.Add(-time.Hour)), true},
		{"finished since", done(cachev1alpha1.BenchmarkSucceeded, t0.Add(time.Minute)), false},
		{"still running", done(cachev1alpha1.BenchmarkRunning, t0.Add(-time.Hour)), false},
		{"someone else's", func() *cachev1alpha1.CacheBenchmark {
			cb := done(cachev1alpha1.BenchmarkSucceeded, t0.Add(-time.Hour))
			cb.OwnerReferences = nil
			return cb
		}(), false},
	} {
		if got := staleBenchmark(tc.cb, ci); got != tc.stale {
			t.Errorf("%s: stale = %v", tc.name, got)
		}
	}
}

// A hold chooses io-threads whatever the policy; the Tuned policy uses what its sweep chose for the
// current cores; neither ever changes the spec.
func TestIOThreadsFromHoldAndTuning(t *testing.T) {
	hold := func(n int32) func(*cachev1alpha1.CacheInstance) {
		return func(ci *cachev1alpha1.CacheInstance) {
			ci.Status.ActiveBenchmark = &cachev1alpha1.ActiveBenchmark{Name: "sweep", UID: "u", IOThreads: ptr.To(n)}
		}
	}
	for _, tc := range []struct {
		name      string
		ci        *cachev1alpha1.CacheInstance
		ioThreads int32
		pending   bool
		why       string
	}{
		{"hold on Auto", newInstance(8, hold(2)), 2, false, "CacheBenchmark sweep measures this setting"},
		{"hold on Fixed", newInstance(8, fixed(4), hold(8)), 8, false, "CacheBenchmark sweep"},
		{"hold beyond the cores is ignored", newInstance(4, hold(6)), 3, false, "policy Auto"},
		{"hold without a setting", newInstance(8, func(ci *cachev1alpha1.CacheInstance) {
			ci.Status.ActiveBenchmark = &cachev1alpha1.ActiveBenchmark{Name: "v", UID: "u"}
		}), 6, false, "policy Auto"},
		{"tuned", newInstance(8, tunedPolicy, tunedFor(8, ptr.To[int32](4))), 4, false, "policy Tuned, measured best by CacheBenchmark cache-tuning on 8 cores"},
		{"tuned for other cores", newInstance(8, tunedPolicy, tunedFor(4, ptr.To[int32](2))), 6, true, "not measured yet"},
		{"tuning failed", newInstance(8, tunedPolicy, tunedFor(8, nil)), 6, true, "not measured yet"},
		{"tuning left over from the Tuned policy", newInstance(8, tunedFor(8, ptr.To[int32](4))), 6, false, "policy Auto"},
		{"hold during tuning", newInstance(8, tunedPolicy, hold(1)), 1, true, "CacheBenchmark sweep"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			spec := tc.ci.Spec.DeepCopy()
			cfg, err := renderConfig(tc.ci)
			if err != nil {
				t.Fatal(err)
			}
			_, comment, _ := strings.Cut(cfg.Text, "# io-threads: ")
			comment, _, _ = strings.Cut(comment, "\n")
			if cfg.IOThreads != tc.ioThreads || cfg.TuningPending != tc.pending || !strings.Contains(comment, tc.why) {
				t.Errorf("io-threads %d pending %v, want %d %v; config:\n%s", cfg.IOThreads, cfg.TuningPending, tc.ioThreads, tc.pending, cfg.Text)
			}
			if !equality.Semantic.DeepEqual(spec, &tc.ci.Spec) {
				t.Error("rendering changed the spec")
			}
		})
	}
}

// The instance's benchmark resources reach the benchmarks it creates, so a small cluster can
// still validate.
func TestWantedBenchmarkResources(t *testing.T) {
	small := corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("200m")}}
	for _, ci := range []*cachev1alpha1.CacheInstance{newInstance(4), newInstance(8, tunedPolicy)} {
		ci.Spec.Benchmark.Resources = small.DeepCopy()
		cfg, err := renderConfig(ci)
		if err != nil {
			t.Fatal(err)
		}
		cb, _ := wantedBenchmark(ci, cfg)
		if cb == nil || cb.Spec.Resources == nil || !cb.Spec.Resources.Requests.Cpu().Equal(resource.MustParse("200m")) {
			t.Fatalf("%s benchmark resources %+v", cb.Spec.Purpose, cb.Spec.Resources)
		}
	}
}
