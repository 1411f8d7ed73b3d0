//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
	"github.com/iocache/iocache/hack/e2e/e2eutil"
)

// testCrashSafeAOF shows persistence AOF with appendfsync always end to end: the server's pod is
// deleted with no grace period (the container is killed, nothing is saved at shutdown) and the new
// pod comes back with every write the server acknowledged, replayed from the append-only file on
// the volume claim.
func testCrashSafeAOF(ctx context.Context, t *testing.T, e *e2eutil.Env, local bool) {
	ci, cleanup := persistentInstance(ctx, t, e, local, "aof", cachev1alpha1.PersistenceSpec{Mode: cachev1alpha1.PersistenceAOF, AppendFsync: "always"})
	defer cleanup()
	key := client.ObjectKeyFromObject(ci)
	got, err := e.WaitInstance(ctx, key, 3*time.Minute, e2eutil.Ready)
	if err != nil {
		t.Fatalf("not Ready: %v\n%s", err, e.Describe(ctx, ci))
	}
	rdb, how, closeFn, err := e.Redis(ctx, got)
	if err != nil {
		t.Fatal(err)
	}
	// Writes one at a time, each acknowledged before the next: every one of them must survive.
	acked := 0
	for i := range 500 {
		if err := rdb.Set(ctx, fmt.Sprintf("order:%04d", i), i, 0).Err(); err != nil {
			closeFn()
			t.Fatalf("SET through %s: %v", how, err)
		}
		if err := rdb.Incr(ctx, "orders").Err(); err != nil {
			closeFn()
			t.Fatal(err)
		}
		acked++
	}
	closeFn()
	oldPod, err := e.ServerPod(ctx, got)
	if err != nil {
		t.Fatal(err)
	}
	// No grace period: the kubelet kills the container, the server saves nothing on the way out.
	if err := e.Client.Delete(ctx, oldPod, client.GracePeriodSeconds(0)); err != nil {
		t.Fatal(err)
	}
	got, err = e.WaitInstance(ctx, key, 3*time.Minute, func(c *cachev1alpha1.CacheInstance) bool {
		return e2eutil.Ready(c) && len(c.Status.Pods) == 1 && c.Status.Pods[0].UID != string(oldPod.UID)
	})
	if err != nil {
		t.Fatalf("the pod did not come back: %v\n%s", err, e.Describe(ctx, ci))
	}
	rdb, _, closeFn, err = e.Redis(ctx, got)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	counter, err := rdb.Get(ctx, "orders").Int()
	if err != nil {
		t.Fatalf("GET orders after the kill: %v", err)
	}
	n, err := rdb.DBSize(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("  killed pod %s after %d acknowledged SET+INCR pairs (appendfsync always); new pod %s: %d keys, orders = %d\n",
		oldPod.Name, acked, got.Status.Pods[0].Name, n, counter)
	if counter != acked || n != int64(acked)+1 {
		t.Errorf("after the kill: orders = %d and %d keys, want %d and %d: acknowledged writes were lost", counter, n, acked, acked+1)
	}
}
