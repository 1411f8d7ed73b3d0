package keyspace

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"slices"
	"strconv"
	"testing"
	"unsafe"
)

// checkList verifies every node of l (checkNode), that the nodes keep their fill's limits, and
// that the list read forwards, backwards and node by node is want.
func checkList(t *testing.T, l *List, want [][]byte, step int) {
	t.Helper()
	fill := limits.Load().ListMaxListpackSize
	var raw [][]byte
	caps := 0
	for k, nd := range l.nodes {
		elems, err := checkNode(nd)
		if err != nil {
			t.Fatalf("step %d: node %d: %v", step, k, err)
		}
		if len(elems) == 0 {
			t.Fatalf("step %d: node %d is empty", step, k)
		}
		if len(elems) > 1 {
			body := nodeHeader + len(nd) - nodeStart(nd)
			switch {
			case fill >= 0 && (len(elems) > max(fill, 1) || body > nodeSafetyLimit):
				t.Fatalf("step %d: node %d holds %d elements in %d bytes, past fill %d", step, k, len(elems), body, fill)
			case fill < 0 && body > 4096<<(min(-fill, 5)-1):
				t.Fatalf("step %d: node %d takes %d bytes, past fill %d", step, k, body, fill)
			}
		}
		raw = append(raw, elems...)
		caps += cap(nd)
	}
	if caps != l.caps {
		t.Fatalf("step %d: the nodes' capacities are %d, the list keeps %d", step, caps, l.caps)
	}
	if l.Len() != len(want) || len(raw) != len(want) {
		t.Fatalf("step %d: Len %d, %d in the nodes, want %d", step, l.Len(), len(raw), len(want))
	}
	for i := range want {
		if string(raw[i]) != string(want[i]) {
			t.Fatalf("step %d: element %d in the nodes differs", step, i)
		}
	}
	i := 0
	l.Each(func(v []byte) bool {
		if string(v) != string(want[i]) {
			t.Fatalf("step %d: Each: element %d differs", step, i)
		}
		i++
		return true
	})
	if i != len(want) {
		t.Fatalf("step %d: Each saw %d of %d", step, i, len(want))
	}
	next := len(want) - 1
	l.Walk(true, func(i int, v []byte) bool {
		if i != next || string(v) != string(want[i]) {
			t.Fatalf("step %d: Walk from the tail: element %d (expected %d) differs", step, i, next)
		}
		next--
		return true
	})
	if next != -1 {
		t.Fatalf("step %d: Walk from the tail stopped before %d", step, next)
	}
}

