package controllers

import (
	"context"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/types"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// In-place memory resize. A change of spec.memory alone would give the pods a new template, and a
// new pod starts empty. The kubelet (1.37, static CPU manager) resizes a Guaranteed pod's memory
// in place, up and down, without restarting its containers (measured on the local node; every CPU
// change is refused there as Infeasible), so a pod whose template differs from the current one
// only in the server container's memory is resized through the pods/resize subresource instead
// of replaced, and then marked as made from the current revision, which is all the StatefulSet
// controller (OnDelete) looks at. The server follows its cgroup's new limit by itself
// (server/engine/memlimit.go). Order keeps the pod inside its limit: growing, the pod grows first
// and maxmemory follows (the live step holds the new maxmemory back from a pod still smaller than
// spec.memory); shrinking, maxmemory shrinks first and the pod follows once the server has taken
// it. A resize the kubelet calls Infeasible falls back to replacing the pod.
//
// The same marking, without a resize, brings a pod to a template that differs from its own only
// in how an earlier operator hashed the same start-only config (serverConfig.LegacyRestartHash:
// operators before issue #30 counted live spec.config names too): after an operator upgrade such
// a pod runs exactly what the new template asks for, and replacing it would empty the cache for
// nothing. Its config-hash annotation is set to the current hash with the revision label.

// resizeOutcome is what in-place resizing did with an outdated pod this pass.
type resizeOutcome int

const (
	resizeNotApplicable resizeOutcome = iota // the pod needs a new pod: its revision differs beyond memory
	resizeWaiting                            // resize asked for or under way; look again later
	resizeDone                               // the pod runs the current revision now, data kept
	resizeInfeasible                         // the kubelet refused: replace the pod
)

// Events of in-place resizing.
const (
	reasonResizingInPlace  = "ResizingInPlace"
	reasonResizedInPlace   = "ResizedInPlace"
	reasonResizeInfeasible = "ResizeInfeasible"
	// reasonRestartHashUpdated: a pod kept across an operator upgrade that changed only how the
	// config hash is computed.
	reasonRestartHashUpdated = "RestartHashUpdated"
)

// updateInPlace brings an outdated pod to the update revision without a restart when only the
// server's memory differs (a resize), or only the config hash's legacy form (a relabel).
func (r *CacheInstanceReconciler) updateInPlace(ctx context.Context, inst *instance, pod *corev1.Pod, update string) (resizeOutcome, error) {
	memory, resize, ok, err := r.inPlaceChange(ctx, inst.config, pod.Namespace, pod.Labels[labelRevision], update)
	if err != nil || !ok {
		return resizeNotApplicable, err
	}
	ci := inst.CacheInstance
	if !resize {
		outcome, err := r.markUpdated(ctx, inst, pod, update)
		if outcome == resizeDone {
			r.Recorder.Eventf(ci, pod, corev1.EventTypeNormal, reasonRestartHashUpdated, "RelabelPod",
				"Pod %s kept, with its data: its template differed only in how an earlier operator hashed the same start-only config (%s -> %s)",
				pod.Name, inst.config.LegacyRestartHash, inst.config.RestartHash)
		}
		return outcome, err
	}
	// A pod that does not run (unschedulable, its image not pulled) holds no data, and the kubelet
	// may never act on a resize: a memory change made to let it fit must replace it.
	if pod.Status.Phase != corev1.PodRunning {
		return resizeNotApplicable, nil
	}
	if cond := podCondition(pod, corev1.PodResizePending); cond != nil && cond.Reason == corev1.PodReasonInfeasible {
		r.Recorder.Eventf(ci, pod, corev1.EventTypeWarning, reasonResizeInfeasible, "ResizePod",
			"The kubelet cannot resize pod %s to memory %s in place (%s); replacing the pod", pod.Name, memory.String(), cond.Message)
		return resizeInfeasible, nil
	}
	asked := containerMemory(pod.Spec.Containers)
	if asked == nil || asked.Cmp(memory) != 0 {
		if asked != nil && memory.Cmp(*asked) < 0 && !inst.liveConfigVerified(pod) {
			// Shrinking: the server's maxmemory comes down first (the live step).
			inst.recheckIn(replicationRecheck)
			return resizeWaiting, nil
		}
		if err := r.patchPodMemory(ctx, pod, memory); err != nil {
			return resizeWaiting, fmt.Errorf("resizing pod %s in place: %w", pod.Name, err)
		}
		from := "?"
		if asked != nil {
			from = asked.String()
		}
		r.Recorder.Eventf(ci, pod, corev1.EventTypeNormal, reasonResizingInPlace, "ResizePod",
			"Resizing pod %s in place, memory %s -> %s, keeping its data", pod.Name, from, memory.String())
		inst.recheckIn(replicationRecheck)
		return resizeWaiting, nil
	}
	// Asked for: done once the kubelet reports the container running with it.
	if podCondition(pod, corev1.PodResizePending) != nil || podCondition(pod, corev1.PodResizeInProgress) != nil {
		inst.recheckIn(replicationRecheck)
		return resizeWaiting, nil
	}
	running := containerMemory(containerStatusResources(pod))
	if running == nil || running.Cmp(memory) != 0 {
		inst.recheckIn(replicationRecheck)
		return resizeWaiting, nil
	}
	outcome, err := r.markUpdated(ctx, inst, pod, update)
	if outcome == resizeDone {
		r.Recorder.Eventf(ci, pod, corev1.EventTypeNormal, reasonResizedInPlace, "ResizePod",
			"Pod %s resized in place to memory %s without a restart; it kept its data", pod.Name, memory.String())
	}
	return outcome, err
}

// markUpdated marks a pod as made from the update revision, which is all the StatefulSet
// controller (OnDelete) looks at, and gives it the current config hash where it carries the legacy
// form of it.
func (r *CacheInstanceReconciler) markUpdated(ctx context.Context, inst *instance, pod *corev1.Pod, update string) (resizeOutcome, error) {
	// Optimistic lock: the label says "made from update", true only of the pod as just read.
	patch := client.MergeFromWithOptions(pod.DeepCopy(), client.MergeFromWithOptimisticLock{})
	pod.Labels[labelRevision] = update
	if cfg := inst.config; pod.Annotations[annotationConfigHash] == cfg.LegacyRestartHash {
		pod.Annotations[annotationConfigHash] = cfg.RestartHash
	}
	if err := r.Patch(ctx, pod, patch); apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		inst.recheckIn(replicationRecheck)
		return resizeWaiting, nil // the pod changed since it was read: the next pass decides again
	} else if err != nil {
		return resizeWaiting, fmt.Errorf("marking pod %s as made from revision %s: %w", pod.Name, update, err)
	}
	return resizeDone, nil
}

