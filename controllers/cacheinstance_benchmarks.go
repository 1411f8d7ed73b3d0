package controllers

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
	"github.com/iocache/iocache/server/cpuset"
)

// validationRetryBackoff is how long after a failed validation its one retry starts: long enough
// for what commonly fails a run (node pressure, an image pull, a rescheduled pod) to pass, short
// enough that ThroughputValidated is not left Unknown for long.
const validationRetryBackoff = 5 * time.Minute

// retrySuffix ends the name of a validation's retry.
const retrySuffix = "-retry"

// wantedBenchmark is the benchmark an instance whose pods are ready needs now, or nil: under the
// Tuned policy a sweep for cores not yet tuned comes first (validating the Auto stand-in would be
// wasted); then, with validateOnChange, a validation of a config that none has measured, or the one
// retry of a validation that failed, which retryOf then names. All are named after what they
// measure, so a pass that runs again finds the one it made.
func wantedBenchmark(ci *cachev1alpha1.CacheInstance, cfg *serverConfig) (want *cachev1alpha1.CacheBenchmark, retryOf string) {
	s := &ci.Spec
	var name string
	var spec cachev1alpha1.CacheBenchmarkSpec
	tuned := ci.Status.Tuning != nil && ci.Status.Tuning.Cores == s.Cores
	validated := meta.FindStatusCondition(ci.Status.Conditions, cachev1alpha1.ConditionThroughputValidated)
	switch {
	case s.IOThreads.Policy == cachev1alpha1.IOThreadsTuned && !tuned:
		serverCPUs := 0
		if s.CPUAffinity != nil && s.CPUAffinity.Server != "" {
			if pos, err := cpuset.Parse(string(s.CPUAffinity.Server)); err == nil {
				serverCPUs = len(pos)
			}
		}
		name = fmt.Sprintf("%s-tuning-%dc", ci.Name, s.Cores)
		spec = cachev1alpha1.CacheBenchmarkSpec{Purpose: cachev1alpha1.PurposeTuning, IOThreads: tuningCandidates(int(s.Cores), serverCPUs)}
	case s.Benchmark.ValidateOnChange != nil && *s.Benchmark.ValidateOnChange &&
		(validated == nil || validated.Status == metav1.ConditionUnknown):
		name = validationName(ci.Name, cfg.Hash)
		if validated != nil && validated.Reason == reasonRetryScheduled {
			retryOf, name = name, name+retrySuffix
		}
		spec = cachev1alpha1.CacheBenchmarkSpec{Purpose: cachev1alpha1.PurposeValidation}
	default:
		return nil, ""
	}
	spec.InstanceRef = corev1.LocalObjectReference{Name: ci.Name}
	spec.Workload = *s.Benchmark.Workload.DeepCopy()
	spec.Resources = s.Benchmark.Resources.DeepCopy()
	labels := benchLabels(ci)
	return &cachev1alpha1.CacheBenchmark{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, Namespace: ci.Namespace, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ci, cachev1alpha1.GroupVersion.WithKind("CacheInstance"))},
		},
		Spec: spec,
	}, retryOf
}

// validationName names the Validation CacheBenchmark of an instance's config with that hash; its
// retry appends retrySuffix.
func validationName(instance, hash string) string {
	return instance + "-validate-" + hash
}

// staleBenchmark is true for a finished benchmark of the wanted name that measured an earlier
// rollout than the one that now wants it: a validation from before a sweep moved the config away
// and back, a tuning from before cores moved away and back. One that finished after the pods last
// became ready may simply not have reached this pass's view of the instance yet, and stays.
func staleBenchmark(cb *cachev1alpha1.CacheBenchmark, ci *cachev1alpha1.CacheInstance) bool {
	ready := meta.FindStatusCondition(ci.Status.Conditions, cachev1alpha1.ConditionReady)
	return finished(cb) && metav1.IsControlledBy(cb, ci) && ready != nil &&
		cb.Status.CompletionTime != nil && cb.Status.CompletionTime.Before(&ready.LastTransitionTime)
}

