package keyspace

import (
	"encoding/binary"
	"math"
)

// ztree orders a large sorted set's entries by (score, member): a B+tree whose leaves hold
// entries packed in byte slices (the score as in the compact form, but with -0 kept, then the
// member as a packed element), linked to their neighbours for scans, and whose inner nodes keep
// each child's entry count, so rank, by-rank and first-in-range are O(log n) as in Redis's skip
// list. A skip list spends a Go object, a string header and a level array per member; a leaf
// spends a few bytes per member and one object per ztreeLeafMax bytes.
//
// Separators: seps[i] of an inner node is at most every key under kids[i+1] and greater than
// every key under kids[i]. Deletions leave them valid, so only splits, merges and
// redistributions write them.
type ztree struct {
	root    *znode
	n       int
	payload int64 // member bytes
	mem     int64 // leaf capacity and node overhead, for accounting
}

type znode struct {
	b          []byte // leaf: its entries, in order
	prev, next *znode // leaf: its neighbours
	kids       []*znode
	counts     []int // entries under each kid
	seps       []zsep
}

type zsep struct {
	score  float64
	member string
}

const (
	ztreeLeafMax  = 1024
	ztreeLeafMin  = ztreeLeafMax / 4 // a leaf under this merges with a neighbour
	ztreeInnerMax = 64
	ztreeInnerMin = ztreeInnerMax / 4
	// znodeSize is a node's own bytes, and ztreeInnerSlot an inner node's bytes per child
	// (pointer, count and separator with its member), for accounting.
	znodeSize      = 112
	ztreeInnerSlot = 8 + 8 + 24 + 16
)

func newZTree() *ztree {
	return &ztree{root: &znode{}, mem: znodeSize}
}

func (n *znode) leaf() bool { return n.kids == nil }

// zpred is a predicate over entries that is false for a prefix of the order and true after it.
type zpred func(score float64, member []byte) bool

func zless(s1 float64, m1 []byte, s2 float64, m2 []byte) bool {
	return s1 < s2 || (s1 == s2 && string(m1) < string(m2))
}

// zgt is "after (s, m)", zge "at or after".
func zgt(s float64, m []byte) zpred {
	return func(es float64, em []byte) bool { return zless(s, m, es, em) }
}

func zge(s float64, m []byte) zpred {
	return func(es float64, em []byte) bool { return !zless(es, em, s, m) }
}

func appendZTreeScore(b []byte, s float64) []byte {
	if s == 0 && math.Signbit(s) {
		b = append(b, 1)
		return binary.LittleEndian.AppendUint64(b, math.Float64bits(s))
	}
	return appendScore(b, s)
}

func ztreeScoreSize(s float64) int {
	if s == 0 && math.Signbit(s) {
		return 9
	}
	return scoreSize(s)
}

// zentryAt reads the leaf entry at off and returns it with the next entry's offset.
func zentryAt(b []byte, off int) (Entry, int) {
	s, moff := scoreAt(b, off)
	m, next := elemAt(b, moff)
	return Entry{m, s}, next
}

// leafScan returns the index and offset of the first entry of b for which p holds, or the
// entry count and len(b).
func leafScan(b []byte, p zpred) (idx, off int) {
	for off < len(b) {
		e, next := zentryAt(b, off)
		if p(e.Score, e.Member) {
			return idx, off
		}
		idx, off = idx+1, next
	}
	return idx, off
}

func leafOffsets(b []byte, buf []int32) []int32 {
	for off := 0; off < len(b); {
		buf = append(buf, int32(off))
		_, off = zentryAt(b, off)
	}
	return buf
}

