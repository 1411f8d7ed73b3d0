package controllers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
)

// recordRevision does what the StatefulSet controller does for a new template: it stores the
// template in a ControllerRevision named <sts>-<generation> (the patch form the controller
// writes) and reports it as the update revision, with updated pods counted from their labels.
func (cl *cluster) recordRevision(t *testing.T, ns, name string) string {
	t.Helper()
	ctx := context.Background()
	sts := &appsv1.StatefulSet{}
	if err := cl.get(t, ns, name, sts); err != nil {
		t.Fatal(err)
	}
	rev := fmt.Sprintf("%s-%d", name, sts.Generation)
	tmpl, err := json.Marshal(sts.Spec.Template)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(tmpl, &m); err != nil {
		t.Fatal(err)
	}
	m["$patch"] = "replace"
	data, err := json.Marshal(map[string]any{"spec": map[string]any{"template": m}})
	if err != nil {
		t.Fatal(err)
	}
	cr := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: rev, Namespace: ns, Labels: sts.Spec.Selector.MatchLabels,
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(sts, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))}},
		Data: runtime.RawExtension{Raw: data}, Revision: sts.Generation}
	if err := cl.c.Create(ctx, cr); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	cl.countUpdated(t, ns, name)
	return rev
}

// countUpdated writes the StatefulSet's status as its controller would for OnDelete: the update
// revision is the current generation's, currentRevision stays, updated pods are those labelled
// with the update revision.
func (cl *cluster) countUpdated(t *testing.T, ns, name string) {
	t.Helper()
	sts := &appsv1.StatefulSet{}
	if err := cl.get(t, ns, name, sts); err != nil {
		t.Fatal(err)
	}
	rev := fmt.Sprintf("%s-%d", name, sts.Generation)
	pods := &corev1.PodList{}
	if err := cl.c.List(context.Background(), pods); err != nil {
		t.Fatal(err)
	}
	var n, updated int32
	for _, p := range pods.Items {
		if p.Namespace == ns && p.DeletionTimestamp.IsZero() {
			n++
			if p.Labels[appsv1.ControllerRevisionHashLabelKey] == rev {
				updated++
			}
		}
	}
	current := sts.Status.CurrentRevision
	if current == "" {
		current = rev
	}
	sts.Status = appsv1.StatefulSetStatus{ObservedGeneration: sts.Generation, Replicas: n, ReadyReplicas: n, AvailableReplicas: n,
		CurrentReplicas: n - updated, UpdatedReplicas: updated, CurrentRevision: current, UpdateRevision: rev}
	if err := cl.c.Status().Update(context.Background(), sts); err != nil && !apierrors.IsConflict(err) {
		t.Fatal(err)
	}
}

// serverMemory is the server container's memory limit in a list of containers.
func serverMemory(cs []corev1.Container) string {
	for _, c := range cs {
		if c.Name == "server" {
			if q, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
				return q.String()
			}
		}
	}
	return ""
}

