package keyspace

import (
	"encoding/binary"
	"fmt"
	"math"
)

// A list node's bytes: the element count (uint32 LE), the offset of its body (uint32 LE: pops
// from the front move it instead of the bytes, and pushes to the front fill the space it leaves
// in front), then the body. The body of a node of n elements E0..E(n-1) is
//
//	B0 E0 B1 E1 … B(n-1) E(n-1) Bn
//
// where boundary Bi holds len(E(i-1)) XOR len(Ei), taking len(E(-1)) = len(E(n)) = 0: B0 is
// len(E0) and Bn is len(E(n-1)). Walking forwards from B0 one knows the length of the element
// just passed, so each boundary gives the next one's length; walking backwards from Bn, each gives
// the previous one's. That is n+1 boundaries for n elements, one byte each for short elements,
// where a length written before and after each element (as Redis's listpack does, with its
// encoding byte and backlen) costs two: it is what makes a list cost less than in Redis.
//
// A boundary is read from either end by its last (or first) byte:
//
//   - when both lengths next to it are under 128, one byte with the high bit clear: the XOR;
//   - otherwise six bytes: 0x80, the XOR as uint32 LE, 0x80. Reading forwards the value follows
//     the marker, reading backwards it precedes it.
//
// The long form is fixed-width, and the choice depends on the neighbours' lengths rather than on
// the XOR's value, so that a pop never grows the boundary it rewrites: a pop returns a view into
// the node (valid until the list's next write), and rewrites the boundary next to the popped
// element in place (PopFront: B1, from len(E0)^len(E1) to len(E1), ending where B1 ended;
// PopBack: B(n-1), from len(E(n-2))^len(E(n-1)) to len(E(n-2)), starting where B(n-1) started).
// Replacing one neighbour's length by 0 never turns a one-byte boundary long, and a long one
// stays six bytes or shrinks to one, so the rewrite never reaches into the element returned.
//
// An element's length must fit the long form's four bytes (maxListElem); the engine refuses
// longer ones before they reach a list, and writing one panics rather than truncate it.
//
// A node of no elements has an empty body: PushAll makes one to fill, and pushes treat its
// missing end boundary as a zero-length one of no bytes.

// maxListElem is the longest element a list node holds.
const maxListElem = math.MaxUint32

// MaxListElem is the longest element a list may hold: longer ones must be refused before they
// reach a List.
const MaxListElem int64 = maxListElem

// longBoundary is the bytes of a boundary's long form.
const longBoundary = 6

// boundarySize is the bytes of the boundary between elements of a and b bytes.
func boundarySize(a, b int) int {
	if a|b < 0x80 {
		return 1
	}
	return longBoundary
}

// putBoundary writes the boundary between elements of a and b bytes at p[0:] and returns its
// size.
func putBoundary(p []byte, a, b int) int {
	if a|b < 0x80 {
		p[0] = byte(a ^ b)
		return 1
	}
	if uint64(a) > maxListElem || uint64(b) > maxListElem {
		panic(fmt.Sprintf("keyspace: a list element of %d bytes is longer than a list holds (%d)", max(a, b), uint64(maxListElem)))
	}
	_ = p[5]
	p[0] = 0x80
	binary.LittleEndian.PutUint32(p[1:], uint32(a^b))
	p[5] = 0x80
	return longBoundary
}

// boundaryAt reads the boundary that starts at off: its value and its size.
func boundaryAt(nd []byte, off int) (int, int) {
	if c := nd[off]; c < 0x80 {
		return int(c), 1
	}
	return int(binary.LittleEndian.Uint32(nd[off+1:])), longBoundary
}

// boundaryBefore reads the boundary that ends at end: its value and its size.
func boundaryBefore(nd []byte, end int) (int, int) {
	if c := nd[end-1]; c < 0x80 {
		return int(c), 1
	}
	return int(binary.LittleEndian.Uint32(nd[end-5:])), longBoundary
}

// putElem writes v at p[0:] with the boundaries on either side of it, between an element of
// before bytes and v, and between v and an element of after bytes; it returns the bytes written.
func putElem(p []byte, before int, v []byte, after int) int {
	w := putBoundary(p, before, len(v))
	w += copy(p[w:], v)
	return w + putBoundary(p[w:], len(v), after)
}

// pushGrowth is the bytes a node grows by when an element of n bytes is pushed next to its end
// element of edge bytes (count elements; with none, edge is 0 and there is no end boundary).
func pushGrowth(count, edge, n int) int {
	g := boundarySize(edge, n) + n + boundarySize(n, 0)
	if count > 0 {
		g -= boundarySize(edge, 0)
	}
	return g
}

// singleNodeSize is the body of a node holding one element of n bytes.
func singleNodeSize(n int) int { return n + 2*boundarySize(n, 0) }

// nodeHead returns the length of node nd's first element (0 for a node of no elements).
func nodeHead(nd []byte) int {
	if nodeCount(nd) == 0 {
		return 0
	}
	first, _ := boundaryAt(nd, nodeStart(nd))
	return first
}

// nodeTail returns the length of node nd's last element and the size of its last boundary (0
// and 0 for a node of no elements).
func nodeTail(nd []byte) (int, int) {
	if nodeCount(nd) == 0 {
		return 0, 0
	}
	return boundaryBefore(nd, len(nd))
}

// fwd walks a node towards its tail: off is where boundary Bi starts and prev is len(E(i-1)).
type fwd struct{ off, prev int }

// headCursor is a forward cursor at node nd's first element.
func headCursor(nd []byte) fwd { return fwd{off: nodeStart(nd)} }

