package engine

import (
	"container/heap"
	"slices"

	"github.com/iocache/iocache/server/keyspace"
)

// Blocking commands (BLPOP, BRPOP, BLMOVE, BZPOPMIN, BZPOPMAX). A blocked client stays with the
// main thread; its I/O thread keeps its socket and defers reading it. When a key it waits on
// receives data, waiters are served in arrival order by running their command again; a waiter
// whose key is empty or of another type stays blocked in its place. Timeouts come from a
// deadline heap that sets the main loop's poll timeout.

type blockState struct {
	dbIndex  int
	keys     []string
	deadline int64 // unix ms; 0 waits forever
	cmd      *command
	argv     [][]byte
	seq      uint64
	wantType keyspace.Type
}

type blockingState struct {
	waiting  int
	byKey    map[watchedKey][]*client
	ready    []watchedKey
	readySet map[watchedKey]bool
	timeouts deadlineHeap
	seq      uint64
	// serving guards against recursion: serving a waiter may push to another key.
	serving bool
}

type deadlineEntry struct {
	at  int64
	c   *client
	seq uint64
}

type deadlineHeap []deadlineEntry

func (h deadlineHeap) Len() int           { return len(h) }
func (h deadlineHeap) Less(i, j int) bool { return h[i].at < h[j].at }
func (h deadlineHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *deadlineHeap) Push(x any)        { *h = append(*h, x.(deadlineEntry)) }
func (h *deadlineHeap) Pop() any {
	old := *h
	e := old[len(old)-1]
	*h = old[:len(old)-1]
	return e
}

// block parks c on keys until one receives data of type want, or until deadline (unix ms, 0 =
// forever). The command is run again when it may succeed.
func (s *Server) block(c *client, cmd *command, argv [][]byte, keys [][]byte, deadline int64, want keyspace.Type) {
	b := &s.blocking
	if b.byKey == nil {
		b.byKey = map[watchedKey][]*client{}
		b.readySet = map[watchedKey]bool{}
	}
	b.seq++
	st := &blockState{dbIndex: c.db, deadline: deadline, cmd: cmd, seq: b.seq, wantType: want}
	st.argv = make([][]byte, len(argv))
	for i, a := range argv {
		st.argv[i] = append([]byte(nil), a...)
	}
	// A key named twice waits once. Few keys are compared in place; many go through a set, as
	// Redis's per-client dict of keys: comparing each with all before it took 22 s to block on
	// 100,000 keys, with every other client waiting.
	var seen map[string]struct{}
	if len(keys) > 16 {
		seen = make(map[string]struct{}, len(keys))
	}
	st.keys = make([]string, 0, len(keys))
	for _, k := range keys {
		ks := string(k)
		if seen != nil {
			if _, dup := seen[ks]; dup {
				continue
			}
			seen[ks] = struct{}{}
		} else if slices.Contains(st.keys, ks) {
			continue
		}
		st.keys = append(st.keys, ks)
		wk := watchedKey{db: c.db, key: ks}
		b.byKey[wk] = append(b.byKey[wk], c)
	}
	c.blocked = st
	c.flags |= flagBlocked
	b.waiting++
	if deadline > 0 {
		heap.Push(&b.timeouts, deadlineEntry{at: deadline, c: c, seq: st.seq})
	}
}

// remove takes c out of every wait list.
func (b *blockingState) remove(c *client) {
	st := c.blocked
	if st == nil {
		return
	}
	for _, k := range st.keys {
		wk := watchedKey{db: st.dbIndex, key: k}
		list := b.byKey[wk]
		for i, x := range list {
			if x == c {
				list = append(list[:i], list[i+1:]...)
				break
			}
		}
		if len(list) == 0 {
			delete(b.byKey, wk)
		} else {
			b.byKey[wk] = list
		}
	}
	c.blocked = nil
	c.flags &^= flagBlocked
	b.waiting--
}

// signalKey notes that key may now serve waiters.
func (b *blockingState) signalKey(dbIndex int, key []byte) {
	wk := watchedKey{db: dbIndex, key: string(key)}
	if _, ok := b.byKey[wk]; !ok || b.readySet[wk] {
		return
	}
	b.readySet[wk] = true
	b.ready = append(b.ready, wk)
}

// serveReadyKeys serves waiters of keys that received data, oldest waiter first.
func (b *blockingState) serveReadyKeys(s *Server) {
	if b.serving {
		return
	}
	b.serving = true
	defer func() { b.serving = false }()
	for len(b.ready) > 0 {
		wk := b.ready[0]
		b.ready = b.ready[1:]
		delete(b.readySet, wk)
		db := s.dbs[wk.db]
		for _, c := range append([]*client(nil), b.byKey[wk]...) {
			if c.blocked == nil {
				continue // an earlier waiter's command unblocked it
			}
			r, ok := s.lookupLive(db, wk.db, []byte(wk.key))
			if c.blocked.cmd.name == "xreadgroup" {
				if msg := s.streamGroupGone(db, r, ok, c.blocked.argv[2]); msg != "" {
					s.unblockWithError(c, msg)
					continue
				}
			}
			if !ok || db.Type(r) != c.blocked.wantType {
				if b.hasGroupWaiters(wk) {
					continue // XREADGROUP waiters behind this one must still learn the key is gone
				}
				break
			}
			s.unblockAndRun(c)
		}
	}
}

