package keyspace

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// The stream's head index, tombstones and compaction never change what it holds: random appends,
// deletions and trims are checked against a plain slice after every step.
func TestStreamAgainstModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	st := NewStream()
	var model []StreamID
	next := StreamID{Ms: 1}
	for step := 0; step < 20000; step++ {
		switch op := rng.IntN(10); {
		case op < 6:
			st.Append(next, [][]byte{[]byte("f"), []byte("v")})
			model = append(model, next)
			next.Seq += uint64(1 + rng.IntN(3))
		case op < 8 && len(model) > 0:
			id := model[rng.IntN(len(model))]
			if !st.Delete(id) {
				t.Fatalf("step %d: Delete(%v) found nothing", step, id)
			}
			model = slices.DeleteFunc(model, func(x StreamID) bool { return x == id })
			if st.Delete(id) {
				t.Fatalf("step %d: deleted %v twice", step, id)
			}
		case op < 9:
			keep := rng.IntN(len(model) + 1)
			removed := int(st.Trim(TrimSpec{MaxLen: int64(keep)}))
			if want := len(model) - keep; removed != max(want, 0) {
				t.Fatalf("step %d: trim to %d removed %d, want %d", step, keep, removed, want)
			}
			if len(model) > keep {
				model = model[len(model)-keep:]
			}
		default:
			if len(model) > 0 {
				lo := model[rng.IntN(len(model))]
				var got []StreamID
				st.Range(lo, MaxStreamID, rng.IntN(2) == 0, func(e StreamEntry) bool { got = append(got, e.ID); return true })
				slices.SortFunc(got, func(a, b StreamID) int {
					if a.Less(b) {
						return -1
					}
					return 1
				})
				i, _ := slices.BinarySearchFunc(model, lo, func(a, b StreamID) int {
					if a.Less(b) {
						return -1
					}
					if b.Less(a) {
						return 1
					}
					return 0
				})
				if !slices.Equal(got, model[i:]) {
					t.Fatalf("step %d: Range from %v = %v, want %v", step, lo, got, model[i:])
				}
			}
		}
		if st.Len() != len(model) {
			t.Fatalf("step %d: Len %d, want %d", step, st.Len(), len(model))
		}
	}
	var all []StreamID
	st.Range(StreamID{}, MaxStreamID, false, func(e StreamEntry) bool { all = append(all, e.ID); return true })
	if !slices.Equal(all, model) {
		t.Fatalf("final contents differ: %d entries vs %d", len(all), len(model))
	}
	if first, ok := st.First(); len(model) > 0 && (!ok || first.ID != model[0]) {
		t.Fatalf("First = %v, want %v", first.ID, model[0])
	}
	if last, ok := st.Last(); len(model) > 0 && (!ok || last.ID != model[len(model)-1]) {
		t.Fatalf("Last = %v, want %v", last.ID, model[len(model)-1])
	}
}
