package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
)

// Consent for cold restarts (issue #30). Before the rollout step replaces any pod it decides
// whether the data survives the replacement, records that decision in the Rollout condition and an
// event, and acts only on a later pass that finds the decision in the stored status: a user (or
// a tool) reading the instance learns what will happen before it happens. A replacement that
// would empty the instance's only copy of its data (no persistence, one pod) waits for
// spec.rollout.allowColdRestart.

// rolloutDecision is how the outdated pods reach the update revision, as the Rollout condition
// says it.
type rolloutDecision struct {
	reason, message string
	// surge: the replacement goes through the surge pod (cacheinstance_surge.go).
	surge bool
	// dropSurge: a surge pod that never ran is removed before a cold replacement.
	dropSurge bool
}

// waiting is true when the decision is to replace nothing.
func (d *rolloutDecision) waiting() bool {
	return d.reason == cachev1alpha1.RolloutWaitingForConsent || d.reason == cachev1alpha1.RolloutWaitingForRoom
}

// status is the Rollout condition's status for the decision.
func (d *rolloutDecision) status() metav1.ConditionStatus {
	if d.waiting() {
		return metav1.ConditionFalse
	}
	return metav1.ConditionTrue
}

// rolloutFacts are what the decision needs beyond the instance and its pods.
type rolloutFacts struct {
	// surge is the instance's surge pod, or nil.
	surge *corev1.Pod
	// reachable: the operator reaches the running server with the spec's credentials, which a
	// hand-over needs (adding auth or TLS changes them before the pod has them).
	reachable bool
}

// decideRollout classifies the replacement of the pods in replace (by name), which need a new pod
// for the update revision; what names what changed in their template. No pod to replace, and no
// surge under way, is Live.
func decideRollout(ci *cachev1alpha1.CacheInstance, pods []corev1.Pod, replace map[string]bool, update, what string, facts rolloutFacts) *rolloutDecision {
	var names []string
	holding, onClaims := false, true
	for i := range pods {
		if replace[pods[i].Name] {
			names = append(names, pods[i].Name)
			holding = holding || holdsData(&pods[i])
			onClaims = onClaims && keepsDataOnClaim(ci, &pods[i])
		}
	}
	slices.Sort(names)
	list := strings.Join(names, ", ")
	if what != "" {
		what = " (" + what + ")"
	}
	surgeMessage := fmt.Sprintf(
		"Revision %s%s: the temporary pod %s syncs as a replica of %s-0 and takes the writes over once it has caught up (writes paused a moment, no acknowledged write lost); %s-0 is replaced and takes them back the same way",
		update, what, surgePodName(ci), ci.Name, ci.Name)
	switch {
	case facts.surge != nil && !surgeNeeded(ci, facts.surge, pods, len(names) > 0):
		return &rolloutDecision{reason: cachev1alpha1.RolloutLive, dropSurge: true,
			message: "No pod needs replacing any more: the surge pod is removed; changes are applied to the running pods, which keep their data"}
	case facts.surge != nil && cannotBeScheduled(facts.surge) && ci.Spec.Rollout.AllowColdRestart:
		return &rolloutDecision{reason: cachev1alpha1.RolloutColdRestart, dropSurge: true, message: fmt.Sprintf(
			"Revision %s%s: no node has room for the surge pod %s that would keep the data, so %s is replaced and starts empty, as spec.rollout.allowColdRestart allows",
			update, what, surgePodName(ci), list)}
	case facts.surge != nil && cannotBeScheduled(facts.surge):
		return &rolloutDecision{reason: cachev1alpha1.RolloutWaitingForRoom, message: fmt.Sprintf(
			"Revision %s%s needs a new pod; the surge pod %s that would keep the data meanwhile cannot be scheduled: no node has room for one more pod of this size (see its events). Nothing is replaced; %s-0 keeps serving with its data. "+
				"Make room, or set spec.rollout.allowColdRestart: true to accept a cold restart",
			update, what, surgePodName(ci), ci.Name)}
	case facts.surge != nil:
		return &rolloutDecision{reason: cachev1alpha1.RolloutWarm, surge: true, message: surgeMessage}
	case len(names) == 0:
		return &rolloutDecision{reason: cachev1alpha1.RolloutLive,
			message: "No pod needs replacing: changes are applied to the running pods (CONFIG SET, memory resized in place), which keep their data"}
	case replicated(ci):
		return &rolloutDecision{reason: cachev1alpha1.RolloutWarm, message: fmt.Sprintf(
			"Revision %s%s: replacing %s one at a time, replicas first; the primary moves to an updated replica by a switchover (writes paused for a moment, no acknowledged write lost)",
			update, what, list)}
	case !holding:
		return &rolloutDecision{reason: cachev1alpha1.RolloutNoDataToKeep, message: fmt.Sprintf(
			"Revision %s%s: replacing %s, which holds no data (its server is not running)", update, what, list)}
	case onClaims:
		return &rolloutDecision{reason: cachev1alpha1.RolloutWarm, message: fmt.Sprintf(
			"Revision %s%s: replacing %s; persistence %s keeps the data (saved at shutdown, loaded at start)",
			update, what, list, ci.Spec.Persistence.Mode)}
	case facts.reachable:
		return &rolloutDecision{reason: cachev1alpha1.RolloutWarm, surge: true, message: surgeMessage}
	case ci.Spec.Rollout.AllowColdRestart:
		return &rolloutDecision{reason: cachev1alpha1.RolloutColdRestart, message: fmt.Sprintf(
			"Revision %s%s: replacing %s, which starts empty: the operator cannot reach its server with the spec's auth or TLS to hand the data over, and spec.rollout.allowColdRestart allows a cold restart",
			update, what, list)}
	}
	return &rolloutDecision{reason: cachev1alpha1.RolloutWaitingForConsent, message: fmt.Sprintf(
		"Revision %s%s needs a new pod for %s, which would start empty: the instance has no persistence and one pod, and the operator cannot reach its server with the spec's auth or TLS to hand the data over to a surge pod. Nothing is replaced; %s keeps serving with its data. "+
			"Set spec.rollout.allowColdRestart: true to accept a cold restart, or undo the change",
		update, what, list, list)}
}

