package keyspace

import (
	"bytes"
	"encoding/binary"
	"math"
)

// ZSet is a sorted set. A small one is compact (encoding "listpack"): its entries packed in one
// slice after a 4-byte count, ordered by (score, member), each a member element followed by its
// score (a uvarint: an even value is a zigzag integer score, 1 is followed by the 8 bytes of any
// other double; -0 is kept as 0, as Redis's listpack keeps it). Past zset-max-listpack-entries members, or given a member longer than
// zset-max-listpack-value, it becomes a zsetBig (encoding "skiplist"), as in Redis.
type ZSet struct {
	lp  []byte
	big *zsetBig
}

// Entry is one member and its score. Member is a view: valid until the next write to the set.
type Entry struct {
	Member []byte
	Score  float64
}

// NewZSet returns an empty, compact sorted set.
func NewZSet() *ZSet { return &ZSet{} }

// NewZSetFor returns an empty sorted set for about n members, the first memberLen bytes long:
// compact unless the compact form is off (zset-max-listpack-entries 0) or already too small
// for those (Redis 7.0's ZADD).
func NewZSetFor(n, memberLen int) *ZSet {
	if zsetStartsCompact(n, memberLen) {
		return &ZSet{}
	}
	return &ZSet{big: newZSetBig(n)}
}

func zsetStartsCompact(n, memberLen int) bool {
	l := limits.Load()
	return l.ZSetMaxListpackEntries > 0 && n <= l.ZSetMaxListpackEntries && memberLen <= l.ZSetMaxListpackValue
}

// ZSetStartsCompact reports whether ZADD's new set, whose first member is memberLen bytes long,
// starts compact (NewZSetFor).
func ZSetStartsCompact(memberLen int) bool { return zsetStartsCompact(0, memberLen) }

// Reserve makes room in a compact set for the members of pairs (score, member, score, member,
// ...: ZADD's arguments) with the scores parsed from them, so a command that adds many allocates
// once (exactly, for a new set).
func (z *ZSet) Reserve(pairs [][]byte, scores []float64) {
	if z.big != nil {
		return
	}
	n := 0
	for i, sc := range scores {
		n += elemSize(len(pairs[2*i+1])) + scoreSize(sc)
	}
	if len(z.lp) == 0 {
		// Exactly, or in a write view's buffer (inline.go).
		if cap(z.lp) < lpCountSize+n {
			z.lp = make([]byte, lpCountSize, lpCountSize+n)
		}
		z.lp = z.lp[:lpCountSize]
		return
	}
	z.lp = growPacked(z.lp, n)
}

// PayloadBytes is the bytes of the members (with, in the compact form, their length prefixes and
// scores), for bounding the replies that list them.
func (z *ZSet) PayloadBytes() int64 {
	if z.big != nil {
		return z.big.tree.payload
	}
	return int64(max(len(z.lp)-lpCountSize, 0))
}

// Entries returns every entry in ascending order, for a command that picks many by rank: At is a
// scan in the compact form.
func (z *ZSet) Entries() []Entry {
	out := make([]Entry, 0, z.Len())
	z.Each(func(e Entry) bool { out = append(out, e); return true })
	return out
}

// Encoding is the name OBJECT ENCODING gives the set's encoding.
func (z *ZSet) Encoding() string {
	if z.big == nil {
		return "listpack"
	}
	return "skiplist"
}

// Len is the number of members.
func (z *ZSet) Len() int {
	if z.big != nil {
		return z.big.len()
	}
	return lpCount(z.lp)
}

const zsetHeader = 32 + 16

// Bytes is the memory held, for accounting.
func (z *ZSet) Bytes() int64 {
	if z.big != nil {
		return z.big.memory() + zsetHeader
	}
	return int64(cap(z.lp)) + zsetHeader
}

func scoreIsSmallInt(s float64) bool {
	return s == math.Trunc(s) && math.Abs(s) <= 1<<52
}

func scoreSize(s float64) int {
	if scoreIsSmallInt(s) {
		i := int64(s)
		return uvarintLen((uint64(i<<1) ^ uint64(i>>63)) << 1)
	}
	return 9
}

