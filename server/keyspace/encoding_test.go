package keyspace

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
)

// withLimits runs a test under other encoding thresholds and restores them after.
func withLimits(t *testing.T, change func(*Limits)) {
	t.Helper()
	old := CurrentLimits()
	l := old
	change(&l)
	SetLimits(l)
	t.Cleanup(func() { SetLimits(old) })
}

// A hash stays compact up to hash-max-listpack-entries fields and values of up to
// hash-max-listpack-value bytes, converts at the first write past either, and stays converted.
func TestHashConvertsAtRedisThresholds(t *testing.T) {
	withLimits(t, func(l *Limits) { l.HashMaxListpackEntries, l.HashMaxListpackValue = 4, 8 })
	h := NewHash()
	for i := 0; i < 4; i++ {
		h.Set([]byte(fmt.Sprint("f", i)), []byte("12345678"))
	}
	if h.Encoding() != "listpack" {
		t.Fatalf("4 fields of 8 bytes: %s, want listpack", h.Encoding())
	}
	h.Set([]byte("f0"), []byte("x")) // an update does not count
	if h.Encoding() != "listpack" {
		t.Fatal("updating a field converted the hash")
	}
	h.Set([]byte("f4"), []byte("x"))
	if h.Encoding() != "hashtable" || h.Len() != 5 {
		t.Fatalf("5th field: %s with %d fields, want hashtable with 5", h.Encoding(), h.Len())
	}
	for i := 1; i < 5; i++ {
		h.Delete([]byte(fmt.Sprint("f", i)))
	}
	if h.Encoding() != "hashtable" {
		t.Fatal("a hashtable went back to listpack")
	}

	long := NewHash()
	long.Set([]byte("f"), []byte("123456789"))
	if long.Encoding() != "hashtable" {
		t.Fatal("a 9-byte value kept the listpack encoding")
	}
	field := NewHash()
	field.Set([]byte("123456789"), []byte("v"))
	if field.Encoding() != "hashtable" {
		t.Fatal("a 9-byte field kept the listpack encoding")
	}
	pre := NewHash()
	pre.Set([]byte("f"), []byte("v"))
	pre.ConvertForLengths([][]byte{[]byte("f"), []byte("123456789")})
	if pre.Encoding() != "hashtable" {
		t.Fatal("ConvertForLengths left a hash compact after a 9-byte argument")
	}
	if v, ok := pre.Get([]byte("f")); !ok || string(v) != "v" {
		t.Fatal("conversion lost a field")
	}
}

// Random writes to a compact and a large hash agree with a map at every step, across the
// conversion, and the compact one's order is insertion order.
func TestHashEncodingsAgainstModel(t *testing.T) {
	for _, entries := range []int{1 << 30, 40, 0} {
		t.Run(fmt.Sprint("entries", entries), func(t *testing.T) {
			withLimits(t, func(l *Limits) { l.HashMaxListpackEntries, l.HashMaxListpackValue = entries, 1<<30 })
			rng := rand.New(rand.NewPCG(5, uint64(entries)))
			h := NewHash()
			model := map[string]string{}
			for step := 0; step < 5000; step++ {
				f := fmt.Sprint("field", rng.IntN(60))
				switch rng.IntN(4) {
				case 0:
					_, had := model[f]
					if h.Delete([]byte(f)) != had {
						t.Fatalf("step %d: Delete(%s) disagrees", step, f)
					}
					delete(model, f)
				default:
					v := make([]byte, rng.IntN(300))
					for i := range v {
						v[i] = byte('a' + rng.IntN(26))
					}
					_, had := model[f]
					if h.Set([]byte(f), v) == had {
						t.Fatalf("step %d: Set(%s) reported new=%v", step, f, had)
					}
					model[f] = string(v)
				}
				if h.Len() != len(model) {
					t.Fatalf("step %d: Len %d, model %d", step, h.Len(), len(model))
				}
				if rng.IntN(50) == 0 {
					got := map[string]string{}
					h.Each(func(f, v []byte) bool { got[string(f)] = string(v); return true })
					for i := 0; i < h.Len(); i++ {
						f, v := h.At(i)
						if got[string(f)] != string(v) {
							t.Fatalf("step %d: At(%d) = %s", step, i, f)
						}
					}
					if fmt.Sprint(got) != fmt.Sprint(model) {
						t.Fatalf("step %d: contents differ from the model", step)
					}
					for f, v := range model {
						if g, ok := h.Get([]byte(f)); !ok || string(g) != v {
							t.Fatalf("step %d: Get(%s)", step, f)
						}
					}
				}
			}
			want := "listpack"
			if entries < 60 {
				want = "hashtable"
			}
			if h.Encoding() != want {
				t.Fatalf("encoding %s, want %s", h.Encoding(), want)
			}
		})
	}
}

