package keyspace

import "encoding/binary"

// List is a quicklist, as in Redis: a deque of nodes, each a packed slice of elements. A node
// holds up to list-max-listpack-size elements (when positive) or bytes (4 to 64 KiB for -1 to
// -5); an element larger than a node's size gets a node of its own. Pushes and pops at either
// end touch one node and are O(1); access by index walks the nodes, then one node, as Redis's
// does.
//
// A node's bytes are described in list_node.go: a header, then the elements with one boundary
// between each two (and one at either end), each holding the XOR of its neighbours' lengths.
type List struct {
	nodes [][]byte
	n     int
	// caps is the sum of the nodes' capacities, kept as they change so that Bytes is O(1):
	// every write is accounted through Bytes (accounting.go), and summing thousands of nodes
	// made LPUSH on a long list O(nodes).
	caps int
	// slab is what is left of the last block that whole nodes are carved from (see carve).
	slab []byte
}

const (
	nodeHeader = 8
	// nodeSafetyLimit bounds a node's bytes when the fill is a count, as Redis's
	// SIZE_SAFETY_LIMIT does.
	nodeSafetyLimit = 8192
	// slabBytes is the largest block whole nodes are carved from.
	slabBytes = 64 << 10
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
	return int64(64) + int64(cap(l.nodes))*24 + int64(l.caps) + int64(cap(l.slab))
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

// fits says whether a node of used body bytes and count elements may take one more that grows
// it by size bytes (pushGrowth). The limits count the node's header, as Redis's count its listpack's, so a full
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
func (l *List) newNode(v []byte, full, front bool) []byte {
	size := singleNodeSize(len(v))
	room := nodeHeader + size
	if full {
		room = max(room, nodeBytes(len(v)))
	}
	nd := l.carve(nodeHeader+size, room)
	start := nodeHeader
	if front {
		nd = nd[:room]
		start = room - size
	}
	putElem(nd[start:], 0, v, 0)
	setNodeCount(nd, 1)
	setNodeStart(nd, start)
	return nd
}

// carve returns a zeroed node buffer of length n and capacity room. Go gives each allocation of
// 8 KiB (a default node) a span of its own with its metadata, 3% of the node; a long list's full
// nodes are instead carved from blocks of up to slabBytes, a block per several nodes. The block is
// sized to a quarter of the list's nodes (at most slabBytes), so what is carved but not yet used
// stays under a quarter of the list. A block lives while any node carved from it does: nodes
// leave a list from its ends (pops, trims, which carve in order) or are rewritten in its middle
// (LSET, LINSERT, LREM, to nodes of their own), so at worst a block outlives seven of its eight
// nodes.
func (l *List) carve(n, room int) []byte {
	per := min(len(l.nodes)/4, slabBytes/max(room, 1))
	if per < 2 {
		return make([]byte, n, room)
	}
	if cap(l.slab) < room {
		l.slab = make([]byte, per*room)
	}
	nd := l.slab[:n:room]
	l.slab = l.slab[room:]
	return nd
}

// nodeBytes is the bytes of a full node of the current fill, header included, for elements of
// about n bytes.
func nodeBytes(n int) int {
	fill := limits.Load().ListMaxListpackSize
	if fill >= 0 {
		return min(nodeSafetyLimit, nodeHeader+max(fill, 1)*(n+boundarySize(n, n))+boundarySize(n, 0))
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
	if len(l.nodes) > 0 {
		nd := l.nodes[0]
		start, count := nodeStart(nd), nodeCount(nd)
		first := nodeHead(nd)
		size := pushGrowth(count, first, len(v))
		if fits(len(nd)-start, count, size) {
			if start-nodeHeader < size {
				// Leave some room in front, so pushes to the front do not copy the node each time.
				nd = regrow(nd, size+(len(nd)-start)/8, 0)
				start = nodeStart(nd)
			}
			// v and the boundaries on either side of it replace the first boundary, B0: they
			// take size bytes more, so they start size bytes before it.
			putElem(nd[start-size:], 0, v, first)
			setNodeStart(nd, start-size)
			setNodeCount(nd, count+1)
			l.setNode(0, nd)
			return
		}
	}
	l.nodes = append(l.nodes, nil)
	copy(l.nodes[1:], l.nodes)
	l.nodes[0] = nil
	l.setNode(0, l.newNode(v, len(l.nodes) > 1, true))
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
	if k := len(l.nodes); k > 0 {
		nd := l.nodes[k-1]
		count := nodeCount(nd)
		last, w := nodeTail(nd)
		size := pushGrowth(count, last, len(v))
		if fits(len(nd)-nodeStart(nd), count, size) {
			if cap(nd)-len(nd) < size {
				nd = regrow(nd, 0, size)
			}
			// v and its boundaries replace the last boundary, Bn, which is w bytes.
			at := len(nd) - w
			nd = nd[:len(nd)+size]
			putElem(nd[at:], last, v, 0)
			setNodeCount(nd, count+1)
			l.setNode(k-1, nd)
			return
		}
	}
	nd := l.newNode(v, len(l.nodes) > 0, false)
	l.caps += cap(nd)
	l.nodes = append(l.nodes, nd)
}

// PushAll pushes vals one by one at the head (in turn, as LPUSH does) or at the tail, first
// making exactly the room they take in the end node, so a list written in one command is one
// allocation per node and carries no spare capacity.
func (l *List) PushAll(vals [][]byte, front bool) {
	var nd []byte
	used, count, edge := 0, 0, 0
	if k := len(l.nodes); k > 0 {
		if front {
			nd = l.nodes[0]
			edge = nodeHead(nd)
		} else {
			nd = l.nodes[k-1]
			edge, _ = nodeTail(nd)
		}
		used, count = len(nd)-nodeStart(nd), nodeCount(nd)
	}
	extra := 0
	for _, v := range vals {
		size := pushGrowth(count, edge, len(v))
		if !fits(used, count, size) {
			break
		}
		used, count, extra, edge = used+size, count+1, extra+size, len(v)
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
	c := headCursor(nd)
	v := c.next(nd)
	l.n--
	if nodeCount(nd) == 1 {
		l.dropNode(0)
		return v
	}
	// B1, between v and the new first element, becomes that element's length alone: it takes
	// no more bytes than before (list_node.go), so written to end where B1 ended it stays clear
	// of v, which the caller still reads.
	x, w := boundaryAt(nd, c.off)
	next := c.prev ^ x
	end := c.off + w
	start := end - boundarySize(0, next)
	putBoundary(nd[start:], 0, next)
	setNodeStart(nd, start)
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
	c := tailCursor(nd)
	v := c.prev(nd)
	l.n--
	if nodeCount(nd) == 1 {
		l.dropNode(k)
		return v
	}
	// B(n-1), between the new last element and v, becomes that element's length alone: it
	// takes no more bytes than before (list_node.go), so written where B(n-1) started it stays
	// clear of v, which the caller still reads.
	x, w := boundaryBefore(nd, c.end)
	prev := c.next ^ x
	at := c.end - w
	setNodeCount(nd, nodeCount(nd)-1)
	l.nodes[k] = nd[:at+putBoundary(nd[at:], prev, 0)]
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

// Index returns element i (0-based from the head); i must be in range.
func (l *List) Index(i int) []byte {
	k, j := l.locate(i)
	c := cursorAt(l.nodes[k], j)
	return c.next(l.nodes[k])
}

// Range calls fn for elements start..stop (inclusive, in range) in order until it returns false.
func (l *List) Range(start, stop int, fn func(v []byte) bool) {
	if start > stop {
		return
	}
	k, j := l.locate(start)
	nd := l.nodes[k]
	c := cursorAt(nd, j)
	for i := start; i <= stop; i, j = i+1, j+1 {
		if j == nodeCount(nd) {
			k, j = k+1, 0
			nd = l.nodes[k]
			c = headCursor(nd)
		}
		if !fn(c.next(nd)) {
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
		c := tailCursor(nd)
		for j := nodeCount(nd); j > 0; j, i = j-1, i-1 {
			if !fn(i, c.prev(nd)) {
				return
			}
		}
	}
}

// Each calls fn for every element from the head until it returns false.
func (l *List) Each(fn func(v []byte) bool) {
	for _, nd := range l.nodes {
		c := headCursor(nd)
		for j := nodeCount(nd); j > 0; j-- {
			if !fn(c.next(nd)) {
				return
			}
		}
	}
}

// rewrite replaces node k's element j with the elements of with (none deletes it), splitting the
// node when it outgrows its size.
func (l *List) rewrite(k, j int, with ...[]byte) {
	nd := l.nodes[k]
	elems := make([][]byte, 0, nodeCount(nd)-1+len(with))
	c := headCursor(nd)
	for i := range nodeCount(nd) {
		v := c.next(nd)
		if i == j {
			elems = append(elems, with...)
		} else {
			elems = append(elems, v)
		}
	}
	out := packNodes(elems)
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
	nd := l.nodes[k]
	c := cursorAt(nd, j)
	if old := c.next(nd); len(old) == len(v) {
		copy(old, v) // the same length: the boundaries stay as they are
		return
	}
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
	c := cursorAt(nd, j)
	cur := c.next(nd) // rewrite copies it into new nodes before dropping nd
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
			c := tailCursor(nd)
			for j := nodeCount(nd); j > 0; j, i = j-1, i-1 {
				if v := c.prev(nd); (limit == 0 || removed < limit) && match(v) {
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
	l.nodes, l.n, l.caps, l.slab = nil, 0, 0, nil
	i := 0
	for _, nd := range old {
		c := headCursor(nd)
		for j := nodeCount(nd); j > 0; j, i = j-1, i+1 {
			if v := c.next(nd); keep(i) {
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
		l.nodes, l.n, l.caps, l.slab = nil, 0, 0, nil
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
func (l *List) Release() { clear(l.nodes); l.nodes, l.n, l.caps, l.slab = nil, 0, 0, nil }
