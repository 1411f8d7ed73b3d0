package keyspace

import "math/rand/v2"

// ZSet is a sorted set: a map from member to score plus a skip list ordered by (score, member)
// whose links carry spans, so rank queries and range-by-rank are O(log n), as in Redis.
type ZSet struct {
	dict  map[string]float64
	zsl   *skiplist
	bytes int64
}

const (
	zslMaxLevel = 32
	zslP        = 0.25
)

type zslLevel struct {
	forward *zslNode
	span    int
}

type zslNode struct {
	member   string
	score    float64
	backward *zslNode
	level    []zslLevel
}

type skiplist struct {
	header, tail *zslNode
	length       int
	level        int
}

// NewZSet returns an empty sorted set.
func NewZSet() *ZSet {
	return &ZSet{dict: map[string]float64{}, zsl: &skiplist{header: &zslNode{level: make([]zslLevel, zslMaxLevel)}, level: 1}}
}

// Len is the number of members.
func (z *ZSet) Len() int { return len(z.dict) }

// Bytes is the memory held, for accounting.
func (z *ZSet) Bytes() int64 { return z.bytes }

// Score returns a member's score.
func (z *ZSet) Score(member []byte) (float64, bool) {
	s, ok := z.dict[string(member)]
	return s, ok
}

func randomLevel() int {
	l := 1
	for l < zslMaxLevel && rand.Float64() < zslP {
		l++
	}
	return l
}

func less(s1 float64, m1 string, s2 float64, m2 string) bool {
	return s1 < s2 || (s1 == s2 && m1 < m2)
}

func (zl *skiplist) insert(score float64, member string) *zslNode {
	var update [zslMaxLevel]*zslNode
	var rank [zslMaxLevel]int
	x := zl.header
	for i := zl.level - 1; i >= 0; i-- {
		if i != zl.level-1 {
			rank[i] = rank[i+1]
		}
		for x.level[i].forward != nil && less(x.level[i].forward.score, x.level[i].forward.member, score, member) {
			rank[i] += x.level[i].span
			x = x.level[i].forward
		}
		update[i] = x
	}
	level := randomLevel()
	if level > zl.level {
		for i := zl.level; i < level; i++ {
			rank[i] = 0
			update[i] = zl.header
			update[i].level[i].span = zl.length
		}
		zl.level = level
	}
	x = &zslNode{member: member, score: score, level: make([]zslLevel, level)}
	for i := 0; i < level; i++ {
		x.level[i].forward = update[i].level[i].forward
		update[i].level[i].forward = x
		x.level[i].span = update[i].level[i].span - (rank[0] - rank[i])
		update[i].level[i].span = (rank[0] - rank[i]) + 1
	}
	for i := level; i < zl.level; i++ {
		update[i].level[i].span++
	}
	if update[0] != zl.header {
		x.backward = update[0]
	}
	if x.level[0].forward != nil {
		x.level[0].forward.backward = x
	} else {
		zl.tail = x
	}
	zl.length++
	return x
}

func (zl *skiplist) deleteNode(x *zslNode, update *[zslMaxLevel]*zslNode) {
	for i := 0; i < zl.level; i++ {
		if update[i].level[i].forward == x {
			update[i].level[i].span += x.level[i].span - 1
			update[i].level[i].forward = x.level[i].forward
		} else {
			update[i].level[i].span--
		}
	}
	if x.level[0].forward != nil {
		x.level[0].forward.backward = x.backward
	} else {
		zl.tail = x.backward
	}
	for zl.level > 1 && zl.header.level[zl.level-1].forward == nil {
		zl.level--
	}
	zl.length--
}

func (zl *skiplist) delete(score float64, member string) bool {
	var update [zslMaxLevel]*zslNode
	x := zl.header
	for i := zl.level - 1; i >= 0; i-- {
		for x.level[i].forward != nil && less(x.level[i].forward.score, x.level[i].forward.member, score, member) {
			x = x.level[i].forward
		}
		update[i] = x
	}
	x = x.level[0].forward
	if x != nil && x.score == score && x.member == member {
		zl.deleteNode(x, &update)
		return true
	}
	return false
}

