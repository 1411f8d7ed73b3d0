package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
)

// Rollouts of a replicated instance. Its StatefulSet's update strategy is OnDelete: the operator,
// not the StatefulSet controller, replaces outdated pods, because only it knows which pod is the
// primary and whether the replicas have caught up. Replicas go first, one at a time, each only
// once every pod is ready and in sync; then a switchover moves the primary to an updated replica
// (writes paused for the moment it takes the replica to reach the primary's offset, so no
// acknowledged write is lost), and the old primary, now a replica, goes last. A scale-down that
// would remove the primary's pod moves the primary first the same way.

// labelRevision is the StatefulSet controller's label of the revision a pod was made from.
const labelRevision = appsv1.ControllerRevisionHashLabelKey

// statefulSetReplicas is the StatefulSet's replica count: spec.replicas, but never fewer pods than
// the primary's ordinal needs, so that a scale-down waits until the primary has moved.
func statefulSetReplicas(ci *cachev1alpha1.CacheInstance) int32 {
	want := *ci.Spec.Replicas
	if rs := ci.Status.Replication; rs != nil && rs.Primary != "" {
		want = max(want, int32(ordinalOf(rs.Primary)+1))
	}
	return want
}

// reconcileRollout brings outdated pods to the StatefulSet's update revision. It resizes in
// place every pod whose revision differs only in memory, and relabels every pod whose revision
// differs only in the legacy form of the config hash (cacheinstance_resize.go), whatever its
// role. Before it replaces any pod it decides whether the data survives and waits until the status
// says so (cacheinstance_rollout_decision.go); a single pod that needs a new one is then deleted,
// as the StatefulSet controller's RollingUpdate would, when it holds no data, keeps it on a volume
// or spec.rollout.allowColdRestart accepts a cold restart; a replicated instance's pods are replaced one at a time, replicas first,
// each when every pod is ready and in sync, the primary last after a switchover.
func (r *CacheInstanceReconciler) reconcileRollout(ctx context.Context, inst *instance) (*ctrl.Result, error) {
	ro := inst.rollout
	if ro == nil || !ro.onDelete {
		return nil, nil // a StatefulSet from before OnDelete: its controller still rolls it
	}
	pods, err := r.serverPods(ctx, inst)
	if err != nil {
		return nil, err
	}
	update := ro.updateRevision
	settled := update != "" && ro.observedGeneration >= ro.generation
	replace := map[string]bool{}
	from := ""
	for i := range pods {
		pod := &pods[i]
		// A pod without a revision was not made by the StatefulSet controller: not ours to replace.
		if !settled || pod.Labels[labelRevision] == "" || pod.Labels[labelRevision] == update || !pod.DeletionTimestamp.IsZero() {
			continue
		}
		outcome, err := r.updateInPlace(ctx, inst, pod, update)
		if err != nil {
			return nil, err
		}
		if outcome == resizeNotApplicable || outcome == resizeInfeasible {
			replace[pod.Name] = true
			from = pod.Labels[labelRevision]
		}
	}
	if settled {
		// Nothing is replaced before the decision is in the status (cacheinstance_rollout_decision.go).
		what := ""
		if len(replace) > 0 {
			if what, err = r.templateChange(ctx, inst.Namespace, from, update); err != nil {
				return nil, err
			}
		}
		facts := rolloutFacts{surge: inst.surge}
		if inst.surge == nil && needsSurge(inst.CacheInstance, pods, replace) {
			for i := range pods {
				if replace[pods[i].Name] && ordinalOf(pods[i].Name) == 0 {
					_, _, _, _, rerr := readRole(ctx, r.serverAddress(&pods[i]), inst.creds())
					facts.reachable = rerr == nil
				}
			}
		}
		d := decideRollout(inst.CacheInstance, pods, replace, update, what, facts)
		inst.rolloutDecision = d
		if !decisionRecorded(inst.CacheInstance, d) {
			r.announceRollout(inst.CacheInstance, d)
			inst.recheckIn(time.Second)
			return nil, nil
		}
		switch {
		case d.waiting():
			if inst.blocked == nil {
				inst.block(d.reason, d.message)
			}
			return nil, nil
		case d.surge:
			return r.reconcileSurge(ctx, inst, pods, inst.surge)
		case d.dropSurge:
			if err := r.Delete(ctx, inst.surge, client.Preconditions{UID: &inst.surge.UID}); client.IgnoreNotFound(err) != nil {
				return nil, fmt.Errorf("deleting the surge pod: %w", err)
			}
		}
	}
	if replicated(inst.CacheInstance) {
		return r.replaceReplicated(ctx, inst, pods, replace)
	}
	for i := range pods {
		pod := &pods[i]
		if !replace[pod.Name] {
			continue
		}
		if err := r.Delete(ctx, pod, client.Preconditions{UID: &pod.UID}); client.IgnoreNotFound(err) != nil {
			return nil, fmt.Errorf("deleting outdated pod %s: %w", pod.Name, err)
		}
		r.Recorder.Eventf(inst.CacheInstance, nil, corev1.EventTypeNormal, "ReplacingPod", "RollPods",
			"Replacing pod %s for the current pod template", pod.Name)
	}
	return nil, nil
}

