package controllers

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
)

// Warm replacement of a single pod without persistence (issue #30): the surge. Its only copy of
// the data is in the pod's memory, so instead of deleting it the operator starts a temporary pod
// <instance>-surge from the current template (room for one more pod of the same size is needed),
// makes it a replica of the running server, and once it has caught up hands the writes over to
// it (cacheinstance_handover.go: writes paused a moment, no acknowledged write lost). Then it
// deletes the old pod; the StatefulSet makes <instance>-0 again from the current template, which
// syncs from the surge pod and takes the writes back the same way; the surge pod goes. The
// instance ends as it began, one pod named <instance>-0 behind the same Services, with its data.
//
// The StatefulSet does not adopt the surge pod (its name has no ordinal), and the other steps
// leave it out (serverPods, isSurgePod). While it exists the client Service selects the pod
// labelled primary, so clients follow each hand-over: the running pod is labelled primary before
// the surge pod exists. Every step reads where the surge stands from the pods and the servers
// (labels, ROLE), so an operator that restarts anywhere carries on. A surge pod the scheduler
// cannot place makes the instance wait (Rollout WaitingForRoom) unless
// spec.rollout.allowColdRestart accepts a cold restart.

// surgeSuffix names an instance's surge pod: <instance>-surge.
const surgeSuffix = "-surge"

// annotationSurgeFor is on the surge pod: the UID of the pod whose data it carries. A pod
// <instance>-0 with another UID was replaced behind the surge's back (a drain, an eviction).
const annotationSurgeFor = "cache.iocache.dev/surge-for"

func surgePodName(ci *cachev1alpha1.CacheInstance) string { return ci.Name + surgeSuffix }

// isSurgePod is true for the instance's surge pod.
func isSurgePod(ci *cachev1alpha1.CacheInstance, pod *corev1.Pod) bool {
	return pod.Name == surgePodName(ci)
}

// cacheWait bounds how long the operator waits for its cache to show a pod it created.
const cacheWait = 5 * time.Second

// surgePod reads the instance's surge pod: nil when there is none.
func (r *CacheInstanceReconciler) surgePod(ctx context.Context, ci *cachev1alpha1.CacheInstance) (*corev1.Pod, error) {
	pod := &corev1.Pod{}
	err := r.Get(ctx, client.ObjectKey{Namespace: ci.Namespace, Name: surgePodName(ci)}, pod)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the surge pod: %w", err)
	}
	return pod, nil
}

// cannotBeScheduled is true when the scheduler found no node for the pod.
func cannotBeScheduled(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return true
		}
	}
	return false
}

// surgeOf is the instance's surge pod for the Services step. When the cache has none but the
// client Service still selects the primary label of a surge, the API server is asked: a cache
// that has not caught up with a surge pod just created must not point the Service back at every
// pod, the surge pod included.
func (r *CacheInstanceReconciler) surgeOf(ctx context.Context, ci *cachev1alpha1.CacheInstance) (*corev1.Pod, error) {
	surge, err := r.surgePod(ctx, ci)
	if err != nil || surge != nil || replicated(ci) {
		return surge, err
	}
	svc := &corev1.Service{}
	if err := r.Get(ctx, client.ObjectKeyFromObject(ci), svc); err != nil || svc.Spec.Selector[labelRole] == "" {
		return nil, client.IgnoreNotFound(err)
	}
	pod := &corev1.Pod{}
	err = r.APIReader.Get(ctx, client.ObjectKey{Namespace: ci.Namespace, Name: surgePodName(ci)}, pod)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the surge pod: %w", err)
	}
	return pod, nil
}

// clientServiceDuringSurge is the client Service while a surge pod exists: it selects the pod
// labelled primary, which each hand-over moves.
func clientServiceDuringSurge(ci *cachev1alpha1.CacheInstance) *corev1ac.ServiceApplyConfiguration {
	svc := desiredClientService(ci)
	svc.Spec.WithSelector(map[string]string{labelRole: string(cachev1alpha1.RolePrimary)})
	return svc
}

// desiredSurgePod is the surge pod for the data of pod of: the StatefulSet's current pod template
// under the surge's name, labelled a replica (no Service selects it before it takes over), owned
// by the instance so that it goes with it.
func desiredSurgePod(ci *cachev1alpha1.CacheInstance, template *corev1.PodTemplateSpec, of *corev1.Pod) *corev1.Pod {
	labels := maps.Clone(template.Labels)
	labels[labelRole] = string(cachev1alpha1.RoleReplica)
	annotations := maps.Clone(template.Annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[annotationSurgeFor] = string(of.UID)
	spec := template.Spec.DeepCopy()
	if !slices.ContainsFunc(spec.Volumes, func(v corev1.Volume) bool { return v.Name == "data" }) {
		// A persistent template's /data comes from the StatefulSet's claim template, which a bare
		// pod does not get: the surge pod is temporary, and its data is handed back by
		// replication, so an emptyDir is enough.
		spec.Volumes = append(spec.Volumes, corev1.Volume{Name: "data", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}})
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: surgePodName(ci), Namespace: ci.Namespace, Labels: labels, Annotations: annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ci, cachev1alpha1.GroupVersion.WithKind("CacheInstance"))},
		},
		Spec: *spec,
	}
}