// rank is the 1-based rank of (score, member), or 0 when absent.
func (zl *skiplist) rank(score float64, member string) int {
	r := 0
	x := zl.header
	for i := zl.level - 1; i >= 0; i-- {
		for x.level[i].forward != nil && (less(x.level[i].forward.score, x.level[i].forward.member, score, member) ||
			(x.level[i].forward.score == score && x.level[i].forward.member == member)) {
			r += x.level[i].span
			x = x.level[i].forward
		}
		if x != zl.header && x.member == member {
			return r
		}
	}
	return 0
}

// byRank returns the node at 1-based rank.
func (zl *skiplist) byRank(rank int) *zslNode {
	traversed := 0
	x := zl.header
	for i := zl.level - 1; i >= 0; i-- {
		for x.level[i].forward != nil && traversed+x.level[i].span <= rank {
			traversed += x.level[i].span
			x = x.level[i].forward
		}
		if traversed == rank {
			return x
		}
	}
	return nil
}

// Add sets member's score and reports whether the member is new.
func (z *ZSet) Add(member []byte, score float64) bool {
	if old, ok := z.dict[string(member)]; ok {
		if old != score {
			m := string(member)
			z.zsl.delete(old, m)
			z.zsl.insert(score, m)
			z.dict[m] = score
		}
		return false
	}
	m := string(member)
	z.dict[m] = score
	z.zsl.insert(score, m)
	z.bytes += int64(len(m)) + 96
	return true
}

// Remove deletes member and reports whether it was there.
func (z *ZSet) Remove(member []byte) bool {
	score, ok := z.dict[string(member)]
	if !ok {
		return false
	}
	z.zsl.delete(score, string(member))
	delete(z.dict, string(member))
	z.bytes -= int64(len(member)) + 96
	return true
}

// Rank returns the 0-based rank of member in ascending order.
func (z *ZSet) Rank(member []byte) (int, bool) {
	score, ok := z.dict[string(member)]
	if !ok {
		return 0, false
	}
	return z.zsl.rank(score, string(member)) - 1, true
}

// Entry is one member and its score.
type Entry struct {
	Member string
	Score  float64
}

// RangeByRank calls fn for ranks start..stop (0-based, inclusive, clamped), ascending or
// descending.
func (z *ZSet) RangeByRank(start, stop int, rev bool, fn func(Entry) bool) {
	if start > stop || start >= z.zsl.length {
		return
	}
	var x *zslNode
	if rev {
		x = z.zsl.byRank(z.zsl.length - start)
	} else {
		x = z.zsl.byRank(start + 1)
	}
	for i := start; i <= stop && x != nil; i++ {
		if !fn(Entry{x.member, x.score}) {
			return
		}
		if rev {
			x = x.backward
		} else {
			x = x.level[0].forward
		}
	}
}

// At returns the entry of 0-based ascending rank i, 0 <= i < Len(), in O(log n).
func (z *ZSet) At(i int) Entry {
	x := z.zsl.byRank(i + 1)
	return Entry{x.member, x.score}
}

// First returns the lowest (or, with rev, highest) entry.
func (z *ZSet) First(rev bool) (Entry, bool) {
	var x *zslNode
	if rev {
		x = z.zsl.tail
	} else {
		x = z.zsl.header.level[0].forward
	}
	if x == nil {
		return Entry{}, false
	}
	return Entry{x.member, x.score}, true
}

// ScoreRange is an interval of scores with open or closed ends.
type ScoreRange struct {
	Min, Max         float64
	MinOpen, MaxOpen bool
}

func (r *ScoreRange) gteMin(v float64) bool {
	if r.MinOpen {
		return v > r.Min
	}
	return v >= r.Min
}

func (r *ScoreRange) lteMax(v float64) bool {
	if r.MaxOpen {
		return v < r.Max
	}
	return v <= r.Max
}

