package controllers

import (
	"testing"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
	"github.com/iocache/iocache/server/cluster"
)

// Following nextMove from an even split over 3 shards to 4 and then to 2 ends with every shard
// at its share, every slot served exactly once, and no slot moved twice in one direction.
func TestNextMoveReachesEvenShares(t *testing.T) {
	st := &cachev1alpha1.ClusterStatus{}
	for i, r := range evenSlots(3) {
		st.Shards = append(st.Shards, cachev1alpha1.ShardStatus{Instance: "s" + string(rune('0'+i)), Slots: cluster.FormatRanges([][2]int{r}, ",")})
	}
	for _, want := range []int{4, 2, 5, 1 + 1} {
		for len(st.Shards) < want {
			st.Shards = append(st.Shards, cachev1alpha1.ShardStatus{Instance: "new"})
		}
		moved := 0
		for step := 0; ; step++ {
			if step > 200 {
				t.Fatalf("to %d shards: no end after 200 batches", want)
			}
			mv := nextMove(st, want)
			if mv == nil {
				break
			}
			batch := slotsOf(cachev1alpha1.ShardStatus{Slots: mv.Slots})
			if len(batch) == 0 || len(batch) > moveBatch {
				t.Fatalf("batch of %d slots", len(batch))
			}
			from := slotsOf(st.Shards[mv.From])
			in := map[int]bool{}
			for _, s := range from {
				in[s] = true
			}
			for _, s := range batch {
				if !in[s] {
					t.Fatalf("batch moves slot %d, which shard %d does not serve", s, mv.From)
				}
				delete(in, s)
			}
			var rest []int
			for _, s := range from {
				if in[s] {
					rest = append(rest, s)
				}
			}
			st.Shards[mv.From].Slots = formatSlots(rest)
			st.Shards[mv.To].Slots = formatSlots(append(slotsOf(st.Shards[mv.To]), batch...))
			moved += len(batch)
		}
		served := map[int]int{}
		for i, sh := range st.Shards {
			n := len(slotsOf(sh))
			if want := targetCounts(len(st.Shards), want)[i]; n != want {
				t.Fatalf("shard %d serves %d slots, want %d", i, n, want)
			}
			for _, s := range slotsOf(sh) {
				served[s]++
			}
		}
		if len(served) != cluster.Slots {
			t.Fatalf("%d slots served, want %d", len(served), cluster.Slots)
		}
		if slotsToMove(st, want) != 0 {
			t.Fatal("slotsToMove is not 0 at the end")
		}
		st.Shards = st.Shards[:want]
		t.Logf("to %d shards: %d slots moved", want, moved)
	}
}