// An intset holds integers in the narrowest width, widens when a member needs it, answers
// members in ascending order, and becomes a hashtable at the first non-integer member or past
// set-max-intset-entries.
func TestSetIntsetAndConversion(t *testing.T) {
	withLimits(t, func(l *Limits) { l.SetMaxIntsetEntries = 8 })
	s := NewSet()
	vals := []int64{5, -3, math.MaxInt16, math.MinInt16 - 1, math.MaxInt32 + 1, math.MinInt64, math.MaxInt64}
	for _, v := range vals {
		if !s.Add([]byte(strconv.FormatInt(v, 10))) {
			t.Fatalf("Add(%d) said not new", v)
		}
	}
	if s.Encoding() != "intset" || s.ints.width() != 8 {
		t.Fatalf("encoding %s width %d, want intset of 8-byte members", s.Encoding(), s.ints.width())
	}
	var got []int64
	s.Each(func(m []byte) bool { v, _ := strconv.ParseInt(string(m), 10, 64); got = append(got, v); return true })
	want := slices.Clone(vals)
	slices.Sort(want)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("members %v, want %v", got, want)
	}
	for _, notInt := range []string{"01", "-0", "+1", " 1", "1.0", "9223372036854775808", ""} {
		if s.Has([]byte(notInt)) || s.Remove([]byte(notInt)) {
			t.Fatalf("%q is found in an intset", notInt)
		}
	}
	if !s.Remove([]byte("-3")) || s.Has([]byte("-3")) || s.Len() != 6 {
		t.Fatal("Remove(-3)")
	}
	s.Add([]byte("1"))
	s.Add([]byte("2"))
	if s.Encoding() != "intset" {
		t.Fatal("8 members converted")
	}
	s.Add([]byte("3"))
	if s.Encoding() != "hashtable" || s.Len() != 9 || !s.Has([]byte("-9223372036854775808")) {
		t.Fatalf("9th member: %s with %d members", s.Encoding(), s.Len())
	}

	w := NewSet()
	w.Add([]byte("7"))
	if w.ints.width() != 2 {
		t.Fatalf("a small integer takes %d bytes", w.ints.width())
	}
	w.Add([]byte("007"))
	if w.Encoding() != "hashtable" || !w.Has([]byte("7")) || !w.Has([]byte("007")) {
		t.Fatal("a non-canonical integer is a string member: the set converts and keeps both")
	}
}

// Random adds, removes and pops on a set agree with a map, through the conversion.
func TestSetAgainstModel(t *testing.T) {
	withLimits(t, func(l *Limits) { l.SetMaxIntsetEntries = 50 })
	rng := rand.New(rand.NewPCG(7, 8))
	s := NewSet()
	model := map[string]bool{}
	for step := 0; step < 4000; step++ {
		m := strconv.Itoa(rng.IntN(80) - 40)
		if step > 3000 && rng.IntN(4) == 0 {
			m = "m" + m
		}
		switch rng.IntN(5) {
		case 0:
			if s.Remove([]byte(m)) != model[m] {
				t.Fatalf("step %d: Remove(%s)", step, m)
			}
			delete(model, m)
		case 1:
			if s.Len() > 0 {
				p := string(s.Pop(rng))
				if !model[p] {
					t.Fatalf("step %d: Pop gave %q, not a member", step, p)
				}
				delete(model, p)
			}
		default:
			if s.Add([]byte(m)) == model[m] {
				t.Fatalf("step %d: Add(%s)", step, m)
			}
			model[m] = true
		}
		if s.Len() != len(model) {
			t.Fatalf("step %d: Len %d, model %d", step, s.Len(), len(model))
		}
		for i := 0; i < s.Len(); i += 7 {
			if !model[string(s.AppendAt(nil, i))] {
				t.Fatalf("step %d: AppendAt(%d) is not a member", step, i)
			}
		}
	}
}

