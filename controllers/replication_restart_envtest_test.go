package controllers_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
)

// An operator that stops between recording a failover (status.replication.primary names the
// replica it chose, the old primary already relabelled) and promoting it leaves the servers as they
// were: the old primary still a primary, the chosen pod still its replica. The operator that starts
// next acts on what the API holds, not on what the servers say: it promotes the recorded pod,
// points the other two at it and ends with exactly one primary, which has the data.
func TestOperatorRestartMidFailoverConvergesOnTheRecordedPrimary(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three servers and an API server of its own")
	}
	cl, startOperator := ownOperatorEnv(t)
	ctx := context.Background()
	stop := startOperator()
	const password = "restart-password"
	ns, servers, _ := cl.replicatedInstance(t, password, func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.Replication.FailoverAfterSeconds = 2
	})
	ci := cl.waitPrimary(t, ns, "cache", "", true)
	old := ci.Status.Replication.Primary
	chosen := "cache-1"
	if old == chosen {
		chosen = "cache-2"
	}
	primary := servers[ordinalSuffix(old)].client()
	defer primary.Close()
	for i := range 200 {
		if err := primary.Set(ctx, fmt.Sprintf("user:%d", i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	if n, err := primary.Do(ctx, "WAIT", 2, 5000).Int(); err != nil || n != 2 {
		t.Fatalf("WAIT 2: %d, %v", n, err)
	}
	stop()

	// What a failover leaves in the API when the operator stops right after recording it
	// (choosePrimary): the old primary relabelled a replica, the decision in status.
	cl.updatePod(t, ns, old, func(p *corev1.Pod) { p.Labels["cache.iocache.dev/role"] = "replica" })
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur := &cachev1alpha1.CacheInstance{}
		if err := cl.get(t, ns, "cache", cur); err != nil {
			return err
		}
		rs := cur.Status.Replication
		rs.Primary = chosen
		rs.Failovers++
		rs.LastFailover = &cachev1alpha1.FailoverRecord{Time: metav1.Now(), From: old, To: chosen, Reason: "PrimaryUnavailable"}
		return cl.c.Status().Update(ctx, cur)
	})
	if err != nil {
		t.Fatal(err)
	}
	if role := servers[ordinalSuffix(chosen)].client().Do(ctx, "ROLE").Val().([]any)[0]; role != "slave" {
		t.Fatalf("before the restart %s is %v: the stopped operator never promoted it", chosen, role)
	}

	stop = startOperator()
	defer stop()
	cl.checkRoles(t, ns, "cache", chosen)
	eventually(t, "one primary, the recorded one, and two replicas of it", func() error {
		primaries := 0
		for i, ps := range servers {
			rdb := ps.client()
			role, err := rdb.Do(ctx, "ROLE").Slice()
			_ = rdb.Close()
			if err != nil {
				return fmt.Errorf("cache-%d ROLE: %w", i, err)
			}
			name := fmt.Sprintf("cache-%d", i)
			switch {
			case role[0] == "master":
				primaries++
				if name != chosen {
					return fmt.Errorf("%s is a primary, the recorded primary is %s", name, chosen)
				}
			case role[0] == "slave" && fmt.Sprint(role[2]) == ps.port:
				return fmt.Errorf("%s replicates itself", name)
			case role[0] == "slave" && fmt.Sprint(role[2]) != servers[ordinalSuffix(chosen)].port:
				return fmt.Errorf("%s replicates port %v, not %s's %s", name, role[2], chosen, servers[ordinalSuffix(chosen)].port)
			case role[0] == "slave" && role[3] != "connected":
				return fmt.Errorf("%s's link is %v", name, role[3])
			}
		}
		if primaries != 1 {
			return fmt.Errorf("%d primaries", primaries)
		}
		return nil
	})
	got := cl.waitPrimary(t, ns, "cache", "", true)
	if got.Status.Replication.Primary != chosen {
		t.Fatalf("status.replication.primary %s after the restart, want the recorded %s", got.Status.Replication.Primary, chosen)
	}
	rdb := servers[ordinalSuffix(chosen)].client()
	defer func(rdb *redis.Client) { _ = rdb.Close() }(rdb)
	if n := rdb.DBSize(ctx).Val(); n != 200 {
		t.Errorf("the new primary %s holds %d keys, want the 200 written before the failover", chosen, n)
	}
}