// pick returns the kid of inner node n to descend into for the first entry where p holds:
// past every kid whose upper separator fails p.
func (n *znode) pick(p zpred) int {
	lo, hi := 0, len(n.seps)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if p(n.seps[mid].score, stringView(n.seps[mid].member)) {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

// seek returns the leaf holding the first entry where p holds, that entry's index and offset
// in the leaf (the leaf's length when it is the next leaf's first entry) and its rank, the
// number of entries before it.
func (t *ztree) seek(p zpred) (leaf *znode, idx, off, rank int) {
	n := t.root
	for !n.leaf() {
		j := n.pick(p)
		for _, c := range n.counts[:j] {
			rank += c
		}
		n = n.kids[j]
	}
	idx, off = leafScan(n.b, p)
	return n, idx, off, rank + idx
}

// byRank returns the leaf holding the entry of 0-based rank r < n and its index there.
func (t *ztree) byRank(r int) (*znode, int) {
	n := t.root
	for !n.leaf() {
		j := 0
		for r >= n.counts[j] {
			r -= n.counts[j]
			j++
		}
		n = n.kids[j]
	}
	return n, r
}

func leafOffsetOf(b []byte, idx int) int {
	off := 0
	for ; idx > 0; idx-- {
		_, off = zentryAt(b, off)
	}
	return off
}

// walk calls fn for the entries from offset off of leaf on, in order, until it returns false.
func walk(leaf *znode, off int, fn func(Entry) bool) {
	for ; leaf != nil; leaf, off = leaf.next, 0 {
		for off < len(leaf.b) {
			var e Entry
			e, off = zentryAt(leaf.b, off)
			if !fn(e) {
				return
			}
		}
	}
}

// walkBack calls fn for the entries from index idx of leaf back, in reverse order, until it
// returns false; idx -1 starts at the previous leaf's last entry.
func walkBack(leaf *znode, idx int, fn func(Entry) bool) {
	var buf [128]int32
	for ; leaf != nil; leaf, idx = leaf.prev, math.MaxInt {
		offs := leafOffsets(leaf.b, buf[:0])
		for i := min(idx, len(offs)-1); i >= 0; i-- {
			e, _ := zentryAt(leaf.b, int(offs[i]))
			if !fn(e) {
				return
			}
		}
	}
}

func (t *ztree) firstLeaf() *znode {
	n := t.root
	for !n.leaf() {
		n = n.kids[0]
	}
	return n
}

func (t *ztree) lastLeaf() *znode {
	n := t.root
	for !n.leaf() {
		n = n.kids[len(n.kids)-1]
	}
	return n
}

// setLeaf replaces a leaf's bytes, keeping the accounting.
func (t *ztree) setLeaf(n *znode, b []byte) {
	t.mem += int64(cap(b) - cap(n.b))
	n.b = b
}

// leafCap is the capacity for a leaf of n bytes that may grow: a quarter more, up to a full
// leaf.
func leafCap(n int) int { return max(n, min(packedCap(n), ztreeLeafMax)) }

// insert adds (s, m), which must be absent.
func (t *ztree) insert(s float64, m []byte) {
	if split := t.insertInto(t.root, s, m); split != nil {
		root := &znode{kids: make([]*znode, 1, ztreeInnerMax+1), counts: make([]int, 1, ztreeInnerMax+1), seps: make([]zsep, 0, ztreeInnerMax)}
		root.kids[0], root.counts[0] = t.root, t.n+1
		t.mem += znodeSize + ztreeInnerSlot*ztreeInnerMax
		addKids(root, 0, split)
		t.root = root
	}
	t.n++
	t.payload += int64(len(m))
}

// zsplit is a node split off to the right of another, with its separator and entry count.
type zsplit struct {
	sep   zsep
	node  *znode
	count int
}

func (t *ztree) insertInto(n *znode, s float64, m []byte) []zsplit {
	if n.leaf() {
		return t.insertLeaf(n, s, m)
	}
	j := n.pick(zgt(s, m))
	n.counts[j]++
	split := t.insertInto(n.kids[j], s, m)
	if split == nil {
		return nil
	}
	addKids(n, j, split)
	if len(n.kids) <= ztreeInnerMax {
		return nil
	}
	return t.splitInner(n)
}

// addKids puts split's nodes right after kid j, moving their entries out of its count.
func addKids(n *znode, j int, split []zsplit) {
	for i, sp := range split {
		n.counts[j] -= sp.count
		n.kids = insertAt(n.kids, j+1+i, sp.node)
		n.counts = insertAt(n.counts, j+1+i, sp.count)
		n.seps = insertAt(n.seps, j+i, sp.sep)
	}
}

func insertAt[T any](s []T, i int, v T) []T {
	var zero T
	s = append(s, zero)
	copy(s[i+1:], s[i:])
	s[i] = v
	return s
}

func removeAt[T any](s []T, i int) []T {
	copy(s[i:], s[i+1:])
	var zero T
	s[len(s)-1] = zero
	return s[:len(s)-1]
}

// splitInner halves an inner node past ztreeInnerMax kids.
func (t *ztree) splitInner(n *znode) []zsplit {
	h := len(n.kids) / 2
	r := &znode{
		kids:   make([]*znode, len(n.kids)-h, ztreeInnerMax+1),
		counts: make([]int, len(n.kids)-h, ztreeInnerMax+1),
		seps:   make([]zsep, len(n.seps)-h, ztreeInnerMax),
	}
	t.mem += znodeSize + ztreeInnerSlot*ztreeInnerMax
	copy(r.kids, n.kids[h:])
	copy(r.counts, n.counts[h:])
	copy(r.seps, n.seps[h:])
	sep := n.seps[h-1]
	clear(n.kids[h:])
	clear(n.seps[h-1:])
	n.kids, n.counts, n.seps = n.kids[:h], n.counts[:h], n.seps[:h-1]
	count := 0
	for _, c := range r.counts {
		count += c
	}
	return []zsplit{{sep, r, count}}
}

func (t *ztree) insertLeaf(n *znode, s float64, m []byte) []zsplit {
	_, off := leafScan(n.b, zge(s, m))
	size := ztreeScoreSize(s) + elemSize(len(m))
	b := n.b
	if len(b)+size > cap(b) {
		nb := make([]byte, len(b), leafCap(len(b)+size))
		copy(nb, b)
		t.setLeaf(n, nb)
		b = nb
	}
	b = b[:len(b)+size]
	copy(b[off+size:], b[off:])
	appendElem(appendZTreeScore(b[:off], s), m)
	n.b = b
	if _, next := zentryAt(b, 0); len(b) <= ztreeLeafMax || next == len(b) {
		return nil
	}
	// Sets built in order (ZADD of increasing scores) fill leaves: the old entries stay a
	// full leaf and the new one starts the next.
	var at int
	switch {
	case n.next == nil && off+size == len(b):
		at = off
	case n.prev == nil && off == 0:
		at = size
	default:
		at = leafMiddle(b)
	}
	return t.splitLeaf(n, at)
}

// leafMiddle is the entry boundary nearest the middle of b, not at either end; b holds at
// least two entries.
func leafMiddle(b []byte) int {
	_, best := zentryAt(b, 0)
	for off := best; off < len(b); {
		_, next := zentryAt(b, off)
		if next == len(b) {
			break
		}
		if abs(2*next-len(b)) < abs(2*best-len(b)) {
			best = next
		}
		off = next
	}
	return best
}

func abs(x int) int {
	if x < 0 {
		return -x
	}
	return x
}

// splitLeaf cuts leaf n at offset at, and each piece again while it is over ztreeLeafMax with
// more than one entry (a member larger than a leaf gets one of its own).
func (t *ztree) splitLeaf(n *znode, at int) []zsplit {
	b := n.b
	var pieces [][]byte
	var cut func(b []byte, at int)
	cut = func(b []byte, at int) {
		for _, p := range [][]byte{b[:at], b[at:]} {
			if len(p) > ztreeLeafMax {
				if _, next := zentryAt(p, 0); next < len(p) {
					cut(p, leafMiddle(p))
					continue
				}
			}
			pieces = append(pieces, p)
		}
	}
	cut(b, at)
	t.setLeaf(n, append(make([]byte, 0, leafCap(len(pieces[0]))), pieces[0]...))
	split := make([]zsplit, 0, len(pieces)-1)
	prev := n
	for _, p := range pieces[1:] {
		nb := append(make([]byte, 0, leafCap(len(p))), p...)
		r := &znode{b: nb, prev: prev, next: prev.next}
		t.mem += znodeSize + int64(cap(nb))
		if r.next != nil {
			r.next.prev = r
		}
		prev.next = r
		prev = r
		e, _ := zentryAt(p, 0)
		idx, _ := leafScan(p, func(float64, []byte) bool { return false })
		split = append(split, zsplit{zsep{e.Score, string(e.Member)}, r, idx})
	}
	return split
}

// remove deletes (s, m) and reports whether it was there. m may view the tree's bytes.
func (t *ztree) remove(s float64, m []byte) bool {
	size := int64(len(m))
	if !t.removeFrom(t.root, s, m) {
		return false
	}
	t.n--
	t.payload -= size
	for !t.root.leaf() && len(t.root.kids) == 1 {
		t.mem -= znodeSize + ztreeInnerSlot*ztreeInnerMax
		t.root = t.root.kids[0]
	}
	return true
}

func (t *ztree) removeFrom(n *znode, s float64, m []byte) bool {
	if n.leaf() {
		_, off := leafScan(n.b, zge(s, m))
		if off == len(n.b) {
			return false
		}
		e, next := zentryAt(n.b, off)
		if e.Score != s || string(e.Member) != string(m) {
			return false
		}
		t.setLeaf(n, cut(n.b, off, next))
		return true
	}
	j := n.pick(zgt(s, m))
	if !t.removeFrom(n.kids[j], s, m) {
		return false
	}
	n.counts[j]--
	t.rebalance(n, j)
	return true
}

// rebalance merges kid j of n with a neighbour, or evens them out, when it is under a quarter
// full, so memory follows the entries down and the height stays O(log n).
func (t *ztree) rebalance(n *znode, j int) {
	c := n.kids[j]
	if c.leaf() && len(c.b) >= ztreeLeafMin || !c.leaf() && len(c.kids) >= ztreeInnerMin || len(n.kids) < 2 {
		return
	}
	l := max(j-1, 0)
	if c.leaf() {
		t.rebalanceLeaves(n, l)
	} else {
		t.rebalanceInner(n, l)
	}
}

// rebalanceLeaves merges kids l and l+1 of n, leaves, or splits their entries evenly.
func (t *ztree) rebalanceLeaves(n *znode, l int) {
	a, b := n.kids[l], n.kids[l+1]
	total := len(a.b) + len(b.b)
	both := make([]byte, 0, leafCap(total))
	both = append(append(both, a.b...), b.b...)
	if total <= ztreeLeafMax || len(a.b) == 0 || len(b.b) == 0 {
		t.setLeaf(a, both)
		t.setLeaf(b, nil)
		t.mem -= znodeSize
		a.next = b.next
		if a.next != nil {
			a.next.prev = a
		}
		n.counts[l] += n.counts[l+1]
		n.kids = removeAt(n.kids, l+1)
		n.counts = removeAt(n.counts, l+1)
		n.seps = removeAt(n.seps, l)
		return
	}
	at := leafMiddle(both)
	na := append(make([]byte, 0, leafCap(at)), both[:at]...)
	nb := append(make([]byte, 0, leafCap(total-at)), both[at:]...)
	t.setLeaf(a, na)
	t.setLeaf(b, nb)
	ca, _ := leafScan(na, func(float64, []byte) bool { return false })
	n.counts[l], n.counts[l+1] = ca, n.counts[l]+n.counts[l+1]-ca
	e, _ := zentryAt(nb, 0)
	n.seps[l] = zsep{e.Score, string(e.Member)}
}

// rebalanceInner merges kids l and l+1 of n, inner nodes, or moves kids between them so each
// holds half.
func (t *ztree) rebalanceInner(n *znode, l int) {
	a, b := n.kids[l], n.kids[l+1]
	kids := append(append([]*znode(nil), a.kids...), b.kids...)
	counts := append(append([]int(nil), a.counts...), b.counts...)
	seps := append(append(append([]zsep(nil), a.seps...), n.seps[l]), b.seps...)
	if len(kids) <= ztreeInnerMax {
		a.kids = append(a.kids[:0], kids...)
		a.counts = append(a.counts[:0], counts...)
		a.seps = append(a.seps[:0], seps...)
		t.mem -= znodeSize + ztreeInnerSlot*ztreeInnerMax
		n.counts[l] += n.counts[l+1]
		n.kids = removeAt(n.kids, l+1)
		n.counts = removeAt(n.counts, l+1)
		n.seps = removeAt(n.seps, l)
		return
	}
	h := len(kids) / 2
	a.kids, a.counts, a.seps = kids[:h:h], counts[:h:h], seps[:h-1:h-1]
	b.kids, b.counts, b.seps = kids[h:], counts[h:], seps[h:]
	n.seps[l] = seps[h-1]
	ca := 0
	for _, c := range a.counts {
		ca += c
	}
	n.counts[l], n.counts[l+1] = ca, n.counts[l]+n.counts[l+1]-ca
}