// inPlaceChange reads the two revisions' pod templates, as the StatefulSet controller stored
// them, and reports whether a pod made from the first can be brought to the second in place
// (inPlaceDiff): ok, with the server memory of update, and resize when that memory differs.
// Revisions are read from the API server, not a cache: they are needed only during a rollout, and
// a cache of every StatefulSet's revisions would cost the operator memory all the time.
func (r *CacheInstanceReconciler) inPlaceChange(ctx context.Context, cfg *serverConfig, ns, from, update string) (memory resource.Quantity, resize, ok bool, err error) {
	if from == "" || update == "" || cfg == nil {
		return resource.Quantity{}, false, false, nil
	}
	old, err := r.revisionTemplate(ctx, ns, from)
	if err != nil || old == nil {
		return resource.Quantity{}, false, false, err
	}
	cur, err := r.revisionTemplate(ctx, ns, update)
	if err != nil || cur == nil {
		return resource.Quantity{}, false, false, err
	}
	_, to, resize, ok := inPlaceDiff(old, cur, cfg)
	if !ok {
		return resource.Quantity{}, false, false, nil
	}
	return to, resize, true, nil
}

// inPlaceDiff compares a pod template with a newer one (neither is changed) and reports ok when a
// pod of the first can run the second without a restart: they differ in the server container's
// memory (resize: from and to), in the config-hash annotation where the old one carries
// cfg.LegacyRestartHash and the new one cfg.RestartHash (the same start-only config, hashed as an
// earlier operator did), or both, and in nothing else.
func inPlaceDiff(old, cur *corev1.PodTemplateSpec, cfg *serverConfig) (from, to resource.Quantity, resize, ok bool) {
	a, z := containerMemory(old.Spec.Containers), containerMemory(cur.Spec.Containers)
	if a == nil || z == nil {
		return from, to, false, false
	}
	from, to, resize = *a, *z, a.Cmp(*z) != 0
	old, cur = old.DeepCopy(), cur.DeepCopy()
	rehash := cfg.LegacyRestartHash != cfg.RestartHash &&
		old.Annotations[annotationConfigHash] == cfg.LegacyRestartHash && cur.Annotations[annotationConfigHash] == cfg.RestartHash
	if rehash {
		old.Annotations[annotationConfigHash] = cfg.RestartHash
	}
	if !resize && !rehash {
		return from, to, false, false
	}
	withoutServerMemory(old)
	withoutServerMemory(cur)
	return from, to, resize, equality.Semantic.DeepEqual(old, cur)
}