// firstInRange returns the first node with score within r.
func (zl *skiplist) firstInRange(r *ScoreRange) *zslNode {
	x := zl.header
	for i := zl.level - 1; i >= 0; i-- {
		for x.level[i].forward != nil && !r.gteMin(x.level[i].forward.score) {
			x = x.level[i].forward
		}
	}
	x = x.level[0].forward
	if x == nil || !r.lteMax(x.score) {
		return nil
	}
	return x
}

// lastInRange returns the last node with score within r.
func (zl *skiplist) lastInRange(r *ScoreRange) *zslNode {
	x := zl.header
	for i := zl.level - 1; i >= 0; i-- {
		for x.level[i].forward != nil && r.lteMax(x.level[i].forward.score) {
			x = x.level[i].forward
		}
	}
	if x == zl.header || !r.gteMin(x.score) {
		return nil
	}
	return x
}

// RangeByScore calls fn for entries with scores in r, ascending (or descending with rev).
func (z *ZSet) RangeByScore(r ScoreRange, rev bool, fn func(Entry) bool) {
	if rev {
		for x := z.zsl.lastInRange(&r); x != nil && r.gteMin(x.score); x = x.backward {
			if !fn(Entry{x.member, x.score}) {
				return
			}
		}
		return
	}
	for x := z.zsl.firstInRange(&r); x != nil && r.lteMax(x.score); x = x.level[0].forward {
		if !fn(Entry{x.member, x.score}) {
			return
		}
	}
}

// CountInRange counts entries with scores in r in O(log n).
func (z *ZSet) CountInRange(r ScoreRange) int {
	first := z.zsl.firstInRange(&r)
	if first == nil {
		return 0
	}
	last := z.zsl.lastInRange(&r)
	return z.zsl.rank(last.score, last.member) - z.zsl.rank(first.score, first.member) + 1
}

// LexRange is an interval of members (for members with equal scores).
type LexRange struct {
	Min, Max         string
	MinInf, MaxInf   bool // "-" and "+"
	MinOpen, MaxOpen bool
	MinPosInf        bool // "+" as the minimum: empty
	MaxNegInf        bool // "-" as the maximum: empty
}

func (r *LexRange) gteMin(m string) bool {
	switch {
	case r.MinPosInf:
		return false
	case r.MinInf:
		return true
	case r.MinOpen:
		return m > r.Min
	}
	return m >= r.Min
}

func (r *LexRange) lteMax(m string) bool {
	switch {
	case r.MaxNegInf:
		return false
	case r.MaxInf:
		return true
	case r.MaxOpen:
		return m < r.Max
	}
	return m <= r.Max
}

// RangeByLex calls fn for entries whose members fall in r (meaningful when scores are equal).
func (z *ZSet) RangeByLex(r LexRange, rev bool, fn func(Entry) bool) {
	if rev {
		x := z.zsl.header
		for i := z.zsl.level - 1; i >= 0; i-- {
			for x.level[i].forward != nil && r.lteMax(x.level[i].forward.member) {
				x = x.level[i].forward
			}
		}
		for ; x != nil && x != z.zsl.header && r.gteMin(x.member); x = x.backward {
			if !fn(Entry{x.member, x.score}) {
				return
			}
		}
		return
	}
	x := z.zsl.header
	for i := z.zsl.level - 1; i >= 0; i-- {
		for x.level[i].forward != nil && !r.gteMin(x.level[i].forward.member) {
			x = x.level[i].forward
		}
	}
	for x = x.level[0].forward; x != nil && r.lteMax(x.member); x = x.level[0].forward {
		if !fn(Entry{x.member, x.score}) {
			return
		}
	}
}

// Each calls fn for every entry in ascending order until it returns false.
func (z *ZSet) Each(fn func(Entry) bool) {
	for x := z.zsl.header.level[0].forward; x != nil; x = x.level[0].forward {
		if !fn(Entry{x.member, x.score}) {
			return
		}
	}
}

// Release drops the contents.
func (z *ZSet) Release() { clear(z.dict); z.zsl = nil }
