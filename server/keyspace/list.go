package keyspace

import "encoding/binary"

// List is a quicklist, as in Redis: a deque of nodes, each a packed slice of elements. A node
// holds up to list-max-listpack-size elements (when positive) or bytes (4 to 64 KiB for -1 to
// -5); an element larger than a node's size gets a node of its own. Pushes and pops at either
// end touch one node and are O(1); access by index walks the nodes, then one node, as Redis's
// does.
//
// A node's bytes: the element count (uint32 LE), the offset of its first element (uint32 LE:
// pops from the front move it instead of the bytes, and pushes to the front fill the space it
// leaves), then the elements, each its length as a uvarint, its bytes, and its length again as a
// uvarint written backwards, so the node can be walked from either end.
type List struct {
	nodes [][]byte
	n     int
	// caps is the sum of the nodes' capacities, kept as they change so that Bytes is O(1):
	// every write is accounted through Bytes (accounting.go), and summing thousands of nodes
	// made LPUSH on a long list O(nodes).
	caps int
}

const (
	nodeHeader = 8
	// nodeSafetyLimit bounds a node's bytes when the fill is a count, as Redis's
	// SIZE_SAFETY_LIMIT does.
	nodeSafetyLimit = 8192
)

// NewList returns an empty list.
func NewList() *List { return &List{} }

// Encoding is the name OBJECT ENCODING gives a list in Redis 7.0: always "quicklist".
func (l *List) Encoding() string { return "quicklist" }

// Len is the number of elements.
func (l *List) Len() int { return l.n }

// Nodes is the number of nodes, for DEBUG and MEMORY figures.
func (l *List) Nodes() int { return len(l.nodes) }

// Bytes is the memory held, for accounting.
func (l *List) Bytes() int64 {
	return int64(40+16) + int64(cap(l.nodes))*24 + int64(l.caps)
}

// setNode puts nd in place of node i, keeping caps.
func (l *List) setNode(i int, nd []byte) {
	l.caps += cap(nd) - cap(l.nodes[i])
	l.nodes[i] = nd
}

// sumCaps recomputes caps after the nodes were replaced wholesale.
func (l *List) sumCaps() {
	l.caps = 0
	for _, nd := range l.nodes {
		l.caps += cap(nd)
	}
}

func nodeCount(nd []byte) int       { return int(binary.LittleEndian.Uint32(nd)) }
func nodeStart(nd []byte) int       { return int(binary.LittleEndian.Uint32(nd[4:])) }
func setNodeCount(nd []byte, n int) { binary.LittleEndian.PutUint32(nd, uint32(n)) }
func setNodeStart(nd []byte, s int) { binary.LittleEndian.PutUint32(nd[4:], uint32(s)) }

// listElemSize is the bytes an element of n bytes takes in a node.
func listElemSize(n int) int { return 2*uvarintLen(uint64(n)) + n }

// putListElem writes v as a node element at b[0:] and returns the bytes written.
func putListElem(b, v []byte) int {
	w := binary.PutUvarint(b, uint64(len(v)))
	w += copy(b[w:], v)
	var tmp [binary.MaxVarintLen64]byte
	k := binary.PutUvarint(tmp[:], uint64(len(v)))
	for i := 0; i < k; i++ {
		b[w+i] = tmp[k-1-i]
	}
	return w + k
}

// listElemAt reads the element at off and returns it with the next element's offset.
func listElemAt(nd []byte, off int) ([]byte, int) {
	v, w := binary.Uvarint(nd[off:])
	s := off + w
	e := s + int(v)
	return nd[s:e:e], e + uvarintLen(v)
}

// listElemBefore reads the element that ends at end and returns it with its offset.
func listElemBefore(nd []byte, end int) ([]byte, int) {
	var v uint64
	p := end - 1
	for shift := 0; ; shift += 7 {
		c := nd[p]
		v |= uint64(c&0x7f) << shift
		if c < 0x80 {
			break
		}
		p--
	}
	e := p
	s := e - int(v)
	return nd[s:e:e], s - uvarintLen(v)
}

