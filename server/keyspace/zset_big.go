package keyspace

// The large sorted set's operations (encoding "skiplist").

func (z *zsetBig) add(member []byte, score float64) bool {
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

func (z *zsetBig) remove(member []byte) bool {
	score, ok := z.dict[string(member)]
	if !ok {
		return false
	}
	z.zsl.delete(score, string(member))
	delete(z.dict, string(member))
	z.bytes -= int64(len(member)) + 96
	return true
}

func (z *zsetBig) rankOf(member []byte) (int, bool) {
	score, ok := z.dict[string(member)]
	if !ok {
		return 0, false
	}
	return z.zsl.rank(score, string(member)) - 1, true
}

func nodeEntry(x *zslNode) Entry { return Entry{stringView(x.member), x.score} }

func (z *zsetBig) rangeByRank(start, stop int, rev bool, fn func(Entry) bool) {
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
		if !fn(nodeEntry(x)) {
			return
		}
		if rev {
			x = x.backward
		} else {
			x = x.level[0].forward
		}
	}
}

func (z *zsetBig) first(rev bool) (Entry, bool) {
	var x *zslNode
	if rev {
		x = z.zsl.tail
	} else {
		x = z.zsl.header.level[0].forward
	}
	if x == nil {
		return Entry{}, false
	}
	return nodeEntry(x), true
}

func (z *zsetBig) rangeByScore(r ScoreRange, rev bool, fn func(Entry) bool) {
	if rev {
		for x := z.zsl.lastInRange(&r); x != nil && r.gteMin(x.score); x = x.backward {
			if !fn(nodeEntry(x)) {
				return
			}
		}
		return
	}
	for x := z.zsl.firstInRange(&r); x != nil && r.lteMax(x.score); x = x.level[0].forward {
		if !fn(nodeEntry(x)) {
			return
		}
	}
}

func (z *zsetBig) countInRange(r ScoreRange) int {
	first := z.zsl.firstInRange(&r)
	if first == nil {
		return 0
	}
	last := z.zsl.lastInRange(&r)
	return z.zsl.rank(last.score, last.member) - z.zsl.rank(first.score, first.member) + 1
}

func (z *zsetBig) rangeByLex(r LexRange, rev bool, fn func(Entry) bool) {
	if rev {
		x := z.zsl.header
		for i := z.zsl.level - 1; i >= 0; i-- {
			for x.level[i].forward != nil && r.lteMax(x.level[i].forward.member) {
				x = x.level[i].forward
			}
		}
		for ; x != nil && x != z.zsl.header && r.gteMin(x.member); x = x.backward {
			if !fn(nodeEntry(x)) {
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
		if !fn(nodeEntry(x)) {
			return
		}
	}
}

func (z *zsetBig) each(fn func(Entry) bool) {
	for x := z.zsl.header.level[0].forward; x != nil; x = x.level[0].forward {
		if !fn(nodeEntry(x)) {
			return
		}
	}
}
