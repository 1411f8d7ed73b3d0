package keyspace

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// Random sets, replacements (of other lengths, so entries move) and removals agree with a map
// at every step, with hashes narrowed so that many keys collide, values large enough to get pages
// of their own, and enough churn that pages are compacted and freed; positions stay dense.
func TestTableAgainstModel(t *testing.T) {
	for _, mask := range []uint32{^uint32(0), 0xff} {
		t.Run(fmt.Sprintf("mask%x", mask), func(t *testing.T) {
			old := tableHashMask
			tableHashMask = mask
			defer func() { tableHashMask = old }()
			rng := rand.New(rand.NewPCG(13, uint64(mask)))
			tb := newTable(0, true)
			model := map[string]string{}
			for step := 0; step < 60000; step++ {
				k := fmt.Sprint("key:", rng.IntN(3000))
				switch rng.IntN(3) {
				case 0:
					_, had := model[k]
					if tb.remove([]byte(k)) != had {
						t.Fatalf("step %d: remove(%s)", step, k)
					}
					delete(model, k)
				default:
					n := rng.IntN(40)
					if rng.IntN(200) == 0 {
						n = tableLarge + rng.IntN(3*tablePage)
					}
					v := strings.Repeat(string(rune('a'+rng.IntN(26))), n)
					_, had := model[k]
					if tb.set([]byte(k), []byte(v)) == had {
						t.Fatalf("step %d: set(%s) new=%v", step, k, had)
					}
					model[k] = v
				}
				if tb.len() != len(model) {
					t.Fatalf("step %d: len %d, model %d", step, tb.len(), len(model))
				}
				if step%5000 == 0 || step == 59999 {
					seen := map[string]bool{}
					for p := 0; p < tb.len(); p++ {
						k, v := tb.at(p)
						if model[string(k)] != string(v) || seen[string(k)] {
							t.Fatalf("step %d: position %d holds %s", step, p, k)
						}
						seen[string(k)] = true
					}
					for k, v := range model {
						if got, ok := tb.get([]byte(k)); !ok || string(got) != v {
							t.Fatalf("step %d: get(%s)", step, k)
						}
					}
					live := int64(0)
					for id, pg := range tb.pages {
						if pg != nil {
							live += int64(len(pg)) - int64(tb.dead[id])
						}
					}
					if total := tb.pageCap; total > 3*live+4*tablePage {
						t.Fatalf("step %d: %d bytes of pages for %d live bytes", step, total, live)
					}
				}
			}
			c := tb.clone()
			var a, b []string
			tb.each(func(k, v []byte) bool { a = append(a, string(k)+"="+string(v)); return true })
			c.each(func(k, v []byte) bool { b = append(b, string(k)+"="+string(v)); return true })
			if strings.Join(a, ",") != strings.Join(b, ",") {
				t.Fatal("a clone lists other entries or another order")
			}
		})
	}
}
