package keyspace

import (
	"cmp"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// zmodel is a large sorted set's reference: entries in a sorted slice.
type zmodel struct {
	entries []Entry // by (score, member)
	scores  map[string]float64
}

func zcmp(a, b Entry) int {
	if c := cmp.Compare(a.Score, b.Score); a.Score != b.Score {
		return c
	}
	return strings.Compare(string(a.Member), string(b.Member))
}

func (m *zmodel) find(e Entry) (int, bool) { return slices.BinarySearchFunc(m.entries, e, zcmp) }

func (m *zmodel) add(member string, s float64) bool {
	old, ok := m.scores[member]
	if ok {
		if old == s {
			return false
		}
		m.remove(member)
	}
	m.scores[member] = s
	i, _ := m.find(Entry{[]byte(member), s})
	m.entries = slices.Insert(m.entries, i, Entry{[]byte(member), s})
	return !ok
}

func (m *zmodel) remove(member string) bool {
	s, ok := m.scores[member]
	if !ok {
		return false
	}
	delete(m.scores, member)
	i, _ := m.find(Entry{[]byte(member), s})
	m.entries = slices.Delete(m.entries, i, i+1)
	return true
}

// firstWhere is the index of the first entry for which p holds (p false, then true).
func (m *zmodel) firstWhere(p func(Entry) bool) int {
	i, _ := slices.BinarySearchFunc(m.entries, true, func(e Entry, _ bool) int {
		if p(e) {
			return 1
		}
		return -1
	})
	return i
}

func fmtEntries(es []Entry) string {
	var b strings.Builder
	for _, e := range es {
		fmt.Fprintf(&b, "%s=%v(%x) ", e.Member, e.Score, math.Float64bits(e.Score))
	}
	return b.String()
}

// window lists up to 8 model entries from lo to hi (exclusive), descending with rev.
func (m *zmodel) window(lo, hi int, rev bool) []Entry {
	lo, hi = max(lo, 0), min(hi, len(m.entries))
	if lo >= hi {
		return nil
	}
	if rev {
		out := slices.Clone(m.entries[max(lo, hi-8):hi])
		slices.Reverse(out)
		return out
	}
	return m.entries[lo:min(hi, lo+8)]
}

func collect8(run func(fn func(Entry) bool)) []Entry {
	var out []Entry
	run(func(e Entry) bool {
		out = append(out, Entry{slices.Clone(e.Member), e.Score})
		return len(out) < 8
	})
	return out
}

// sameEntries compares members and the bits of scores (-0 is not 0).
func sameEntries(a, b []Entry) bool {
	return slices.EqualFunc(a, b, func(x, y Entry) bool {
		return string(x.Member) == string(y.Member) && math.Float64bits(x.Score) == math.Float64bits(y.Score)
	})
}

// checkZTree verifies the tree's invariants: counts, separators, leaf links and sizes, equal
// depth, fan-out of inner nodes, and the accounting.
func checkZTree(t *testing.T, tr *ztree) {
	t.Helper()
	var leaves []*znode
	mem, depth := int64(0), -1
	var payload int64
	var walkNode func(n *znode, d int, lo, hi *zsep) int
	inRange := func(s float64, m []byte, lo, hi *zsep) bool {
		return (lo == nil || !zless(s, m, lo.score, []byte(lo.member))) && (hi == nil || zless(s, m, hi.score, []byte(hi.member)))
	}
	walkNode = func(n *znode, d int, lo, hi *zsep) int {
		mem += znodeSize
		if n.leaf() {
			if depth >= 0 && depth != d {
				t.Fatalf("leaves at depths %d and %d", depth, d)
			}
			depth = d
			leaves = append(leaves, n)
			mem += int64(cap(n.b))
			count := 0
			for off := 0; off < len(n.b); count++ {
				var e Entry
				e, off = zentryAt(n.b, off)
				payload += int64(len(e.Member))
				if !inRange(e.Score, e.Member, lo, hi) {
					t.Fatalf("entry %q %v outside its separators", e.Member, e.Score)
				}
			}
			if n != tr.root && count == 0 {
				t.Fatal("an empty leaf")
			}
			if len(n.b) > ztreeLeafMax && count > 1 {
				t.Fatalf("a leaf of %d bytes with %d entries", len(n.b), count)
			}
			return count
		}
		mem += ztreeInnerSlot * ztreeInnerMax
		if len(n.kids) != len(n.counts) || len(n.kids) != len(n.seps)+1 {
			t.Fatalf("inner node with %d kids, %d counts, %d separators", len(n.kids), len(n.counts), len(n.seps))
		}
		if len(n.kids) > ztreeInnerMax || n != tr.root && len(n.kids) < ztreeInnerMin || n == tr.root && len(n.kids) < 2 {
			t.Fatalf("inner node with %d kids", len(n.kids))
		}
		total := 0
		for i, k := range n.kids {
			klo, khi := lo, hi
			if i > 0 {
				klo = &n.seps[i-1]
			}
			if i < len(n.seps) {
				khi = &n.seps[i]
			}
			if c := walkNode(k, d+1, klo, khi); c != n.counts[i] {
				t.Fatalf("kid %d holds %d entries, counted %d", i, c, n.counts[i])
			}
			total += n.counts[i]
		}
		return total
	}
	if n := walkNode(tr.root, 0, nil, nil); n != tr.n {
		t.Fatalf("tree holds %d entries, n %d", n, tr.n)
	}
	if mem != tr.mem || payload != tr.payload {
		t.Fatalf("accounting: mem %d, counted %d; payload %d, counted %d", tr.mem, mem, tr.payload, payload)
	}
	for i, l := range leaves {
		if i > 0 && l.prev != leaves[i-1] || i == 0 && l.prev != nil {
			t.Fatalf("leaf %d: wrong prev link", i)
		}
		if i+1 < len(leaves) && l.next != leaves[i+1] || i+1 == len(leaves) && l.next != nil {
			t.Fatalf("leaf %d: wrong next link", i)
		}
	}
}

// The large form against a sorted slice: 100,000 random writes on up to 20,000 members with
// few distinct scores, members of every size (some larger than a leaf), and every query after
// each write; then a mass deletion, after which the memory held follows the entries down.
func TestZSetLargeAgainstModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(28, 1))
	z := &ZSet{big: newZSetBig(0)}
	lex := &ZSet{big: newZSetBig(0)} // the same members, all with score 0: lexical ranges
	m := &zmodel{scores: map[string]float64{}}
	lm := &zmodel{scores: map[string]float64{}}
	const members = 20000
	names := make([]string, members)
	for i := range names {
		pad := 0
		switch r := rng.IntN(1000); {
		case r < 2:
			pad = 1500 + rng.IntN(3000) // larger than a leaf
		case r < 100:
			pad = rng.IntN(200)
		}
		names[i] = fmt.Sprintf("m%05d", i) + strings.Repeat("x", pad)
	}
	scores := []float64{0, math.Copysign(0, -1), 1, -1, 2.5, 1e300, -1e300, math.Inf(1), math.Inf(-1), 1 << 53, -(1 << 52), 3, 0.1}
	score := func() float64 {
		if rng.IntN(4) == 0 {
			return scores[rng.IntN(len(scores))]
		}
		return float64(rng.IntN(40))
	}
	const steps = 100000
	for step := 0; step < steps; step++ {
		addPct := 85
		switch {
		case step > steps*7/10:
			addPct = 15
		case step > steps*4/10:
			addPct = 50
		}
		name := names[rng.IntN(members)]
		arg := []byte(name)
		if n := z.Len(); n > 0 && rng.IntN(10) == 0 {
			// A member the set handed out, as ZPOPMIN removes and ZINCRBY may re-add one: a
			// view into the bytes the write moves.
			e := z.At(rng.IntN(n))
			name, arg = string(e.Member), e.Member
		}
		if rng.IntN(100) < addPct {
			s := score()
			if got, want := z.Add(arg, s), m.add(name, s); got != want {
				t.Fatalf("step %d: Add(%s, %v) = %v, want %v", step, name, s, got, want)
			}
			lex.Add([]byte(name), 0)
			lm.add(name, 0)
		} else {
			if got, want := z.Remove(arg), m.remove(name); got != want {
				t.Fatalf("step %d: Remove(%s) = %v, want %v", step, name, got, want)
			}
			lex.Remove([]byte(name))
			lm.remove(name)
		}
		checkZQueries(t, rng, step, z, m, lex, lm, names, scores)
		if step%5000 == 0 || step == steps-1 {
			checkZTree(t, z.big.tree)
			checkZTree(t, lex.big.tree)
			if got := collect(z); !sameEntries(got, m.entries) {
				t.Fatalf("step %d: contents differ", step)
			}
		}
	}
	t.Logf("%d members after the random writes", z.Len())

	// Build up again, delete all but one in a hundred, and compare the memory held with the
	// entries' own bytes.
	for _, name := range names {
		z.Add([]byte(name), score())
	}
	full := z.big.tree.mem
	var live int64
	for i, name := range names {
		if i%100 != 0 {
			z.Remove([]byte(name))
			continue
		}
		s, _ := z.Score([]byte(name))
		live += int64(ztreeScoreSize(s) + elemSize(len(name)))
	}
	checkZTree(t, z.big.tree)
	if mem := z.big.tree.mem; mem > 4*live+4*znodeSize+2*ztreeLeafMax {
		t.Fatalf("after deleting 99%%: the tree holds %d bytes (%d when full) for %d bytes of entries", mem, full, live)
	}
	if b, p := z.Bytes(), z.PayloadBytes(); b > 8*p+64<<10 {
		t.Fatalf("after deleting 99%%: Bytes %d for %d bytes of members", b, p)
	}
}

