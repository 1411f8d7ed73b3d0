package keyspace

// Clone returns a deep copy of the list.
func (l *List) Clone() *List {
	n := &List{nodes: make([][]byte, len(l.nodes)), n: l.n}
	for i, nd := range l.nodes {
		n.nodes[i] = append([]byte(nil), nd...)
	}
	n.sumCaps()
	return n
}

// Clone returns a deep copy of the hash, in the same order and encoding.
func (h *Hash) Clone() *Hash {
	if h.big == nil {
		return &Hash{lp: append([]byte(nil), h.lp...)}
	}
	return &Hash{big: h.big.clone()}
}

// Clone returns a deep copy of the set, in the same encoding.
func (s *Set) Clone() *Set {
	if s.big == nil {
		return &Set{ints: append(intset(nil), s.ints...)}
	}
	return &Set{big: s.big.clone()}
}

// Clone returns a deep copy of the sorted set, in the same encoding.
func (z *ZSet) Clone() *ZSet {
	if z.big == nil {
		return &ZSet{lp: append([]byte(nil), z.lp...)}
	}
	b := newZSetBig(z.big.len())
	z.big.each(func(e Entry) bool { b.add(e.Member, e.Score); return true })
	return &ZSet{big: b}
}
