package keyspace

import "math/rand/v2"

// Set is a set of byte strings that also keeps its members in a slice, so SPOP and SRANDMEMBER
// pick uniformly at random in O(1), and SSCAN has a stable cursor.
type Set struct {
	idx     map[string]int32
	members []string
	bytes   int64
}

// NewSet returns an empty set.
func NewSet() *Set { return &Set{idx: map[string]int32{}} }

// Len is the number of members.
func (s *Set) Len() int { return len(s.members) }

// Bytes is the memory held, for accounting.
func (s *Set) Bytes() int64 { return s.bytes }

// Has reports membership.
func (s *Set) Has(m []byte) bool { _, ok := s.idx[string(m)]; return ok }

// Add inserts m and reports whether it is new.
func (s *Set) Add(m []byte) bool {
	if _, ok := s.idx[string(m)]; ok {
		return false
	}
	k := string(m)
	s.idx[k] = int32(len(s.members))
	s.members = append(s.members, k)
	s.bytes += int64(len(m)) + 48
	return true
}

// Remove deletes m and reports whether it was there.
func (s *Set) Remove(m []byte) bool {
	i, ok := s.idx[string(m)]
	if !ok {
		return false
	}
	s.removeAt(int(i))
	return true
}

func (s *Set) removeAt(i int) string {
	k := s.members[i]
	last := s.members[len(s.members)-1]
	s.members[i] = last
	s.idx[last] = int32(i)
	s.members = s.members[:len(s.members)-1]
	delete(s.idx, k)
	s.bytes -= int64(len(k)) + 48
	return k
}

// Random returns a random member.
func (s *Set) Random(r *rand.Rand) string { return s.members[r.IntN(len(s.members))] }

// Pop removes and returns a random member.
func (s *Set) Pop(r *rand.Rand) string { return s.removeAt(r.IntN(len(s.members))) }

// Members returns the members (the slice is the set's own; do not modify).
func (s *Set) Members() []string { return s.members }

// Release drops the contents.
func (s *Set) Release() { clear(s.idx); s.members = nil }
