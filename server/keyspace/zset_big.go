package keyspace

import "math"

// The large sorted set (encoding "skiplist", as Redis names it): a table from member to score,
// for ZSCORE and for finding a member's place in O(1), and a ztree ordered by (score, member),
// for ranks and ranges in O(log n). Per member it costs the member's bytes twice, its score
// twice (a byte for small integers) and a few bytes of index: less than a Redis skip list node
// and dict entry.
type zsetBig struct {
	dict *table // member → score, encoded as in the leaves
	tree *ztree
}

func newZSetBig(n int) *zsetBig {
	return &zsetBig{dict: newTable(n, true), tree: newZTree()}
}

func (z *zsetBig) len() int { return z.tree.n }

func (z *zsetBig) memory() int64 { return z.dict.memory() + z.tree.mem }

func (z *zsetBig) score(member []byte) (float64, bool) {
	v, ok := z.dict.get(member)
	if !ok {
		return 0, false
	}
	s, _ := scoreAt(v, 0)
	return s, true
}

func (z *zsetBig) add(member []byte, score float64) bool {
	var buf [9]byte
	enc := appendZTreeScore(buf[:0], score)
	old, ok := z.score(member)
	if ok {
		// -0 and 0 are equal scores, as in Redis's skip list: the member keeps the one it has.
		if old != score {
			// member may view the tree's bytes, which the removal moves.
			var buf [64]byte
			m := append(buf[:0], member...)
			z.tree.remove(old, m)
			z.tree.insert(score, m)
			z.dict.set(m, enc)
		}
		return false
	}
	z.dict.set(member, enc)
	z.tree.insert(score, member)
	return true
}

// remove deletes member, which may view the tree's bytes: the table is written first, and the
// tree moves the bytes only once it is done reading them.
func (z *zsetBig) remove(member []byte) bool {
	score, ok := z.score(member)
	if !ok {
		return false
	}
	z.dict.remove(member)
	z.tree.remove(score, member)
	return true
}

func (z *zsetBig) rankOf(member []byte) (int, bool) {
	score, ok := z.score(member)
	if !ok {
		return 0, false
	}
	_, _, _, rank := z.tree.seek(zge(score, member))
	return rank, true
}

func (z *zsetBig) rangeByRank(start, stop int, rev bool, fn func(Entry) bool) {
	n := z.tree.n
	if start > stop || start >= n {
		return
	}
	left := min(stop, n-1) - start + 1
	limited := func(e Entry) bool {
		left--
		return fn(e) && left > 0
	}
	if rev {
		leaf, idx := z.tree.byRank(n - 1 - start)
		walkBack(leaf, idx, limited)
		return
	}
	leaf, idx := z.tree.byRank(start)
	walk(leaf, leafOffsetOf(leaf.b, idx), limited)
}

func (z *zsetBig) first(rev bool) (Entry, bool) {
	if z.tree.n == 0 {
		return Entry{}, false
	}
	if rev {
		var last Entry
		walkBack(z.tree.lastLeaf(), math.MaxInt, func(e Entry) bool { last = e; return false })
		return last, true
	}
	e, _ := zentryAt(z.tree.firstLeaf().b, 0)
	return e, true
}

// walkRange calls fn for the entries from the first where lo holds to the last before the
// first where hi holds, ascending, or descending from that last with rev.
func (z *zsetBig) walkRange(lo, hi zpred, rev bool, fn func(Entry) bool) {
	if rev {
		leaf, idx, _, _ := z.tree.seek(hi)
		walkBack(leaf, idx-1, func(e Entry) bool { return lo(e.Score, e.Member) && fn(e) })
		return
	}
	leaf, _, off, _ := z.tree.seek(lo)
	walk(leaf, off, func(e Entry) bool { return !hi(e.Score, e.Member) && fn(e) })
}

func scorePreds(r *ScoreRange) (lo, hi zpred) {
	return func(s float64, _ []byte) bool { return r.gteMin(s) },
		func(s float64, _ []byte) bool { return !r.lteMax(s) }
}

func (z *zsetBig) rangeByScore(r ScoreRange, rev bool, fn func(Entry) bool) {
	lo, hi := scorePreds(&r)
	z.walkRange(lo, hi, rev, fn)
}

func (z *zsetBig) countInRange(r ScoreRange) int {
	lo, hi := scorePreds(&r)
	_, _, _, first := z.tree.seek(lo)
	_, _, _, end := z.tree.seek(hi)
	return max(end-first, 0)
}

func (z *zsetBig) rangeByLex(r LexRange, rev bool, fn func(Entry) bool) {
	z.walkRange(func(_ float64, m []byte) bool { return r.gteMin(string(m)) },
		func(_ float64, m []byte) bool { return !r.lteMax(string(m)) }, rev, fn)
}

func (z *zsetBig) each(fn func(Entry) bool) { walk(z.tree.firstLeaf(), 0, fn) }