// needsSurge is true when the replacement of the pods in replace would lose data that only they
// hold in memory (no persistence, or persistence turned on after they started): the case for a
// surge.
func needsSurge(ci *cachev1alpha1.CacheInstance, pods []corev1.Pod, replace map[string]bool) bool {
	if replicated(ci) {
		return false
	}
	for i := range pods {
		if replace[pods[i].Name] && holdsData(&pods[i]) && !keepsDataOnClaim(ci, &pods[i]) {
			return true
		}
	}
	return false
}

// holdsData is true when a pod's server may hold data: the pod runs and its server container is
// neither waiting (never started, crash loop) nor terminated. A pod that never ran can be
// replaced without losing anything, which is how a user makes an unschedulable pod fit.
func holdsData(pod *corev1.Pod) bool {
	if pod.Status.Phase != corev1.PodRunning {
		return false
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == containerName {
			return cs.State.Waiting == nil && cs.State.Terminated == nil
		}
	}
	return true // running, its container not reported yet: assume the worst
}

// decisionRecorded is true when the status as read at the start of the pass already holds d for
// the current generation: the pass may act on it.
func decisionRecorded(ci *cachev1alpha1.CacheInstance, d *rolloutDecision) bool {
	c := meta.FindStatusCondition(ci.Status.Conditions, cachev1alpha1.ConditionRollout)
	return c != nil && c.ObservedGeneration == ci.Generation && c.Reason == d.reason && c.Message == d.message && c.Status == d.status()
}

// announceRollout records a new decision's event (the status follows at the end of the pass).
// Live needs none: ConfigApplied and its events say what was applied.
func (r *CacheInstanceReconciler) announceRollout(ci *cachev1alpha1.CacheInstance, d *rolloutDecision) {
	if d.reason == cachev1alpha1.RolloutLive {
		return
	}
	typ := corev1.EventTypeNormal
	if d.waiting() || d.reason == cachev1alpha1.RolloutColdRestart {
		typ = corev1.EventTypeWarning
	}
	r.Recorder.Eventf(ci, nil, typ, d.reason, "DecideRollout", "%s", eventNote(d.message))
}

// describeTemplateChange says in words what differs between a pod's template and the update
// revision's: the image, the CPUs, the start-only config, or else the pod's shape.
func describeTemplateChange(old, cur *corev1.PodTemplateSpec) string {
	if old == nil || cur == nil {
		return "its pod template changed"
	}
	var what []string
	oc, cc := serverContainer(old), serverContainer(cur)
	if oc != nil && cc != nil {
		if oc.Image != cc.Image {
			what = append(what, fmt.Sprintf("image %s -> %s", oc.Image, cc.Image))
		}
		if a, b := oc.Resources.Limits.Cpu(), cc.Resources.Limits.Cpu(); a.Cmp(*b) != 0 {
			what = append(what, fmt.Sprintf("CPU %s -> %s (the kubelet's static CPU manager does not resize CPUs in place)", a, b))
		}
	}
	if a, b := old.Annotations[annotationConfigHash], cur.Annotations[annotationConfigHash]; a != b {
		what = append(what, "directives the server reads only at start")
	}
	if len(what) == 0 || !sameShape(old, cur) {
		what = append(what, "the pod's spec, labels or annotations")
	}
	return strings.Join(what, ", ")
}

// sameShape is true when two templates differ at most in the server's image, CPUs and the
// config-hash annotation.
func sameShape(old, cur *corev1.PodTemplateSpec) bool {
	a, b := old.DeepCopy(), cur.DeepCopy()
	for _, t := range []*corev1.PodTemplateSpec{a, b} {
		delete(t.Annotations, annotationConfigHash)
		if c := serverContainer(t); c != nil {
			c.Image = ""
			delete(c.Resources.Limits, corev1.ResourceCPU)
			delete(c.Resources.Requests, corev1.ResourceCPU)
		}
	}
	return equality.Semantic.DeepEqual(a, b)
}

// serverContainer is the template's server container, or nil.
func serverContainer(t *corev1.PodTemplateSpec) *corev1.Container {
	for i := range t.Spec.Containers {
		if t.Spec.Containers[i].Name == containerName {
			return &t.Spec.Containers[i]
		}
	}
	return nil
}

// templateChange names what changed between the revision a pod was made from and the update
// revision, read from their ControllerRevisions.
func (r *CacheInstanceReconciler) templateChange(ctx context.Context, ns, from, update string) (string, error) {
	if from == "" {
		return describeTemplateChange(nil, nil), nil
	}
	old, err := r.revisionTemplate(ctx, ns, from)
	if err != nil {
		return "", err
	}
	cur, err := r.revisionTemplate(ctx, ns, update)
	if err != nil {
		return "", err
	}
	return describeTemplateChange(old, cur), nil
}

// setRolloutCondition writes the pass's decision, if it made one.
func setRolloutCondition(inst *instance, set func(typ string, status metav1.ConditionStatus, reason, format string, args ...any)) {
	if d := inst.rolloutDecision; d != nil {
		set(cachev1alpha1.ConditionRollout, d.status(), d.reason, "%s", d.message)
	}
}
