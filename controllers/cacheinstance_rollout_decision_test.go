package controllers

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
)

// The decision before a replacement: nothing to replace is Live; a replicated instance, or a
// persistent one whose pods keep their data on claims, is Warm; a pod whose server never ran holds nothing to keep; a single pod with data
// goes through a surge (Warm), which waits for room when its pod cannot be scheduled, and when
// the operator cannot reach the server to hand the data over it waits for consent; a cold
// restart only where the user allowed it.
func TestDecideRollout(t *testing.T) {
	running := corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning,
		ContainerStatuses: []corev1.ContainerStatus{{Name: containerName, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}}}
	running.Name = "cache-0"
	onClaim := *running.DeepCopy()
	onClaim.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data-cache-0"}}}}
	rdb := func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.Persistence = cachev1alpha1.PersistenceSpec{Mode: cachev1alpha1.PersistenceRDB, Size: ptr.To(resource.MustParse("1Gi"))}
	}
	crashing := *running.DeepCopy()
	crashing.Status.ContainerStatuses[0].State = corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}}
	pending := corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending}}
	pending.Name = "cache-0"
	one := map[string]bool{"cache-0": true}
	allow := func(ci *cachev1alpha1.CacheInstance) { ci.Spec.Rollout.AllowColdRestart = true }
	surge := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	surge.Labels = map[string]string{labelRole: string(cachev1alpha1.RolePrimary)}
	unneeded := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	unneeded.Labels = map[string]string{labelRole: string(cachev1alpha1.RoleReplica)}
	noRoom := &corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable}}}}
	reachable := rolloutFacts{reachable: true}
	for _, tc := range []struct {
		name    string
		ci      *cachev1alpha1.CacheInstance
		pod     corev1.Pod
		replace map[string]bool
		facts   rolloutFacts
		want    string
		surge   bool
	}{
		{"nothing to replace", newInstance(1), running, nil, reachable, cachev1alpha1.RolloutLive, false},
		{"one pod with data: a surge", newInstance(1), running, one, reachable, cachev1alpha1.RolloutWarm, true},
		{"a surge even with consent", newInstance(1, allow), running, one, reachable, cachev1alpha1.RolloutWarm, true},
		{"a surge under way", newInstance(1), running, nil, rolloutFacts{surge: surge}, cachev1alpha1.RolloutWarm, true},
		{"a surge no longer needed", newInstance(1), running, nil, rolloutFacts{surge: unneeded}, cachev1alpha1.RolloutLive, false},
		{"no room for the surge", newInstance(1), running, one, rolloutFacts{surge: noRoom}, cachev1alpha1.RolloutWaitingForRoom, false},
		{"no room, consent given", newInstance(1, allow), running, one, rolloutFacts{surge: noRoom}, cachev1alpha1.RolloutColdRestart, false},
		{"server out of reach", newInstance(1), running, one, rolloutFacts{}, cachev1alpha1.RolloutWaitingForConsent, false},
		{"out of reach, consent given", newInstance(1, allow), running, one, rolloutFacts{}, cachev1alpha1.RolloutColdRestart, false},
		{"persistent", newInstance(1, rdb), onClaim, one, reachable, cachev1alpha1.RolloutWarm, false},
		// Persistence turned on: the pod's data is still only in its memory.
		{"persistent, the pod from before", newInstance(1, rdb), running, one, reachable, cachev1alpha1.RolloutWarm, true},
		// Persistence turned off: the new pod will not have the claim.
		{"persistence off, the pod on a claim", newInstance(1), onClaim, one, reachable, cachev1alpha1.RolloutWarm, true},
		{"replicated", newInstance(1, func(ci *cachev1alpha1.CacheInstance) { ci.Spec.Replicas = ptr.To[int32](2) }), running, one, reachable, cachev1alpha1.RolloutWarm, false},
		{"never scheduled", newInstance(1), pending, one, reachable, cachev1alpha1.RolloutNoDataToKeep, false},
		{"crash loop", newInstance(1), crashing, one, reachable, cachev1alpha1.RolloutNoDataToKeep, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := decideRollout(tc.ci, []corev1.Pod{tc.pod}, tc.replace, "cache-2", "image a -> b", tc.facts)
			if d.reason != tc.want || d.surge != tc.surge {
				t.Fatalf("reason %s, surge %v (%s), want %s, %v", d.reason, d.surge, d.message, tc.want, tc.surge)
			}
			if d.waiting() && (!strings.Contains(d.message, "allowColdRestart") || !strings.Contains(d.message, "image a -> b")) {
				t.Errorf("the wait does not say what changed and what to do: %s", d.message)
			}
			if drop := tc.facts.surge == unneeded || (tc.facts.surge == noRoom && d.reason == cachev1alpha1.RolloutColdRestart); d.dropSurge != drop {
				t.Errorf("dropSurge %v", d.dropSurge)
			}
		})
	}
}

// What changed between two templates, as the Rollout condition says it.
func TestDescribeTemplateChange(t *testing.T) {
	base := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: containerName, Image: "a",
		Resources: corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}}}}}}
	base.Annotations = map[string]string{annotationConfigHash: "h1"}
	change := func(f func(*corev1.PodTemplateSpec)) *corev1.PodTemplateSpec {
		t := base.DeepCopy()
		f(t)
		return t
	}
	for _, tc := range []struct {
		name string
		cur  *corev1.PodTemplateSpec
		want string
	}{
		{"image", change(func(t *corev1.PodTemplateSpec) { t.Spec.Containers[0].Image = "b" }), "image a -> b"},
		{"cpu", change(func(t *corev1.PodTemplateSpec) {
			t.Spec.Containers[0].Resources.Limits[corev1.ResourceCPU] = resource.MustParse("2")
		}), "CPU 1 -> 2 (the kubelet's static CPU manager does not resize CPUs in place)"},
		{"start-only", change(func(t *corev1.PodTemplateSpec) { t.Annotations[annotationConfigHash] = "h2" }), "directives the server reads only at start"},
		{"shape", change(func(t *corev1.PodTemplateSpec) { t.Spec.NodeSelector = map[string]string{"zone": "a"} }), "the pod's spec, labels or annotations"},
		{"image and shape", change(func(t *corev1.PodTemplateSpec) {
			t.Spec.Containers[0].Image = "b"
			t.Labels = map[string]string{"team": "x"}
		}), "image a -> b, the pod's spec, labels or annotations"},
	} {
		if got := describeTemplateChange(base, tc.cur); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	if got := describeTemplateChange(nil, base); got != "its pod template changed" {
		t.Errorf("without the old revision: %q", got)
	}
}
