//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
	"github.com/iocache/iocache/hack/e2e/e2eutil"
)

// writeLoad writes through the client Service while a test disturbs the instance: SET, then
// WAIT 1 (a write counts as acknowledged once a replica has it). It measures the longest time no
// write succeeded.
type writeLoad struct {
	addr, password string
	stop           chan struct{}
	done           sync.WaitGroup

	mu           sync.Mutex
	acked        []string
	attempts     int
	failures     int
	longestOut   time.Duration
	lastFailures []string
}

func startWriteLoad(addr, password string) *writeLoad {
	w := &writeLoad{addr: addr, password: password, stop: make(chan struct{})}
	w.done.Add(1)
	go w.run()
	return w
}

func (w *writeLoad) run() {
	defer w.done.Done()
	dial := func() *redis.Client {
		return redis.NewClient(&redis.Options{Addr: w.addr, Password: w.password, PoolSize: 1, MaxRetries: -1,
			DialTimeout: time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: time.Second})
	}
	rdb := dial()
	defer func() { _ = rdb.Close() }()
	ctx := context.Background()
	var outSince time.Time
	for n := 0; ; n++ {
		select {
		case <-w.stop:
			return
		default:
		}
		key := fmt.Sprintf("load:%07d", n)
		err := rdb.Set(ctx, key, n, 0).Err()
		var acked bool
		if err == nil {
			var got int64
			got, err = rdb.Do(ctx, "WAIT", 1, 500).Int64()
			acked = err == nil && got >= 1
		}
		w.mu.Lock()
		w.attempts++
		if err != nil {
			w.failures++
			if outSince.IsZero() {
				outSince = time.Now()
			}
			if len(w.lastFailures) < 5 {
				w.lastFailures = append(w.lastFailures, err.Error())
			}
		} else if !outSince.IsZero() {
			w.longestOut = max(w.longestOut, time.Since(outSince))
			outSince = time.Time{}
		}
		if acked {
			w.acked = append(w.acked, key)
		}
		w.mu.Unlock()
		if err != nil {
			// A connection to a pod that is gone, or that dropped it when demoted: a new one goes
			// through the Service to whichever pod is the primary now.
			_ = rdb.Close()
			rdb = dial()
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// finish stops the load and reports it.
func (w *writeLoad) finish() (acked []string, summary string) {
	close(w.stop)
	w.done.Wait()
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.acked, fmt.Sprintf("%d writes tried, %d acknowledged by WAIT, %d failed, longest time without a successful write %s (errors: %s)",
		w.attempts, len(w.acked), w.failures, w.longestOut.Round(10*time.Millisecond), strings.Join(w.lastFailures, "; "))
}

// missing counts the keys not on the instance's primary.
func missing(ctx context.Context, rdb *redis.Client, keys []string) (int, error) {
	n := 0
	for start := 0; start < len(keys); start += 500 {
		pipe := rdb.Pipeline()
		cmds := make([]*redis.IntCmd, 0, 500)
		for _, k := range keys[start:min(start+500, len(keys))] {
			cmds = append(cmds, pipe.Exists(ctx, k))
		}
		if _, err := pipe.Exec(ctx); err != nil {
			return 0, err
		}
		for _, c := range cmds {
			if c.Val() != 1 {
				n++
			}
		}
	}
	return n, nil
}

func inSync(ci *cachev1alpha1.CacheInstance) bool {
	c := apimeta.FindStatusCondition(ci.Status.Conditions, cachev1alpha1.ConditionReplicated)
	return e2eutil.Ready(ci) && c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == ci.Generation
}

// testReplication shows replicas end to end on the node: three pods on shared CPUs, a write load
// through the client Service, the primary's pod deleted (the operator promotes the replica with the
// data, the StatefulSet's new pod comes back as a replica), then a change that needs new pods
// (replicas first, a switchover, the old primary last), then a memory change made in place, then
// a drain of every pod, one at a time, through the Eviction API. Every write WAIT acknowledged must survive
// both; the longest time without a successful write is reported.
func testReplication(ctx context.Context, t *testing.T, e *e2eutil.Env) {
	ci := &cachev1alpha1.CacheInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "repl"},
		Spec: cachev1alpha1.CacheInstanceSpec{
			Replicas: ptr.To[int32](3), CPUMode: cachev1alpha1.CPUShared, CPU: ptr.To(resource.MustParse("100m")),
			Memory: resource.MustParse("64Mi"), Auth: &cachev1alpha1.AuthSpec{Generate: true},
			Replication: cachev1alpha1.ReplicationSpec{FailoverAfterSeconds: 5},
			Benchmark:   cachev1alpha1.CacheInstanceBenchmarkSpec{ValidateOnChange: ptr.To(false)},
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
	got, err := e.WaitInstance(ctx, key, 4*time.Minute, inSync)
	if err != nil {
		t.Fatalf("not Ready and in sync: %v\n%s", err, e.Describe(ctx, ci))
	}
	first := got.Status.Replication.Primary
	fmt.Printf("  primary %s, pods %+v\n", first, got.Status.Replication.Pods)
	password, err := e.Password(ctx, got)
	if err != nil {
		t.Fatal(err)
	}
	_, how, closeFn, err := e.Redis(ctx, got)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	if !strings.HasPrefix(how, "Service ClusterIP ") {
		t.Skipf("the load needs to reach the client Service from this machine; it is reached through %s", how)
	}
	addr := strings.TrimPrefix(how, "Service ClusterIP ")
	if _, _, err := net.SplitHostPort(addr); err != nil {
		t.Fatal(err)
	}

	// The primary's pod is deleted under load.
	load := startWriteLoad(addr, password)
	time.Sleep(2 * time.Second)
	oldPrimary, err := e.InstancePods(ctx, got)
	if err != nil {
		t.Fatal(err)
	}
	deletedAt := time.Now()
	for i := range oldPrimary {
		if oldPrimary[i].Name == first {
			if err := e.Client.Delete(ctx, &oldPrimary[i], client.GracePeriodSeconds(0)); err != nil {
				t.Fatal(err)
			}
		}
	}
	_, err = e.WaitInstance(ctx, key, 3*time.Minute, func(c *cachev1alpha1.CacheInstance) bool {
		return c.Status.Replication != nil && c.Status.Replication.Primary != first
	})
	if err != nil {
		load.finish()
		t.Fatalf("no new primary: %v\n%s", err, e.Describe(ctx, ci))
	}
	promotedAfter := time.Since(deletedAt)
	got, err = e.WaitInstance(ctx, key, 3*time.Minute, inSync)
	if err != nil {
		load.finish()
		t.Fatalf("not back in sync after the failover: %v\n%s", err, e.Describe(ctx, ci))
	}
	time.Sleep(2 * time.Second)
	acked, summary := load.finish()
	lf := got.Status.Replication.LastFailover
	fmt.Printf("  primary pod %s deleted: %s promoted after %s (%s); %s\n", first, lf.To, promotedAfter.Round(100*time.Millisecond), lf.Reason, summary)
	check := redis.NewClient(&redis.Options{Addr: addr, Password: password})
	defer func() { _ = check.Close() }()
	if n, err := missing(ctx, check, acked); err != nil || n > 0 || len(acked) == 0 {
		t.Errorf("after the failover %d of %d acknowledged writes are missing (%v)", n, len(acked), err)
	}

	// A change that needs new pods, under load: replicas first, then a switchover.
	load = startWriteLoad(addr, password)
	before := got.Status.Replication.Primary
	if err := e.Client.Get(ctx, key, got); err != nil {
		t.Fatal(err)
	}
	// CPU: the static CPU manager refuses any CPU resize in place, so each pod is replaced.
	got.Spec.CPU = ptr.To(resource.MustParse("120m"))
	if err := e.Client.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	rolledAt := time.Now()
	got, err = e.WaitInstance(ctx, key, 6*time.Minute, func(c *cachev1alpha1.CacheInstance) bool {
		return inSync(c) && c.Status.Replication.Primary != before
	})
	if err != nil {
		load.finish()
		t.Fatalf("the rollout did not finish: %v\n%s", err, e.Describe(ctx, ci))
	}
	time.Sleep(2 * time.Second)
	acked, summary = load.finish()
	lf = got.Status.Replication.LastFailover
	fmt.Printf("  rollout of 3 pods in %s, primary %s -> %s (%s); %s\n", time.Since(rolledAt).Round(time.Second), lf.From, lf.To, lf.Reason, summary)
	if lf.Reason != "Switchover" {
		t.Errorf("the rollout moved the primary with %s, want a Switchover", lf.Reason)
	}
	if n, err := missing(ctx, check, acked); err != nil || n > 0 || len(acked) == 0 {
		t.Errorf("after the rollout %d of %d acknowledged writes are missing (%v)", n, len(acked), err)
	}

	// A memory change under load: every pod resized in place, none replaced, the primary stays.
	pods, err := e.InstancePods(ctx, got)
	if err != nil {
		t.Fatal(err)
	}
	uids := map[string]string{}
	for _, p := range pods {
		uids[p.Name] = string(p.UID)
	}
	load = startWriteLoad(addr, password)
	primary, failovers := got.Status.Replication.Primary, got.Status.Replication.Failovers
	if err := e.Client.Get(ctx, key, got); err != nil {
		t.Fatal(err)
	}
	got.Spec.Memory = resource.MustParse("80Mi")
	if err := e.Client.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	resizedAt := time.Now()
	got, err = e.WaitInstance(ctx, key, 3*time.Minute, func(c *cachev1alpha1.CacheInstance) bool {
		return inSync(c) && c.Status.ObservedGeneration == c.Generation && c.Status.AppliedConfigHash == c.Status.ConfigHash
	})
	if err != nil {
		load.finish()
		t.Fatalf("the memory change did not settle: %v\n%s", err, e.Describe(ctx, ci))
	}
	took := time.Since(resizedAt)
	time.Sleep(2 * time.Second)
	acked, summary = load.finish()
	if pods, err = e.InstancePods(ctx, got); err != nil {
		t.Fatal(err)
	}
	for _, p := range pods {
		if uids[p.Name] != string(p.UID) {
			t.Errorf("pod %s replaced for a memory change the kubelet makes in place", p.Name)
		}
	}
	if got.Status.Replication.Primary != primary || got.Status.Replication.Failovers != failovers {
		t.Errorf("primary %s -> %s, failovers %d -> %d: resizing in place must not move the primary",
			primary, got.Status.Replication.Primary, failovers, got.Status.Replication.Failovers)
	}
	fmt.Printf("  memory 64Mi -> 80Mi: %d pods resized in place in %s, primary stays %s; %s\n", len(pods), took.Round(100*time.Millisecond), primary, summary)
	if n, err := missing(ctx, check, acked); err != nil || n > 0 || len(acked) == 0 {
		t.Errorf("after the resize %d of %d acknowledged writes are missing (%v)", n, len(acked), err)
	}

	// A node drain, pod by pod through the Eviction API (which honours the PodDisruptionBudget),
	// under load: each evicted pod comes back and resyncs before the next; evicting the primary
	// makes the operator switch over while it still serves.
	load = startWriteLoad(addr, password)
	drainedAt := time.Now()
	for i := range 3 {
		name := fmt.Sprintf("repl-%d", i)
		pod := &corev1.Pod{}
		if err := e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pod); err != nil {
			load.finish()
			t.Fatal(err)
		}
		eviction := &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
		for deadline := time.Now().Add(time.Minute); ; time.Sleep(time.Second) {
			err := e.Client.SubResource("eviction").Create(ctx, pod, eviction)
			if err == nil {
				break
			}
			// 429: the budget allows no disruption yet (a pod still starting).
			if !apierrors.IsTooManyRequests(err) || time.Now().After(deadline) {
				load.finish()
				t.Fatalf("evicting %s: %v", name, err)
			}
		}
		got, err = e.WaitInstance(ctx, key, 3*time.Minute, func(c *cachev1alpha1.CacheInstance) bool {
			if !inSync(c) {
				return false
			}
			p := &corev1.Pod{}
			return e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, p) == nil && p.UID != pod.UID
		})
		if err != nil {
			load.finish()
			t.Fatalf("%s did not come back in sync after its eviction: %v\n%s", name, err, e.Describe(ctx, ci))
		}
	}
	time.Sleep(2 * time.Second)
	acked, summary = load.finish()
	lf = got.Status.Replication.LastFailover
	fmt.Printf("  drain of 3 pods one by one in %s, primary now %s (last move %s -> %s, %s); %s\n",
		time.Since(drainedAt).Round(time.Second), got.Status.Replication.Primary, lf.From, lf.To, lf.Reason, summary)
	if n, err := missing(ctx, check, acked); err != nil || n > 0 || len(acked) == 0 {
		t.Errorf("after the drain %d of %d acknowledged writes are missing (%v)", n, len(acked), err)
	}
}
