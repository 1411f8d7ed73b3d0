package controllers

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestProblemOf(t *testing.T) {
	now := t0
	ready := corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionTrue}
	notReady := corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse}
	server := func(st corev1.ContainerStatus) corev1.ContainerStatus { st.Name = "server"; return st }
	waiting := func(reason string) corev1.ContainerState {
		return corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: "the kubelet's words"}}
	}
	oomAt := func(at time.Time) corev1.ContainerState {
		return corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{Reason: "OOMKilled", ExitCode: 137, FinishedAt: metav1.NewTime(at)}}
	}
	for _, tc := range []struct {
		name       string
		conditions []corev1.PodCondition
		containers []corev1.ContainerStatus
		reason     string // "" for no problem
		says       string
		until      time.Time
	}{
		{name: "starting", conditions: []corev1.PodCondition{notReady},
			containers: []corev1.ContainerStatus{server(corev1.ContainerStatus{State: waiting("ContainerCreating")})}},
		{name: "ready", conditions: []corev1.PodCondition{ready}},
		{name: "unschedulable", conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
			Reason: "Unschedulable", Message: "0/1 nodes are available: 1 Insufficient cpu."}},
			reason: "Unschedulable", says: "pod x-0 cannot be scheduled: 0/1 nodes are available: 1 Insufficient cpu."},
		{name: "scheduling gated is not a problem", conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "SchedulingGated"}}},
		{name: "image pull", conditions: []corev1.PodCondition{notReady},
			containers: []corev1.ContainerStatus{server(corev1.ContainerStatus{State: waiting("ErrImagePull")})},
			reason:     "ErrImagePull", says: "container server of pod x-0: ErrImagePull: the kubelet's words"},
		{name: "crash loop", conditions: []corev1.PodCondition{notReady},
			containers: []corev1.ContainerStatus{server(corev1.ContainerStatus{State: waiting("CrashLoopBackOff"), RestartCount: 4})},
			reason:     "CrashLoopBackOff", says: "CrashLoopBackOff: the kubelet's words"},
		{name: "crash loop after an OOM kill says OOMKilled", conditions: []corev1.PodCondition{notReady},
			containers: []corev1.ContainerStatus{server(corev1.ContainerStatus{State: waiting("CrashLoopBackOff"), LastTerminationState: oomAt(now.Add(-time.Hour)), RestartCount: 4})},
			reason:     "OOMKilled", says: "container server of pod x-0 was killed for exceeding its memory limit (256Mi)"},
		{name: "ready again soon after an OOM kill", conditions: []corev1.PodCondition{ready},
			containers: []corev1.ContainerStatus{server(corev1.ContainerStatus{LastTerminationState: oomAt(now.Add(-time.Minute)), RestartCount: 1})},
			reason:     "OOMKilled", says: "restarted 1 times", until: now.Add(-time.Minute).Add(oomWindow)},
		{name: "ready long after an OOM kill", conditions: []corev1.PodCondition{ready},
			containers: []corev1.ContainerStatus{server(corev1.ContainerStatus{LastTerminationState: oomAt(now.Add(-time.Hour)), RestartCount: 1})}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "x-0"},
				Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "server", Resources: corev1.ResourceRequirements{
					Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")}}}}},
				Status: corev1.PodStatus{Conditions: tc.conditions, ContainerStatuses: tc.containers}}
			p := problemOf(pod, now)
			switch {
			case tc.reason == "" && p != nil:
				t.Errorf("problem %+v, want none", p)
			case tc.reason == "":
			case p == nil:
				t.Errorf("no problem, want %s", tc.reason)
			case p.reason != tc.reason || !strings.Contains(p.message, tc.says) || !p.until.Equal(tc.until):
				t.Errorf("problem %s %q until %v, want %s saying %q until %v", p.reason, p.message, p.until, tc.reason, tc.says, tc.until)
			}
		})
	}
}