// streamGroupGone says why a blocked XREADGROUP can never be served, as Redis 7.0 tells it:
// its stream was deleted or replaced by another type, or its group destroyed. "" when it still
// waits for entries.
func (s *Server) streamGroupGone(db *keyspace.DB, r keyspace.Ref, found bool, group []byte) string {
	if !found || db.Type(r) != keyspace.TypeStream {
		return "UNBLOCKED the stream key no longer exists"
	}
	if st, _ := db.Obj(r).(*keyspace.Stream); st == nil || st.Groups[string(group)] == nil {
		return "NOGROUP the consumer group this client was blocked on no longer exists"
	}
	return ""
}

// hasGroupWaiters reports whether an XREADGROUP waits on wk.
func (b *blockingState) hasGroupWaiters(wk watchedKey) bool {
	for _, c := range b.byKey[wk] {
		if c.blocked != nil && c.blocked.cmd.name == "xreadgroup" {
			return true
		}
	}
	return false
}

// unblockWithError ends a blocked client's wait with an error reply and resumes its pipeline.
func (s *Server) unblockWithError(c *client, msg string) {
	// The command was counted a call when it blocked; its error now makes it a failed one, as
	// Redis's updateStatsOnUnblock counts it.
	if c.blocked != nil {
		c.blocked.cmd.failed++
	}
	s.blocking.remove(c)
	s.addError(c, msg)
	s.resume(c)
}

// signalDB notes that every key waited on in database dbIndex may have changed (FLUSHDB,
// FLUSHALL, SWAPDB).
func (b *blockingState) signalDB(dbIndex int) {
	for wk := range b.byKey {
		if wk.db == dbIndex {
			b.signalKey(wk.db, []byte(wk.key))
		}
	}
}

// unblockAndRun runs a blocked client's command again (it can now be served), then the rest of
// its pipeline, and gives it back to its I/O thread.
func (s *Server) unblockAndRun(c *client) {
	st := c.blocked
	s.blocking.remove(c)
	saved := c.db
	c.db = st.dbIndex
	// XREAD may find nothing for itself in what arrived and block again: it keeps its deadline.
	c.rerunDeadline = st.deadline
	if st.deadline == 0 {
		c.rerunDeadline = -1
	}
	s.execute(c, st.cmd, st.argv)
	c.rerunDeadline = 0
	c.db = saved
	if c.blocked != nil {
		return // blocked again; stays with the main thread
	}
	if len(c.pendingInvalidations) > 0 {
		// Keys the command itself changed (BLMOVE's destination), after its reply as in Redis.
		s.trackingAfterCommand(c, st.argv[0])
	}
	s.resume(c)
}

// resume continues a client's pipeline after it was unblocked.
func (s *Server) resume(c *client) {
	if c.conn.Closed() {
		s.unlinkClient(c)
		return
	}
	s.process(c)
	if !c.mainOwned {
		s.returnClient(c)
	}
}

// expireTimeouts answers blocked clients whose timeout passed with the command's null reply:
// a null array for every blocking pop, BLMOVE and BRPOPLPUSH included, as Redis 7.0 answers them
// (though the same commands answer a null bulk when they do not block, in MULTI).
func (b *blockingState) expireTimeouts(s *Server) {
	for len(b.timeouts) > 0 {
		e := b.timeouts[0]
		if e.c.blocked == nil || e.c.blocked.seq != e.seq {
			heap.Pop(&b.timeouts)
			continue
		}
		if e.at > s.nowMs {
			return
		}
		heap.Pop(&b.timeouts)
		c := e.c
		name := c.blocked.cmd.name
		b.remove(c)
		switch name {
		case "wait":
			c.w.Int(s.replicasAcked(c.woff)) // fewer than it asked for
		default:
			c.w.NullArray()
		}
		s.resume(c)
	}
}

// nextDeadline is the earliest blocked-client deadline, or 0.
func (b *blockingState) nextDeadline() int64 {
	for len(b.timeouts) > 0 {
		e := b.timeouts[0]
		if e.c.blocked == nil || e.c.blocked.seq != e.seq {
			heap.Pop(&b.timeouts)
			continue
		}
		return e.at
	}
	return 0
}

// timeoutArg reads a blocking command's timeout (seconds, fractions allowed) as a deadline.
func (s *Server) timeoutArg(c *client, b []byte) (int64, bool) {
	f, ok := parseFloat(b)
	if !ok {
		s.addError(c, "ERR timeout is not a float or out of range")
		return 0, false
	}
	if f < 0 {
		s.addError(c, "ERR timeout is negative")
		return 0, false
	}
	if f == 0 {
		return 0, true
	}
	ms := int64(f * 1000)
	if ms <= 0 {
		ms = 1
	}
	return s.nowMs + ms, true
}