// A list against a [][]byte model under a long random sequence of every operation, with
// lengths on both sides of the one-byte boundary's 128 (and XORs of 128 or more from two long
// neighbours), some elements of 70,000 bytes, and small fills so that nodes split and merge
// often; each step checks every node's boundaries from both ends and the whole list both ways.
func TestListBoundariesAgainstModel(t *testing.T) {
	for _, fill := range []int{0, 3, 16, -1, -2} {
		t.Run(fmt.Sprint("fill", fill), func(t *testing.T) {
			withLimits(t, func(l *Limits) { l.ListMaxListpackSize = fill })
			rng := rand.New(rand.NewPCG(28, uint64(fill+100)))
			elem := func() []byte {
				var n int
				switch r := rng.IntN(100); {
				case r == 0:
					n = 70000 + rng.IntN(3)
				case r < 40:
					n = rng.IntN(130)
				case r < 50:
					n = 120 + rng.IntN(16) // around 128
				default:
					n = rng.IntN(301)
				}
				v := make([]byte, n)
				for i := range v {
					v[i] = byte('a' + rng.IntN(3))
				}
				return v
			}
			l := NewList()
			var model [][]byte
			maxLen, maxNodes, long, inline := 0, 0, 0, 0
			defer func() {
				t.Logf("up to %d elements in %d nodes; %d steps with a 70,000-byte element, %d through a payload", maxLen, maxNodes, long, inline)
			}()
			for step := range 10000 {
				// Phases of long lists of many nodes and of short ones, inline in their records.
				limit := 200
				if step/1000%2 == 1 {
					limit = 10
				}
				grow := len(model) < limit
				op := rng.IntN(16)
				if grow && rng.IntN(2) == 0 {
					op = rng.IntN(5) // mostly pushes, so the list grows to many nodes
				}
				switch {
				case op < 2 && grow:
					v := elem()
					l.PushFront(v)
					model = slices.Insert(model, 0, v)
				case op < 4 && grow:
					v := elem()
					l.PushBack(v)
					model = append(model, v)
				case op == 4 && grow:
					batch := make([][]byte, rng.IntN(10))
					for i := range batch {
						batch[i] = elem()
					}
					front := rng.IntN(2) == 0
					l.PushAll(batch, front)
					for _, v := range batch {
						if front {
							model = slices.Insert(model, 0, v)
						} else {
							model = append(model, v)
						}
					}
				case op < 7 && len(model) > 0:
					want := model[0]
					if got := l.PopFront(); string(got) != string(want) {
						t.Fatalf("step %d: PopFront %.20q, want %.20q", step, got, want)
					}
					model = model[1:]
				case op < 9 && len(model) > 0:
					want := model[len(model)-1]
					if got := l.PopBack(); string(got) != string(want) {
						t.Fatalf("step %d: PopBack %.20q, want %.20q", step, got, want)
					}
					model = model[:len(model)-1]
				case op == 9 && len(model) > 0:
					i := rng.IntN(len(model))
					v := elem()
					if rng.IntN(3) == 0 { // the same length: written in place
						v = append([]byte(nil), model[i]...)
						for j := range v {
							v[j] ^= 1
						}
					}
					l.Set(i, v)
					model[i] = v
				case op == 10:
					i, v := rng.IntN(len(model)+1), elem()
					l.Insert(i, v)
					model = slices.Insert(model, i, v)
				case op == 11 && len(model) > 0:
					i := rng.IntN(len(model))
					l.Remove(i)
					model = slices.Delete(model, i, i+1)
				case op == 12 && len(model) > 0:
					n := rng.IntN(4)
					match := func(v []byte) bool { return len(v)%4 == n }
					limit, fromTail := rng.IntN(3), rng.IntN(2) == 0
					got := l.RemoveMatching(match, limit, fromTail)
					removed := 0
					victims := make([]bool, len(model))
					for j := range model {
						i := j
						if fromTail {
							i = len(model) - 1 - j
						}
						if (limit == 0 || removed < limit) && match(model[i]) {
							victims[i] = true
							removed++
						}
					}
					if got != removed {
						t.Fatalf("step %d: RemoveMatching removed %d, want %d", step, got, removed)
					}
					var kept [][]byte
					for i, v := range model {
						if !victims[i] {
							kept = append(kept, v)
						}
					}
					model = kept
				case op == 13 && len(model) > 0 && rng.IntN(4) == 0:
					a := rng.IntN(len(model))
					b := a + rng.IntN(len(model)-a)
					if rng.IntN(8) == 0 {
						b = a - 1 // empties the list
					}
					l.Trim(a, b)
					model = model[a : b+1]
				case op == 14 && len(model) > 0:
					// LRANGE with negative indices, as the engine maps them.
					start, stop := -1-rng.IntN(len(model)), -1-rng.IntN(len(model))
					a, b := len(model)+start, len(model)+stop
					k := a
					l.Range(a, b, func(v []byte) bool {
						if string(v) != string(model[k]) {
							t.Fatalf("step %d: Range(%d, %d) at %d", step, a, b, k)
						}
						k++
						return true
					})
					if a <= b && k != b+1 {
						t.Fatalf("step %d: Range(%d, %d) stopped at %d", step, a, b, k)
					}
				case op == 15 && len(model) > 0:
					for range 5 {
						i := rng.IntN(len(model))
						if string(l.Index(i)) != string(model[i]) {
							t.Fatalf("step %d: Index(%d)", step, i)
						}
					}
				}
				if rng.IntN(25) == 0 {
					if next := throughPayload(t, l); next != l {
						l = next
						inline++
					}
				}
				checkList(t, l, model, step)
				maxLen, maxNodes = max(maxLen, len(model)), max(maxNodes, l.Nodes())
				if slices.ContainsFunc(model, func(v []byte) bool { return len(v) >= 70000 }) {
					long++
				}
			}
		})
	}
}

