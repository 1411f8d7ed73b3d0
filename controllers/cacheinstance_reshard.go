package controllers

import (
	"context"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
	"github.com/iocache/iocache/server/cluster"
)

// Online resharding. A change of spec.shards moves slots in batches, each with Redis's own
// slot-moving commands, as redis-cli --cluster reshard moves them, so clients caught mid-move
// are redirected (ASK, TRYAGAIN) as Redis would redirect them:
//
//  1. the batch is written to status.cluster.moving before anything moves;
//  2. per slot: SETSLOT IMPORTING on the target, MIGRATING on the source, the source's keys sent
//     with MIGRATE ... REPLACE KEYS in groups, then SETSLOT NODE on the target and the source;
//  3. the new owners are written to the status with a new epoch, and the map is pushed.
//
// An operator restarted anywhere in 2 finds the batch in the status and finishes it (a slot the
// target already owns is skipped; MIGRATE's REPLACE makes a key sent twice harmless); one
// restarted between 3's write and its push pushes the status's map. A new shard joins the map
// with no slots before any slot moves to it (SETSLOT names it); a shard removed is emptied, left
// out of the map, and only then deleted.

const (
	// moveBatch is how many slots one batch moves: small enough that a pass ends in about a
	// second, large enough that the status is not written once a slot.
	moveBatch = 256
	// migrateKeys is how many keys one MIGRATE sends.
	migrateKeys = 256
	// moveBudget bounds one pass's moving; the batch resumes on the next pass.
	moveBudget       = 20 * time.Second
	migrateTimeoutMs = 5000
)

// slotsOf lists a shard's slots, ascending (status.cluster writes them as Redis does, with
// commas: "0-5460,16383").
func slotsOf(sh cachev1alpha1.ShardStatus) []int {
	ranges, _ := cluster.ParseRanges(sh.Slots, ",")
	var out []int
	for _, r := range ranges {
		for s := r[0]; s <= r[1]; s++ {
			out = append(out, s)
		}
	}
	slices.Sort(out)
	return out
}

// formatSlots writes slots as status.cluster does.
func formatSlots(slots []int) string {
	var in [cluster.Slots]bool
	for _, s := range slots {
		in[s] = true
	}
	return cluster.FormatRanges(cluster.RangesOf(func(s int) bool { return in[s] }), ",")
}

// targetCounts is how many slots each of the listed shards should serve for want shards: an
// even split over the first want, none for the others.
func targetCounts(listed, want int) []int {
	out := make([]int, listed)
	for i := range min(listed, want) {
		out[i] = cluster.Slots / want
		if i < cluster.Slots%want {
			out[i]++
		}
	}
	return out
}

// slotsToMove counts the slots not yet where want shards put them.
func slotsToMove(st *cachev1alpha1.ClusterStatus, want int) int {
	n := 0
	for i, t := range targetCounts(len(st.Shards), want) {
		if have := len(slotsOf(st.Shards[i])); have > t {
			n += have - t
		}
	}
	return n
}

// nextMove is the next batch toward want shards: from the shard with the most slots over its
// share (shards being removed first) to the one with the most under it, its highest slots, so
// ranges stay whole. nil when every shard has its share.
func nextMove(st *cachev1alpha1.ClusterStatus, want int) *cachev1alpha1.SlotMove {
	target := targetCounts(len(st.Shards), want)
	from, to, over, under := -1, -1, 0, 0
	for i := range st.Shards {
		d := len(slotsOf(st.Shards[i])) - target[i]
		if d > 0 && (from < 0 || (i >= want && from < want) || (d > over && (i >= want) == (from >= want))) {
			from, over = i, d
		}
		if d < 0 && -d > under {
			to, under = i, -d
		}
	}
	if from < 0 || to < 0 {
		return nil
	}
	slots := slotsOf(st.Shards[from])
	n := min(over, under, moveBatch)
	batch := slots[len(slots)-n:]
	return &cachev1alpha1.SlotMove{Slots: formatSlots(batch), From: int32(from), To: int32(to)}
}

// finishMove moves the batch in status.cluster.moving, then records the new owners and pushes
// the map. Within moveBudget; what is left resumes on the next pass.
func (r *CacheInstanceReconciler) finishMove(ctx context.Context, ci *cachev1alpha1.CacheInstance, st *cachev1alpha1.ClusterStatus, v *clusterView, creds serverCreds) error {
	mv := st.Moving
	if int(mv.From) >= len(st.Shards) || int(mv.To) >= len(st.Shards) {
		st.Moving = nil
		return fmt.Errorf("status.cluster.moving names shards %d and %d of %d: dropped", mv.From, mv.To, len(st.Shards))
	}
	src, dst := v.primaries[mv.From], v.primaries[mv.To]
	if !slices.ContainsFunc(dst.serving.Nodes, func(n cluster.MapNode) bool { return n.ID == dst.id }) ||
		!slices.ContainsFunc(src.serving.Nodes, func(n cluster.MapNode) bool { return n.ID == dst.id }) {
		// The target must be in the map both primaries serve before SETSLOT can name it.
		return r.pushClusterMap(ctx, ci, st, v, creds)
	}
	ranges, err := cluster.ParseRanges(mv.Slots, ",")
	if err != nil {
		st.Moving = nil
		return fmt.Errorf("status.cluster.moving.slots: %w", err)
	}
	srcC, dstC := serverClient(src.addr, creds), serverClient(dst.addr, creds)
	defer func() { _ = srcC.Close(); _ = dstC.Close() }()
	deadline := time.Now().Add(moveBudget)
	target := nodeEntry(dst)
	moved := 0
	for _, rg := range ranges {
		for slot := rg[0]; slot <= rg[1]; slot++ {
			if time.Now().After(deadline) {
				return fmt.Errorf("moved %d slots of the batch in %v; the rest next pass", moved, moveBudget)
			}
			if err := moveSlot(ctx, srcC, dstC, slot, src.id, dst.id, target, creds.password); err != nil {
				return fmt.Errorf("moving slot %d from %s to %s: %w", slot, src.pod.Name, dst.pod.Name, err)
			}
			moved++
		}
	}
	// Record the new owners, then tell every node.
	batch := map[int]bool{}
	for _, rg := range ranges {
		for s := rg[0]; s <= rg[1]; s++ {
			batch[s] = true
		}
	}
	fromSlots := slices.DeleteFunc(slotsOf(st.Shards[mv.From]), func(s int) bool { return batch[s] })
	toSlots := slotsOf(st.Shards[mv.To])
	for s := range batch {
		toSlots = append(toSlots, s)
	}
	st.Shards[mv.From].Slots = formatSlots(fromSlots)
	st.Shards[mv.To].Slots = formatSlots(toSlots)
	st.Moving = nil
	logf.FromContext(ctx).Info("moved slots", "slots", mv.Slots, "from", st.Shards[mv.From].Instance, "to", st.Shards[mv.To].Instance)
	return r.pushClusterMap(ctx, ci, st, v, creds)
}