// A change of spec.memory alone resizes the running pod in place (pods/resize), the way the
// kubelet takes it without a restart, instead of replacing the pod and emptying the cache:
// growing, the pod grows before the server's maxmemory; shrinking, maxmemory comes down before the
// pod; the pod is then marked as made from the new revision. A resize the kubelet calls Infeasible
// falls back to replacing the pod: through a surge pod, or, without room for one, a cold restart
// once allowed.
func TestMemoryChangeResizesThePodInPlace(t *testing.T) {
	cl := startEnv(t)
	ns := cl.namespace(t)
	ctx := context.Background()
	const password = "resize-password"
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cache-auth", Namespace: ns}, Data: map[string][]byte{"password": []byte(password)}}
	if err := cl.c.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	addr := startTestServer(t, password)
	rdb := redis.NewClient(&redis.Options{Addr: addr, Password: password, Protocol: 2})
	defer rdb.Close()
	if err := rdb.Set(ctx, "user:1", "kept", 0).Err(); err != nil {
		t.Fatal(err)
	}
	ci := instanceIn(ns, "cache", 2, func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.Auth = &cachev1alpha1.AuthSpec{ExistingSecret: "cache-auth"}
		f := false
		ci.Spec.Benchmark.ValidateOnChange = &f
	})
	if err := cl.c.Create(ctx, ci); err != nil {
		t.Fatal(err)
	}
	cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionReady, metav1.ConditionFalse, "RollingOut")
	sts := &appsv1.StatefulSet{}
	if err := cl.get(t, ns, "cache", sts); err != nil {
		t.Fatal(err)
	}
	if sts.Spec.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType {
		t.Fatalf("update strategy %s: the operator, not the StatefulSet controller, must decide how a pod changes", sts.Spec.UpdateStrategy.Type)
	}
	first := fmt.Sprintf("cache-%d", sts.Generation)
	pod := cl.servePod(t, ns, "cache", addr)
	// As the kubelet reports it: the container runs with the template's resources.
	cl.updatePod(t, ns, pod.Name, func(p *corev1.Pod) { p.Labels[appsv1.ControllerRevisionHashLabelKey] = first })
	kubeletRuns := func(memory string) {
		t.Helper()
		q := resource.MustParse(memory)
		cl.updatePodStatus(t, ns, pod.Name, func(p *corev1.Pod) {
			p.Status.ContainerStatuses[0].Resources = &corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceMemory: q}, Limits: corev1.ResourceList{corev1.ResourceMemory: q}}
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		})
	}
	kubeletRuns("1Gi")
	cl.recordRevision(t, ns, "cache")
	cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionConfigApplied, metav1.ConditionTrue, "AppliedLive")
	maxmemory := func() string { return rdb.ConfigGet(ctx, "maxmemory").Val()["maxmemory"] }
	if got := maxmemory(); got != "966367642" {
		t.Fatalf("maxmemory %s at 1Gi, want 90%%", got)
	}

	// resizeTo changes spec.memory and plays the StatefulSet controller; it returns the new
	// revision once the operator has asked the kubelet for the memory, and what maxmemory was then.
	resizeTo := func(memory string) (string, string) {
		t.Helper()
		cl.update(t, ns, "cache", func(ci *cachev1alpha1.CacheInstance) { ci.Spec.Memory = resource.MustParse(memory) })
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			if err := cl.get(t, ns, "cache", sts); err != nil {
				t.Fatal(err)
			}
			if serverMemory(sts.Spec.Template.Spec.Containers) == memory {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("the template never got memory %s", memory)
			}
		}
		rev := cl.recordRevision(t, ns, "cache")
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			p := &corev1.Pod{}
			if err := cl.get(t, ns, pod.Name, p); err != nil {
				t.Fatalf("the pod must stay while it is resized: %v", err)
			}
			if p.UID != pod.UID {
				t.Fatalf("pod replaced (UID %s -> %s) for a memory change", pod.UID, p.UID)
			}
			if serverMemory(p.Spec.Containers) == memory {
				return rev, maxmemory()
			}
			if time.Now().After(deadline) {
				t.Fatalf("the operator did not resize the pod to %s: its containers ask for %s", memory, serverMemory(p.Spec.Containers))
			}
		}
	}
	waitRevision := func(rev string) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
			p := &corev1.Pod{}
			if err := cl.get(t, ns, pod.Name, p); err != nil {
				t.Fatal(err)
			}
			if p.Labels[appsv1.ControllerRevisionHashLabelKey] == rev {
				cl.countUpdated(t, ns, "cache")
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("pod still labelled %s after the kubelet resized it, want %s", p.Labels[appsv1.ControllerRevisionHashLabelKey], rev)
			}
		}
	}
	waitMaxmemory := func(want string) {
		t.Helper()
		for deadline := time.Now().Add(30 * time.Second); maxmemory() != want; time.Sleep(50 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("maxmemory %s, want %s", maxmemory(), want)
			}
		}
	}

	// Growing: the pod first, maxmemory once the kubelet runs the container with 2Gi.
	rev, during := resizeTo("2Gi")
	cl.waitEventSaying(t, ns, "cache", "ResizingInPlace", "1Gi -> 2Gi")
	if during != "966367642" {
		t.Errorf("maxmemory %s while the pod was still 1Gi: the server must not be allowed more than its pod", during)
	}
	time.Sleep(300 * time.Millisecond)
	if got := maxmemory(); got != "966367642" {
		t.Errorf("maxmemory %s before the kubelet resized the container", got)
	}
	kubeletRuns("2Gi")
	waitRevision(rev)
	cl.waitEventSaying(t, ns, "cache", "ResizedInPlace", "without a restart")
	waitMaxmemory("1932735284")
	applied := cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionConfigApplied, metav1.ConditionTrue, "AppliedLive")
	if c := findCondition(applied.Status.Conditions, cachev1alpha1.ConditionConfigApplied); !strings.Contains(c.Message, "kept their data") {
		t.Errorf("ConfigApplied says %q: a memory change made in place keeps the data", c.Message)
	}
	cl.waitEventSaying(t, ns, "cache", "ResizingInPlace", "Memory 1Gi -> 2Gi: resizing the pods in place")

	// Shrinking: maxmemory first, then the pod.
	rev, during = resizeTo("1536Mi")
	if during != "1449551463" {
		t.Errorf("maxmemory %s when the pod was asked to shrink to 1536Mi: the server must shrink first", during)
	}
	kubeletRuns("1536Mi")
	waitRevision(rev)
	cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionProgressing, metav1.ConditionFalse, "RolloutComplete")
	if v := rdb.Get(ctx, "user:1").Val(); v != "kept" {
		t.Fatalf("user:1 = %q after two resizes in place", v)
	}

	// The kubelet refuses: the pod needs replacing; a surge pod would carry the data, but there is
	// no room for it either, so the instance waits; once a cold restart is allowed, the pod is
	// replaced.
	_, _ = resizeTo("3Gi")
	cl.updatePodStatus(t, ns, pod.Name, func(p *corev1.Pod) {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.PodResizePending, Status: corev1.ConditionTrue,
			Reason: corev1.PodReasonInfeasible, Message: "Node didn't have enough capacity: memory, requested: 3221225472, capacity: 2147483648"})
	})
	cl.waitEventSaying(t, ns, "cache", "ResizeInfeasible", "enough capacity")
	cl.noRoomForSurge(t, ns, "cache")
	cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionRollout, metav1.ConditionFalse, cachev1alpha1.RolloutWaitingForRoom)
	if p := (&corev1.Pod{}); cl.get(t, ns, pod.Name, p) != nil || p.UID != pod.UID || !p.DeletionTimestamp.IsZero() {
		t.Fatal("the pod was replaced without consent")
	}
	cl.update(t, ns, "cache", func(ci *cachev1alpha1.CacheInstance) { ci.Spec.Rollout.AllowColdRestart = true })
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		p := &corev1.Pod{}
		err := cl.get(t, ns, pod.Name, p)
		if apierrors.IsNotFound(err) || (err == nil && !p.DeletionTimestamp.IsZero()) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a pod the kubelet cannot resize was not replaced")
		}
	}
}

