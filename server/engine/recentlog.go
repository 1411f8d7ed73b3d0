package engine

// recentLog keeps the newest entries of a log (SLOWLOG, ACL LOG), at most a configured number,
// newest first to its readers. Entries are appended and the oldest dropped from the front, so a
// new entry costs O(1) amortised whatever the log's length: prepending copied the whole log on
// every entry, and with the length raised each slow command or failed AUTH cost O(length).
type recentLog[T any] struct {
	buf   []T // oldest first; buf[start:] are the entries
	start int
}

// Len is the number of entries.
func (l *recentLog[T]) Len() int { return len(l.buf) - l.start }

// At returns entry i, 0 being the newest.
func (l *recentLog[T]) At(i int) *T { return &l.buf[len(l.buf)-1-i] }

// Push adds e as the newest entry and drops the oldest beyond max.
func (l *recentLog[T]) Push(e T, max int) {
	l.buf = append(l.buf, e)
	if n := l.Len() - max; n > 0 {
		var zero T
		for i := l.start; i < l.start+n; i++ {
			l.buf[i] = zero // let go of what the entry holds
		}
		l.start += n
	}
	// Move the entries down once the dropped ones are half the slice: amortised O(1), and the
	// memory held stays within twice the entries.
	if l.start > 0 && l.start >= len(l.buf)/2 {
		if n := l.Len(); cap(l.buf) > 4*n+64 {
			// The bound came down: give back the room the longer log needed.
			l.buf = append(make([]T, 0, 2*n), l.buf[l.start:]...)
		} else {
			n = copy(l.buf, l.buf[l.start:])
			clear(l.buf[n:])
			l.buf = l.buf[:n]
		}
		l.start = 0
	}
}

// ToFront makes entry i the newest, keeping the others' order: O(i).
func (l *recentLog[T]) ToFront(i int) {
	last := len(l.buf) - 1
	e := l.buf[last-i]
	copy(l.buf[last-i:last], l.buf[last-i+1:])
	l.buf[last] = e
}

// Reset drops every entry.
func (l *recentLog[T]) Reset() { l.buf, l.start = nil, 0 }