// next returns the element after the cursor (a view of the node) and moves past it.
func (c *fwd) next(nd []byte) []byte {
	x, w := boundaryAt(nd, c.off)
	n := c.prev ^ x
	s := c.off + w
	e := s + n
	c.off, c.prev = e, n
	return nd[s:e:e]
}

// bwd walks a node towards its head: end is where boundary B(i+1) ends and next is len(E(i+1)).
type bwd struct{ end, next int }

// tailCursor is a backward cursor at node nd's last element.
func tailCursor(nd []byte) bwd { return bwd{end: len(nd)} }

// prev returns the element before the cursor (a view of the node) and moves before it, to
// where the boundary before it ends.
func (c *bwd) prev(nd []byte) []byte {
	x, w := boundaryBefore(nd, c.end)
	n := c.next ^ x
	e := c.end - w
	s := e - n
	c.end, c.next = s, n
	return nd[s:e:e]
}

// fwd turns a backward cursor that has just passed element Ei into a forward cursor at Ei.
func (c bwd) fwd(nd []byte) fwd {
	x, w := boundaryBefore(nd, c.end)
	return fwd{off: c.end - w, prev: c.next ^ x}
}

// cursorAt returns a forward cursor at element j of node nd, walking from the nearer end.
func cursorAt(nd []byte, j int) fwd {
	c := nodeCount(nd)
	if j < c/2 {
		f := headCursor(nd)
		for ; j > 0; j-- {
			f.next(nd)
		}
		return f
	}
	b := tailCursor(nd)
	for k := c - 1; k >= j; k-- {
		b.prev(nd)
	}
	return b.fwd(nd)
}

// packNodes writes elems into as few nodes as the fill allows, each allocated to its exact size.
func packNodes(elems [][]byte) [][]byte {
	var out [][]byte
	for i := 0; i < len(elems); {
		used, count, last := 0, 0, 0
		j := i
		for ; j < len(elems); j++ {
			g := pushGrowth(count, last, len(elems[j]))
			if !fits(used, count, g) {
				break
			}
			used, count, last = used+g, count+1, len(elems[j])
		}
		nd := make([]byte, nodeHeader+used)
		setNodeCount(nd, count)
		setNodeStart(nd, nodeHeader)
		off, prev := nodeHeader, 0
		for _, v := range elems[i:j] {
			off += putBoundary(nd[off:], prev, len(v))
			off += copy(nd[off:], v)
			prev = len(v)
		}
		putBoundary(nd[off:], prev, 0)
		out = append(out, nd)
		i = j
	}
	return out
}

// checkNode verifies node nd's format: its boundaries decode to the same elements walked from
// either end, the first and last hold the end elements' lengths, and each boundary has the size
// its neighbours call for. It returns the elements, for tests.
func checkNode(nd []byte) ([][]byte, error) {
	count, start := nodeCount(nd), nodeStart(nd)
	if start < nodeHeader || start > len(nd) {
		return nil, fmt.Errorf("body offset %d of a node of %d bytes", start, len(nd))
	}
	if count == 0 {
		if start != len(nd) {
			return nil, fmt.Errorf("a node of no elements has %d body bytes", len(nd)-start)
		}
		return nil, nil
	}
	var elems [][]byte
	off, prev := start, 0
	for i := 0; i <= count; i++ {
		if off >= len(nd) {
			return nil, fmt.Errorf("forwards: boundary %d starts at %d, past the node's %d bytes", i, off, len(nd))
		}
		x, w := boundaryAt(nd, off)
		if w == longBoundary && (off+longBoundary > len(nd) || nd[off+5] != 0x80) {
			return nil, fmt.Errorf("forwards: boundary %d at %d is not a long form", i, off)
		}
		n := prev ^ x
		if i == count {
			if n != 0 {
				return nil, fmt.Errorf("the last boundary leaves %d, not 0", n)
			}
			if off+w != len(nd) {
				return nil, fmt.Errorf("the last boundary ends at %d of %d bytes", off+w, len(nd))
			}
			break
		}
		if want := boundarySize(prev, n); w != want {
			return nil, fmt.Errorf("boundary %d between %d and %d bytes takes %d bytes, want %d", i, prev, n, w, want)
		}
		off += w
		if off+n > len(nd) {
			return nil, fmt.Errorf("element %d of %d bytes runs past the node", i, n)
		}
		elems = append(elems, nd[off:off+n])
		off += n
		prev = n
	}
	if want := boundarySize(prev, 0); len(nd)-off != want {
		return nil, fmt.Errorf("the last boundary takes %d bytes, want %d", len(nd)-off, want)
	}
	end, next := len(nd), 0
	for i := count - 1; i >= -1; i-- {
		if end <= start {
			return nil, fmt.Errorf("backwards: boundary %d ends at %d, before the body", i+1, end)
		}
		x, w := boundaryBefore(nd, end)
		if w == longBoundary && (end-longBoundary < start || nd[end-6] != 0x80) {
			return nil, fmt.Errorf("backwards: boundary %d ending at %d is not a long form", i+1, end)
		}
		n := next ^ x
		end -= w
		if i == -1 {
			if n != 0 || end != start {
				return nil, fmt.Errorf("backwards: the first boundary leaves %d and starts at %d, not 0 at %d", n, end, start)
			}
			break
		}
		if end-n < start || string(nd[end-n:end]) != string(elems[i]) {
			return nil, fmt.Errorf("backwards: element %d differs", i)
		}
		end -= n
		next = n
	}
	return elems, nil
}
