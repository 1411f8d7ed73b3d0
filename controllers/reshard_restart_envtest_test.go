package controllers_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
	rcluster "github.com/iocache/iocache/server/cluster"
	"github.com/iocache/iocache/server/testpeer"
)

const midMovePassword = "mid-move-password"

// twoShards is a 2-shard instance "cache" served by real servers on an API server of the test's
// own, with 40 keys in each of slots 8100-8191 (the end of shard 0), and the operator stopped:
// the state an operator leaves when it stops, for the test to change before one starts again.
type twoShards struct {
	cl            *cluster
	startOperator func() (stop func())
	ns            string
	addrs         []string
	keys          []string
	cc            *redis.ClusterClient
	src, dst      *redis.Client // shard 0's and shard 1's servers
	srcID, dstID  string
}

func newTwoShards(t *testing.T) *twoShards {
	t.Helper()
	f := &twoShards{}
	f.cl, f.startOperator = ownOperatorEnv(t)
	stop := f.startOperator()
	ctx := context.Background()
	f.ns = f.cl.namespace(t)
	if err := f.cl.c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cache-auth", Namespace: f.ns},
		Data: map[string][]byte{"password": []byte(midMovePassword)}}); err != nil {
		t.Fatal(err)
	}
	if err := f.cl.c.Create(ctx, instanceIn(f.ns, "cache", 1, func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.Shards = ptr.To[int32](2)
		ci.Spec.Auth = &cachev1alpha1.AuthSpec{ExistingSecret: "cache-auth"}
		ci.Spec.Benchmark.ValidateOnChange = ptr.To(false)
	})); err != nil {
		t.Fatal(err)
	}
	f.addrs = []string{f.cl.serveShard(t, f.ns, 0, midMovePassword), f.cl.serveShard(t, f.ns, 1, midMovePassword)}
	f.cl.waitCondition(t, f.ns, "cache", cachev1alpha1.ConditionReady, metav1.ConditionTrue, "ClusterServing")
	f.cc = redis.NewClusterClient(&redis.ClusterOptions{Addrs: f.addrs, Password: midMovePassword})
	t.Cleanup(func() { _ = f.cc.Close() })
	for i := 0; len(f.keys) < 40*92; i++ {
		k := fmt.Sprint("k:", i)
		if s := rcluster.KeySlot([]byte(k)); s >= 8100 && s <= 8191 {
			f.keys = append(f.keys, k)
		}
	}
	for _, k := range f.keys {
		if err := f.cc.Set(ctx, k, k, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
	stop()
	f.src = redis.NewClient(&redis.Options{Addr: f.addrs[0], Password: midMovePassword})
	f.dst = redis.NewClient(&redis.Options{Addr: f.addrs[1], Password: midMovePassword})
	t.Cleanup(func() { _ = f.src.Close(); _ = f.dst.Close() })
	f.srcID, _ = f.src.Do(ctx, "CLUSTER", "MYID").Text()
	f.dstID, _ = f.dst.Do(ctx, "CLUSTER", "MYID").Text()
	return f
}

// moveByHand does what redis-cli --cluster reshard does for one slot from shard 0 to shard 1:
// up to keysToSend of its keys, and with finish the slot handed over on both sides.
func (f *twoShards) moveByHand(t *testing.T, slot, keysToSend int, finish bool) {
	t.Helper()
	ctx := context.Background()
	s := strconv.Itoa(slot)
	must := func(cmd *redis.Cmd) {
		t.Helper()
		if err := cmd.Err(); err != nil {
			t.Fatalf("%v: %v", cmd.Args(), err)
		}
	}
	must(f.dst.Do(ctx, "CLUSTER", "SETSLOT", s, "IMPORTING", f.srcID))
	must(f.src.Do(ctx, "CLUSTER", "SETSLOT", s, "MIGRATING", f.dstID))
	inSlot, err := f.src.Do(ctx, "CLUSTER", "GETKEYSINSLOT", s, keysToSend).StringSlice()
	if err != nil || len(inSlot) == 0 {
		t.Fatalf("GETKEYSINSLOT %d: %v %v", slot, inSlot, err)
	}
	_, dstPort, _ := strings.Cut(f.addrs[1], ":")
	args := []any{"MIGRATE", "127.0.0.1", dstPort, "", 0, 5000, "AUTH", midMovePassword, "KEYS"}
	for _, k := range inSlot {
		args = append(args, k)
	}
	must(f.src.Do(ctx, args...))
	if finish {
		must(f.dst.Do(ctx, "CLUSTER", "SETSLOT", s, "NODE", f.dstID))
		must(f.src.Do(ctx, "CLUSTER", "SETSLOT", s, "NODE", f.dstID))
	}
}

// convergeEven starts the operator and waits for the even split, Ready, every key reachable and a
// clean redis-cli --cluster check.
func (f *twoShards) convergeEven(t *testing.T, check func(*cachev1alpha1.ClusterStatus) error) {
	t.Helper()
	ctx := context.Background()
	t.Cleanup(f.startOperator())
	eventuallyWithin(t, 90*time.Second, "the split even again", func() error {
		cur := &cachev1alpha1.CacheInstance{}
		if err := f.cl.get(t, f.ns, "cache", cur); err != nil {
			return err
		}
		st := cur.Status.Cluster
		if st == nil || st.Moving != nil || st.SlotsToMove != 0 || len(st.Shards) != 2 ||
			countSlots(st.Shards[0].Slots) != 8192 || countSlots(st.Shards[1].Slots) != 8192 {
			return fmt.Errorf("status.cluster: %+v", st)
		}
		if err := check(st); err != nil {
			return err
		}
		if r := findCondition(cur.Status.Conditions, cachev1alpha1.ConditionReady); r == nil || r.Reason != "ClusterServing" {
			return fmt.Errorf("Ready: %+v", r)
		}
		return nil
	})
	for _, k := range f.keys {
		if v, err := f.cc.Get(ctx, k).Result(); err != nil || v != k {
			t.Fatalf("%s (slot %d) after the restart: %q, %v", k, rcluster.KeySlot([]byte(k)), v, err)
		}
	}
	out, err := exec.Command(testpeer.Require(t, "redis-cli"), "-a", midMovePassword, "--no-auth-warning", "--cluster", "check", f.addrs[0]).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "[OK] All 16384 slots covered.") || strings.Contains(string(out), "WARNING") ||
		!strings.Contains(string(out), "[OK] All nodes agree about slots configuration.") {
		t.Fatalf("redis-cli --cluster check: %v\n%s", err, out)
	}
}