// A compact and a large sorted set given the same writes answer every query alike (scores
// printed +0, since the compact form keeps -0 as 0, as Redis's listpack does).
func TestZSetEncodingsAgree(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 10))
	small := &ZSet{}
	big := &ZSet{big: newZSetBig(0)}
	withLimits(t, func(l *Limits) { l.ZSetMaxListpackEntries, l.ZSetMaxListpackValue = 1<<30, 1<<30 })
	scores := []float64{0, math.Copysign(0, -1), 1, -1, 2.5, 1e300, -1e300, math.Inf(1), math.Inf(-1), 1 << 53, -(1 << 52), 3}
	dump := func(z *ZSet) string {
		var out []string
		// -0 is 0 in the compact form, as in Redis's listpack.
		z.Each(func(e Entry) bool {
			if e.Score == 0 {
				e.Score = 0
			}
			out = append(out, fmt.Sprintf("%s=%v", e.Member, e.Score))
			return true
		})
		return fmt.Sprint(z.Len(), out)
	}
	for step := 0; step < 3000; step++ {
		m := []byte(fmt.Sprint("m", rng.IntN(40)))
		switch rng.IntN(4) {
		case 0:
			if small.Remove(m) != big.Remove(m) {
				t.Fatalf("step %d: Remove disagrees", step)
			}
		default:
			sc := scores[rng.IntN(len(scores))]
			if small.Add(m, sc) != big.Add(m, sc) {
				t.Fatalf("step %d: Add disagrees", step)
			}
		}
		if small.Encoding() != "listpack" || big.Encoding() != "skiplist" {
			t.Fatal("an encoding changed under huge thresholds")
		}
		if dump(small) != dump(big) {
			t.Fatalf("step %d:\ncompact %s\nlarge   %s", step, dump(small), dump(big))
		}
		if rng.IntN(20) != 0 {
			continue
		}
		q := func(name string, f func(z *ZSet) string) {
			if a, b := f(small), f(big); a != b {
				t.Fatalf("step %d: %s: compact %s, large %s", step, name, a, b)
			}
		}
		collect := func(z *ZSet, run func(z *ZSet, fn func(Entry) bool)) string {
			var out []string
			run(z, func(e Entry) bool { out = append(out, string(e.Member)); return len(out) < 7 })
			return fmt.Sprint(out)
		}
		a, b := rng.IntN(45), rng.IntN(45)
		lo, hi := scores[rng.IntN(len(scores))], scores[rng.IntN(len(scores))]
		r := ScoreRange{Min: lo, Max: hi, MinOpen: rng.IntN(2) == 0, MaxOpen: rng.IntN(2) == 0}
		lr := LexRange{Min: fmt.Sprint("m", a), Max: fmt.Sprint("m", b), MinOpen: rng.IntN(2) == 0, MinInf: rng.IntN(5) == 0, MaxInf: rng.IntN(5) == 0}
		for _, rev := range []bool{false, true} {
			q("RangeByRank", func(z *ZSet) string {
				return collect(z, func(z *ZSet, fn func(Entry) bool) { z.RangeByRank(min(a, b), max(a, b), rev, fn) })
			})
			q("RangeByScore", func(z *ZSet) string {
				return collect(z, func(z *ZSet, fn func(Entry) bool) { z.RangeByScore(r, rev, fn) })
			})
			lex := func(z *ZSet) string {
				return collect(z, func(z *ZSet, fn func(Entry) bool) { z.RangeByLex(lr, rev, fn) })
			}
			// Lexical ranges are defined for equal scores only: compare on copies with all 0.
			s0, b0 := &ZSet{}, &ZSet{big: newZSetBig(0)}
			small.Each(func(e Entry) bool { s0.Add(e.Member, 0); b0.Add(e.Member, 0); return true })
			if a, b := lex(s0), lex(b0); a != b {
				t.Fatalf("step %d: RangeByLex %+v rev %v: compact %s, large %s", step, lr, rev, a, b)
			}
			q("First", func(z *ZSet) string { e, ok := z.First(rev); return fmt.Sprint(string(e.Member), e.Score+0, ok) })
		}
		q("CountInRange", func(z *ZSet) string { return fmt.Sprint(z.CountInRange(r)) })
		q("Rank", func(z *ZSet) string { n, ok := z.Rank(m); return fmt.Sprint(n, ok) })
		q("Score", func(z *ZSet) string { s, ok := z.Score(m); return fmt.Sprint(s+0, ok) })
		if n := small.Len(); n > 0 {
			i := rng.IntN(n)
			q("At", func(z *ZSet) string { e := z.At(i); return fmt.Sprint(string(e.Member), e.Score+0) })
		}
	}
	c, bc := small.Clone(), big.Clone()
	if dump(c) != dump(small) || c.Encoding() != "listpack" || dump(bc) != dump(big) || bc.Encoding() != "skiplist" {
		t.Fatal("clones changed the contents or the encoding")
	}
}

