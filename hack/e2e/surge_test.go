//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
	"github.com/iocache/iocache/hack/e2e/e2eutil"
)

// testWarmSurge shows the rule of issue #30 end to end on a default instance (no persistence,
// no replicas), the kind that used to come back empty from any change that needed a new pod:
// 10,000 user keys stay through a spec.config directive added and removed (live, same pod) and
// through a CPU change and persistence turned on, which need a new pod: a temporary surge pod
// syncs as a replica, takes the writes over while the pod is replaced, and hands them back. A writer runs throughout; the
// longest time without a successful write is printed.
func testWarmSurge(ctx context.Context, t *testing.T, e *e2eutil.Env, local bool) {
	ci := &cachev1alpha1.CacheInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "surge"},
		Spec: cachev1alpha1.CacheInstanceSpec{
			CPUMode: cachev1alpha1.CPUShared, CPU: ptr.To(resource.MustParse("200m")),
			Memory: resource.MustParse("64Mi"), Auth: &cachev1alpha1.AuthSpec{Generate: true},
			Benchmark: cachev1alpha1.CacheInstanceBenchmarkSpec{ValidateOnChange: ptr.To(false)},
		},
	}
	if err := e.Client.Create(ctx, ci); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.Client.Delete(ctx, ci) }()
	key := client.ObjectKeyFromObject(ci)
	got, err := e.WaitInstance(ctx, key, 3*time.Minute, e2eutil.Ready)
	if err != nil {
		t.Fatalf("not Ready: %v\n%s", err, e.Describe(ctx, ci))
	}
	rdb, how, closeFn, err := e.Redis(ctx, got)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	pipe := rdb.Pipeline()
	for i := range 10000 {
		pipe.Set(ctx, fmt.Sprintf("user:%05d", i), fmt.Sprintf("value-%d", i), 0)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatalf("writing 10,000 keys through %s: %v", how, err)
	}
	before, err := e2eutil.ReadKeyspace(ctx, rdb)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("  10,000 user keys through %s: %s\n", how, before)
	firstPod := got.Status.Pods[0].UID

	change := func(what string, mutate func(*cachev1alpha1.CacheInstance)) {
		t.Helper()
		if err := e.Client.Get(ctx, key, got); err != nil {
			t.Fatal(err)
		}
		mutate(got)
		if err := e.Client.Update(ctx, got); err != nil {
			t.Fatalf("%s: %v", what, err)
		}
	}
	keysKept := func(when string) {
		t.Helper()
		now, err := e2eutil.ReadKeyspace(ctx, rdb)
		if err != nil {
			t.Fatalf("%s: %v", when, err)
		}
		// The writer's own keys come and go; the user's 10,000 must all be there, unchanged.
		n, err := rdb.Exists(ctx, userKeys()...).Result()
		if err != nil || n != 10000 {
			t.Errorf("%s: %d of the 10,000 user keys left (%v); keyspace %s", when, n, err, now)
		}
		fmt.Printf("  %s: %d user keys, %s\n", when, n, now)
	}

	// spec.config added, then removed: both live, the same pod.
	change("add spec.config", func(c *cachev1alpha1.CacheInstance) {
		c.Spec.Config = map[string]cachev1alpha1.ConfigValue{"hz": "20"}
	})
	if _, err := e.WaitInstance(ctx, key, 2*time.Minute, func(c *cachev1alpha1.CacheInstance) bool {
		v, _ := rdb.ConfigGet(ctx, "hz").Result()
		return e2eutil.Ready(c) && v["hz"] == "20"
	}); err != nil {
		t.Fatalf("hz 20 not applied: %v\n%s", err, e.Describe(ctx, ci))
	}
	change("remove spec.config", func(c *cachev1alpha1.CacheInstance) { c.Spec.Config = nil })
	if _, err := e.WaitInstance(ctx, key, 2*time.Minute, func(c *cachev1alpha1.CacheInstance) bool {
		v, _ := rdb.ConfigGet(ctx, "hz").Result()
		return e2eutil.Ready(c) && v["hz"] == "10"
	}); err != nil {
		t.Fatalf("hz not back to its default: %v\n%s", err, e.Describe(ctx, ci))
	}
	if err := e.Client.Get(ctx, key, got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Pods[0].UID != firstPod {
		t.Errorf("a spec.config change replaced the pod")
	}
	keysKept("after spec.config added and removed (same pod)")

	// A change that needs a new pod: the surge carries the data, a writer measures the gap.
	rollWarm := func(what string, mutate func(*cachev1alpha1.CacheInstance)) {
		t.Helper()
		if err := e.Client.Get(ctx, key, got); err != nil {
			t.Fatal(err)
		}
		podBefore := got.Status.Pods[0].UID
		var stop atomic.Bool
		var wg sync.WaitGroup
		var longest time.Duration
		var failures int
		wg.Add(1)
		go func() {
			defer wg.Done()
			last := time.Now()
			for i := 0; !stop.Load(); i++ {
				wctx, cancel := context.WithTimeout(ctx, 2*time.Second)
				err := rdb.Set(wctx, fmt.Sprintf("writer:%d", i%100), i, 0).Err()
				cancel()
				if err != nil {
					failures++
					time.Sleep(20 * time.Millisecond)
					continue
				}
				longest = max(longest, time.Since(last))
				last = time.Now()
				time.Sleep(10 * time.Millisecond)
			}
		}()
		rolledAt := time.Now()
		change(what, mutate)
		var err error
		got, err = e.WaitInstance(ctx, key, 5*time.Minute, func(c *cachev1alpha1.CacheInstance) bool {
			return e2eutil.Ready(c) && len(c.Status.Pods) == 1 && c.Status.Pods[0].UID != podBefore &&
				c.Status.ObservedGeneration == c.Generation
		})
		stop.Store(true)
		wg.Wait()
		if err != nil {
			t.Fatalf("%s: the pod was not replaced: %v\n%s", what, err, e.Describe(ctx, ci))
		}
		rollout := meta.FindStatusCondition(got.Status.Conditions, cachev1alpha1.ConditionRollout)
		if rollout == nil || rollout.Reason != cachev1alpha1.RolloutWarm {
			t.Errorf("Rollout condition after %s: %+v, want Warm", what, rollout)
		} else {
			fmt.Printf("  Rollout %s: %s\n", rollout.Reason, rollout.Message)
		}
		fmt.Printf("  %s: pod replaced through the surge in %s; longest time without a successful write %s (%d failed writes, retried)\n",
			what, time.Since(rolledAt).Round(time.Second), longest.Round(time.Millisecond), failures)
		keysKept("after " + what + " (new pod)")
	}
	rollWarm("cpu 200m -> 250m", func(c *cachev1alpha1.CacheInstance) { c.Spec.CPU = ptr.To(resource.MustParse("250m")) })

	// Persistence turned on: the StatefulSet is recreated with a data claim around the running
	// pod (the garbage collector orphans it), which is then replaced through the surge.
	persistence := cachev1alpha1.PersistenceSpec{Mode: cachev1alpha1.PersistenceRDB, Size: ptr.To(resource.MustParse("128Mi")),
		WhenDeleted: cachev1alpha1.DeleteVolumeClaims}
	if local {
		// The local node has no provisioner: a hostPath volume of its own for the new claim.
		persistence.StorageClassName = ptr.To(e2eStorageClass)
		pv, removeDir := hostPathVolume(t, "iocache-e2e-surge", "128Mi")
		if err := e.Client.Create(ctx, pv); err != nil {
			removeDir()
			t.Fatal(err)
		}
		defer func() {
			// The instance first, and its claim with it (whenDeleted Delete), then the volume.
			_ = e.Client.Delete(ctx, ci)
			claim := &corev1.PersistentVolumeClaim{}
			_ = e2eutil.Poll(ctx, time.Second, 2*time.Minute, func(ctx context.Context) (bool, error) {
				err := e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "data-surge-0"}, claim)
				return apierrors.IsNotFound(err), nil
			})
			_ = e.Client.Delete(ctx, pv)
			removeDir()
		}()
	}
	rollWarm("persistence None -> RDB", func(c *cachev1alpha1.CacheInstance) { c.Spec.Persistence = persistence })
	pod := &corev1.Pod{}
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: got.Status.Pods[0].Name}, pod); err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(pod.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == "data" && v.PersistentVolumeClaim != nil }) {
		t.Errorf("after persistence was turned on, %s's /data is not a claim: %+v", pod.Name, pod.Spec.Volumes)
	}
}

