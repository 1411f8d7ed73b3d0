package controllers

import (
	"context"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
	"github.com/iocache/iocache/server/cpuset"
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
	if ab := st.ActiveBenchmark; ab != nil && inst.releaseHold != "" && ab.UID == inst.releaseHold {
		st.ActiveBenchmark = nil
	}
	// Only the failed tuning the pass found gone: a status reread after a conflict may hold a newer
	// decision.
	if t := st.Tuning; t != nil && inst.forgetTuning != "" && t.Benchmark == inst.forgetTuning && t.ChosenIOThreads == nil {
		st.Tuning = nil
	}

	cfg := inst.config
	prevHash := st.ConfigHash
	if cfg != nil {
		st.IOThreads = cfg.IOThreads
		st.CPULists = cfg.CPULists
		st.ConfigHash = cfg.Hash
		st.RestartHash = cfg.RestartHash
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
		st.Replicas = ro.statusReplicas
		st.Selector = labels.SelectorFromSet(selectorLabels(inst.CacheInstance)).String()
		why := ""
		if p := inst.podProblem; p != nil {
			why = "; " + p.message
		}
		switch {
		case ro.ready():
			set(cachev1alpha1.ConditionReady, metav1.ConditionTrue, reasonPodsReady,
				"%d of %d pods ready with config %s", ro.readyReplicas, ro.replicas, cfg.Hash)
		case !ro.current():
			set(cachev1alpha1.ConditionReady, metav1.ConditionFalse, reasonRollingOut,
				"Rolling pods to config %s: %d of %d updated%s", cfg.Hash, ro.updatedReplicas, ro.replicas, why)
		default:
			set(cachev1alpha1.ConditionReady, metav1.ConditionFalse, reasonPodsNotReady,
				"%d of %d pods ready with config %s%s", ro.readyReplicas, ro.replicas, cfg.Hash, why)
		}
		switch {
		case inst.rolloutDecision != nil && inst.rolloutDecision.waiting():
			set(cachev1alpha1.ConditionProgressing, metav1.ConditionFalse, inst.rolloutDecision.reason, "%s", inst.rolloutDecision.message)
		case !ro.current():
			set(cachev1alpha1.ConditionProgressing, metav1.ConditionTrue, reasonRollingOut,
				"Rolling pods to config %s (io-threads %d, server cpulist %s): %d of %d updated",
				cfg.Hash, cfg.IOThreads, cfg.CPULists.Server, ro.updatedReplicas, ro.replicas)
		case !ro.ready() && inst.podProblem != nil:
			// The rollout is not complete, and it is not moving either: a pod is stuck where
			// only someone acting (more CPU, the right image, more memory) gets it going.
			set(cachev1alpha1.ConditionProgressing, metav1.ConditionFalse, inst.podProblem.reason,
				"The pods run config %s but cannot become ready: %s", cfg.Hash, inst.podProblem.message)
		case !ro.ready():
			set(cachev1alpha1.ConditionProgressing, metav1.ConditionTrue, reasonPodsNotReady,
				"Waiting for the pods to become ready with config %s: %d of %d ready", cfg.Hash, ro.readyReplicas, ro.replicas)
		case cfg.TuningPending:
			set(cachev1alpha1.ConditionProgressing, metav1.ConditionTrue, reasonTuningPending, "%s", tuningPendingMessage(st, inst))
		default:
			set(cachev1alpha1.ConditionProgressing, metav1.ConditionFalse, reasonRolloutComplete,
				"Pods run config %s (io-threads %d, server cpulist %s)", cfg.Hash, cfg.IOThreads, cfg.CPULists.Server)
		}
	}

	setConfigApplied(st, inst, set)
	setRolloutCondition(inst, set)
	setReplicationStatus(st, inst, set)
	setTLSStatus(st, inst, now, set)
	switch {
	case !inst.Spec.Persistence.Mode.Persistent():
		st.Persistence = nil
	case inst.persistence != nil:
		st.Persistence = inst.persistence.DeepCopy()
	}
	switch {
	case inst.Spec.Backup == nil:
		st.Backups = nil
	case inst.backups != nil:
		st.Backups = inst.backups.DeepCopy()
	}
	if inst.bootstrap != nil {
		st.Bootstrap = inst.bootstrap.DeepCopy()
	}

	var recheck time.Duration
	switch {
	case inst.blocked != nil:
		set(cachev1alpha1.ConditionDegraded, metav1.ConditionTrue, inst.blocked.reason, "%s", inst.blocked.message)
	case passErr != nil:
		set(cachev1alpha1.ConditionDegraded, metav1.ConditionTrue, reasonReconcileError, "%s", passErr.Error())
	case inst.podProblem != nil:
		set(cachev1alpha1.ConditionDegraded, metav1.ConditionTrue, inst.podProblem.reason, "%s", inst.podProblem.message)
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
	st.Phase = phaseOf(st.Conditions)
	return recheck
}

// phaseOf sums the conditions up in one word for `kubectl get cacheinstances`: Degraded when
// something needs someone's attention, else Ready when every pod serves the current config, else
// Progressing while pods start or roll, else Pending before anything was applied.
func phaseOf(conditions []metav1.Condition) cachev1alpha1.InstancePhase {
	switch {
	case meta.IsStatusConditionTrue(conditions, cachev1alpha1.ConditionDegraded):
		return cachev1alpha1.PhaseDegraded
	case meta.IsStatusConditionTrue(conditions, cachev1alpha1.ConditionReady):
		return cachev1alpha1.PhaseReady
	case meta.IsStatusConditionPresentAndEqual(conditions, cachev1alpha1.ConditionReady, metav1.ConditionFalse):
		return cachev1alpha1.PhaseProgressing
	}
	return cachev1alpha1.PhasePending
}

// tuningPendingMessage says why a Tuned instance does not run a measured setting yet.
func tuningPendingMessage(st *cachev1alpha1.CacheInstanceStatus, inst *instance) string {
	cores := inst.Spec.Cores
	if t := st.Tuning; t != nil && t.Cores == cores && t.ChosenIOThreads == nil {
		return fmt.Sprintf("ioThreads.policy is Tuned, but the sweep of CacheBenchmark %s failed, so the instance runs the Auto value (io-threads %d for %d cores) until you delete that CacheBenchmark to tune again",
			t.Benchmark, cpuset.AutoIOThreads(int(cores)), cores)
	}
	if ab := st.ActiveBenchmark; ab != nil {
		return fmt.Sprintf("ioThreads.policy is Tuned and CacheBenchmark %s is measuring this instance; until a sweep has measured %d cores it runs the Auto value (io-threads %d)",
			ab.Name, cores, cpuset.AutoIOThreads(int(cores)))
	}
	return fmt.Sprintf("ioThreads.policy is Tuned, but no benchmark has measured this instance yet, so it runs with the Auto value: io-threads %d for %d cores",
		inst.config.IOThreads, cores)
}

// updateStatus writes the instance's status with writeStatus and exports its conditions.
func (r *CacheInstanceReconciler) updateStatus(ctx context.Context, ci *cachev1alpha1.CacheInstance, mutate func(*cachev1alpha1.CacheInstanceStatus)) error {
	latest, err := writeStatus(ctx, r.Client, r.APIReader, ci, func(c *cachev1alpha1.CacheInstance) error {
		mutate(&c.Status)
		return nil
	})
	if err != nil {
		return fmt.Errorf("updating status: %w", err)
	}
	exportConditions(latest.Namespace, latest.Name, latest.Status.Conditions)
	return nil
}

// writeStatus is the one way the operator writes a status: through the status subresource, after
// mutate changed the object. On a conflict it reads the object again from stored, the API server
// (the cache may still hold the very copy that conflicted, and every retry would conflict again),
// and mutates that, so that fields another controller wrote in between survive. An unchanged status
// is not written. An error from mutate ends the attempt as it is. It returns the object as last
// written (or read).
func writeStatus[T client.Object](ctx context.Context, c client.Client, stored client.Reader, obj T, mutate func(T) error) (T, error) {
	latest := obj.DeepCopyObject().(T)
	refetch := false
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if refetch {
			if err := stored.Get(ctx, client.ObjectKeyFromObject(obj), latest); err != nil {
				return err
			}
		}
		refetch = true
		before := latest.DeepCopyObject()
		if err := mutate(latest); err != nil {
			return err
		}
		if equality.Semantic.DeepEqual(before, latest) {
			return nil
		}
		return c.Status().Update(ctx, latest)
	})
	return latest, err
}