// reconcileSurge moves the instance's data through the surge pod, one step per pass: start it,
// hand the writes over to it, replace the old pod, hand them back, remove it. pods are the
// StatefulSet's pods (serverPods); surge is the surge pod, or nil before it starts.
func (r *CacheInstanceReconciler) reconcileSurge(ctx context.Context, inst *instance, pods []corev1.Pod, surge *corev1.Pod) (*ctrl.Result, error) {
	var p0 *corev1.Pod
	for i := range pods {
		if ordinalOf(pods[i].Name) == 0 && pods[i].DeletionTimestamp.IsZero() {
			p0 = &pods[i]
		}
	}
	inst.recheckIn(time.Second)
	switch {
	case surge == nil && p0 != nil:
		return nil, r.startSurge(ctx, inst, p0)
	case surge == nil, p0 == nil, !podReady(surge), !surge.DeletionTimestamp.IsZero():
		return nil, nil // the surge pod, or the StatefulSet's new pod, on its way
	case p0.Labels[labelRevision] != inst.rollout.updateRevision:
		return nil, r.surgeTakeOver(ctx, inst, p0, surge)
	default:
		return nil, r.surgeHandBack(ctx, inst, p0, surge)
	}
}

// startSurge labels the running pod primary, points the client Service at that label, then
// creates the surge pod: in that order, so that clients never reach the surge pod before it takes
// over.
func (r *CacheInstanceReconciler) startSurge(ctx context.Context, inst *instance, p0 *corev1.Pod) error {
	ci := inst.CacheInstance
	if err := r.labelRole(ctx, inst, p0.Name, cachev1alpha1.RolePrimary); err != nil {
		return err
	}
	if err := r.Apply(ctx, clientServiceDuringSurge(ci), client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
		return fmt.Errorf("applying the client Service for the surge: %w", err)
	}
	sts := &appsv1.StatefulSet{}
	if err := r.Get(ctx, client.ObjectKeyFromObject(ci), sts); err != nil {
		return fmt.Errorf("reading StatefulSet: %w", err)
	}
	if err := r.Create(ctx, desiredSurgePod(ci, &sts.Spec.Template, p0)); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating the surge pod: %w", err)
	}
	// The next pass must find the surge pod in the cache: without it the Services step would
	// point the client Service back at every pod of the instance, the surge pod included, whose
	// server is an empty primary until it follows the running one.
	for deadline := time.Now().Add(cacheWait); ; time.Sleep(20 * time.Millisecond) {
		if surge, err := r.surgePod(ctx, ci); err != nil || surge != nil {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the surge pod %s is not in the operator's cache after %s", surgePodName(ci), cacheWait)
		}
	}
	r.Recorder.Eventf(ci, nil, corev1.EventTypeNormal, "SurgeStarted", "StartSurge",
		"Started %s from the current pod template: it syncs as a replica of %s and takes the writes over, so that %s can be replaced without emptying the cache",
		surgePodName(ci), p0.Name, p0.Name)
	return nil
}

// surgeTakeOver makes the surge pod a replica of the outdated running pod and, once it has caught
// up, hands the writes over to it; once it has them, it deletes the outdated pod.
func (r *CacheInstanceReconciler) surgeTakeOver(ctx context.Context, inst *instance, p0, surge *corev1.Pod) error {
	ci := inst.CacheInstance
	// The label comes after the promotion (handOver's promoted step): labelled, it has the writes.
	if surge.Labels[labelRole] != string(cachev1alpha1.RolePrimary) {
		return r.surgeHandOver(ctx, inst, p0, surge, "takes the writes over from")
	}
	if err := r.Delete(ctx, p0, client.Preconditions{UID: &p0.UID}); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("deleting outdated pod %s: %w", p0.Name, err)
	}
	r.Recorder.Eventf(ci, nil, corev1.EventTypeNormal, "ReplacingPod", "RollPods",
		"Replacing pod %s for the current pod template; %s serves the data meanwhile", p0.Name, surge.Name)
	return nil
}

