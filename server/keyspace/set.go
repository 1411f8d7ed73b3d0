package keyspace

import (
	"math/rand/v2"
	"strconv"

	"github.com/iocache/iocache/server/resp"
)

// Set is a set of byte strings. While every member is an integer and there are at most
// set-max-intset-entries of them it is an intset (sorted, 2 to 8 bytes a member); the first
// member that is not an integer, or one too many, makes it a table (encoding "hashtable") for
// good, as in Redis.
type Set struct {
	ints intset
	big  *table
}

// NewSet returns an empty set, in the intset encoding until a member says otherwise.
func NewSet() *Set { return &Set{} }

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
		return s.big.len()
	}
	return s.ints.len()
}

const setHeader = 32 + 16

// Bytes is the memory held, for accounting.
func (s *Set) Bytes() int64 {
	if s.big != nil {
		return s.big.memory() + setHeader
	}
	return int64(cap(s.ints)) + setHeader
}

// Has reports membership.
func (s *Set) Has(m []byte) bool {
	if s.big != nil {
		_, ok := s.big.find(m)
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
			return s.big.set(m, nil)
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
	return s.big.set(m, nil)
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
			var grown intset
			if s.ints.len() == 0 && cap(s.ints) >= 1+len(ms)*w {
				grown = s.ints[:1] // a write view's buffer (inline.go)
			} else {
				grown = make(intset, 1+s.ints.len()*w, 1+(s.ints.len()+len(ms))*w)
			}
			grown[0] = byte(w)
			for i := 0; i < s.ints.len(); i++ {
				grown.put(i, s.ints.get(i))
			}
			s.ints = grown
		}
	}
	if s.big == nil && len(ms) > 1 {
		// A member that is not an integer converts the set: do it now, sized for all of them.
		for _, m := range ms {
			if _, ok := resp.ParseInt(m); !ok {
				s.convert(s.ints.len() + len(ms))
				break
			}
		}
	}
	if s.big != nil && s.big.len() == 0 {
		b := 0
		for _, m := range ms {
			b += elemSize(len(m))
		}
		s.big.reserve(b)
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
		return s.big.remove(m)
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
		m, _ := s.big.at(i)
		return append(dst, m...)
	}
	return strconv.AppendInt(dst, s.ints.get(i), 10)
}

// Random appends a random member to dst.
func (s *Set) Random(r *rand.Rand, dst []byte) []byte { return s.AppendAt(dst, r.IntN(s.Len())) }

// Pop removes a random member and returns it (a copy of its own).
func (s *Set) Pop(r *rand.Rand) []byte {
	i := r.IntN(s.Len())
	if s.big != nil {
		m := s.AppendAt(nil, i)
		s.big.removeAt(uint32(i))
		return m
	}
	m := s.AppendAt(nil, i)
	s.ints = s.ints.removeAt(i)
	return m
}

// Each calls fn for every member until it returns false: the intset's in ascending order, the
// hashtable's in its stable order. The slice is valid only during the call.
func (s *Set) Each(fn func(m []byte) bool) {
	if s.big != nil {
		s.big.each(func(m, _ []byte) bool { return fn(m) })
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
	t := newTable(n, false)
	s.Each(func(m []byte) bool { t.set(m, nil); return true })
	s.big, s.ints = t, nil
}

// Release drops the contents.
func (s *Set) Release() {
	s.big, s.ints = nil, nil
}