// fits says whether a node of used bytes of elements and count elements may take one more of
// size bytes. The limits count the node's header, as Redis's count its listpack's, so a full
// node is exactly a power of two, an allocation size of Go's with nothing left over.
func fits(used, count, size int) bool {
	if count == 0 {
		return true
	}
	fill := limits.Load().ListMaxListpackSize
	if fill >= 0 { // a count (0 takes one element a node, as in Redis)
		return count < fill && nodeHeader+used+size <= nodeSafetyLimit
	}
	return nodeHeader+used+size <= 4096<<(min(-fill, 5)-1)
}

// newNode returns a node holding v. A list's first node is sized for v alone (most lists are
// small); a node added next to a full one is given the room of a whole node at once, on the side
// it will grow towards, so a long list is built without the garbage of growing each node.
func newNode(v []byte, full, front bool) []byte {
	size := listElemSize(len(v))
	room := nodeHeader + size
	if full {
		room = max(room, nodeBytes(size))
	}
	nd := make([]byte, nodeHeader+size, room)
	start := nodeHeader
	if front {
		nd = nd[:room]
		start = room - size
	}
	putListElem(nd[start:], v)
	setNodeCount(nd, 1)
	setNodeStart(nd, start)
	return nd
}

// nodeBytes is the bytes of a full node of the current fill, header included, for elements of
// about size bytes.
func nodeBytes(size int) int {
	fill := limits.Load().ListMaxListpackSize
	if fill >= 0 {
		return min(nodeSafetyLimit, nodeHeader+max(fill, 1)*size)
	}
	return 4096 << (min(-fill, 5) - 1)
}

// spareNode returns a buffer of capacity n or more for the first node of an empty list: the
// spare one a write view (inline.go) keeps just past the end of its nodes, when it is big
// enough, else a new one of exactly n.
func (l *List) spareNode(n int) []byte {
	if len(l.nodes) == 0 && cap(l.nodes) > 0 {
		if spare := l.nodes[:1][0]; cap(spare) >= n {
			return spare[:n]
		}
	}
	return make([]byte, n)
}

// PushFront inserts a copy of v at the head.
func (l *List) PushFront(v []byte) {
	l.n++
	size := listElemSize(len(v))
	if len(l.nodes) > 0 {
		nd := l.nodes[0]
		start := nodeStart(nd)
		if fits(len(nd)-start, nodeCount(nd), size) {
			if start-nodeHeader < size {
				// Leave some room in front, so pushes to the front do not copy the node each time.
				nd = regrow(nd, size+(len(nd)-start)/8, 0)
				start = nodeStart(nd)
			}
			start -= size
			putListElem(nd[start:], v)
			setNodeStart(nd, start)
			setNodeCount(nd, nodeCount(nd)+1)
			l.setNode(0, nd)
			return
		}
	}
	l.nodes = append(l.nodes, nil)
	copy(l.nodes[1:], l.nodes)
	l.nodes[0] = nil
	l.setNode(0, newNode(v, len(l.nodes) > 1, true))
}

// regrow returns nd rewritten with front bytes free before its first element and back bytes of
// capacity after its last.
func regrow(nd []byte, front, back int) []byte {
	start := nodeStart(nd)
	body := len(nd) - start
	n := nodeHeader + front + body
	out := make([]byte, n, packedCap(n+back))
	copy(out, nd[:nodeHeader])
	copy(out[nodeHeader+front:], nd[start:])
	setNodeStart(out, nodeHeader+front)
	return out
}