func collect(z *ZSet) []Entry {
	var out []Entry
	z.Each(func(e Entry) bool { out = append(out, Entry{slices.Clone(e.Member), e.Score}); return true })
	return out
}

func checkZQueries(t *testing.T, rng *rand.Rand, step int, z *ZSet, m *zmodel, lex *ZSet, lm *zmodel, names []string, scores []float64) {
	t.Helper()
	fail := func(what string, got, want any) {
		t.Helper()
		t.Fatalf("step %d: %s = %v, want %v", step, what, got, want)
	}
	n := len(m.entries)
	if z.Len() != n {
		fail("Len", z.Len(), n)
	}
	name := names[rng.IntN(len(names))]
	s, ok := z.Score([]byte(name))
	ws, wok := m.scores[name]
	if ok != wok || math.Float64bits(s) != math.Float64bits(ws) {
		fail("Score("+name+")", fmt.Sprint(s, ok), fmt.Sprint(ws, wok))
	}
	r, ok := z.Rank([]byte(name))
	wr, _ := m.find(Entry{[]byte(name), ws})
	if ok != wok || ok && r != wr {
		fail("Rank("+name+")", fmt.Sprint(r, ok), fmt.Sprint(wr, wok))
	}
	if n > 0 {
		i := rng.IntN(n)
		if got, want := []Entry{z.At(i)}, m.entries[i:i+1]; !sameEntries(got, want) {
			fail(fmt.Sprint("At(", i, ")"), fmtEntries(got), fmtEntries(want))
		}
	}
	for _, rev := range []bool{false, true} {
		e, ok := z.First(rev)
		if want := m.window(0, n, rev); ok != (n > 0) || ok && !sameEntries([]Entry{e}, want[:1]) {
			fail(fmt.Sprint("First(", rev, ")"), fmtEntries([]Entry{e}), fmtEntries(want))
		}

		a := rng.IntN(n + 10)
		b := a + rng.IntN(20)
		if rng.IntN(10) == 0 {
			a, b = b, a
		}
		got := collect8(func(fn func(Entry) bool) { z.RangeByRank(a, b, rev, fn) })
		var wantR []Entry
		if a <= b {
			if rev {
				wantR = m.window(n-1-min(b, n-1), n-a, true)
			} else {
				wantR = m.window(a, b+1, false)
			}
		}
		if !sameEntries(got, wantR) {
			fail(fmt.Sprintf("RangeByRank(%d, %d, %v)", a, b, rev), fmtEntries(got), fmtEntries(wantR))
		}

		pick := func() float64 {
			if rng.IntN(2) == 0 {
				return scores[rng.IntN(len(scores))]
			}
			return float64(rng.IntN(42)) - 1
		}
		sr := ScoreRange{Min: pick(), Max: pick(), MinOpen: rng.IntN(2) == 0, MaxOpen: rng.IntN(2) == 0}
		lo := m.firstWhere(func(e Entry) bool { return sr.gteMin(e.Score) })
		hi := m.firstWhere(func(e Entry) bool { return !sr.lteMax(e.Score) })
		if got, want := collect8(func(fn func(Entry) bool) { z.RangeByScore(sr, rev, fn) }), m.window(lo, hi, rev); !sameEntries(got, want) {
			fail(fmt.Sprintf("RangeByScore(%+v, %v)", sr, rev), fmtEntries(got), fmtEntries(want))
		}
		if got := z.CountInRange(sr); got != max(hi-lo, 0) {
			fail(fmt.Sprintf("CountInRange(%+v)", sr), got, max(hi-lo, 0))
		}

		lr := LexRange{Min: names[rng.IntN(len(names))][:6], Max: names[rng.IntN(len(names))], MinOpen: rng.IntN(2) == 0, MaxOpen: rng.IntN(2) == 0, MinInf: rng.IntN(8) == 0, MaxInf: rng.IntN(8) == 0}
		llo := lm.firstWhere(func(e Entry) bool { return lr.gteMin(string(e.Member)) })
		lhi := lm.firstWhere(func(e Entry) bool { return !lr.lteMax(string(e.Member)) })
		if got, want := collect8(func(fn func(Entry) bool) { lex.RangeByLex(lr, rev, fn) }), lm.window(llo, lhi, rev); !sameEntries(got, want) {
			fail(fmt.Sprintf("RangeByLex(%+v, %v)", lr, rev), fmtEntries(got), fmtEntries(want))
		}
	}
}
