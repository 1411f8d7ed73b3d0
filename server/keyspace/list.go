package keyspace

// List is a deque of byte strings in a ring buffer: O(1) push and pop at both ends, O(1) index.
type List struct {
	buf   [][]byte
	head  int
	n     int
	bytes int64
}

// NewList returns an empty list.
func NewList() *List { return &List{} }

// Len is the number of elements.
func (l *List) Len() int { return l.n }

// Bytes is the element bytes held, for memory accounting.
func (l *List) Bytes() int64 { return l.bytes + int64(cap(l.buf))*24 }

func (l *List) grow() {
	nc := 2 * len(l.buf)
	if nc < 8 {
		nc = 8
	}
	nb := make([][]byte, nc)
	for i := 0; i < l.n; i++ {
		nb[i] = l.buf[(l.head+i)%len(l.buf)]
	}
	l.buf, l.head = nb, 0
}

func (l *List) shrink() {
	if len(l.buf) > 64 && l.n < len(l.buf)/4 {
		nb := make([][]byte, len(l.buf)/2)
		for i := 0; i < l.n; i++ {
			nb[i] = l.buf[(l.head+i)%len(l.buf)]
		}
		l.buf, l.head = nb, 0
	}
}

// PushFront inserts a copy of v at the head.
func (l *List) PushFront(v []byte) {
	if l.n == len(l.buf) {
		l.grow()
	}
	l.head = (l.head - 1 + len(l.buf)) % len(l.buf)
	l.buf[l.head] = append([]byte(nil), v...)
	l.n++
	l.bytes += int64(len(v)) + 16
}

// PushBack appends a copy of v at the tail.
func (l *List) PushBack(v []byte) {
	if l.n == len(l.buf) {
		l.grow()
	}
	l.buf[(l.head+l.n)%len(l.buf)] = append([]byte(nil), v...)
	l.n++
	l.bytes += int64(len(v)) + 16
}

// PopFront removes and returns the head.
func (l *List) PopFront() []byte {
	if l.n == 0 {
		return nil
	}
	v := l.buf[l.head]
	l.buf[l.head] = nil
	l.head = (l.head + 1) % len(l.buf)
	l.n--
	l.bytes -= int64(len(v)) + 16
	l.shrink()
	return v
}

// PopBack removes and returns the tail.
func (l *List) PopBack() []byte {
	if l.n == 0 {
		return nil
	}
	i := (l.head + l.n - 1) % len(l.buf)
	v := l.buf[i]
	l.buf[i] = nil
	l.n--
	l.bytes -= int64(len(v)) + 16
	l.shrink()
	return v
}

// Index returns element i (0-based from the head); i must be in range.
func (l *List) Index(i int) []byte { return l.buf[(l.head+i)%len(l.buf)] }

// Set replaces element i with a copy of v.
func (l *List) Set(i int, v []byte) {
	j := (l.head + i) % len(l.buf)
	l.bytes += int64(len(v) - len(l.buf[j]))
	l.buf[j] = append([]byte(nil), v...)
}

// Insert puts a copy of v before position i (i == Len appends).
func (l *List) Insert(i int, v []byte) {
	l.PushBack(v)
	for j := l.n - 1; j > i; j-- {
		a, b := (l.head+j)%len(l.buf), (l.head+j-1)%len(l.buf)
		l.buf[a], l.buf[b] = l.buf[b], l.buf[a]
	}
}

// Remove deletes element i.
func (l *List) Remove(i int) {
	v := l.Index(i)
	for j := i; j < l.n-1; j++ {
		a, b := (l.head+j)%len(l.buf), (l.head+j+1)%len(l.buf)
		l.buf[a] = l.buf[b]
	}
	l.buf[(l.head+l.n-1)%len(l.buf)] = nil
	l.n--
	l.bytes -= int64(len(v)) + 16
	l.shrink()
}

// RemoveMatching deletes up to limit elements (0: all) for which match is true, scanning from
// the head, or from the tail when fromTail is set, and returns how many it deleted. It compacts
// the list in one pass, so removing many elements costs O(n), not O(n) per element.
func (l *List) RemoveMatching(match func([]byte) bool, limit int, fromTail bool) int {
	removed, kept := 0, 0
	at := func(i int) int {
		if fromTail {
			i = l.n - 1 - i
		}
		return (l.head + i) % len(l.buf)
	}
	for i := 0; i < l.n; i++ {
		v := l.buf[at(i)]
		if (limit == 0 || removed < limit) && match(v) {
			removed++
			l.bytes -= int64(len(v)) + 16
			continue
		}
		if kept != i {
			l.buf[at(kept)] = v
		}
		kept++
	}
	for i := kept; i < l.n; i++ {
		l.buf[at(i)] = nil
	}
	if fromTail {
		// The kept elements were packed towards the tail: the head moves forward.
		l.head = (l.head + l.n - kept) % max(len(l.buf), 1)
	}
	l.n = kept
	l.shrink()
	return removed
}

// Trim keeps elements [start, stop] (inclusive, already clamped to the list).
func (l *List) Trim(start, stop int) {
	for i := 0; i < start; i++ {
		l.PopFront()
	}
	for l.n > stop-start+1 {
		l.PopBack()
	}
}

// Release drops the contents; used to free large values off the main thread.
func (l *List) Release() { clear(l.buf); l.buf, l.n = nil, 0 }