// userKeys names the 10,000 keys testWarmSurge writes.
func userKeys() []string {
	out := make([]string, 10000)
	for i := range out {
		out[i] = fmt.Sprintf("user:%05d", i)
	}
	return out
}

// testSurgeWithoutRoom is the other half of issue #30's rule: where the node has no room for the
// surge pod (a one-core instance on a node with one exclusive CPU), a change that needs a new pod
// replaces nothing. The instance says why (Rollout WaitingForRoom, with the scheduler's reason on
// the surge pod) and keeps serving its keys from the same pod, until the user sets
// spec.rollout.allowColdRestart: then, and only then, the pod is replaced and starts empty.
func testSurgeWithoutRoom(ctx context.Context, t *testing.T, e *e2eutil.Env) {
	ci := &cachev1alpha1.CacheInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "noroom"},
		Spec: cachev1alpha1.CacheInstanceSpec{
			Cores: 1, Memory: resource.MustParse("64Mi"), Auth: &cachev1alpha1.AuthSpec{Generate: true},
			Benchmark: cachev1alpha1.CacheInstanceBenchmarkSpec{ValidateOnChange: ptr.To(false)},
		},
	}
	if err := e.Client.Create(ctx, ci); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.Client.Delete(ctx, ci) }()
	key := client.ObjectKeyFromObject(ci)
	got, err := e.WaitInstance(ctx, key, 3*time.Minute, e2eutil.Ready)
	if err != nil {
		t.Fatalf("not Ready: %v\n%s", err, e.Describe(ctx, ci))
	}
	firstPod := got.Status.Pods[0].UID
	rdb, how, closeFn, err := e.Redis(ctx, got)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	pipe := rdb.Pipeline()
	for i := range 1000 {
		pipe.Set(ctx, fmt.Sprintf("user:%05d", i), i, 0)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatalf("writing 1,000 keys through %s: %v", how, err)
	}
	update := func(mutate func(*cachev1alpha1.CacheInstance)) {
		t.Helper()
		if err := e.Client.Get(ctx, key, got); err != nil {
			t.Fatal(err)
		}
		mutate(got)
		if err := e.Client.Update(ctx, got); err != nil {
			t.Fatal(err)
		}
	}

	update(func(c *cachev1alpha1.CacheInstance) {
		c.Spec.Config = map[string]cachev1alpha1.ConfigValue{"databases": "32"} // read only at start
	})
	got, err = e.WaitInstance(ctx, key, 2*time.Minute, func(c *cachev1alpha1.CacheInstance) bool {
		r := meta.FindStatusCondition(c.Status.Conditions, cachev1alpha1.ConditionRollout)
		return r != nil && r.Reason == cachev1alpha1.RolloutWaitingForRoom && r.ObservedGeneration == c.Generation
	})
	if err != nil {
		t.Fatalf("no WaitingForRoom: %v\n%s", err, e.Describe(ctx, ci))
	}
	fmt.Printf("  Rollout %s\n", meta.FindStatusCondition(got.Status.Conditions, cachev1alpha1.ConditionRollout).Message)
	time.Sleep(5 * time.Second) // it must stay so
	if err := e.Client.Get(ctx, key, got); err != nil {
		t.Fatal(err)
	}
	// status.pods lists pods ready with the current config, which the waiting pod is not: ask for
	// the pod itself.
	pod := &corev1.Pod{}
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "noroom-0"}, pod); err != nil {
		t.Fatal(err)
	}
	n, err := rdb.Exists(ctx, userKeys()[:1000]...).Result()
	if err != nil || n != 1000 || string(pod.UID) != firstPod || !pod.DeletionTimestamp.IsZero() {
		t.Fatalf("waiting for room: %d of 1,000 keys (%v), pod %s %s (deleting: %v): the pod must keep serving its data",
			n, err, pod.Name, pod.UID, !pod.DeletionTimestamp.IsZero())
	}
	fmt.Printf("  waiting for room: the same pod, %d of 1,000 keys\n", n)

	update(func(c *cachev1alpha1.CacheInstance) { c.Spec.Rollout.AllowColdRestart = true })
	got, err = e.WaitInstance(ctx, key, 3*time.Minute, func(c *cachev1alpha1.CacheInstance) bool {
		r := meta.FindStatusCondition(c.Status.Conditions, cachev1alpha1.ConditionRollout)
		return e2eutil.Ready(c) && len(c.Status.Pods) == 1 && c.Status.Pods[0].UID != firstPod && r != nil &&
			(r.Reason == cachev1alpha1.RolloutColdRestart || r.Reason == cachev1alpha1.RolloutLive)
	})
	if err != nil {
		t.Fatalf("no cold restart after consent: %v\n%s", err, e.Describe(ctx, ci))
	}
	fresh, _, closeFresh, err := e.Redis(ctx, got)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFresh()
	size, err := fresh.DBSize(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("  after allowColdRestart: a new pod, DBSIZE %d (a cold restart, as consented)\n", size)
}
