package controllers_test

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
	rcluster "github.com/iocache/iocache/server/cluster"
	"github.com/iocache/iocache/server/testpeer"
)

// A sharded instance: the operator makes one CacheInstance per shard from the instance's spec,
// reads every node's ID and role, writes the slot map to status.cluster with an epoch and pushes
// it to every node; cluster clients then reach every shard through any node, redis-cli --cluster
// check finds every slot covered and every node agreeing, and a node that drifts (serves another
// map) is given the API's map again under a higher epoch.
func TestShardedInstanceServesOneCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three servers")
	}
	cl := startEnv(t)
	ns := cl.namespace(t)
	ctx := context.Background()
	const password = "shards-test-password"
	if err := cl.c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cache-auth", Namespace: ns},
		Data: map[string][]byte{"password": []byte(password)}}); err != nil {
		t.Fatal(err)
	}
	ci := instanceIn(ns, "cache", 1, func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.Shards = ptr.To[int32](3)
		ci.Spec.Auth = &cachev1alpha1.AuthSpec{ExistingSecret: "cache-auth"}
		ci.Spec.Benchmark.ValidateOnChange = ptr.To(false)
	})
	if err := cl.c.Create(ctx, ci); err != nil {
		t.Fatal(err)
	}
	addrs := make([]string, 3)
	for i := range 3 {
		name := fmt.Sprintf("cache-shard-%d", i)
		sh := &cachev1alpha1.CacheInstance{}
		eventually(t, "shard "+name, func() error { return cl.get(t, ns, name, sh) })
		if sh.Labels["cache.iocache.dev/shard-of"] != "cache" || sh.Spec.Shards != nil || sh.Spec.Auth.ExistingSecret != "cache-auth" {
			t.Fatalf("shard %s: labels %v, shards %v, auth %+v", name, sh.Labels, sh.Spec.Shards, sh.Spec.Auth)
		}
		cm := &corev1.ConfigMap{}
		eventually(t, name+"'s ConfigMap", func() error { return cl.get(t, ns, name+"-config", cm) })
		if !strings.Contains(cm.Data["iocache.conf"], "\ncluster-enabled yes\n") {
			t.Fatalf("shard %s's config does not enable cluster mode:\n%s", name, cm.Data["iocache.conf"])
		}
		addrs[i] = startTestServerWith(t, "--requirepass", password, "--cluster-enabled", "yes")
		eventually(t, name+"'s StatefulSet", func() error { return cl.get(t, ns, name, &appsv1.StatefulSet{}) })
		cl.servePod(t, ns, name, addrs[i])
		cl.simulateRollout(t, ns, name)
	}
	cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionReady, metav1.ConditionTrue, "ClusterServing")
	if err := cl.get(t, ns, "cache", ci); err != nil {
		t.Fatal(err)
	}
	st := ci.Status.Cluster
	if st == nil || st.SlotsCovered != 16384 || st.Nodes != 3 || len(st.Shards) != 3 || st.Shards[0].Slots != "0-5461" || st.Shards[2].Slots != "10923-16383" {
		t.Fatalf("status.cluster: %+v", st)
	}
	cli := testpeer.Require(t, "redis-cli")
	out, err := exec.Command(cli, "-a", password, "--no-auth-warning", "--cluster", "check", addrs[1]).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "[OK] All nodes agree about slots configuration.") || !strings.Contains(string(out), "[OK] All 16384 slots covered.") {
		t.Fatalf("redis-cli --cluster check: %v\n%s", err, out)
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{addrs[0]}, Password: password})
	defer cc.Close()
	for i := range 200 {
		if err := cc.Set(ctx, fmt.Sprint("k", i), i, 0).Err(); err != nil {
			t.Fatalf("ClusterClient SET: %v", err)
		}
	}
	for _, a := range addrs {
		n, err := redis.NewClient(&redis.Options{Addr: a, Password: password}).DBSize(ctx).Result()
		if err != nil || n == 0 {
			t.Fatalf("node %s holds %d keys (%v): the map does not spread them", a, n, err)
		}
	}
	// A node that serves another map (a restore, a hand edit) is given the API's map again, under
	// a higher epoch than any node has.
	drifted := redis.NewClient(&redis.Options{Addr: addrs[2], Password: password})
	id, _ := drifted.Do(ctx, "CLUSTER", "MYID").Text()
	bogus := fmt.Sprintf(`{"epoch":%d,"nodes":[{"id":"%s","ip":"127.0.0.1","port":1,"slots":[[0,16383]]}]}`, st.Epoch+5, id)
	if err := drifted.Do(ctx, "CLUSTERMAP", "SET", bogus).Err(); err != nil {
		t.Fatal(err)
	}
	eventuallyWithin(t, 60*time.Second, "the drifted node serves the API's map again", func() error {
		if err := cl.get(t, ns, "cache", ci); err != nil {
			return err
		}
		if ci.Status.Cluster.Epoch <= st.Epoch+5 {
			return fmt.Errorf("status epoch %d", ci.Status.Cluster.Epoch)
		}
		info, err := drifted.Do(ctx, "CLUSTER", "INFO").Text()
		if err != nil || !strings.Contains(info, "cluster_known_nodes:3") || !strings.Contains(info, fmt.Sprintf("cluster_current_epoch:%d", ci.Status.Cluster.Epoch)) {
			return fmt.Errorf("CLUSTER INFO: %q %v", info, err)
		}
		return nil
	})
}