// PushBack appends a copy of v at the tail.
func (l *List) PushBack(v []byte) {
	l.n++
	size := listElemSize(len(v))
	if k := len(l.nodes); k > 0 {
		nd := l.nodes[k-1]
		if fits(len(nd)-nodeStart(nd), nodeCount(nd), size) {
			if cap(nd)-len(nd) < size {
				nd = regrow(nd, 0, size)
			}
			old := len(nd)
			nd = nd[:old+size]
			putListElem(nd[old:], v)
			setNodeCount(nd, nodeCount(nd)+1)
			l.setNode(k-1, nd)
			return
		}
	}
	nd := newNode(v, len(l.nodes) > 0, false)
	l.caps += cap(nd)
	l.nodes = append(l.nodes, nd)
}

// PushAll pushes vals one by one at the head (in turn, as LPUSH does) or at the tail, first
// making exactly the room they take in the end node, so a list written in one command is one
// allocation per node and carries no spare capacity.
func (l *List) PushAll(vals [][]byte, front bool) {
	var nd []byte
	used, count := 0, 0
	if k := len(l.nodes); k > 0 {
		if front {
			nd = l.nodes[0]
		} else {
			nd = l.nodes[k-1]
		}
		used, count = len(nd)-nodeStart(nd), nodeCount(nd)
	}
	extra := 0
	for _, v := range vals {
		size := listElemSize(len(v))
		if !fits(used, count, size) {
			break
		}
		used, count, extra = used+size, count+1, extra+size
	}
	switch {
	case extra == 0:
	case nd == nil:
		// An empty node of exactly the room needed (or a write view's spare buffer, see
		// spareNode): the pushes below fill it.
		nd = l.spareNode(nodeHeader + extra)[:nodeHeader]
		setNodeCount(nd, 0) // a reused buffer holds an old header
		setNodeStart(nd, nodeHeader)
		if front {
			nd = nd[:nodeHeader+extra]
			setNodeStart(nd, nodeHeader+extra)
		}
		l.caps += cap(nd)
		l.nodes = append(l.nodes, nd)
	case front && nodeStart(nd)-nodeHeader < extra:
		l.setNode(0, regrowExact(nd, extra-(nodeStart(nd)-nodeHeader), 0))
	case !front && cap(nd)-len(nd) < extra:
		l.setNode(len(l.nodes)-1, regrowExact(nd, 0, extra))
	}
	for _, v := range vals {
		if front {
			l.PushFront(v)
		} else {
			l.PushBack(v)
		}
	}
}

// regrowExact is regrow without spare capacity: more front bytes before the first element, and
// room for back more bytes after the last.
func regrowExact(nd []byte, front, back int) []byte {
	start := nodeStart(nd)
	n := len(nd) + front
	out := make([]byte, n, n+back)
	copy(out, nd[:nodeHeader])
	copy(out[start+front:], nd[start:])
	setNodeStart(out, start+front)
	return out
}

// PopFront removes and returns the head (a view, valid until the list's next write).
func (l *List) PopFront() []byte {
	if l.n == 0 {
		return nil
	}
	nd := l.nodes[0]
	v, next := listElemAt(nd, nodeStart(nd))
	l.n--
	if nodeCount(nd) == 1 {
		l.dropNode(0)
		return v
	}
	setNodeStart(nd, next)
	setNodeCount(nd, nodeCount(nd)-1)
	return v
}

// PopBack removes and returns the tail (a view, valid until the list's next write).
func (l *List) PopBack() []byte {
	if l.n == 0 {
		return nil
	}
	k := len(l.nodes) - 1
	nd := l.nodes[k]
	v, off := listElemBefore(nd, len(nd))
	l.n--
	if nodeCount(nd) == 1 {
		l.dropNode(k)
		return v
	}
	setNodeCount(nd, nodeCount(nd)-1)
	l.nodes[k] = nd[:off]
	return v
}

