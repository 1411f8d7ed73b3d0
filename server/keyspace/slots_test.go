package keyspace

import (
	"fmt"
	"hash/maphash"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/iocache/iocache/server/cluster"
)

// TestSlotIndexFollowsWrites adds and deletes keys at random (deletions move the last key of
// dense into the hole) and checks, after each step, that every slot's list holds exactly the
// keys of that slot and its count agrees.
func TestSlotIndexFollowsWrites(t *testing.T) {
	db := NewDB(maphash.MakeSeed())
	for i := range 50 { // some keys before the index exists
		db.SetString(fmt.Appendf(nil, "pre:%d", i), []byte("v"), 0, false, 0)
	}
	db.IndexSlots()
	rng := rand.New(rand.NewPCG(1, 2))
	live := map[string]bool{}
	for i := range 50 {
		live[fmt.Sprintf("pre:%d", i)] = true
	}
	// Few tags, so that slots hold several keys and lists are long.
	name := func() string { return fmt.Sprintf("{t%d}:%d", rng.IntN(8), rng.IntN(400)) }
	for step := range 4000 {
		k := name()
		if rng.IntN(3) == 0 {
			if r, ok := db.Find([]byte(k)); ok {
				db.Delete(r)
				delete(live, k)
			}
		} else {
			db.SetString([]byte(k), []byte("v"), 0, false, 0)
			live[k] = true
		}
		if step%97 == 0 || step == 3999 {
			checkSlots(t, db, live)
		}
	}
	for k := range live { // empty it: every list must end empty
		r, _ := db.Find([]byte(k))
		db.Delete(r)
		delete(live, k)
	}
	checkSlots(t, db, live)
}

func checkSlots(t *testing.T, db *DB, live map[string]bool) {
	t.Helper()
	want := map[int][]string{}
	for k := range live {
		want[cluster.KeySlot([]byte(k))] = append(want[cluster.KeySlot([]byte(k))], k)
	}
	for slot := range cluster.Slots {
		var got []string
		db.KeysInSlot(slot, 1<<30, func(key []byte) bool { got = append(got, string(key)); return true })
		slices.Sort(got)
		w := want[slot]
		slices.Sort(w)
		if !slices.Equal(got, w) || db.CountInSlot(slot) != len(w) {
			t.Fatalf("slot %d: keys %v count %d, want %v", slot, got, db.CountInSlot(slot), w)
		}
	}
}

// TestSlotIndexCostsEightBytesAKey pins the index's cost per key.
func TestSlotIndexCostsEightBytesAKey(t *testing.T) {
	db := NewDB(maphash.MakeSeed())
	db.IndexSlots()
	base := int64(cluster.Slots * 8) // the slots' heads, allocated with the first key
	for i := range 100000 {
		db.SetString(fmt.Appendf(nil, "k:%d", i), nil, 0, false, 0)
	}
	per := float64(db.slots.memory()-base) / 100000
	if per > 8*1.05 { // the last page is partly empty
		t.Fatalf("slot index: %.1f bytes a key, want about 8", per)
	}
	for i := range 100000 { // emptied, the pages go back but two
		r, _ := db.Find(fmt.Appendf(nil, "k:%d", i))
		db.Delete(r)
	}
	if got := db.slots.memory(); got > 2*linkPageLen*8+cluster.Slots*8 {
		t.Fatalf("an emptied index holds %d bytes", got)
	}
}
