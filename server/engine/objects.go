package engine

import "github.com/iocache/iocache/server/keyspace"

// collection is what every collection type offers the generic command helpers.
type collection interface {
	Len() int
	Bytes() int64
}

// access says how a command looks a collection up.
type access int

const (
	forRead   access = iota // counts a keyspace hit or miss
	forWrite                // no hit/miss accounting; missing stays missing
	forCreate               // a missing key gets an empty collection
	// forReadWrite looks the key up as a read, as Redis's lookupKeyRead does (hit or miss
	// counted, keymiss announced), for commands that then modify what they found (XACK,
	// XREADGROUP, XCLAIM, ...).
	forReadWrite
)

// getObject returns the collection of type t stored at key. It returns a zero T (nil) for a
// missing key unless mode is forCreate, and ok=false after replying WRONGTYPE. A new key's
// collection comes from create, or, when create is nil, from the keyspace (an empty compact
// collection built in a reused buffer: keyspace.DB.Create).
func getObject[T collection](s *Server, c *client, key []byte, t keyspace.Type, mode access, create func() T) (obj T, ok bool) {
	db := s.dbs[c.db]
	var r keyspace.Ref
	var exists bool
	if mode == forRead || mode == forReadWrite {
		r, exists = s.lookupRead(c, key)
	} else {
		r, exists = s.lookupWrite(c, key)
	}
	if !exists {
		if mode == forCreate && create == nil {
			obj = db.Create(key, t, s.initialClock()).(T)
			s.noteWriting(c.db, key)
		} else if mode == forCreate {
			obj = create()
			db.CreateObject(key, t, obj, s.initialClock())
			s.noteWriting(c.db, key)
		}
		return obj, true
	}
	if db.Type(r) != t {
		s.wrongType(c)
		return obj, false
	}
	if mode == forRead {
		return db.Obj(r).(T), true
	}
	return db.ObjForWrite(r).(T), true
}

// firstExisting finds the first of keys that holds a value, for the multi-key pops (BLPOP,
// LMPOP, BZPOPMIN, ZMPOP, ...). Collections are never empty, so existing means non-empty. ok is
// false after a WRONGTYPE reply for a key met before it.
func firstExisting[T collection](s *Server, c *client, keys [][]byte, t keyspace.Type) (key []byte, obj T, found, ok bool) {
	db := s.dbs[c.db]
	for _, k := range keys {
		r, exists := s.lookupWrite(c, k)
		if !exists {
			continue
		}
		if db.Type(r) != t {
			s.wrongType(c)
			return nil, obj, false, false
		}
		return k, db.ObjForWrite(r).(T), true, true
	}
	return nil, obj, false, true
}

func (s *Server) getList(c *client, key []byte, mode access) (*keyspace.List, bool) {
	return getObject[*keyspace.List](s, c, key, keyspace.TypeList, mode, nil)
}

func (s *Server) getHash(c *client, key []byte, mode access) (*keyspace.Hash, bool) {
	return getObject[*keyspace.Hash](s, c, key, keyspace.TypeHash, mode, nil)
}

func (s *Server) getSet(c *client, key []byte, mode access) (*keyspace.Set, bool) {
	return getObject[*keyspace.Set](s, c, key, keyspace.TypeSet, mode, nil)
}

func (s *Server) getZSet(c *client, key []byte, mode access) (*keyspace.ZSet, bool) {
	return getObject[*keyspace.ZSet](s, c, key, keyspace.TypeZSet, mode, nil)
}

// cardinality replies with a collection's size (0 for a missing key): LLEN, HLEN, SCARD, ZCARD.
func cardinality[T collection](s *Server, c *client, key []byte, t keyspace.Type, create func() T) {
	obj, ok := getObject(s, c, key, t, forRead, create)
	if !ok {
		return
	}
	if isNil(obj) {
		c.w.Int(0)
		return
	}
	c.w.Int(int64(obj.Len()))
}

func isNil[T collection](obj T) bool {
	var zero T
	return any(obj) == any(zero)
}

// removeMembers removes each argument with remove and replies with how many were there: HDEL,
// SREM, ZREM. An emptied collection is deleted.
func (s *Server) removeMembers(c *client, key []byte, obj collection, members [][]byte, remove func([]byte) bool, class int, event string) {
	n := 0
	for _, m := range members {
		if remove(m) {
			n++
		}
	}
	if n > 0 {
		s.wrote(c.db, key, obj, class, event)
	}
	c.w.Int(int64(n))
}

// objectBytes is the memory a collection accounts for.
func objectBytes(obj any) int64 {
	if o, ok := obj.(collection); ok {
		return o.Bytes()
	}
	return 0
}

// objectLen is a collection's element count.
func objectLen(obj any) int {
	if o, ok := obj.(collection); ok {
		return o.Len()
	}
	return 0
}
