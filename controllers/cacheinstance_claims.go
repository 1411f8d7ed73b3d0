package controllers

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
)

// Turning persistence on or off (issue #30). A StatefulSet's volume claim templates cannot change,
// so when persistence.mode crosses None the operator deletes the StatefulSet with orphan
// propagation: the garbage collector takes the owner references off its pods (and revisions)
// before the StatefulSet goes, so the pods keep running with their data. The next pass creates
// the StatefulSet with or without the data claim; it adopts the running pods, whose revision is
// not its update revision, and the rollout replaces them warm: the data of a pod whose /data is
// not a claim of a persistent instance lives only in its memory, so the rollout hands it over by
// replication first (a replica of a replicated instance, else the surge pod; see needsSurge and
// decideRollout). Claims left by turning persistence off are kept (and reported in the event):
// deleting a user's snapshots is the user's call.

// reasonRecreatingStatefulSet is the event of a StatefulSet recreated for its claims.
const reasonRecreatingStatefulSet = "RecreatingStatefulSet"

// recreateForClaims deletes the StatefulSet, orphaning its pods, when its data claim template no
// longer matches persistence.mode, and waits for a StatefulSet being deleted to go. A non-nil
// result ends the pass: nothing below may act on pods while no StatefulSet owns them.
func (r *CacheInstanceReconciler) recreateForClaims(ctx context.Context, inst *instance, sts *appsv1.StatefulSet) (*ctrl.Result, error) {
	wait := &ctrl.Result{RequeueAfter: time.Second}
	if !sts.DeletionTimestamp.IsZero() {
		return wait, nil // the garbage collector is orphaning its pods
	}
	hasClaims := claimTemplateSize(sts) != nil
	persistent := inst.Spec.Persistence.Mode.Persistent()
	if hasClaims == persistent {
		return nil, nil
	}
	err := r.Delete(ctx, sts, client.PropagationPolicy(metav1.DeletePropagationOrphan), client.Preconditions{UID: &sts.UID})
	if client.IgnoreNotFound(err) != nil {
		return nil, fmt.Errorf("deleting StatefulSet %s to change its volume claims: %w", sts.Name, err)
	}
	msg := fmt.Sprintf("persistence.mode is now %s: the StatefulSet is recreated with a data claim per pod; its pods keep running and are then replaced warm, their data handed over by replication first",
		inst.Spec.Persistence.Mode)
	if !persistent {
		msg = "persistence.mode is now None: the StatefulSet is recreated without data claims; its pods keep running and are then replaced warm, their data handed over by replication first. " +
			"The claims data-" + inst.Name + "-<ordinal> are kept, with their snapshots: delete them when they are no longer wanted"
	}
	r.Recorder.Eventf(inst.CacheInstance, nil, corev1.EventTypeNormal, reasonRecreatingStatefulSet, "RecreateStatefulSet", "%s", msg)
	return wait, nil
}

// dataOnClaim is true when the pod's /data is a persistent volume claim: what it saved survives
// its replacement.
func dataOnClaim(pod *corev1.Pod) bool {
	for _, v := range pod.Spec.Volumes {
		if v.Name == "data" {
			return v.PersistentVolumeClaim != nil
		}
	}
	return false
}

// keepsDataOnClaim is true when replacing the pod keeps its data through persistence: the
// instance is persistent and the pod's /data is already one of its claims. A pod started before
// persistence was turned on holds its data in memory only.
func keepsDataOnClaim(ci *cachev1alpha1.CacheInstance, pod *corev1.Pod) bool {
	return ci.Spec.Persistence.Mode.Persistent() && dataOnClaim(pod)
}
