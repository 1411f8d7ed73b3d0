package keyspace

// Clone returns a deep copy of the list.
func (l *List) Clone() *List {
	n := NewList()
	for i := 0; i < l.n; i++ {
		n.PushBack(l.Index(i))
	}
	return n
}

// Clone returns a deep copy of the hash.
func (h *Hash) Clone() *Hash {
	n := &Hash{m: make(map[string][]byte, len(h.m)), bytes: h.bytes}
	for k, v := range h.m {
		n.m[k] = append([]byte(nil), v...)
	}
	return n
}

// Clone returns a deep copy of the set.
func (s *Set) Clone() *Set {
	n := NewSet()
	for _, m := range s.members {
		n.Add([]byte(m))
	}
	return n
}

// Clone returns a deep copy of the sorted set.
func (z *ZSet) Clone() *ZSet {
	n := NewZSet()
	z.Each(func(e Entry) bool { n.Add([]byte(e.Member), e.Score); return true })
	return n
}