// moveSlot moves one slot's keys and ownership from src to dst, as redis-cli --cluster reshard
// does. A slot dst already owns (a batch resumed after a restart) is done.
func moveSlot(ctx context.Context, src, dst *redis.Client, slot int, srcID, dstID string, target cluster.MapNode, password string) error {
	s := strconv.Itoa(slot)
	err := dst.Do(ctx, "CLUSTER", "SETSLOT", s, "IMPORTING", srcID).Err()
	if err != nil && strings.Contains(err.Error(), "already the owner") {
		return nil
	}
	if err != nil {
		return fmt.Errorf("SETSLOT IMPORTING: %w", err)
	}
	if err := src.Do(ctx, "CLUSTER", "SETSLOT", s, "MIGRATING", dstID).Err(); err != nil && !strings.Contains(err.Error(), "not the owner") {
		return fmt.Errorf("SETSLOT MIGRATING: %w", err)
	}
	count, err := src.Do(ctx, "CLUSTER", "COUNTKEYSINSLOT", s).Int()
	if err != nil {
		return fmt.Errorf("COUNTKEYSINSLOT: %w", err)
	}
	// Bounded: each round moves up to migrateKeys keys, and writes arriving meanwhile are
	// redirected (ASK) to the target, so the slot only empties.
	for round := 0; round <= count/migrateKeys+4; round++ {
		keys, err := src.Do(ctx, "CLUSTER", "GETKEYSINSLOT", s, migrateKeys).StringSlice()
		if err != nil {
			return fmt.Errorf("GETKEYSINSLOT: %w", err)
		}
		if len(keys) == 0 {
			break
		}
		args := []any{"MIGRATE", target.IP, target.Port, "", 0, migrateTimeoutMs, "REPLACE"}
		if password != "" {
			args = append(args, "AUTH", password)
		}
		args = append(args, "KEYS")
		for _, k := range keys {
			args = append(args, k)
		}
		if err := src.Do(ctx, args...).Err(); err != nil {
			return fmt.Errorf("MIGRATE to %s: %w", net.JoinHostPort(target.IP, strconv.Itoa(target.Port)), err)
		}
	}
	if n, err := src.Do(ctx, "CLUSTER", "COUNTKEYSINSLOT", s).Int(); err != nil || n != 0 {
		return fmt.Errorf("slot still holds %d keys after moving (%v)", n, err)
	}
	if err := dst.Do(ctx, "CLUSTER", "SETSLOT", s, "NODE", dstID).Err(); err != nil {
		return fmt.Errorf("SETSLOT NODE on the target: %w", err)
	}
	if err := src.Do(ctx, "CLUSTER", "SETSLOT", s, "NODE", dstID).Err(); err != nil {
		return fmt.Errorf("SETSLOT NODE on the source: %w", err)
	}
	return nil
}

// retireShards drops the emptied shards past want from the map (pushed without their nodes),
// then deletes their instances.
func (r *CacheInstanceReconciler) retireShards(ctx context.Context, ci *cachev1alpha1.CacheInstance, st *cachev1alpha1.ClusterStatus, v *clusterView, creds serverCreds, want int) error {
	for i := want; i < len(st.Shards); i++ {
		if len(slotsOf(st.Shards[i])) != 0 {
			return fmt.Errorf("shard %s still serves slots", st.Shards[i].Instance)
		}
	}
	retired := st.Shards[want:]
	st.Shards = st.Shards[:want]
	v.shards, v.primaries = v.shards[:want], v.primaries[:want]
	if err := r.pushClusterMap(ctx, ci, st, v, creds); err != nil {
		return err
	}
	for _, sh := range retired {
		obj := &cachev1alpha1.CacheInstance{}
		obj.Namespace, obj.Name = ci.Namespace, sh.Instance
		if err := r.Delete(ctx, obj, client.PropagationPolicy("Background")); err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting the emptied shard %s: %w", sh.Instance, err)
		}
		logf.FromContext(ctx).Info("retired an emptied shard", "shard", sh.Instance)
	}
	return nil
}
