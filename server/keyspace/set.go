package keyspace

import (
	"math/rand/v2"
	"strconv"

	"github.com/iocache/iocache/server/resp"
)

// Set is a set of byte strings. While every member is an integer and there are at most
// set-max-intset-entries of them it is an intset (sorted, 2 to 8 bytes a member); the first
// member that is not an integer, or one too many, makes it a setTable (encoding "hashtable") for
// good, as in Redis.
type Set struct {
	ints intset
	big  *setTable
}

// NewSet returns an empty set, in the intset encoding until a member says otherwise.
func NewSet() *Set { return &Set{} }

// NewStringSet returns an empty set already in its hashtable encoding, for a set whose first
// member is not an integer (Redis's setTypeCreate) sized for n members.
func NewStringSet(n int) *Set { return &Set{big: newSetTable(n)} }

// Encoding is the name OBJECT ENCODING gives the set's encoding.
func (s *Set) Encoding() string {
	if s.big == nil {
		return "intset"
	}
	return "hashtable"
}

// Len is the number of members.
func (s *Set) Len() int {
	if s.big != nil {
		return len(s.big.members)
	}
	return s.ints.len()
}

const setHeader = 32 + 16

// Bytes is the memory held, for accounting.
func (s *Set) Bytes() int64 {
	if s.big != nil {
		return s.big.bytes + setHeader
	}
	return int64(cap(s.ints)) + setHeader
}

// Has reports membership.
func (s *Set) Has(m []byte) bool {
	if s.big != nil {
		_, ok := s.big.idx[string(m)]
		return ok
	}
	v, ok := resp.ParseInt(m)
	if !ok {
		return false
	}
	_, ok = s.ints.search(v)
	return ok
}

// Add inserts m and reports whether it is new.
func (s *Set) Add(m []byte) bool {
	if s.big == nil {
		v, ok := resp.ParseInt(m)
		if !ok {
			s.convert(s.ints.len() + 1)
			return s.big.add(m)
		}
		i, found := s.ints.search(v)
		if found {
			return false
		}
		s.ints = s.ints.insert(i, v)
		if s.ints.len() > limits.Load().SetMaxIntsetEntries {
			s.convert(s.ints.len())
		}
		return true
	}
	return s.big.add(m)
}

// AddAll adds every member of ms and returns how many were new. An intset that stays one takes
// its new integers in one exact-size allocation.
func (s *Set) AddAll(ms [][]byte) int {
	n := 0
	if s.big == nil && len(ms) > 1 && s.ints.len()+len(ms) <= limits.Load().SetMaxIntsetEntries {
		w := s.ints.width()
		for _, m := range ms {
			v, ok := resp.ParseInt(m)
			if !ok {
				w = 0
				break
			}
			w = max(w, widthFor(v))
		}
		if w != 0 {
			grown := make(intset, 1+s.ints.len()*w, 1+(s.ints.len()+len(ms))*w)
			grown[0] = byte(w)
			for i := 0; i < s.ints.len(); i++ {
				grown.put(i, s.ints.get(i))
			}
			s.ints = grown
		}
	}
	for _, m := range ms {
		if s.Add(m) {
			n++
		}
	}
	return n
}

// Remove deletes m and reports whether it was there.
func (s *Set) Remove(m []byte) bool {
	if s.big != nil {
		i, ok := s.big.idx[string(m)]
		if !ok {
			return false
		}
		s.big.removeAt(int(i))
		return true
	}
	v, ok := resp.ParseInt(m)
	if !ok {
		return false
	}
	i, found := s.ints.search(v)
	if found {
		s.ints = s.ints.removeAt(i)
	}
	return found
}

// AppendAt appends the member at position i (0 <= i < Len) to dst: the intset's i-th smallest, or
// the hashtable's i-th in its stable order.
func (s *Set) AppendAt(dst []byte, i int) []byte {
	if s.big != nil {
		return append(dst, s.big.members[i]...)
	}
	return strconv.AppendInt(dst, s.ints.get(i), 10)
}

// Random appends a random member to dst.
func (s *Set) Random(r *rand.Rand, dst []byte) []byte { return s.AppendAt(dst, r.IntN(s.Len())) }

// Pop removes a random member and returns it (a copy of its own).
func (s *Set) Pop(r *rand.Rand) []byte {
	i := r.IntN(s.Len())
	if s.big != nil {
		return []byte(s.big.removeAt(i))
	}
	m := s.AppendAt(nil, i)
	s.ints = s.ints.removeAt(i)
	return m
}

// Each calls fn for every member until it returns false: the intset's in ascending order, the
// hashtable's in its stable order. The slice is valid only during the call.
func (s *Set) Each(fn func(m []byte) bool) {
	if s.big != nil {
		for _, m := range s.big.members {
			if !fn(stringView(m)) {
				return
			}
		}
		return
	}
	var buf [20]byte
	for i, n := 0, s.ints.len(); i < n; i++ {
		if !fn(strconv.AppendInt(buf[:0], s.ints.get(i), 10)) {
			return
		}
	}
}

// AppendInts appends an intset's members, ascending, to dst; false for a hashtable.
func (s *Set) AppendInts(dst []int64) ([]int64, bool) {
	if s.big != nil {
		return dst, false
	}
	for i, n := 0, s.ints.len(); i < n; i++ {
		dst = append(dst, s.ints.get(i))
	}
	return dst, true
}

// convert moves an intset to the hashtable encoding, sized for n members.
func (s *Set) convert(n int) {
	t := newSetTable(n)
	s.Each(func(m []byte) bool { t.add(m); return true })
	s.big, s.ints = t, nil
}

// Release drops the contents.
func (s *Set) Release() {
	if s.big != nil {
		clear(s.big.idx)
		s.big.members = nil
	}
	s.ints = nil
}

// setTable is a large set that also keeps its members in a slice, so SPOP and SRANDMEMBER pick
// uniformly at random in O(1), and SSCAN has a stable cursor.
type setTable struct {
	idx     map[string]int32
	members []string
	bytes   int64
}

func newSetTable(n int) *setTable {
	return &setTable{idx: make(map[string]int32, n), members: make([]string, 0, n)}
}

func (s *setTable) add(m []byte) bool {
	if _, ok := s.idx[string(m)]; ok {
		return false
	}
	k := string(m)
	s.idx[k] = int32(len(s.members))
	s.members = append(s.members, k)
	s.bytes += int64(len(m)) + 48
	return true
}

func (s *setTable) removeAt(i int) string {
	k := s.members[i]
	last := s.members[len(s.members)-1]
	s.members[i] = last
	s.idx[last] = int32(i)
	s.members = s.members[:len(s.members)-1]
	delete(s.idx, k)
	s.bytes -= int64(len(k)) + 48
	return k
}
