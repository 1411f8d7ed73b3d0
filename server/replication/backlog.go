package replication

// Backlog is the ring buffer of the most recent stream bytes, for partial resyncs (Redis's
// repl_backlog). Its zero value is no backlog: writes are dropped until NewBacklog makes one,
// when propagation starts.
//
// The buffer grows as the stream arrives, up to its limit (repl-backlog-size), and only then
// turns into a ring: a backlog sized 100gb costs what was written, not 100 GB at the first
// PSYNC, as Redis 7's backlog of blocks does. Write is on the write path of every propagated
// command: once the buffer has its size it allocates nothing.
type Backlog struct {
	buf     []byte
	limit   int64 // repl-backlog-size when created or resized; 0: no backlog
	next    int   // where the next byte goes, once buf is a full ring
	histlen int64 // valid bytes
}

// NewBacklog is an empty backlog that keeps up to limit bytes (at least one).
func NewBacklog(limit int64) Backlog { return Backlog{limit: max(limit, 1)} }

// Active reports whether the backlog exists (propagation has started).
func (b *Backlog) Active() bool { return b.limit > 0 }

// Limit is the most the backlog keeps: repl-backlog-size when it was created or resized.
func (b *Backlog) Limit() int64 { return b.limit }

// Len is how many of the stream's last bytes the backlog holds (Redis's repl_backlog_histlen):
// a partial resync may start that far back from the stream's offset.
func (b *Backlog) Len() int64 { return b.histlen }

// Write appends p to the stream, dropping the oldest bytes past the limit.
func (b *Backlog) Write(p []byte) {
	if b.limit == 0 {
		return
	}
	if int64(len(b.buf)) < b.limit {
		take := min(int64(len(p)), b.limit-int64(len(b.buf)))
		if need := len(b.buf) + int(take); need > cap(b.buf) {
			// Double, capped at the limit, so that a stream of n bytes is copied O(n) times
			// in all, and the buffer never exceeds the limit.
			nb := make([]byte, len(b.buf), min(b.limit, int64(max(2*cap(b.buf), need, 4096))))
			copy(nb, b.buf)
			b.buf = nb
		}
		b.buf = append(b.buf, p[:take]...)
		p = p[take:]
		b.histlen = int64(len(b.buf))
		b.next = len(b.buf) % int(b.limit)
	}
	for len(p) > 0 {
		n := copy(b.buf[b.next:], p)
		p = p[n:]
		b.next = (b.next + n) % len(b.buf)
		b.histlen = min(b.histlen+int64(n), int64(len(b.buf)))
	}
}

// Since copies the last n bytes of the stream (n at most Len): what a replica continuing from
// n bytes back is sent. The copy is the caller's: the ring goes on being overwritten.
func (b *Backlog) Since(n int64) []byte {
	if n == 0 {
		return nil
	}
	out := make([]byte, 0, n)
	start := (b.next - int(n) + len(b.buf)) % len(b.buf)
	if start+int(n) <= len(b.buf) {
		return append(out, b.buf[start:start+int(n)]...)
	}
	out = append(out, b.buf[start:]...)
	return append(out, b.buf[:int(n)-(len(b.buf)-start)]...)
}

// Resize gives the backlog a new limit (CONFIG SET repl-backlog-size), keeping the last bytes
// that fit.
func (b *Backlog) Resize(limit int64) {
	keep := b.Since(b.histlen)
	*b = NewBacklog(limit)
	if int64(len(keep)) > limit {
		keep = keep[int64(len(keep))-limit:]
	}
	b.Write(keep)
}