func (l *List) dropNode(i int) {
	l.caps -= cap(l.nodes[i])
	copy(l.nodes[i:], l.nodes[i+1:])
	l.nodes[len(l.nodes)-1] = nil
	l.nodes = l.nodes[:len(l.nodes)-1]
	if cap(l.nodes) > 8 && len(l.nodes) < cap(l.nodes)/4 {
		l.nodes = append([][]byte(nil), l.nodes...)
	}
	if len(l.nodes) == 0 {
		l.nodes = nil
	}
}

// locate returns the node holding element i and i's position within it.
func (l *List) locate(i int) (int, int) {
	if i < l.n/2 {
		for k, nd := range l.nodes {
			if c := nodeCount(nd); i < c {
				return k, i
			} else {
				i -= c
			}
		}
	}
	j := l.n - 1 - i // position from the tail
	for k := len(l.nodes) - 1; k >= 0; k-- {
		c := nodeCount(l.nodes[k])
		if j < c {
			return k, c - 1 - j
		}
		j -= c
	}
	panic("keyspace: list index out of range")
}

// elemOffset returns the offset of element j of node nd and of the element after it.
func elemOffset(nd []byte, j int) (int, int) {
	c := nodeCount(nd)
	if j < c/2 {
		off := nodeStart(nd)
		for ; j > 0; j-- {
			_, off = listElemAt(nd, off)
		}
		_, next := listElemAt(nd, off)
		return off, next
	}
	end := len(nd)
	for k := c - 1; k > j; k-- {
		_, end = listElemBefore(nd, end)
	}
	_, off := listElemBefore(nd, end)
	return off, end
}

// Index returns element i (0-based from the head); i must be in range.
func (l *List) Index(i int) []byte {
	k, j := l.locate(i)
	off, _ := elemOffset(l.nodes[k], j)
	v, _ := listElemAt(l.nodes[k], off)
	return v
}

// Range calls fn for elements start..stop (inclusive, in range) in order until it returns false.
func (l *List) Range(start, stop int, fn func(v []byte) bool) {
	if start > stop {
		return
	}
	k, j := l.locate(start)
	off, _ := elemOffset(l.nodes[k], j)
	for i := start; i <= stop; i++ {
		nd := l.nodes[k]
		if off >= len(nd) {
			k++
			nd = l.nodes[k]
			off = nodeStart(nd)
		}
		var v []byte
		v, off = listElemAt(nd, off)
		if !fn(v) {
			return
		}
	}
}

// Walk calls fn with each element and its index, from the head, or from the tail when fromTail
// is set, until fn returns false.
func (l *List) Walk(fromTail bool, fn func(i int, v []byte) bool) {
	if !fromTail {
		i := 0
		l.Each(func(v []byte) bool { ok := fn(i, v); i++; return ok })
		return
	}
	i := l.n - 1
	for k := len(l.nodes) - 1; k >= 0; k-- {
		nd := l.nodes[k]
		for end := len(nd); end > nodeStart(nd); i-- {
			var v []byte
			v, end = listElemBefore(nd, end)
			if !fn(i, v) {
				return
			}
		}
	}
}

// Each calls fn for every element from the head until it returns false.
func (l *List) Each(fn func(v []byte) bool) {
	for _, nd := range l.nodes {
		for off := nodeStart(nd); off < len(nd); {
			var v []byte
			v, off = listElemAt(nd, off)
			if !fn(v) {
				return
			}
		}
	}
}

