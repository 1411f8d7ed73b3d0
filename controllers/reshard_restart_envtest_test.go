package controllers_test

import (
	"context"
	"fmt"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
	"github.com/iocache/iocache/controllers/operator"
	rcluster "github.com/iocache/iocache/server/cluster"
	"github.com/iocache/iocache/server/testpeer"
)

// An operator that stops in the middle of a batch of slots leaves what it would leave: the batch
// recorded in status.cluster.moving, one slot of it fully moved on the nodes (keys and SETSLOT
// NODE) though the status still names its old owner, another half moved (IMPORTING, MIGRATING,
// half its keys sent). The operator that starts next acts on the status: it finishes the batch
// (without the batch in the status, the moved slot's keys would be stranded on a node the map
// no longer sends its clients to), records the move, and goes on to the even split (moving as
// many slots back). Every key stays reachable and redis-cli --cluster
// check ends with every slot covered and none open.
func TestOperatorRestartMidSlotMoveFinishesTheBatch(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two servers and an API server of its own")
	}
	testpeer.KubebuilderAssets(t)
	env := &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join("..", "config", "crd", "bases")}, ErrorIfCRDPathMissing: true}
	cfg, err := env.Start()
	if err != nil {
		_ = env.Stop()
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	c, err := client.New(cfg, client.Options{Scheme: operator.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	cl := &cluster{env: env, cfg: cfg, c: c}
	opCfg, err := cl.operatorUser()
	if err != nil {
		t.Fatal(err)
	}
	startOperator := func() (stop func()) {
		stopManager, err := startManager(opCfg, operator.Options{MetricsAddr: "0", ProbeAddr: "0", Image: testImage, MaxConcurrent: 2, SeveralManagers: true,
			ServerAddress: testServerAddress, BenchmarkSettleTime: testSettleTime, OperatorNamespace: testOperatorNamespace})
		if err != nil {
			t.Fatal(err)
		}
		return func() {
			if err := stopManager(); err != nil {
				t.Errorf("manager: %v", err)
			}
		}
	}
	stop := startOperator()
	ctx := context.Background()
	ns := cl.namespace(t)
	const password = "mid-move-password"
	if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cache-auth", Namespace: ns},
		Data: map[string][]byte{"password": []byte(password)}}); err != nil {
		t.Fatal(err)
	}
	if err := c.Create(ctx, instanceIn(ns, "cache", 1, func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.Shards = ptr.To[int32](2)
		ci.Spec.Auth = &cachev1alpha1.AuthSpec{ExistingSecret: "cache-auth"}
		ci.Spec.Benchmark.ValidateOnChange = ptr.To(false)
	})); err != nil {
		t.Fatal(err)
	}
	addrs := []string{cl.serveShard(t, ns, 0, password), cl.serveShard(t, ns, 1, password)}
	cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionReady, metav1.ConditionTrue, "ClusterServing")
	cc := redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, Password: password})
	defer cc.Close()
	// Keys in the last slots of shard 0 (0-8191), 40 a slot: the batch 8100-8191.
	var keys []string
	for i := 0; len(keys) < 40*92; i++ {
		k := fmt.Sprint("k:", i)
		if s := rcluster.KeySlot([]byte(k)); s >= 8100 && s <= 8191 {
			keys = append(keys, k)
		}
	}
	for _, k := range keys {
		if err := cc.Set(ctx, k, k, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	stop()

	// What an operator stopped mid-batch leaves behind.
	ci := &cachev1alpha1.CacheInstance{}
	if err := cl.get(t, ns, "cache", ci); err != nil {
		t.Fatal(err)
	}
	ci.Status.Cluster.Moving = &cachev1alpha1.SlotMove{Slots: "8100-8191", From: 0, To: 1}
	if err := c.Status().Update(ctx, ci); err != nil {
		t.Fatal(err)
	}
	src := redis.NewClient(&redis.Options{Addr: addrs[0], Password: password})
	dst := redis.NewClient(&redis.Options{Addr: addrs[1], Password: password})
	defer src.Close()
	defer dst.Close()
	srcID, _ := src.Do(ctx, "CLUSTER", "MYID").Text()
	dstID, _ := dst.Do(ctx, "CLUSTER", "MYID").Text()
	_, dstPort, _ := strings.Cut(addrs[1], ":")
	move := func(slot int, keysToSend int, finish bool) {
		t.Helper()
		s := strconv.Itoa(slot)
		must := func(cmd *redis.Cmd) {
			t.Helper()
			if err := cmd.Err(); err != nil {
				t.Fatalf("%v: %v", cmd.Args(), err)
			}
		}
		must(dst.Do(ctx, "CLUSTER", "SETSLOT", s, "IMPORTING", srcID))
		must(src.Do(ctx, "CLUSTER", "SETSLOT", s, "MIGRATING", dstID))
		inSlot, err := src.Do(ctx, "CLUSTER", "GETKEYSINSLOT", s, keysToSend).StringSlice()
		if err != nil || len(inSlot) == 0 {
			t.Fatalf("GETKEYSINSLOT %d: %v %v", slot, inSlot, err)
		}
		args := []any{"MIGRATE", "127.0.0.1", dstPort, "", 0, 5000, "AUTH", password, "KEYS"}
		for _, k := range inSlot {
			args = append(args, k)
		}
		must(src.Do(ctx, args...))
		if finish {
			must(dst.Do(ctx, "CLUSTER", "SETSLOT", s, "NODE", dstID))
			must(src.Do(ctx, "CLUSTER", "SETSLOT", s, "NODE", dstID))
		}
	}
	move(8100, 1000, true) // all its keys, and the slot handed over
	move(8150, 20, false)  // half its keys; still importing and migrating

	stop = startOperator()
	defer stop()
	eventuallyWithin(t, 90*time.Second, "the batch finished and the split even again", func() error {
		cur := &cachev1alpha1.CacheInstance{}
		if err := cl.get(t, ns, "cache", cur); err != nil {
			return err
		}
		st := cur.Status.Cluster
		if st.Moving != nil || st.SlotsToMove != 0 || countSlots(st.Shards[0].Slots) != 8192 || countSlots(st.Shards[1].Slots) != 8192 ||
			!strings.Contains(st.Shards[1].Slots, "8100-") {
			return fmt.Errorf("status.cluster: %+v", st)
		}
		if r := findCondition(cur.Status.Conditions, cachev1alpha1.ConditionReady); r == nil || r.Reason != "ClusterServing" {
			return fmt.Errorf("Ready: %+v", r)
		}
		return nil
	})
	for _, k := range keys {
		if v, err := cc.Get(ctx, k).Result(); err != nil || v != k {
			t.Fatalf("%s (slot %d) after the restart: %q, %v", k, rcluster.KeySlot([]byte(k)), v, err)
		}
	}
	out, err := exec.Command(testpeer.Require(t, "redis-cli"), "-a", password, "--no-auth-warning", "--cluster", "check", addrs[0]).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "[OK] All 16384 slots covered.") || strings.Contains(string(out), "WARNING") ||
		!strings.Contains(string(out), "[OK] All nodes agree about slots configuration.") {
		t.Fatalf("redis-cli --cluster check: %v\n%s", err, out)
	}
}