// A sorted set converts when a write passes zset-max-listpack-entries or
// zset-max-listpack-value, and NewZSetFor starts large when the hint already does.
func TestZSetConvertsAtRedisThresholds(t *testing.T) {
	withLimits(t, func(l *Limits) { l.ZSetMaxListpackEntries, l.ZSetMaxListpackValue = 3, 4 })
	z := NewZSet()
	z.Add([]byte("a"), 1)
	z.Add([]byte("b"), 2)
	z.Add([]byte("cccc"), 3)
	if z.Encoding() != "listpack" {
		t.Fatal("3 members of up to 4 bytes converted")
	}
	z.Add([]byte("a"), 10)
	if z.Encoding() != "listpack" {
		t.Fatal("a score update converted")
	}
	z.Add([]byte("d"), 4)
	if z.Encoding() != "skiplist" || z.Len() != 4 {
		t.Fatal("4th member kept the listpack")
	}
	if e, _ := z.First(true); string(e.Member) != "a" || e.Score != 10 {
		t.Fatalf("highest %s %v", e.Member, e.Score)
	}
	l := NewZSet()
	l.Add([]byte("eeeee"), 1)
	if l.Encoding() != "skiplist" {
		t.Fatal("a 5-byte member kept the listpack")
	}
	if NewZSetFor(0, 5).Encoding() != "skiplist" || NewZSetFor(0, 4).Encoding() != "listpack" {
		t.Fatal("NewZSetFor ignores its hints")
	}
}