// rewrite replaces node k's element j with the elements of with (none deletes it), splitting the
// node when it outgrows its size.
func (l *List) rewrite(k, j int, with ...[]byte) {
	nd := l.nodes[k]
	off, next := elemOffset(nd, j)
	start := nodeStart(nd)
	var elems [][]byte
	for o := start; o < off; {
		var v []byte
		v, o = listElemAt(nd, o)
		elems = append(elems, v)
	}
	elems = append(elems, with...)
	for o := next; o < len(nd); {
		var v []byte
		v, o = listElemAt(nd, o)
		elems = append(elems, v)
	}
	var out [][]byte
	cur := []byte(nil)
	for _, v := range elems {
		size := listElemSize(len(v))
		if cur != nil && !fits(len(cur)-nodeHeader, nodeCount(cur), size) {
			out = append(out, cur)
			cur = nil
		}
		if cur == nil {
			cur = make([]byte, nodeHeader, nodeHeader+size)
			setNodeStart(cur, nodeHeader)
		}
		old := len(cur)
		cur = append(cur, make([]byte, size)...)
		putListElem(cur[old:], v)
		setNodeCount(cur, nodeCount(cur)+1)
	}
	if cur != nil {
		out = append(out, cur)
	}
	l.caps -= cap(l.nodes[k])
	for _, nd := range out {
		l.caps += cap(nd)
	}
	tail := append(out, l.nodes[k+1:]...)
	l.nodes = append(l.nodes[:k], tail...)
	if len(l.nodes) == 0 {
		l.nodes = nil
	}
}

// Set replaces element i with a copy of v.
func (l *List) Set(i int, v []byte) {
	k, j := l.locate(i)
	l.rewrite(k, j, v)
}

// Insert puts a copy of v before position i (i == Len appends).
func (l *List) Insert(i int, v []byte) {
	switch i {
	case 0:
		l.PushFront(v)
		return
	case l.n:
		l.PushBack(v)
		return
	}
	k, j := l.locate(i)
	nd := l.nodes[k]
	off, _ := elemOffset(nd, j)
	cur, _ := listElemAt(nd, off)
	cur = append([]byte(nil), cur...)
	l.rewrite(k, j, v, cur)
	l.n++
}

// Remove deletes element i.
func (l *List) Remove(i int) {
	k, j := l.locate(i)
	l.rewrite(k, j)
	l.n--
}

// RemoveMatching deletes up to limit elements (0: all) for which match is true, scanning from
// the head, or from the tail when fromTail is set, and returns how many it deleted. It rebuilds
// the list in one pass, so removing many elements costs O(n), not O(n) per element.
func (l *List) RemoveMatching(match func([]byte) bool, limit int, fromTail bool) int {
	var victims []bool
	removed := 0
	if fromTail {
		victims = make([]bool, l.n)
		i := l.n - 1
		for k := len(l.nodes) - 1; k >= 0; k-- {
			nd := l.nodes[k]
			for end := len(nd); end > nodeStart(nd); i-- {
				var v []byte
				v, end = listElemBefore(nd, end)
				if (limit == 0 || removed < limit) && match(v) {
					victims[i] = true
					removed++
				}
			}
		}
	} else {
		victims = make([]bool, l.n)
		i := 0
		l.Each(func(v []byte) bool {
			if (limit == 0 || removed < limit) && match(v) {
				victims[i] = true
				removed++
			}
			i++
			return true
		})
	}
	if removed == 0 {
		return 0
	}
	l.rebuild(func(i int) bool { return !victims[i] })
	return removed
}

// rebuild keeps the elements whose position keep accepts, repacked into full nodes.
func (l *List) rebuild(keep func(i int) bool) {
	old := l.nodes
	l.nodes, l.n, l.caps = nil, 0, 0
	i := 0
	for _, nd := range old {
		for off := nodeStart(nd); off < len(nd); i++ {
			var v []byte
			v, off = listElemAt(nd, off)
			if keep(i) {
				l.PushBack(v)
			}
		}
	}
}

// Trim keeps elements [start, stop] (inclusive, already clamped to the list).
func (l *List) Trim(start, stop int) {
	if start == 0 && stop >= l.n-1 {
		return
	}
	if stop < start {
		l.nodes, l.n, l.caps = nil, 0, 0
		return
	}
	for l.n > stop+1 {
		l.PopBack()
	}
	for i := 0; i < start; i++ {
		l.PopFront()
	}
}

// Release drops the contents; used to free large values off the main thread.
func (l *List) Release() { clear(l.nodes); l.nodes, l.n, l.caps = nil, 0, 0 }
