//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
	"github.com/iocache/iocache/hack/e2e/e2eutil"
)

// clusterLoad increments counters through a cluster client: a counter's acknowledged
// increments are what must survive. It counts the errors the client surfaced (after following
// MOVED and ASK itself) and the longest request.
type clusterLoad struct {
	stop    chan struct{}
	done    sync.WaitGroup
	acked   [64]atomic.Int64
	errs    atomic.Int64
	longest atomic.Int64
	lastErr atomic.Value
}

func startClusterLoad(cc *redis.ClusterClient) *clusterLoad {
	l := &clusterLoad{stop: make(chan struct{})}
	ctx := context.Background()
	for w := range 3 {
		l.done.Add(1)
		go func() {
			defer l.done.Done()
			for i := 0; ; i++ {
				select {
				case <-l.stop:
					return
				default:
				}
				c := (i*3 + w) % len(l.acked)
				start := time.Now()
				err := cc.Incr(ctx, fmt.Sprint("counter:{", c, "}")).Err()
				if d := time.Since(start).Nanoseconds(); d > l.longest.Load() {
					l.longest.Store(d)
				}
				if err != nil {
					l.errs.Add(1)
					l.lastErr.Store(err.Error())
					time.Sleep(50 * time.Millisecond)
					continue
				}
				l.acked[c].Add(1)
			}
		}()
	}
	return l
}

func (l *clusterLoad) finish() string {
	close(l.stop)
	l.done.Wait()
	var sum int64
	for i := range l.acked {
		sum += l.acked[i].Load()
	}
	last, _ := l.lastErr.Load().(string)
	return fmt.Sprintf("%d increments acknowledged, %d client errors (last: %q), longest request %v",
		sum, l.errs.Load(), last, time.Duration(l.longest.Load()).Round(time.Millisecond))
}

// testShards shows a sharded instance end to end on the node: three shards of one pod each on
// shared CPUs, filled, then grown to four and shrunk to two shards while a cluster client
// increments counters through the seed Service; every key and every acknowledged increment must
// survive each move. The times and the client's errors are printed.
func testShards(ctx context.Context, t *testing.T, e *e2eutil.Env) {
	ci := &cachev1alpha1.CacheInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "sharded"},
		Spec: cachev1alpha1.CacheInstanceSpec{
			Shards: ptr.To[int32](3), CPUMode: cachev1alpha1.CPUShared, CPU: ptr.To(resource.MustParse("100m")),
			Memory: resource.MustParse("64Mi"), Auth: &cachev1alpha1.AuthSpec{Generate: true},
			Benchmark: cachev1alpha1.CacheInstanceBenchmarkSpec{ValidateOnChange: ptr.To(false)},
		},
	}
	if err := e.Client.Create(ctx, ci); err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := e.Client.Delete(ctx, ci); err != nil && !apierrors.IsNotFound(err) {
			t.Error(err)
		}
	}()
	key := client.ObjectKeyFromObject(ci)
	serving := func(n int) func(*cachev1alpha1.CacheInstance) bool {
		return func(c *cachev1alpha1.CacheInstance) bool {
			r := apimeta.FindStatusCondition(c.Status.Conditions, cachev1alpha1.ConditionReady)
			return e2eutil.Ready(c) && r.Reason == "ClusterServing" && c.Status.Cluster != nil && len(c.Status.Cluster.Shards) == n &&
				c.Status.Cluster.SlotsToMove == 0 && c.Status.Cluster.Moving == nil
		}
	}
	start := time.Now()
	got, err := e.WaitInstance(ctx, key, 5*time.Minute, serving(3))
	if err != nil {
		t.Fatalf("never ClusterServing with 3 shards: %v\n%s", err, e.Describe(ctx, ci))
	}
	fmt.Printf("  3 shards serving all slots after %s, map epoch %d\n", time.Since(start).Round(time.Second), got.Status.Cluster.Epoch)
	password, err := e.Password(ctx, got)
	if err != nil {
		t.Fatal(err)
	}
	var svc corev1.Service
	if err := e.Client.Get(ctx, key, &svc); err != nil {
		t.Fatal(err)
	}
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: []string{svc.Spec.ClusterIP + ":6379"}, Password: password,
		MaxRedirects: 16, DialTimeout: 2 * time.Second, ReadTimeout: 5 * time.Second})
	defer func() { _ = cc.Close() }()
	if err := cc.Ping(ctx).Err(); err != nil {
		t.Skipf("the cluster's nodes are not reachable from this machine (%v): the load needs pod IPs", err)
	}
	const keys = 5000
	for i := range keys {
		if err := cc.Set(ctx, fmt.Sprint("key:", i), i, 0).Err(); err != nil {
			t.Fatalf("filling: %v", err)
		}
	}
	load := startClusterLoad(cc)
	reshard := func(n int32) {
		t.Helper()
		if err := e.Client.Get(ctx, key, got); err != nil {
			t.Fatal(err)
		}
		got.Spec.Shards = ptr.To(n)
		if err := e.Client.Update(ctx, got); err != nil {
			t.Fatal(err)
		}
		began := time.Now()
		if got, err = e.WaitInstance(ctx, key, 6*time.Minute, serving(int(n))); err != nil {
			fmt.Println("  load:", load.finish())
			t.Fatalf("never ClusterServing with %d shards: %v\n%s", n, err, e.Describe(ctx, ci))
		}
		var spread []string
		for _, sh := range got.Status.Cluster.Shards {
			spread = append(spread, sh.Instance+" "+sh.Slots)
		}
		fmt.Printf("  to %d shards in %s (map epoch %d): %s\n", n, time.Since(began).Round(time.Second), got.Status.Cluster.Epoch, strings.Join(spread, "; "))
	}
	reshard(4)
	reshard(2)
	time.Sleep(time.Second)
	summary := load.finish()
	fmt.Printf("  under load through both moves: %s\n", summary)
	for i := range keys {
		if v, err := cc.Get(ctx, fmt.Sprint("key:", i)).Result(); err != nil || v != fmt.Sprint(i) {
			t.Fatalf("key:%d after 3 → 4 → 2 shards: %q, %v", i, v, err)
		}
	}
	for c := range load.acked {
		v, err := cc.Get(ctx, fmt.Sprint("counter:{", c, "}")).Int64()
		if err != nil && err != redis.Nil {
			t.Fatal(err)
		}
		if v != load.acked[c].Load() {
			t.Errorf("counter %d = %d, acknowledged increments %d", c, v, load.acked[c].Load())
		}
	}
	var left cachev1alpha1.CacheInstanceList
	if err := e.Client.List(ctx, &left, client.InNamespace(ns), client.MatchingLabels{"cache.iocache.dev/shard-of": "sharded"}); err != nil {
		t.Fatal(err)
	}
	if len(left.Items) != 2 {
		t.Errorf("%d shard instances remain, want 2", len(left.Items))
	}
}
