package controllers

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
)

// Condition reasons; api/v1alpha1 documents which condition carries which.
const (
	reasonPodsReady       = "PodsReady"
	reasonPodsNotReady    = "PodsNotReady"
	reasonRollingOut      = "RollingOut"
	reasonNotApplied      = "NotApplied"
	reasonRolloutComplete = "RolloutComplete"
	reasonTuningPending   = "TuningPending"
	reasonAsExpected      = "AsExpected"
	reasonInvalidSpec     = "InvalidSpec"
	reasonSecretMissing   = "SecretMissing"
	reasonReconcileError  = "ReconcileError"
	reasonRolloutStuck    = "RolloutStuck"
	reasonNotMeasured     = "NotMeasured"
	reasonConfigChanged   = "ConfigChanged"
)

// rolloutDeadline is how long pods may stay not ready with the current config before the instance
// counts as Degraded; Deployments use the same ten minutes (progressDeadlineSeconds).
const rolloutDeadline = 10 * time.Minute

// setStatus writes what one pass learned into st, the latest stored status: resolved values,
// conditions and observedGeneration. It leaves alone what other controllers write there
// (lastBenchmark, tuning, a measured ThroughputValidated). It returns when the status should be
// looked at again even if nothing changes, or 0.
func setStatus(st *cachev1alpha1.CacheInstanceStatus, inst *instance, passErr error, now time.Time) time.Duration {
	gen := inst.Generation
	set := func(typ string, status metav1.ConditionStatus, reason, format string, args ...any) {
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: typ, Status: status, Reason: reason, Message: fmt.Sprintf(format, args...),
			ObservedGeneration: gen, LastTransitionTime: metav1.NewTime(now),
		})
	}
	st.ObservedGeneration = gen

	cfg := inst.config
	prevHash := st.ConfigHash
	if cfg != nil {
		st.IOThreads = cfg.IOThreads
		st.CPULists = cfg.CPULists
		st.ConfigHash = cfg.Hash
	}
	switch {
	case meta.FindStatusCondition(st.Conditions, cachev1alpha1.ConditionThroughputValidated) == nil:
		set(cachev1alpha1.ConditionThroughputValidated, metav1.ConditionUnknown, reasonNotMeasured,
			"No validation benchmark has measured this instance yet")
	case cfg != nil && prevHash != "" && prevHash != cfg.Hash:
		set(cachev1alpha1.ConditionThroughputValidated, metav1.ConditionUnknown, reasonConfigChanged,
			"The rendered config changed (hash %s); the last validation measured the previous config", cfg.Hash)
	}

	ro := inst.rollout
	if ro == nil {
		// The pass stopped before the StatefulSet: what pods run, if any, is not what this
		// generation asks for, and Degraded says why. Ready and Progressing keep what an earlier
		// pass found, so a running instance is not reported down for a bad edit.
		if meta.FindStatusCondition(st.Conditions, cachev1alpha1.ConditionReady) == nil {
			set(cachev1alpha1.ConditionReady, metav1.ConditionUnknown, reasonNotApplied, "No StatefulSet has been applied yet")
			set(cachev1alpha1.ConditionProgressing, metav1.ConditionUnknown, reasonNotApplied, "No StatefulSet has been applied yet")
		}
	} else {
		st.Endpoint = endpoint(inst.CacheInstance)
		st.ReadyReplicas = ro.readyCurrent()
		switch {
		case ro.ready():
			set(cachev1alpha1.ConditionReady, metav1.ConditionTrue, reasonPodsReady,
				"%d of %d pods ready with config %s", ro.readyReplicas, ro.replicas, cfg.Hash)
		case !ro.current():
			set(cachev1alpha1.ConditionReady, metav1.ConditionFalse, reasonRollingOut,
				"Rolling pods to config %s: %d of %d updated", cfg.Hash, ro.updatedReplicas, ro.replicas)
		default:
			set(cachev1alpha1.ConditionReady, metav1.ConditionFalse, reasonPodsNotReady,
				"%d of %d pods ready with config %s", ro.readyReplicas, ro.replicas, cfg.Hash)
		}
		switch {
		case !ro.current():
			set(cachev1alpha1.ConditionProgressing, metav1.ConditionTrue, reasonRollingOut,
				"Rolling pods to config %s (io-threads %d, server cpulist %s): %d of %d updated",
				cfg.Hash, cfg.IOThreads, cfg.CPULists.Server, ro.updatedReplicas, ro.replicas)
		case cfg.TuningPending:
			set(cachev1alpha1.ConditionProgressing, metav1.ConditionTrue, reasonTuningPending,
				"ioThreads.policy is Tuned, but no benchmark has measured this instance yet, so it runs with the Auto value: io-threads %d for %d cores",
				cfg.IOThreads, inst.Spec.Cores)
		default:
			set(cachev1alpha1.ConditionProgressing, metav1.ConditionFalse, reasonRolloutComplete,
				"Pods run config %s (io-threads %d, server cpulist %s)", cfg.Hash, cfg.IOThreads, cfg.CPULists.Server)
		}
	}

	var recheck time.Duration
	switch {
	case inst.blocked != nil:
		set(cachev1alpha1.ConditionDegraded, metav1.ConditionTrue, inst.blocked.reason, "%s", inst.blocked.message)
	case passErr != nil:
		set(cachev1alpha1.ConditionDegraded, metav1.ConditionTrue, reasonReconcileError, "%s", passErr.Error())
	case ro != nil && !ro.ready():
		since := now
		if c := meta.FindStatusCondition(st.Conditions, cachev1alpha1.ConditionReady); c != nil {
			since = c.LastTransitionTime.Time
		}
		if waited := now.Sub(since); waited >= rolloutDeadline {
			set(cachev1alpha1.ConditionDegraded, metav1.ConditionTrue, reasonRolloutStuck,
				"Pods have not been ready with the current config for %s; see the pods' events and logs", waited.Round(time.Second))
		} else {
			set(cachev1alpha1.ConditionDegraded, metav1.ConditionFalse, reasonAsExpected, "Waiting for pods to become ready")
			recheck = rolloutDeadline - waited
		}
	default:
		set(cachev1alpha1.ConditionDegraded, metav1.ConditionFalse, reasonAsExpected, "The instance matches its spec")
	}
	return recheck
}

// updateStatus writes the status through the status subresource, mutating the latest stored copy
// on conflict so that fields other controllers wrote in between survive. An unchanged status is not
// written.
func (r *CacheInstanceReconciler) updateStatus(ctx context.Context, ci *cachev1alpha1.CacheInstance, mutate func(*cachev1alpha1.CacheInstanceStatus)) error {
	latest := ci.DeepCopy()
	refetch := false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if refetch {
			if err := r.Get(ctx, client.ObjectKeyFromObject(ci), latest); err != nil {
				return err
			}
		}
		refetch = true
		before := latest.Status.DeepCopy()
		mutate(&latest.Status)
		if equality.Semantic.DeepEqual(before, &latest.Status) {
			return nil
		}
		return r.Status().Update(ctx, latest)
	})
	if err != nil {
		return fmt.Errorf("updating status: %w", err)
	}
	return nil
}