// throughPayload, for a list of at most one node that fits inline, writes it as its record
// payload, checks a read view of the payload, and returns the list through a write view as
// Settle would hand it on (inline.go); other lists are returned as they are.
func throughPayload(t *testing.T, l *List) *List {
	t.Helper()
	n, ok := payloadSize(l)
	if !ok || n == 0 {
		return l
	}
	payload := make([]byte, n)
	putPayload(payload, l)
	var want [][]byte
	l.Each(func(v []byte) bool { want = append(want, append([]byte(nil), v...)); return true })
	var p viewPool
	if r := p.view(TypeList, payload).(*List); true {
		checkList(t, r, want, -1)
	}
	w := p.writable(TypeList, payload).(*List)
	checkList(t, w, want, -1)
	return detach(w).(*List)
}

// A pop returns a view into the node and rewrites the boundary next to the popped element in
// place: the rewritten boundary is never larger than the one it replaces, so the view is intact
// after the pop, for every combination of boundary sizes around it (lengths under 128, 128 or
// more, XORs of 128 or more).
func TestListPopViewIntact(t *testing.T) {
	lengths := []int{0, 1, 5, 127, 128, 129, 300, 70000}
	fill := func(n int, b byte) []byte {
		v := make([]byte, n)
		for i := range v {
			v[i] = b + byte(i%7)
		}
		return v
	}
	for _, a := range lengths {
		for _, b := range lengths {
			for _, c := range lengths {
				for _, build := range []string{"PushBack", "PushFront", "PushAll"} {
					elems := [][]byte{fill(a, 'a'), fill(b, 'k'), fill(c, 'u')}
					mk := func() *List {
						l := NewList()
						switch build {
						case "PushBack":
							for _, v := range elems {
								l.PushBack(v)
							}
						case "PushFront":
							for i := len(elems) - 1; i >= 0; i-- {
								l.PushFront(elems[i])
							}
						case "PushAll":
							l.PushAll(elems, false)
						}
						return l
					}
					name := fmt.Sprintf("%d,%d,%d by %s", a, b, c, build)

					l := mk()
					checkList(t, l, elems, 0)
					v := l.PopFront()
					if string(v) != string(elems[0]) {
						t.Fatalf("%s: PopFront returned %d bytes, not the first", name, len(v))
					}
					checkList(t, l, elems[1:], 1)
					if string(v) != string(elems[0]) {
						t.Fatalf("%s: PopFront's view changed after the pop", name)
					}
					if v2 := l.PopFront(); string(v2) != string(elems[1]) || string(v) != string(elems[0]) {
						t.Fatalf("%s: the second PopFront (or the first's view) is wrong", name)
					}

					l = mk()
					v = l.PopBack()
					if string(v) != string(elems[2]) {
						t.Fatalf("%s: PopBack returned %d bytes, not the last", name, len(v))
					}
					checkList(t, l, elems[:2], 2)
					if string(v) != string(elems[2]) {
						t.Fatalf("%s: PopBack's view changed after the pop", name)
					}
					if v2 := l.PopBack(); string(v2) != string(elems[1]) || string(v) != string(elems[2]) {
						t.Fatalf("%s: the second PopBack (or the first's view) is wrong", name)
					}
				}
			}
		}
	}
}

// The size rule that keeps pop views intact: replacing either neighbour's length by 0 never
// makes a boundary larger.
func TestListBoundaryNeverGrowsOnPop(t *testing.T) {
	for _, a := range []int{0, 1, 127, 128, 255, 256, 70000, maxListElem} {
		for _, b := range []int{0, 1, 127, 128, 255, 256, 70000, maxListElem} {
			if boundarySize(0, b) > boundarySize(a, b) || boundarySize(a, 0) > boundarySize(a, b) {
				t.Fatalf("a boundary between %d and %d bytes grows when one becomes 0", a, b)
			}
			var p [longBoundary]byte
			w := putBoundary(p[:], a, b)
			if x, rw := boundaryAt(p[:w], 0); x != a^b || rw != w {
				t.Fatalf("%d^%d read forwards as %d in %d bytes", a, b, x, rw)
			}
			if x, rw := boundaryBefore(p[:w], w); x != a^b || rw != w {
				t.Fatalf("%d^%d read backwards as %d in %d bytes", a, b, x, rw)
			}
		}
	}
}