// serveShard waits for shard i's StatefulSet and serves its pod with a real cluster-mode server.
func (cl *cluster) serveShard(t *testing.T, ns string, i int, password string) string {
	t.Helper()
	name := fmt.Sprintf("cache-shard-%d", i)
	eventually(t, name+"'s StatefulSet", func() error { return cl.get(t, ns, name, &appsv1.StatefulSet{}) })
	addr := startTestServerWith(t, "--requirepass", password, "--cluster-enabled", "yes")
	cl.servePod(t, ns, name, addr)
	cl.simulateRollout(t, ns, name)
	return addr
}

// Changing spec.shards moves slots online while a cluster client increments counters: 2 → 3
// shards (the new shard joins empty, then batches of slots move to it), then 3 → 2 (the third
// shard is emptied, left out of the map, and its instance deleted). No key is lost, every
// counter equals the increments acknowledged, and the client sees no error: it follows MOVED and
// ASK.
func TestShardsChangeMovesSlotsOnline(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three servers under load")
	}
	cl := startEnv(t)
	ns := cl.namespace(t)
	ctx := context.Background()
	const password = "reshard-test-password"
	if err := cl.c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cache-auth", Namespace: ns},
		Data: map[string][]byte{"password": []byte(password)}}); err != nil {
		t.Fatal(err)
	}
	ci := instanceIn(ns, "cache", 1, func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.Shards = ptr.To[int32](2)
		ci.Spec.Auth = &cachev1alpha1.AuthSpec{ExistingSecret: "cache-auth"}
		ci.Spec.Benchmark.ValidateOnChange = ptr.To(false)
	})
	if err := cl.c.Create(ctx, ci); err != nil {
		t.Fatal(err)
	}
	addrs := []string{cl.serveShard(t, ns, 0, password), cl.serveShard(t, ns, 1, password)}
	cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionReady, metav1.ConditionTrue, "ClusterServing")

	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, Password: password, MaxRedirects: 16})
	defer cc.Close()
	const keys, counters = 3000, 32
	for i := range keys {
		if err := cc.Set(ctx, fmt.Sprint("key:", i), i, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	var acked [counters]atomic.Int64
	var errs, longest atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for w := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				c := (i*3 + w) % counters
				start := time.Now()
				err := cc.Incr(ctx, fmt.Sprint("counter:", c)).Err()
				if d := time.Since(start).Nanoseconds(); d > longest.Load() {
					longest.Store(d)
				}
				if err != nil {
					if errs.Add(1) <= 3 {
						t.Logf("INCR: %v", err)
					}
					continue
				}
				acked[c].Add(1)
			}
		}()
	}
	setShards := func(n int32) {
		t.Helper()
		if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			cur := &cachev1alpha1.CacheInstance{}
			if err := cl.get(t, ns, "cache", cur); err != nil {
				return err
			}
			cur.Spec.Shards = ptr.To(n)
			return cl.c.Update(ctx, cur)
		}); err != nil {
			t.Fatal(err)
		}
	}
	waitSlots := func(counts ...int) {
		t.Helper()
		eventuallyWithin(t, 3*time.Minute, fmt.Sprintf("slots split %v", counts), func() error {
			cur := &cachev1alpha1.CacheInstance{}
			if err := cl.get(t, ns, "cache", cur); err != nil {
				return err
			}
			st := cur.Status.Cluster
			if st == nil || len(st.Shards) != len(counts) || st.Moving != nil || st.SlotsToMove != 0 || st.SlotsCovered != 16384 {
				return fmt.Errorf("status.cluster %+v", st)
			}
			for i, want := range counts {
				if got := countSlots(st.Shards[i].Slots); got != want {
					return fmt.Errorf("shard %d serves %d slots, want %d", i, got, want)
				}
			}
			return nil
		})
	}
	setShards(3)
	cl.serveShard(t, ns, 2, password)
	waitSlots(5462, 5461, 5461)
	cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionReady, metav1.ConditionTrue, "ClusterServing")
	setShards(2)
	waitSlots(8192, 8192)
	eventually(t, "the emptied shard's instance deleted", func() error {
		if err := cl.get(t, ns, "cache-shard-2", &cachev1alpha1.CacheInstance{}); err == nil {
			return fmt.Errorf("cache-shard-2 still exists")
		}
		return nil
	})
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()
	for i := range keys {
		if v, err := cc.Get(ctx, fmt.Sprint("key:", i)).Result(); err != nil || v != fmt.Sprint(i) {
			t.Fatalf("key:%d after 2 → 3 → 2 shards: %q, %v", i, v, err)
		}
	}
	var sum int64
	for c := range counters {
		v, err := cc.Get(ctx, fmt.Sprint("counter:", c)).Int64()
		if err != nil && err != redis.Nil {
			t.Fatal(err)
		}
		if v != acked[c].Load() {
			t.Errorf("counter:%d = %d, acknowledged increments %d", c, v, acked[c].Load())
		}
		sum += v
	}
	if errs.Load() != 0 {
		t.Errorf("%d client errors while slots moved", errs.Load())
	}
	t.Logf("2 → 3 → 2 shards under load: %d increments acknowledged and counted, %d keys intact, %d client errors, longest request %v",
		sum, keys, errs.Load(), time.Duration(longest.Load()))
}

// countSlots counts the slots status.cluster writes; -1 when they do not parse.
func countSlots(s string) int {
	ranges, err := rcluster.ParseRanges(s, ",")
	if err != nil {
		return -1
	}
	n := 0
	for _, r := range ranges {
		n += r[1] - r[0] + 1
	}
	return n
}