// revisionTemplate is the pod template a ControllerRevision of a StatefulSet holds (its data is
// the patch {"spec":{"template":{...}}}); nil when the revision is gone.
func (r *CacheInstanceReconciler) revisionTemplate(ctx context.Context, ns, name string) (*corev1.PodTemplateSpec, error) {
	rev := &appsv1.ControllerRevision{}
	if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, rev); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	var data struct {
		Spec struct {
			Template corev1.PodTemplateSpec `json:"template"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(rev.Data.Raw, &data); err != nil {
		return nil, fmt.Errorf("reading ControllerRevision %s: %w", name, err)
	}
	return &data.Spec.Template, nil
}

// withoutServerMemory removes the server container's memory request and limit.
func withoutServerMemory(t *corev1.PodTemplateSpec) {
	for i := range t.Spec.Containers {
		if c := &t.Spec.Containers[i]; c.Name == containerName {
			delete(c.Resources.Requests, corev1.ResourceMemory)
			delete(c.Resources.Limits, corev1.ResourceMemory)
		}
	}
}

// containerMemory is the server container's memory limit among containers, nil without one.
func containerMemory(containers []corev1.Container) *resource.Quantity {
	for i := range containers {
		if c := &containers[i]; c.Name == containerName {
			if q, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
				return &q
			}
		}
	}
	return nil
}

// containerStatusResources are the server container's resources as the kubelet reports them
// running, as a container list for containerMemory.
func containerStatusResources(pod *corev1.Pod) []corev1.Container {
	for _, cs := range pod.Status.ContainerStatuses {
		if cs.Name == containerName && cs.Resources != nil {
			return []corev1.Container{{Name: containerName, Resources: *cs.Resources}}
		}
	}
	return nil
}

// patchPodMemory asks the kubelet, through the pods/resize subresource, for the server container
// to run with memory as both request and limit (the pod stays Guaranteed).
func (r *CacheInstanceReconciler) patchPodMemory(ctx context.Context, pod *corev1.Pod, memory resource.Quantity) error {
	q := memory.String()
	body, err := json.Marshal(map[string]any{"spec": map[string]any{"containers": []any{map[string]any{
		"name":      containerName,
		"resources": map[string]any{"requests": map[string]string{"memory": q}, "limits": map[string]string{"memory": q}},
	}}}})
	if err != nil {
		return err
	}
	return r.SubResource("resize").Patch(ctx, pod, client.RawPatch(types.StrategicMergePatchType, body))
}

// podCondition returns the pod's condition of type t, nil when it has none or it is not True.
func podCondition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if c := &pod.Status.Conditions[i]; c.Type == t && c.Status == corev1.ConditionTrue {
			return c
		}
	}
	return nil
}

// liveConfigVerified is true when this pass verified the pod's server runs the current config
// (maxmemory included).
func (inst *instance) liveConfigVerified(pod *corev1.Pod) bool {
	for _, p := range inst.podConfigs {
		if p.Name == pod.Name && p.UID == string(pod.UID) && inst.config != nil && p.ConfigHash == inst.config.Hash {
			return true
		}
	}
	return false
}

// memoryBelowSpec is true while a pod's server container has less memory than spec.memory (a
// resize in place not yet done): it must not be given the larger maxmemory yet.
func memoryBelowSpec(pod *corev1.Pod, want resource.Quantity) bool {
	have := containerMemory(containerStatusResources(pod))
	if have == nil {
		have = containerMemory(pod.Spec.Containers)
	}
	return have != nil && have.Cmp(want) < 0
}

// inPlaceTemplateChange compares the StatefulSet's template before an apply with the one the API
// server returned (both defaulted by it) and reports, when the pods can take the new one in place
// (inPlaceDiff), the server's memory before and after (equal when only the hash's form changed).
func inPlaceTemplateChange(prev *corev1.PodTemplateSpec, applied *corev1ac.PodTemplateSpecApplyConfiguration, cfg *serverConfig) (from, to resource.Quantity, ok bool) {
	if applied == nil || cfg == nil {
		return from, to, false
	}
	b, err := json.Marshal(applied)
	if err != nil {
		return from, to, false
	}
	cur := &corev1.PodTemplateSpec{}
	if json.Unmarshal(b, cur) != nil {
		return from, to, false
	}
	from, to, _, ok = inPlaceDiff(prev, cur, cfg)
	return from, to, ok
}
