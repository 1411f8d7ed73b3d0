package engine

import (
	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/keyspace"
)

// The write path. Every write to a key ends with one call, wrote, which does in Redis's order
// what a write owes the rest of the server:
//
//   - the keyspace notification of what the command did (class and event, when enabled);
//   - the deletion of a collection the write left empty, announced as "del" (Redis never keeps
//     an empty list, hash, set or sorted set; streams may be empty);
//   - modified: the dirty counter (save points, and whether the command is propagated to
//     replicas and the AOF), WATCH, clients blocked on the key, client-side caching.
//
// Memory accounting needs no call: the keyspace accounts the collections a command wrote when
// the command ends (DB.Settle). And a collection a failed command created empty (one that
// creates its key, then refuses an argument) is swept, silently, when the command ends: the
// lookup that creates a collection remembers its key (noteWriting), and endWrites deletes what
// is still empty. Only created keys are remembered: a collection that existed was not empty,
// and a write that empties it says so in wrote (a forgotten call fails the test below). So an
// error path cannot leave an empty collection behind, and the one thing a command must remember
// is the call that says what it did. TestWritesHaveTheirEffects runs every command the table
// flags "write" against redis-server and compares these effects.

// writingKey is a key whose collection the running command created.
type writingKey struct {
	db  int
	key []byte // the command's own argument: valid until the command ends
}

// wrote ends a write to key in database db: event is announced (class permitting), obj — the
// collection written when the write may have emptied it; nil when it cannot have (an add, a
// string, a deleted key) — is deleted when it became empty, and the key is marked modified.
func (s *Server) wrote(db int, key []byte, obj collection, class int, event string) {
	s.notify(class, event, key, db)
	if obj != nil && obj.Len() == 0 {
		d := s.dbs[db]
		if r, ok := d.Find(key); ok {
			s.deleteKey(d, r)
			s.notify(config.NotifyGeneric, "del", key, db)
		}
	}
	s.modified(db, key)
}

// modified marks a written key: the dirty counter, WATCH, blocked clients, tracking. It is
// wrote's last step, and called alone where a write announces nothing of its own (a MOVE's
// source, FLUSHALL's keys) or announces it elsewhere.
func (s *Server) modified(dbIndex int, key []byte) {
	s.stats.dirty++
	s.signalModified(dbIndex, key)
}

// signalModified is modified without the dirty counter, for the writes Redis signals but does
// not count (an LTRIM that kept everything).
func (s *Server) signalModified(dbIndex int, key []byte) {
	if s.propagating {
		s.noteWrittenKey(key)
	}
	if len(s.watchedKeys) > 0 {
		s.touchWatched(dbIndex, key)
	}
	if s.blocking.waiting > 0 {
		s.blocking.signalKey(dbIndex, key)
	}
	if s.tracking.clients > 0 {
		s.trackingInvalidateKey(key)
	}
}

// noteWriting remembers a key whose collection the running command created, for endWrites. The
// slice is reused from command to command.
func (s *Server) noteWriting(db int, key []byte) {
	s.writing = append(s.writing, writingKey{db: db, key: key})
}

// endWrites deletes, without an event, the collections the command created and left empty: a
// failed command's. It runs after every command that created one, before the keyspace settles.
func (s *Server) endWrites() {
	for i, w := range s.writing {
		d := s.dbs[w.db]
		if r, ok := d.Find(w.key); ok && d.Type(r) != keyspace.TypeString && d.Type(r) != keyspace.TypeStream {
			if objectLen(d.Obj(r)) == 0 {
				s.deleteKey(d, r)
			}
		}
		s.writing[i] = writingKey{}
	}
	s.writing = s.writing[:0]
}

// stored ends a STORE command's write to its destination: its event when it stored something,
// "del" when it only deleted what the destination held, nothing when there was nothing to
// delete (as Redis, which then signals nobody).
func (s *Server) stored(c *client, class int, event string, key []byte, stored, existed bool) {
	switch {
	case stored:
		s.wrote(c.db, key, nil, class, event)
	case existed:
		s.wrote(c.db, key, nil, config.NotifyGeneric, "del")
	}
}
