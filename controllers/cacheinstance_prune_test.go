package controllers

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
)

func TestPrunableValidations(t *testing.T) {
	ci := newInstance(4)
	const hash = "cur"
	// bench is a benchmark of ci: a validation it made that finished minutes after t0, unless
	// changed.
	bench := func(name string, minutes int, mutate ...func(*cachev1alpha1.CacheBenchmark)) cachev1alpha1.CacheBenchmark {
		cb := newBenchmark(func(cb *cachev1alpha1.CacheBenchmark) {
			cb.Name, cb.UID = name, types.UID("uid-"+name)
			cb.Spec.Purpose = cachev1alpha1.PurposeValidation
			cb.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(ci, cachev1alpha1.GroupVersion.WithKind("CacheInstance"))}
			cb.CreationTimestamp = metav1.NewTime(t0.Add(time.Duration(minutes)*time.Minute - 30*time.Second))
			cb.Status.State = cachev1alpha1.BenchmarkSucceeded
			cb.Status.CompletionTime = ptrTime(t0.Add(time.Duration(minutes) * time.Minute))
		})
		for _, m := range mutate {
			m(cb)
		}
		return *cb
	}
	state := func(s cachev1alpha1.BenchmarkState) func(*cachev1alpha1.CacheBenchmark) {
		return func(cb *cachev1alpha1.CacheBenchmark) {
			cb.Status.State, cb.Status.CompletionTime = s, nil
		}
	}
	failed := func(cb *cachev1alpha1.CacheBenchmark) { cb.Status.State = cachev1alpha1.BenchmarkFailed }
	purpose := func(p cachev1alpha1.BenchmarkPurpose) func(*cachev1alpha1.CacheBenchmark) {
		return func(cb *cachev1alpha1.CacheBenchmark) { cb.Spec.Purpose = p }
	}
	notOwned := func(cb *cachev1alpha1.CacheBenchmark) { cb.OwnerReferences = nil }
	finishedAt := func(minutes int) func(*cachev1alpha1.CacheBenchmark) {
		return func(cb *cachev1alpha1.CacheBenchmark) {
			cb.Status.CompletionTime = ptrTime(t0.Add(time.Duration(minutes) * time.Minute))
		}
	}
	lastBenchmark := func(name string) func(*cachev1alpha1.CacheInstance) {
		return func(ci *cachev1alpha1.CacheInstance) {
			ci.Status.LastBenchmark = &cachev1alpha1.BenchmarkSummary{Benchmark: name}
		}
	}

	for _, tc := range []struct {
		name  string
		ci    *cachev1alpha1.CacheInstance
		list  []cachev1alpha1.CacheBenchmark
		prune []string
	}{
		{name: "a few are kept", list: []cachev1alpha1.CacheBenchmark{bench("a", 1), bench("b", 2), bench("c", 3)}},
		{name: "the oldest go, whatever the list order",
			list:  []cachev1alpha1.CacheBenchmark{bench("c", 3), bench("a", 1), bench("e", 5), bench("b", 2), bench("d", 4)},
			prune: []string{"b", "a"}},
		{name: "failed ones count like the others",
			list:  []cachev1alpha1.CacheBenchmark{bench("a", 1), bench("b", 2, failed), bench("c", 3, failed), bench("d", 4, failed)},
			prune: []string{"a"}},
		{name: "the one lastBenchmark names stays", ci: newInstance(4, lastBenchmark("a")),
			list:  []cachev1alpha1.CacheBenchmark{bench("a", 1), bench("b", 2), bench("c", 3, failed), bench("d", 4, failed), bench("e", 5, failed)},
			prune: []string{"b"}},
		{name: "the running config's stay, and its retry", ci: newInstance(4),
			list: []cachev1alpha1.CacheBenchmark{bench("cache-validate-"+hash, 1, failed), bench("cache-validate-"+hash+"-retry", 2, failed),
				bench("b", 3), bench("c", 4), bench("d", 5), bench("e", 6)},
			prune: []string{"b"}},
		{name: "unfinished ones stay and do not count",
			list: []cachev1alpha1.CacheBenchmark{bench("a", 1), bench("b", 2), bench("c", 3),
				bench("p", 0, state(cachev1alpha1.BenchmarkPending)), bench("r", 0, state(cachev1alpha1.BenchmarkRunning)), bench("n", 0, state(""))}},
		{name: "only the instance's own validations go",
			list: []cachev1alpha1.CacheBenchmark{bench("m", 0, purpose(cachev1alpha1.PurposeManual)), bench("t", 0, purpose(cachev1alpha1.PurposeTuning)),
				bench("users", 0, notOwned), bench("b", 2), bench("c", 3), bench("d", 4)}},
		{name: "ties in the stored second keep the same ones every time",
			list:  []cachev1alpha1.CacheBenchmark{bench("b", 1), bench("a", 1), bench("d", 1), bench("c", 1)},
			prune: []string{"a"}},
		{name: "completion, not creation, says which is recent",
			list:  []cachev1alpha1.CacheBenchmark{bench("a", 1, finishedAt(9)), bench("b", 2), bench("c", 3), bench("d", 4)},
			prune: []string{"b"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inst := tc.ci
			if inst == nil {
				inst = ci
			}
			var got []string
			for _, cb := range prunableValidations(slices.Clone(tc.list), inst, hash) {
				got = append(got, cb.Name)
			}
			if !slices.Equal(got, tc.prune) {
				t.Errorf("prunes %v, want %v", got, tc.prune)
			}
		})
	}
}