// replaceReplicated replaces one pod of a replicated instance that needs a new one, or moves its
// primary, when every pod is ready and in sync; otherwise it waits for the next pass. A scale-down
// that removes the primary's pod moves the primary first.
func (r *CacheInstanceReconciler) replaceReplicated(ctx context.Context, inst *instance, pods []corev1.Pod, replace map[string]bool) (*ctrl.Result, error) {
	st := inst.replication
	if st == nil || st.status.Primary == "" || st.condition != metav1.ConditionTrue {
		return nil, nil
	}
	if len(pods) != int(inst.rollout.replicas) || len(st.status.Pods) != len(pods) {
		return nil, nil // a pod is on its way
	}
	primary := st.status.Primary
	want := int(*inst.Spec.Replicas)
	if ordinalOf(primary) >= want {
		return r.switchover(ctx, inst, pods, fmt.Sprintf("the scale-down to %d pods removes %s", want, primary),
			func(p *corev1.Pod) bool { return ordinalOf(p.Name) < want })
	}
	update := inst.rollout.updateRevision
	if update == "" || inst.rollout.observedGeneration < inst.rollout.generation {
		return nil, nil
	}
	primaryOutdated := false
	for i := len(pods) - 1; i >= 0; i-- {
		pod := &pods[i]
		if !replace[pod.Name] {
			continue
		}
		if pod.Name == primary {
			primaryOutdated = true
			continue
		}
		if err := r.Delete(ctx, pod, client.Preconditions{UID: &pod.UID}); client.IgnoreNotFound(err) != nil {
			return nil, fmt.Errorf("deleting outdated replica %s: %w", pod.Name, err)
		}
		r.Recorder.Eventf(inst.CacheInstance, nil, corev1.EventTypeNormal, "ReplacingReplica", "RollPods",
			"Replacing replica %s for the current pod template; the primary %s keeps serving", pod.Name, primary)
		inst.recheckIn(replicationRecheck)
		return nil, nil
	}
	if primaryOutdated {
		return r.switchover(ctx, inst, pods, "its pod is replaced for the current pod template",
			func(p *corev1.Pod) bool { return p.Labels[labelRevision] == update })
	}
	return nil, nil
}

// switchover moves the primary to the most advanced in-sync replica that eligible accepts, by a
// hand-over (cacheinstance_handover.go): it pauses the primary's writes, waits until that replica
// has applied everything, records and promotes it, points the old primary at it and lifts the
// pause. Clients see their writes held for that moment, then the old primary drops them and they
// reconnect through the client Service, which by then selects the new one.
func (r *CacheInstanceReconciler) switchover(ctx context.Context, inst *instance, pods []corev1.Pod, why string, eligible func(*corev1.Pod) bool) (*ctrl.Result, error) {
	st := inst.replication
	var from *corev1.Pod
	for i := range pods {
		if pods[i].Name == st.status.Primary {
			from = &pods[i]
		}
	}
	if from == nil {
		inst.recheckIn(replicationRecheck)
		return nil, nil
	}
	// The candidates as they are now, not as the last pass saw them: a replica whose link is up
	// to this primary.
	fromAddr := r.serverAddress(from)
	var to *corev1.Pod
	var toOffset int64 = -1
	for i := range pods {
		pod := &pods[i]
		if pod == from || !eligible(pod) || !podReady(pod) {
			continue
		}
		role, offset, primary, linkUp, err := readRole(ctx, r.serverAddress(pod), inst.creds())
		if err == nil && role == cachev1alpha1.RoleReplica && primary == fromAddr && linkUp && offset > toOffset {
			to, toOffset = pod, offset
		}
	}
	if to == nil {
		inst.recheckIn(time.Second)
		return nil, nil
	}
	toAddr := r.serverAddress(to)
	offset, err := handOver(ctx, fromAddr, toAddr, inst.creds(), handOverSteps{
		record: func(offset int64) error {
			view := &serverView{pod: to, ordinal: ordinalOf(to.Name), addr: toAddr, offset: offset}
			return r.choosePrimary(ctx, inst, st, view, failoverSwitchover, time.Now())
		},
		promoted: func() error { return r.labelRole(ctx, inst, to.Name, cachev1alpha1.RolePrimary) },
		// Hold the old primary's clients until the client Service routes to the new one
		// (cacheinstance_endpoints.go).
		route: func() { r.waitServiceRoutesTo(ctx, inst.Namespace, inst.Name, to, from) },
	})
	var serverErr *serverStepError
	if errors.As(err, &serverErr) {
		r.Recorder.Eventf(inst.CacheInstance, nil, corev1.EventTypeWarning, "SwitchoverFailed", "PromoteReplica",
			"Moving the primary from %s to %s (%s) failed, retrying: %v", from.Name, to.Name, why, err)
		inst.recheckIn(replicationRecheck)
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	r.Recorder.Eventf(inst.CacheInstance, nil, corev1.EventTypeNormal, "Switchover", "PromoteReplica",
		"Moved the primary from %s to %s at offset %d because %s; no acknowledged write was lost", from.Name, to.Name, offset, why)
	st.set(metav1.ConditionFalse, reasonSyncing, "Switched over from %s to %s; %s resyncs", from.Name, to.Name, from.Name)
	inst.recheckIn(time.Second)
	return nil, nil
}
