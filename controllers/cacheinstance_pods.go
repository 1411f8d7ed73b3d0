package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// What keeps a server pod from serving, as the scheduler or the kubelet wrote it in the pod's
// status. A StatefulSet's status only counts ready pods; the instance's status repeats the pod's own
// reason (Degraded), so that nobody has to read the pods to learn why a cache does not come up.

// oomWindow is how long after an OOM kill the instance stays Degraded although the restarted
// container is ready again: a cache that keeps being killed loses its data each time.
const oomWindow = rolloutDeadline

// podProblem is why one server pod does not serve: the scheduler's or the kubelet's reason
// (Unschedulable, ErrImagePull, ImagePullBackOff, CrashLoopBackOff, OOMKilled, ...) and message.
type podProblem struct {
	pod, reason, message string
	// until, when set, is when the problem stops counting though the pod stays as it is (an OOM
	// kill the container has recovered from).
	until time.Time
}

// stuckWaiting are the container waiting reasons that waiting does not cure: the kubelet retries
// them with a growing back-off, and someone has to act.
var stuckWaiting = []string{
	"ErrImagePull", "ImagePullBackOff", "InvalidImageName", "ErrImageNeverPull",
	"CrashLoopBackOff", "CreateContainerConfigError", "CreateContainerError", "RunContainerError",
}

// problemOf reads why pod does not serve, or nil when nothing is known to be wrong (it may just be
// starting).
func problemOf(pod *corev1.Pod, now time.Time) *podProblem {
	if !pod.DeletionTimestamp.IsZero() {
		return nil
	}
	ready := false
	for _, c := range pod.Status.Conditions {
		switch {
		case c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable:
			return &podProblem{pod: pod.Name, reason: c.Reason, message: fmt.Sprintf("pod %s cannot be scheduled: %s", pod.Name, c.Message)}
		case c.Type == corev1.PodReady:
			ready = c.Status == corev1.ConditionTrue
		}
	}
	statuses := append(slices.Clone(pod.Status.InitContainerStatuses), pod.Status.ContainerStatuses...)
	for _, cs := range statuses {
		// An OOM kill first: CrashLoopBackOff after it says less than the kill itself.
		if t := cs.LastTerminationState.Terminated; t != nil && t.Reason == "OOMKilled" {
			p := &podProblem{pod: pod.Name, reason: t.Reason, message: fmt.Sprintf(
				"container %s of pod %s was killed for exceeding its memory limit%s at %s (restarted %d times); it lost its data",
				cs.Name, pod.Name, memoryLimitOf(pod, cs.Name), t.FinishedAt.UTC().Format(time.RFC3339), cs.RestartCount)}
			if !ready {
				return p
			}
			if p.until = t.FinishedAt.Add(oomWindow); now.Before(p.until) {
				return p
			}
		}
	}
	for _, cs := range statuses {
		if w := cs.State.Waiting; w != nil && slices.Contains(stuckWaiting, w.Reason) {
			return &podProblem{pod: pod.Name, reason: w.Reason, message: fmt.Sprintf("container %s of pod %s: %s: %s", cs.Name, pod.Name, w.Reason, w.Message)}
		}
	}
	return nil
}

// memoryLimitOf names a container's memory limit for a message, or nothing.
func memoryLimitOf(pod *corev1.Pod, container string) string {
	for _, c := range pod.Spec.Containers {
		if q, ok := c.Resources.Limits[corev1.ResourceMemory]; ok && c.Name == container {
			return " (" + q.String() + ")"
		}
	}
	return ""
}

// reconcilePods reads the instance's server pods and records the first problem one of them has.
func (r *CacheInstanceReconciler) reconcilePods(ctx context.Context, inst *instance) (*ctrl.Result, error) {
	if inst.rollout == nil {
		return nil, nil
	}
	pods := &corev1.PodList{}
	if err := r.List(ctx, pods, client.InNamespace(inst.Namespace), client.MatchingLabels(selectorLabels(inst.CacheInstance))); err != nil {
		return nil, fmt.Errorf("listing the instance's pods: %w", err)
	}
	// The surge pod is the surge step's (cacheinstance_surge.go).
	pods.Items = slices.DeleteFunc(pods.Items, func(p corev1.Pod) bool { return isSurgePod(inst.CacheInstance, &p) })
	slices.SortFunc(pods.Items, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
	now := time.Now()
	for i := range pods.Items {
		if p := problemOf(&pods.Items[i], now); p != nil {
			inst.podProblem = p
			if !p.until.IsZero() {
				inst.recheckIn(p.until.Sub(now))
			}
			break
		}
	}
	return nil, nil
}

// instanceOfPod maps a server pod to its instance, by the instance label the StatefulSet's
// template puts on it.
func instanceOfPod(_ context.Context, obj client.Object) []reconcile.Request {
	name := obj.GetLabels()[labelInstance]
	if name == "" || obj.GetLabels()[labelName] != appName {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: obj.GetNamespace(), Name: name}}}
}