// An operator that stops in the middle of a batch of slots leaves what it would leave: the batch
// recorded in status.cluster.moving, one slot of it fully moved on the nodes (keys and SETSLOT
// NODE) though the status still names its old owner, another half moved (IMPORTING, MIGRATING,
// half its keys sent). The operator that starts next acts on the status: it finishes the batch
// (without the batch in the status, the moved slot's keys would be stranded on a node the map
// no longer sends its clients to), records the move, and goes on to the even split (moving as
// many slots back). Every key stays reachable and redis-cli --cluster check ends with every slot
// covered and none open.
func TestOperatorRestartMidSlotMoveFinishesTheBatch(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two servers and an API server of its own")
	}
	f := newTwoShards(t)
	ci := &cachev1alpha1.CacheInstance{}
	if err := f.cl.get(t, f.ns, "cache", ci); err != nil {
		t.Fatal(err)
	}
	ci.Status.Cluster.Moving = &cachev1alpha1.SlotMove{Slots: "8100-8191", From: 0, To: 1}
	if err := f.cl.c.Status().Update(context.Background(), ci); err != nil {
		t.Fatal(err)
	}
	f.moveByHand(t, 8100, 1000, true) // all its keys, and the slot handed over
	f.moveByHand(t, 8150, 20, false)  // half its keys; still importing and migrating
	f.convergeEven(t, func(st *cachev1alpha1.ClusterStatus) error {
		if !strings.Contains(st.Shards[1].Slots, "8100-") {
			return fmt.Errorf("the batch 8100-8191 was not recorded on shard 1: %+v", st)
		}
		return nil
	})
}

// A sharded instance whose status lost its map (an object restored without its status) while
// the nodes serve a map that moved slots: the operator takes the map the nodes serve, not an
// even split of its own, since pushing the even split would send clients of the moved slots to
// a node without their keys. It then rebalances by moving keys, and every key stays reachable.
func TestShardedInstanceAdoptsTheServedMapWhenTheStatusIsLost(t *testing.T) {
	if testing.Short() {
		t.Skip("runs two servers and an API server of its own")
	}
	f := newTwoShards(t)
	ctx := context.Background()
	for slot := 8100; slot <= 8191; slot++ {
		f.moveByHand(t, slot, 1000, true)
	}
	// The map the nodes now serve, under a new epoch, as the operator would have pushed it.
	body, err := f.dst.Do(ctx, "CLUSTERMAP", "GET").Text()
	if err != nil {
		t.Fatal(err)
	}
	var m rcluster.Map
	if err := json.Unmarshal([]byte(body), &m); err != nil {
		t.Fatal(err)
	}
	m.Epoch += 5
	b, _ := json.Marshal(m)
	for _, c := range []*redis.Client{f.src, f.dst} {
		if err := c.Do(ctx, "CLUSTERMAP", "SET", string(b)).Err(); err != nil {
			t.Fatal(err)
		}
	}
	ci := &cachev1alpha1.CacheInstance{}
	if err := f.cl.get(t, f.ns, "cache", ci); err != nil {
		t.Fatal(err)
	}
	ci.Status.Cluster = nil
	if err := f.cl.c.Status().Update(ctx, ci); err != nil {
		t.Fatal(err)
	}
	f.convergeEven(t, func(st *cachev1alpha1.ClusterStatus) error {
		if st.Epoch <= int64(m.Epoch) {
			return fmt.Errorf("epoch %d, not above the served %d", st.Epoch, m.Epoch)
		}
		if !strings.HasPrefix(st.Shards[1].Slots, "8100-") {
			return fmt.Errorf("shard 1 does not keep the slots it was moved: %+v", st)
		}
		return nil
	})
}