// An element longer than the long boundary holds is never truncated: writing it panics.
func TestListElementTooLongPanics(t *testing.T) {
	if strconv.IntSize < 64 {
		t.Skip("no such lengths on 32-bit platforms")
	}
	defer func() {
		if recover() == nil {
			t.Fatal("a boundary for an element of 4 GiB was written")
		}
	}()
	var p [longBoundary]byte
	putBoundary(p[:], 0, maxListElem+1)
}

// The bytes per element of a list of 1,000,000 elements "element:N" pushed one at a time at the
// tail and at the head, as List.Bytes counts them: at the default fill, the 13.9 bytes of data
// and about one byte of boundary (the format of two lengths per element took 16.0), and at most a
// block's spare nodes (carve). Every node but the end one has exactly the fill's 8 KiB, and most
// are carved side by side from blocks of several nodes rather than allocated one by one.
func TestListBytesPerElement(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a list of a million elements")
	}
	withLimits(t, func(l *Limits) { l.ListMaxListpackSize = -2 })
	const n = 1000000
	for _, front := range []bool{false, true} {
		l := NewList()
		data := 0
		var buf []byte
		for i := range n {
			buf = strconv.AppendInt(append(buf[:0], "element:"...), int64(i), 10)
			data += len(buf)
			if front {
				l.PushFront(buf)
			} else {
				l.PushBack(buf)
			}
		}
		per := float64(l.Bytes()) / n
		t.Logf("front %v: %d elements of %.2f bytes: %d bytes in %d nodes, %.3f bytes per element",
			front, n, float64(data)/n, l.Bytes(), l.Nodes(), per)
		if max := float64(data)/n + 1.2; per > max {
			t.Fatalf("front %v: %.3f bytes per element, want at most %.2f", front, per, max)
		}
		inner := l.nodes[1:]
		if front {
			inner = l.nodes[:len(l.nodes)-1]
		}
		adjacent := 0
		for k, nd := range inner {
			if cap(nd) != 8192 || len(nd)-nodeStart(nd)+nodeHeader > 8192 {
				t.Fatalf("front %v: node %d holds %d bytes in %d", front, k, len(nd)-nodeStart(nd)+nodeHeader, cap(nd))
			}
			if k > 0 {
				gap := uintptr(unsafe.Pointer(unsafe.SliceData(nd))) - uintptr(unsafe.Pointer(unsafe.SliceData(inner[k-1])))
				if gap == 8192 || -gap == 8192 {
					adjacent++
				}
			}
		}
		if adjacent < len(inner)*3/4 {
			t.Fatalf("front %v: %d of %d nodes carved next to the one before", front, adjacent, len(inner))
		}
	}
}

// LMOVE and RPOPLPUSH from a list to itself push the view a pop returned into the list it came
// from, often into the very node and bytes it occupies: every direction, with boundaries of
// every size around the moved element, keeps the list whole.
func TestListMoveWithinItself(t *testing.T) {
	lengths := []int{0, 3, 127, 128, 300, 70000}
	for _, fill := range []int{-2, 2} {
		withLimits(t, func(l *Limits) { l.ListMaxListpackSize = fill })
		for _, a := range lengths {
			for _, b := range lengths {
				for _, c := range lengths {
					elems := [][]byte{bytes.Repeat([]byte{'a'}, a), bytes.Repeat([]byte{'b'}, b), bytes.Repeat([]byte{'c'}, c)}
					for _, from := range []bool{false, true} {
						for _, to := range []bool{false, true} {
							l := NewList()
							l.PushAll(elems, false)
							want := slices.Clone(elems)
							for step := range 4 {
								var v []byte
								if from {
									v = l.PopFront()
									want = want[1:]
								} else {
									v = l.PopBack()
									want = want[:len(want)-1]
								}
								moved := slices.Clone(v)
								if to {
									l.PushFront(v)
									want = slices.Insert(want, 0, moved)
								} else {
									l.PushBack(v)
									want = append(want, moved)
								}
								checkList(t, l, want, step)
							}
						}
					}
				}
			}
		}
	}
}
