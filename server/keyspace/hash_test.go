package keyspace

import (
	"fmt"
	"math/rand/v2"
	"testing"
)

// Random sets and deletes agree with a plain map, and Each lists every field once, in the same
// order on every call until the hash changes.
func TestHashAgainstModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	h := NewHash()
	model := map[string]string{}
	for step := 0; step < 20000; step++ {
		f := fmt.Sprintf("f%d", rng.IntN(300))
		if rng.IntN(3) == 0 {
			_, had := model[f]
			if h.Delete([]byte(f)) != had {
				t.Fatalf("step %d: Delete(%s) disagrees with the model", step, f)
			}
			delete(model, f)
		} else {
			v := fmt.Sprint(rng.IntN(1000))
			_, had := model[f]
			if h.Set([]byte(f), []byte(v)) == had {
				t.Fatalf("step %d: Set(%s) new=%v, model had it: %v", step, f, !had, had)
			}
			model[f] = v
		}
		if h.Len() != len(model) || h.Bytes() < 0 {
			t.Fatalf("step %d: Len %d Bytes %d, model %d", step, h.Len(), h.Bytes(), len(model))
		}
	}
	var first, second []string
	h.Each(func(fb, v []byte) bool {
		f := string(fb)
		if model[f] != string(v) {
			t.Fatalf("field %s = %q, model %q", f, v, model[f])
		}
		first = append(first, f)
		return true
	})
	h.Each(func(f, _ []byte) bool { second = append(second, string(f)); return true })
	if len(first) != len(model) || fmt.Sprint(first) != fmt.Sprint(second) {
		t.Fatalf("Each listed %d fields (model %d), or in a different order the second time", len(first), len(model))
	}
	c := h.Clone()
	var cloned []string
	c.Each(func(f, _ []byte) bool { cloned = append(cloned, string(f)); return true })
	if fmt.Sprint(cloned) != fmt.Sprint(first) {
		t.Fatal("a clone lists its fields in another order")
	}
}