// surgeHandBack makes the StatefulSet's new pod a replica of the surge pod and, once it has caught
// up, hands the writes back to it; once it has them, it deletes the surge pod.
func (r *CacheInstanceReconciler) surgeHandBack(ctx context.Context, inst *instance, p0, surge *corev1.Pod) error {
	ci := inst.CacheInstance
	if !podReady(p0) {
		return nil
	}
	// The new pod is labelled only by the hand-over's promoted step: labelled, it has the writes.
	if p0.Labels[labelRole] == string(cachev1alpha1.RolePrimary) {
		if err := r.Delete(ctx, surge, client.Preconditions{UID: &surge.UID}); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting the surge pod: %w", err)
		}
		r.Recorder.Eventf(ci, nil, corev1.EventTypeNormal, "SurgeFinished", "StopSurge",
			"%s serves the data again with the current pod template; removed %s", p0.Name, surge.Name)
		return nil
	}
	// The old pod went before the surge pod took over (a drain, an eviction; decideRollout drops a
	// surge that is no longer needed): the surge pod holds the best copy left, and becomes the
	// primary the new pod syncs from.
	if surge.Labels[labelRole] != string(cachev1alpha1.RolePrimary) {
		creds := inst.creds()
		if role, _, _, _, err := readRole(ctx, r.serverAddress(surge), creds); err != nil || role != cachev1alpha1.RolePrimary {
			if err := promote(ctx, r.serverAddress(surge), creds); err != nil {
				return nil
			}
		}
		return r.labelRole(ctx, inst, surge.Name, cachev1alpha1.RolePrimary)
	}
	return r.surgeHandOver(ctx, inst, surge, p0, "takes the writes back from")
}

// surgeHandOver moves the writes from one pod to the other: it first makes to a replica of from,
// then waits for it to catch up, then hands over, each step on a pass of its own when it is not
// done yet. The labels carry the decision: from is labelled replica before to is promoted and
// labelled primary.
func (r *CacheInstanceReconciler) surgeHandOver(ctx context.Context, inst *instance, from, to *corev1.Pod, verb string) error {
	ci, creds := inst.CacheInstance, inst.creds()
	fromAddr, toAddr := r.serverAddress(from), r.serverAddress(to)
	role, _, primary, linkUp, err := readRole(ctx, toAddr, creds)
	if err != nil {
		return nil // not answering yet
	}
	if role != cachev1alpha1.RoleReplica || primary != fromAddr {
		err := replicateOverTLS(ctx, toAddr, creds)
		if err == nil {
			err = replicateFrom(ctx, toAddr, fromAddr, creds, false)
		}
		if err != nil {
			r.Recorder.Eventf(ci, nil, corev1.EventTypeWarning, "SurgeFailed", "StartReplication",
				"Making %s a replica of %s failed, retrying: %v", to.Name, from.Name, err)
		}
		return nil
	}
	if !linkUp || waitCaughtUp(ctx, toAddr, fromAddr, creds, time.Second) != nil {
		return nil // still syncing
	}
	offset, err := handOver(ctx, fromAddr, toAddr, creds, handOverSteps{
		record:   func(int64) error { return r.labelRole(ctx, inst, from.Name, cachev1alpha1.RoleReplica) },
		promoted: func() error { return r.labelRole(ctx, inst, to.Name, cachev1alpha1.RolePrimary) },
		route:    func() { r.waitServiceRoutesTo(ctx, ci.Namespace, ci.Name, to, from) },
	})
	var serverErr *serverStepError
	if errors.As(err, &serverErr) {
		r.Recorder.Eventf(ci, nil, corev1.EventTypeWarning, "SurgeFailed", "PromoteReplica",
			"%s %s %s failed, retrying: %v", to.Name, verb, from.Name, err)
		return nil
	}
	if err != nil {
		return err
	}
	r.Recorder.Eventf(ci, nil, corev1.EventTypeNormal, "Switchover", "PromoteReplica",
		"%s %s %s at offset %d; no acknowledged write was lost", to.Name, verb, from.Name, offset)
	return nil
}

// replicateOverTLS has a server follow its primary over TLS when the instance serves TLS only: a
// single pod's config leaves tls-replication out (it has no primary to follow), and the server
// reads it when the link starts.
func replicateOverTLS(ctx context.Context, addr string, creds serverCreds) error {
	if creds.tls == nil {
		return nil
	}
	rdb := serverClient(addr, creds)
	defer func() { _ = rdb.Close() }()
	if err := rdb.Do(ctx, "CONFIG", "SET", "tls-replication", "yes").Err(); err != nil {
		return fmt.Errorf("CONFIG SET tls-replication: %w", err)
	}
	return nil
}

// surgeNeeded is true while the surge pod has a part to play: a pod still needs replacing, the
// surge pod has taken the writes over, or the pod it was for was replaced behind its back, which
// leaves its copy the best one. A surge that never took over and is no longer needed (the change
// was undone, or a cold restart was allowed) is removed.
func surgeNeeded(ci *cachev1alpha1.CacheInstance, surge *corev1.Pod, pods []corev1.Pod, replacing bool) bool {
	if replacing || surge.Labels[labelRole] == string(cachev1alpha1.RolePrimary) {
		return true
	}
	for i := range pods {
		if ordinalOf(pods[i].Name) == 0 && string(pods[i].UID) != surge.Annotations[annotationSurgeFor] {
			return true
		}
	}
	return false
}