func appendScore(b []byte, s float64) []byte {
	if scoreIsSmallInt(s) {
		i := int64(s)
		return binary.AppendUvarint(b, (uint64(i<<1)^uint64(i>>63))<<1)
	}
	b = append(b, 1)
	return binary.LittleEndian.AppendUint64(b, math.Float64bits(s))
}

func scoreAt(b []byte, off int) (float64, int) {
	v, w := binary.Uvarint(b[off:])
	off += w
	if v&1 == 1 {
		return math.Float64frombits(binary.LittleEndian.Uint64(b[off:])), off + 8
	}
	u := v >> 1
	return float64(int64(u>>1) ^ -int64(u&1)), off
}

// entryAt reads the compact entry at off and returns it with the next entry's offset.
func (z *ZSet) entryAt(off int) (Entry, int) {
	m, soff := elemAt(z.lp, off)
	s, next := scoreAt(z.lp, soff)
	return Entry{m, s}, next
}

// find returns the offset of member's entry and of the next one, or -1.
func (z *ZSet) find(member []byte) (at, next int, score float64) {
	for off := lpCountSize; off < len(z.lp); {
		e, nxt := z.entryAt(off)
		if string(e.Member) == string(member) {
			return off, nxt, e.Score
		}
		off = nxt
	}
	return -1, 0, 0
}

// Score returns a member's score.
func (z *ZSet) Score(member []byte) (float64, bool) {
	if z.big != nil {
		return z.big.score(member)
	}
	at, _, s := z.find(member)
	return s, at >= 0
}

// Add sets member's score and reports whether the member is new.
func (z *ZSet) Add(member []byte, score float64) bool {
	if z.big == nil {
		at, next, old := z.find(member)
		switch {
		case at >= 0:
			if old != score {
				z.lp = cut(z.lp, at, next)
				z.insertCompact(member, score)
			}
			return false
		case lpCount(z.lp)+1 > limits.Load().ZSetMaxListpackEntries || len(member) > limits.Load().ZSetMaxListpackValue:
			z.convert()
		default:
			z.insertCompact(member, score)
			lpSetCount(z.lp, lpCount(z.lp)+1)
			return true
		}
	}
	return z.big.add(member, score)
}

// insertCompact puts (member, score) at its place in the order; the count is the caller's.
func (z *ZSet) insertCompact(member []byte, score float64) {
	if len(z.lp) == 0 {
		z.lp = make([]byte, lpCountSize, packedCap(lpCountSize+elemSize(len(member))+scoreSize(score)))
	}
	off := lpCountSize
	for off < len(z.lp) {
		e, next := z.entryAt(off)
		if !(e.Score < score || (e.Score == score && bytes.Compare(e.Member, member) < 0)) {
			break
		}
		off = next
	}
	size := elemSize(len(member)) + scoreSize(score)
	z.lp = growPacked(z.lp, size)
	old := len(z.lp)
	z.lp = z.lp[:old+size]
	copy(z.lp[off+size:], z.lp[off:old])
	appendScore(appendElem(z.lp[:off], member), score)
}

// Remove deletes member and reports whether it was there.
func (z *ZSet) Remove(member []byte) bool {
	if z.big != nil {
		return z.big.remove(member)
	}
	at, next, _ := z.find(member)
	if at < 0 {
		return false
	}
	z.lp = cut(z.lp, at, next)
	lpSetCount(z.lp, lpCount(z.lp)-1)
	return true
}

// Rank returns the 0-based rank of member in ascending order.
func (z *ZSet) Rank(member []byte) (int, bool) {
	if z.big != nil {
		return z.big.rankOf(member)
	}
	rank := 0
	for off := lpCountSize; off < len(z.lp); rank++ {
		e, next := z.entryAt(off)
		if string(e.Member) == string(member) {
			return rank, true
		}
		off = next
	}
	return 0, false
}

// compactOffsets lists the offsets of the compact entries, into buf.
func (z *ZSet) compactOffsets(buf []int32) []int32 {
	for off := lpCountSize; off < len(z.lp); {
		buf = append(buf, int32(off))
		_, off = z.entryAt(off)
	}
	return buf
}

