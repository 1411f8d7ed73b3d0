package keyspace

// Clone returns a deep copy of the list.
func (l *List) Clone() *List {
	n := NewList()
	for i := 0; i < l.n; i++ {
		n.PushBack(l.Index(i))
	}
	return n
}

// Clone returns a deep copy of the hash, in the same order.
func (h *Hash) Clone() *Hash {
	n := &Hash{fields: make([]hashField, len(h.fields)), index: make(map[string]int32, len(h.index)), bytes: h.bytes}
	for i, f := range h.fields {
		n.fields[i] = hashField{name: f.name, value: append([]byte(nil), f.value...)}
		n.index[f.name] = int32(i)
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