// A pod that never ran (here: Pending, as an unschedulable one stays) is replaced on a memory
// change, not resized: it holds no data, and lowering the memory is how a user makes it fit.
func TestMemoryChangeReplacesAPendingPod(t *testing.T) {
	cl := startEnv(t)
	ns := cl.namespace(t)
	ctx := context.Background()
	ci := instanceIn(ns, "cache", 1, func(ci *cachev1alpha1.CacheInstance) { ci.Spec.Benchmark.ValidateOnChange = ptr.To(false) })
	if err := cl.c.Create(ctx, ci); err != nil {
		t.Fatal(err)
	}
	cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionReady, metav1.ConditionFalse, "RollingOut")
	sts := &appsv1.StatefulSet{}
	if err := cl.get(t, ns, "cache", sts); err != nil {
		t.Fatal(err)
	}
	first := fmt.Sprintf("cache-%d", sts.Generation)
	pod := cl.servePod(t, ns, "cache", "127.0.0.1:1")
	cl.updatePod(t, ns, pod.Name, func(p *corev1.Pod) { p.Labels[appsv1.ControllerRevisionHashLabelKey] = first })
	cl.updatePodStatus(t, ns, pod.Name, func(p *corev1.Pod) {
		p.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable"}}}
	})
	cl.recordRevision(t, ns, "cache")
	cl.update(t, ns, "cache", func(ci *cachev1alpha1.CacheInstance) { ci.Spec.Memory = resource.MustParse("512Mi") })
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if err := cl.get(t, ns, "cache", sts); err != nil {
			t.Fatal(err)
		}
		if serverMemory(sts.Spec.Template.Spec.Containers) == "512Mi" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the template never got the new memory")
		}
	}
	cl.recordRevision(t, ns, "cache")
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		p := &corev1.Pod{}
		err := cl.get(t, ns, pod.Name, p)
		if apierrors.IsNotFound(err) || (err == nil && !p.DeletionTimestamp.IsZero()) {
			return
		}
		if serverMemory(p.Spec.Containers) == "512Mi" {
			t.Fatal("a pending pod was resized in place instead of replaced")
		}
		if time.Now().After(deadline) {
			t.Fatal("a pending pod was not replaced after a memory change")
		}
	}
}

// updatePodStatus changes a pod's status as the kubelet would, again on a conflict (the operator
// patches pods meanwhile).
func (cl *cluster) updatePodStatus(t *testing.T, ns, name string, mutate func(*corev1.Pod)) {
	t.Helper()
	cl.retryPodUpdate(t, ns, name, mutate, cl.c.Status().Update)
}