// eachCompact calls fn for the compact entries in order, or in reverse order with rev.
func (z *ZSet) eachCompact(rev bool, fn func(Entry) bool) {
	if !rev {
		for off := lpCountSize; off < len(z.lp); {
			e, next := z.entryAt(off)
			if !fn(e) {
				return
			}
			off = next
		}
		return
	}
	var stack [128]int32
	offs := z.compactOffsets(stack[:0])
	for i := len(offs) - 1; i >= 0; i-- {
		e, _ := z.entryAt(int(offs[i]))
		if !fn(e) {
			return
		}
	}
}

// RangeByRank calls fn for ranks start..stop (0-based, inclusive, clamped), ascending or
// descending.
func (z *ZSet) RangeByRank(start, stop int, rev bool, fn func(Entry) bool) {
	if z.big != nil {
		z.big.rangeByRank(start, stop, rev, fn)
		return
	}
	i := 0
	z.eachCompact(rev, func(e Entry) bool {
		if i > stop {
			return false
		}
		ok := i < start || fn(e)
		i++
		return ok
	})
}

// At returns the entry of 0-based ascending rank i, 0 <= i < Len(): O(log n) in the large form,
// a scan of the compact one.
// ScanAt returns the entry at position i (0 <= i < Len) of a large set's member table, in no
// particular order: ZSCAN pages through these positions as SSCAN and HSCAN do. A compact set has
// no such positions (ZSCAN returns it whole), and ScanAt ranks it instead.
func (z *ZSet) ScanAt(i int) Entry {
	if z.big == nil {
		return z.At(i)
	}
	m, v := z.big.dict.at(i)
	sc, _ := scoreAt(v, 0)
	return Entry{Member: m, Score: sc}
}

// At returns the entry of rank i.
func (z *ZSet) At(i int) Entry {
	var out Entry
	z.RangeByRank(i, i, false, func(e Entry) bool { out = e; return false })
	return out
}

// First returns the lowest (or, with rev, highest) entry.
func (z *ZSet) First(rev bool) (Entry, bool) {
	if z.big != nil {
		return z.big.first(rev)
	}
	var out Entry
	found := false
	z.eachCompact(rev, func(e Entry) bool { out, found = e, true; return false })
	return out, found
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

// RangeByScore calls fn for entries with scores in r, ascending (or descending with rev).
func (z *ZSet) RangeByScore(r ScoreRange, rev bool, fn func(Entry) bool) {
	if z.big != nil {
		z.big.rangeByScore(r, rev, fn)
		return
	}
	z.eachCompact(rev, func(e Entry) bool {
		switch {
		case !r.gteMin(e.Score):
			return !rev
		case !r.lteMax(e.Score):
			return rev
		}
		return fn(e)
	})
}

// CountInRange counts entries with scores in r: O(log n) in the large form.
func (z *ZSet) CountInRange(r ScoreRange) int {
	if z.big != nil {
		return z.big.countInRange(r)
	}
	n := 0
	z.RangeByScore(r, false, func(Entry) bool { n++; return true })
	return n
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
	if z.big != nil {
		z.big.rangeByLex(r, rev, fn)
		return
	}
	// As Redis walks a listpack: from the first entry (the last, reversed) that is past the
	// range's near end, while entries are within its far end. With equal scores, the only case
	// with a defined answer, that is the range.
	started := false
	z.eachCompact(rev, func(e Entry) bool {
		near, far := r.gteMin(string(e.Member)), r.lteMax(string(e.Member))
		if rev {
			near, far = far, near
		}
		if !started {
			if !near {
				return true
			}
			started = true
		}
		return far && fn(e)
	})
}

// Each calls fn for every entry in ascending order until it returns false.
func (z *ZSet) Each(fn func(Entry) bool) {
	if z.big != nil {
		z.big.each(fn)
		return
	}
	z.eachCompact(false, fn)
}

// convert moves a compact set to the large form.
func (z *ZSet) convert() {
	b := newZSetBig(lpCount(z.lp) + 1)
	z.eachCompact(false, func(e Entry) bool { b.add(e.Member, e.Score); return true })
	z.big, z.lp = b, nil
}

// Release drops the contents.
func (z *ZSet) Release() {
	z.lp, z.big = nil, nil
}