// Random list operations agree with a slice, with nodes small enough that most operations
// cross node boundaries.
func TestListAgainstModel(t *testing.T) {
	for _, fill := range []int{0, 1, 3, -1, -5} {
		t.Run(fmt.Sprint("fill", fill), func(t *testing.T) {
			withLimits(t, func(l *Limits) { l.ListMaxListpackSize = fill })
			rng := rand.New(rand.NewPCG(11, uint64(fill+10)))
			l := NewList()
			var model [][]byte
			elem := func() []byte {
				n := rng.IntN(20)
				if rng.IntN(30) == 0 {
					n = 5000 + rng.IntN(5000) // bigger than a node
				}
				v := make([]byte, n)
				for i := range v {
					v[i] = byte('a' + rng.IntN(3))
				}
				return v
			}
			for step := 0; step < 6000; step++ {
				switch op := rng.IntN(13); {
				case op == 12:
					batch := make([][]byte, rng.IntN(8))
					for i := range batch {
						batch[i] = elem()
					}
					front := rng.IntN(2) == 0
					l.PushAll(batch, front)
					for _, v := range batch {
						if front {
							model = append([][]byte{v}, model...)
						} else {
							model = append(model, v)
						}
					}
				case op < 3:
					v := elem()
					l.PushFront(v)
					model = append([][]byte{v}, model...)
				case op < 6:
					v := elem()
					l.PushBack(v)
					model = append(model, v)
				case op == 6 && len(model) > 0:
					if got := l.PopFront(); string(got) != string(model[0]) {
						t.Fatalf("step %d: PopFront %q, want %q", step, got, model[0])
					}
					model = model[1:]
				case op == 7 && len(model) > 0:
					if got := l.PopBack(); string(got) != string(model[len(model)-1]) {
						t.Fatalf("step %d: PopBack %q", step, got)
					}
					model = model[:len(model)-1]
				case op == 8 && len(model) > 0:
					i, v := rng.IntN(len(model)), elem()
					l.Set(i, v)
					model[i] = v
				case op == 9:
					i, v := rng.IntN(len(model)+1), elem()
					l.Insert(i, v)
					model = slices.Insert(model, i, v)
				case op == 10 && len(model) > 0:
					i := rng.IntN(len(model))
					l.Remove(i)
					model = slices.Delete(model, i, i+1)
				case op == 11 && len(model) > 0:
					target, limit, fromTail := model[rng.IntN(len(model))], rng.IntN(3), rng.IntN(2) == 0
					n := l.RemoveMatching(func(v []byte) bool { return string(v) == string(target) }, limit, fromTail)
					removed := 0
					keep := func(v []byte) bool {
						if string(v) == string(target) && (limit == 0 || removed < limit) {
							removed++
							return false
						}
						return true
					}
					var next [][]byte
					if fromTail {
						for i := len(model) - 1; i >= 0; i-- {
							if keep(model[i]) {
								next = append([][]byte{model[i]}, next...)
							}
						}
					} else {
						for _, v := range model {
							if keep(v) {
								next = append(next, v)
							}
						}
					}
					if n != removed {
						t.Fatalf("step %d: RemoveMatching removed %d, want %d", step, n, removed)
					}
					model = next
				}
				if rng.IntN(40) == 0 && len(model) > 2 {
					a := rng.IntN(len(model))
					b := a + rng.IntN(len(model)-a)
					l.Trim(a, b)
					model = model[a : b+1]
				}
				if l.Len() != len(model) {
					t.Fatalf("step %d: Len %d, model %d", step, l.Len(), len(model))
				}
				if caps := l.caps; func() int { l.sumCaps(); return l.caps }() != caps {
					t.Fatalf("step %d: the nodes' capacities are %d, the list keeps %d", step, l.caps, caps)
				}
				if rng.IntN(10) == 0 && len(model) > 0 {
					i := rng.IntN(len(model))
					if string(l.Index(i)) != string(model[i]) {
						t.Fatalf("step %d: Index(%d)", step, i)
					}
					j := i + rng.IntN(len(model)-i)
					k := i
					l.Range(i, j, func(v []byte) bool {
						if string(v) != string(model[k]) {
							t.Fatalf("step %d: Range(%d,%d) at %d", step, i, j, k)
						}
						k++
						return true
					})
					if k != j+1 {
						t.Fatalf("step %d: Range(%d,%d) stopped at %d", step, i, j, k)
					}
					for _, fromTail := range []bool{false, true} {
						seen := 0
						l.Walk(fromTail, func(at int, v []byte) bool {
							want := seen
							if fromTail {
								want = len(model) - 1 - seen
							}
							if at != want || string(v) != string(model[at]) {
								t.Fatalf("step %d: Walk(fromTail %v) gave index %d, want %d", step, fromTail, at, want)
							}
							seen++
							return seen < 50
						})
					}
				}
			}
			var all [][]byte
			l.Each(func(v []byte) bool { all = append(all, v); return true })
			c := l.Clone()
			var cl [][]byte
			c.Each(func(v []byte) bool { cl = append(cl, v); return true })
			if fmt.Sprint(all) != fmt.Sprint(model) || fmt.Sprint(cl) != fmt.Sprint(model) {
				t.Fatal("Each or Clone differs from the model")
			}
			if fill >= 0 && fill <= 1 && l.Nodes() != l.Len() {
				t.Fatalf("fill %d: %d nodes for %d elements", fill, l.Nodes(), l.Len())
			}
		})
	}
}