// reconcileBenchmarks starts the benchmarks the instance needs once its pods are ready. While a
// benchmark holds the instance nothing else starts; a hold whose benchmark is gone or finished (the
// operator stopped between two writes, or the benchmark was deleted) ends here.
func (r *CacheInstanceReconciler) reconcileBenchmarks(ctx context.Context, inst *instance) (*ctrl.Result, error) {
	ci := inst.CacheInstance
	if ab := ci.Status.ActiveBenchmark; ab != nil {
		holds, err := r.stillHolds(ctx, ci, ab)
		if err != nil {
			return nil, err
		}
		if !holds {
			inst.releaseHold = ab.UID
		}
		return nil, nil
	}
	if t := ci.Status.Tuning; t != nil && t.ChosenIOThreads == nil && t.Cores == ci.Spec.Cores &&
		ci.Spec.IOThreads.Policy == cachev1alpha1.IOThreadsTuned {
		// A failed sweep is not repeated by itself; deleting its CacheBenchmark asks for another.
		exists, err := r.benchmarkExists(ctx, ci.Namespace, t.Benchmark)
		if err != nil {
			return nil, err
		}
		if !exists {
			inst.forgetTuning = t.Benchmark
			return nil, nil
		}
	}
	if inst.rollout == nil || !inst.rollout.ready() || !inst.liveInEffect {
		// A benchmark measures the config the pods run: not before a live change reached them.
		return nil, nil
	}
	if ci.Status.ConfigHash != inst.config.Hash {
		// The config changed in this pass and was applied live: no rollout will bring another
		// pass, and the status this pass writes (ThroughputValidated Unknown) decides what to
		// measure. Look again once it is written.
		inst.recheckIn(conflictRetry)
		return nil, nil
	}
	want, retryOf := wantedBenchmark(ci, inst.config)
	if want == nil {
		return nil, nil
	}
	have := &cachev1alpha1.CacheBenchmark{}
	err := r.Get(ctx, client.ObjectKeyFromObject(want), have)
	switch {
	case apierrors.IsNotFound(err):
		if retryOf != "" {
			wait, err := r.retryWait(ctx, ci.Namespace, retryOf, time.Now())
			if err != nil {
				return nil, err
			}
			if wait > 0 {
				inst.recheckIn(wait)
				return nil, nil
			}
		}
		if err := r.Create(ctx, want); err != nil {
			if apierrors.IsAlreadyExists(err) {
				return nil, nil
			}
			return nil, fmt.Errorf("creating CacheBenchmark %s: %w", want.Name, err)
		}
		r.Recorder.Eventf(ci, want, corev1.EventTypeNormal, "BenchmarkCreated", "CreateBenchmark",
			"Created %s CacheBenchmark %s for config %s (io-threads %d on %d cores)",
			want.Spec.Purpose, want.Name, inst.config.Hash, inst.config.IOThreads, ci.Spec.Cores)
	case err != nil:
		return nil, fmt.Errorf("reading CacheBenchmark %s: %w", want.Name, err)
	case staleBenchmark(have, ci):
		// The next pass, which its deletion brings, creates it anew.
		uid := have.UID
		if err := r.Delete(ctx, have, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("deleting the outdated CacheBenchmark %s: %w", have.Name, err)
		}
	}
	return nil, nil
}

// stillHolds is true while the benchmark named in the hold exists, is the same object, and runs.
// A benchmark the cache does not know may be one just created: the API server has the last word.
func (r *CacheInstanceReconciler) stillHolds(ctx context.Context, ci *cachev1alpha1.CacheInstance, ab *cachev1alpha1.ActiveBenchmark) (bool, error) {
	cb := &cachev1alpha1.CacheBenchmark{}
	key := client.ObjectKey{Namespace: ci.Namespace, Name: ab.Name}
	err := r.Get(ctx, key, cb)
	if apierrors.IsNotFound(err) {
		err = r.APIReader.Get(ctx, key, cb)
	}
	switch {
	case apierrors.IsNotFound(err):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("reading CacheBenchmark %s: %w", ab.Name, err)
	}
	return string(cb.UID) == ab.UID && !finished(cb) && cb.DeletionTimestamp.IsZero(), nil
}

// benchmarkExists asks the API server whether a CacheBenchmark exists, past the cache.
func (r *CacheInstanceReconciler) benchmarkExists(ctx context.Context, namespace, name string) (bool, error) {
	err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &cachev1alpha1.CacheBenchmark{})
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("reading CacheBenchmark %s: %w", name, err)
	}
	return true, nil
}

// retryWait is how long the retry of the failed validation named must still wait: the backoff counts
// from the end of that one. One that has not ended in this pass's view (its end brings another pass)
// counts as ending now; one that is gone, deleted by hand, holds nothing back.
func (r *CacheInstanceReconciler) retryWait(ctx context.Context, namespace, failed string, now time.Time) (time.Duration, error) {
	cb := &cachev1alpha1.CacheBenchmark{}
	err := r.Get(ctx, client.ObjectKey{Namespace: namespace, Name: failed}, cb)
	if apierrors.IsNotFound(err) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("reading CacheBenchmark %s: %w", failed, err)
	}
	end := now
	if t := cb.Status.CompletionTime; finished(cb) && t != nil {
		end = t.Time
	}
	backoff := r.ValidationRetryBackoff
	if backoff <= 0 {
		backoff = validationRetryBackoff
	}
	return end.Add(backoff).Sub(now), nil
}
