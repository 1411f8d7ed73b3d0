package controllers

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
)

// keptValidations is how many finished validations an instance keeps besides those it still needs:
// enough to compare the last few rollouts, where keeping all would leave one object (and, for an
// hour, one Job) per config the pods ever ran.
const keptValidations = 3

// prunableValidations picks, among an instance's benchmarks, the Validation runs it created that
// may go. It keeps those not finished, the keptValidations most recently finished, the one
// status.lastBenchmark names, and those of the config the pods run now (hash: the validation and
// its retry), whose outcome ThroughputValidated reports. Manual runs are the user's, and a Tuning
// run is the evidence for status.tuning: neither is ever pruned.
func prunableValidations(benchmarks []cachev1alpha1.CacheBenchmark, ci *cachev1alpha1.CacheInstance, hash string) []*cachev1alpha1.CacheBenchmark {
	var done []*cachev1alpha1.CacheBenchmark
	for i := range benchmarks {
		cb := &benchmarks[i]
		if cb.Spec.Purpose == cachev1alpha1.PurposeValidation && metav1.IsControlledBy(cb, ci) && finished(cb) {
			done = append(done, cb)
		}
	}
	// Newest first. Times are stored to the second; the creation time, then the name, break ties so
	// that every pass keeps the same ones.
	slices.SortFunc(done, func(a, b *cachev1alpha1.CacheBenchmark) int {
		return cmp.Or(
			completed(b).Compare(completed(a).Time),
			b.CreationTimestamp.Compare(a.CreationTimestamp.Time),
			cmp.Compare(b.Name, a.Name))
	})
	last := ""
	if lb := ci.Status.LastBenchmark; lb != nil {
		last = lb.Benchmark
	}
	current := validationName(ci.Name, hash)
	var out []*cachev1alpha1.CacheBenchmark
	for i, cb := range done {
		if i < keptValidations || cb.Name == last || cb.Name == current || cb.Name == current+retrySuffix {
			continue
		}
		out = append(out, cb)
	}
	return out
}

// completed is when a finished benchmark finished; one without a completion time (written by hand)
// counts as finished when it was created.
func completed(cb *cachev1alpha1.CacheBenchmark) metav1.Time {
	if t := cb.Status.CompletionTime; t != nil {
		return *t
	}
	return cb.CreationTimestamp
}

// pruneValidations deletes the validations the instance no longer needs (prunableValidations).
// The benchmark controller's end of a benchmark brings a pass, so they go as soon as a newer one
// finishes.
func (r *CacheInstanceReconciler) pruneValidations(ctx context.Context, inst *instance) (*ctrl.Result, error) {
	var list cachev1alpha1.CacheBenchmarkList
	if err := r.List(ctx, &list, client.InNamespace(inst.Namespace), client.MatchingLabels(benchLabels(inst.CacheInstance))); err != nil {
		return nil, fmt.Errorf("listing CacheBenchmarks: %w", err)
	}
	for _, cb := range prunableValidations(list.Items, inst.CacheInstance, inst.config.Hash) {
		uid := cb.UID
		if err := r.Delete(ctx, cb, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("deleting the old validation CacheBenchmark %s: %w", cb.Name, err)
		}
		logf.FromContext(ctx).V(1).Info("deleted an old validation", "cacheBenchmark", cb.Name)
	}
	return nil, nil
}
