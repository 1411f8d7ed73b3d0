// Package keyspace is iocache's data store: databases of keys with their values, expiry times and
// LRU/LFU clocks, built so the garbage collector has almost nothing to scan. String keys live
// entirely in pointer-free arena pages; collections keep their key there and their Go object in a
// side table. A DB is not safe for concurrent use: the server's main thread owns every DB.
package keyspace

import (
	"bytes"
	"hash/maphash"
	"math/rand/v2"
)

// Ref identifies a key's record inside its DB. A Ref is invalidated by any write to the DB except
// Touch; look the key up again after writing.
type Ref = handle

// DB is one logical database (SELECT n).
type DB struct {
	seed  maphash.Seed
	arena *arena
	// index maps a key's 64-bit hash to its record. Both are plain integers, so the map's memory
	// is never scanned by the garbage collector.
	index map[uint64]handle
	// collide holds keys whose hash equals that of another key already in index (rare).
	collide map[string]handle
	// dense lists every record, for SCAN, KEYS and random sampling; records know their position.
	dense []handle
	// expiring lists the records with a TTL, for active expiry and volatile-* eviction.
	expiring []handle
	objects  []any
	freeObjs []uint32
	objBytes int64
	pending  []pendingObj // see accounting.go
	rng      *rand.Rand
	// visited is the value of a record's flagVisited bit that means "already in the running (or
	// last) snapshot"; snapshot is the running one, if any (see snapshot.go).
	visited  byte
	snapshot Snapshotter
}

// NewDB returns an empty database. All DBs of a server share one hash seed, so a key moved
// between them (MOVE, SWAPDB) keeps its hash.
func NewDB(seed maphash.Seed) *DB {
	return &DB{
		seed:    seed,
		arena:   newArena(),
		index:   make(map[uint64]handle),
		objects: []any{nil},
		rng:     rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())),
	}
}

func (db *DB) hash(key []byte) uint64 { return maphash.Bytes(db.seed, key) }

func (db *DB) rec(h handle) rec {
	off := h.offset()
	return rec(db.arena.pages[h.page()][off : off+uint32(db.arena.slotSize(h))])
}

// Len is the number of keys, expired ones not yet removed included.
func (db *DB) Len() int { return len(db.dense) }

// ExpiresLen is the number of keys with a TTL.
func (db *DB) ExpiresLen() int { return len(db.expiring) }

// Find returns the record of key, without looking at its expiry.
func (db *DB) Find(key []byte) (Ref, bool) {
	h, ok := db.index[db.hash(key)]
	if !ok {
		return 0, false
	}
	if bytes.Equal(db.rec(h).key(), key) {
		return h, true
	}
	if len(db.collide) > 0 {
		if c, ok := db.collide[string(key)]; ok {
			return c, true
		}
	}
	return 0, false
}

// Type returns the record's type.
func (db *DB) Type(r Ref) Type { return db.rec(r).typ() }

// Key returns the record's key (valid until the next write).
func (db *DB) Key(r Ref) []byte { return db.rec(r).key() }

// Str returns a string record's value (valid until the next write).
func (db *DB) Str(r Ref) []byte { return db.rec(r).value() }

// Obj returns a collection record's object.
func (db *DB) Obj(r Ref) any { return db.objects[db.rec(r).objID()] }

// ExpireAt returns the record's expiry in unix milliseconds, or false when it has none.
func (db *DB) ExpireAt(r Ref) (int64, bool) {
	rc := db.rec(r)
	if !rc.hasExpire() {
		return 0, false
	}
	return rc.expireAt(), true
}

// LRU returns the record's 24-bit LRU clock (or LFU data).
func (db *DB) LRU(r Ref) uint32 { return db.rec(r).lru() }

// Touch stores the record's LRU clock (or LFU data) on access.
func (db *DB) Touch(r Ref, clock uint32) { db.rec(r).setLRU(clock) }

// register makes a new record findable: index, dense, expiring.
func (db *DB) register(key []byte, h handle) {
	hv := db.hash(key)
	if old, ok := db.index[hv]; ok && old != h {
		if db.collide == nil {
			db.collide = make(map[string]handle)
		}
		db.collide[string(key)] = h
	} else {
		db.index[hv] = h
	}
	rc := db.rec(h)
	rc.setDenseIdx(uint32(len(db.dense)))
	db.dense = append(db.dense, h)
	if rc.hasExpire() {
		rc.setExpiringIdx(uint32(len(db.expiring)))
		db.expiring = append(db.expiring, h)
	}
}

// relocate points everything that referred to old at new (same key, same positions).
func (db *DB) relocate(key []byte, old, nw handle) {
	hv := db.hash(key)
	if db.index[hv] == old {
		db.index[hv] = nw
	} else {
		db.collide[string(key)] = nw
	}
	rc := db.rec(nw)
	db.dense[rc.denseIdx()] = nw
	if rc.hasExpire() {
		db.expiring[rc.expiringIdx()] = nw
	}
}

// unregister removes a record from index, dense and expiring (swap-remove, fixing the moved
// record's position).
func (db *DB) unregister(h handle) {
	rc := db.rec(h)
	key := rc.key()
	hv := db.hash(key)
	if db.index[hv] == h {
		delete(db.index, hv)
		// Promote a colliding key with the same hash, if any.
		for k, c := range db.collide {
			if db.hash([]byte(k)) == hv {
				db.index[hv] = c
				delete(db.collide, k)
				break
			}
		}
	} else {
		delete(db.collide, string(key))
	}
	i := rc.denseIdx()
	last := db.dense[len(db.dense)-1]
	db.dense[i] = last
	db.rec(last).setDenseIdx(i)
	db.dense = db.dense[:len(db.dense)-1]
	if rc.hasExpire() {
		db.removeExpiring(rc)
	}
}

func (db *DB) removeExpiring(rc rec) {
	i := rc.expiringIdx()
	last := db.expiring[len(db.expiring)-1]
	db.expiring[i] = last
	db.rec(last).setExpiringIdx(i)
	db.expiring = db.expiring[:len(db.expiring)-1]
}

// ShrinkLists gives back list capacity after mass deletion, so memory follows the key count. It
// copies the lists, so the server calls it from cron, not on every deletion.
func (db *DB) ShrinkLists() {
	if c := cap(db.dense); c > 1024 && len(db.dense) < c/4 {
		db.dense = append(make([]handle, 0, c/2), db.dense...)
	}
	if c := cap(db.expiring); c > 1024 && len(db.expiring) < c/4 {
		db.expiring = append(make([]handle, 0, c/2), db.expiring...)
	}
}

// SetString stores a string value under key, replacing whatever was there. expireAt > 0 sets a
// TTL; otherwise keepTTL keeps an existing TTL and !keepTTL clears it. It returns the object the
// key held before, if it was a collection, so the caller can free it in the background.
func (db *DB) SetString(key, val []byte, expireAt int64, keepTTL bool, clock uint32) (Ref, any) {
	old, exists := db.Find(key)
	if !exists {
		h := db.newString(key, val, expireAt, clock)
		db.register(key, h)
		return h, nil
	}
	db.beforeChange(old)
	rc := db.rec(old)
	var freed any
	if rc.typ() != TypeString {
		freed = db.releaseObj(rc.objID())
	}
	if expireAt == 0 && keepTTL && rc.hasExpire() {
		expireAt = rc.expireAt()
	}
	hadExpire := rc.hasExpire()
	wantExpire := expireAt > 0
	need := recordSize(len(key), len(val), wantExpire)
	if hadExpire == wantExpire && need <= db.arena.slotSize(old) && need > db.arena.slotSize(old)/2 {
		// Same layout, and the slot fits without wasting half of it: overwrite in place. This is
		// the common SET-over-existing-key path, and it allocates nothing.
		rc[0] = byte(TypeString) | (rc[0] &^ typeMask)
		putValLen(rc, len(val))
		copy(rc[rc.keyOff()+len(key):], val)
		if wantExpire {
			rc.setExpireAt(expireAt)
		}
		rc.setLRU(clock)
		return old, freed
	}
	db.unregister(old)
	db.arena.free(old)
	h := db.newString(key, val, expireAt, clock)
	db.register(key, h)
	return h, freed
}

func putValLen(rc rec, n int) {
	rc[12], rc[13], rc[14], rc[15] = byte(n), byte(n>>8), byte(n>>16), byte(n>>24)
}

func (db *DB) newString(key, val []byte, expireAt int64, clock uint32) handle {
	size := recordSize(len(key), len(val), expireAt > 0)
	h, b := db.arena.alloc(size)
	rc := rec(b)
	writeHeader(rc, TypeString, expireAt > 0, clock, 0, key, uint32(len(val)))
	rc[0] |= db.visited
	if expireAt > 0 {
		rc.setExpireAt(expireAt)
	}
	copy(rc[rc.keyOff()+len(key):], val)
	return h
}

// ResizeString changes a string record's value length to n, keeping the first min(old, n) bytes
// and the TTL, and returns the (possibly moved) record and its value bytes for the caller to fill.
func (db *DB) ResizeString(r Ref, n int) (Ref, []byte) {
	db.beforeChange(r)
	rc := db.rec(r)
	need := recordSize(rc.keyLen(), n, rc.hasExpire())
	if need <= db.arena.slotSize(r) {
		putValLen(rc, n)
		return r, rc.value()
	}
	// Grow with headroom, so that repeated APPENDs are amortised O(1) like an sds string.
	grow := need
	if rc.valLen() > 0 {
		grow += need / 2
	}
	h, _ := db.arena.alloc(grow)
	nr := db.rec(h)
	copy(nr, rc[:rc.keyOff()+rc.keyLen()+rc.valLen()])
	putValLen(nr, n)
	db.relocate(nr.key(), r, h)
	db.arena.free(r)
	return h, db.rec(h).value()
}

// SetObject stores a new collection under key, which must not exist. The collection may be
// filled before or after; either way it is accounted at the next Settle.
func (db *DB) SetObject(key []byte, t Type, obj any, clock uint32) Ref {
	id := db.allocObj(obj)
	db.noteWrite(obj, 0)
	h, b := db.arena.alloc(recordSize(len(key), 0, false))
	writeHeader(rec(b), t, false, clock, 0, key, id)
	b[0] |= db.visited
	db.register(key, h)
	return h
}

func (db *DB) allocObj(obj any) uint32 {
	if n := len(db.freeObjs); n > 0 {
		id := db.freeObjs[n-1]
		db.freeObjs = db.freeObjs[:n-1]
		db.objects[id] = obj
		return id
	}
	db.objects = append(db.objects, obj)
	return uint32(len(db.objects) - 1)
}

func (db *DB) releaseObj(id uint32) any {
	o := db.objects[id]
	db.unaccount(o)
	db.objects[id] = nil
	db.freeObjs = append(db.freeObjs, id)
	return o
}

// Delete removes the record. It returns the collection object the key held, if any, so the
// caller can free a large one in the background.
func (db *DB) Delete(r Ref) any {
	db.beforeChange(r)
	rc := db.rec(r)
	var freed any
	if rc.typ() != TypeString {
		freed = db.releaseObj(rc.objID())
	}
	db.unregister(r)
	db.arena.free(r)
	return freed
}

// SetExpire sets the record's expiry (unix ms) and returns the possibly moved record.
func (db *DB) SetExpire(r Ref, ms int64) Ref {
	db.beforeChange(r)
	rc := db.rec(r)
	if rc.hasExpire() {
		rc.setExpireAt(ms)
		return r
	}
	return db.relayout(r, true, ms)
}

// Persist removes the record's expiry and returns the possibly moved record.
func (db *DB) Persist(r Ref) Ref {
	if !db.rec(r).hasExpire() {
		return r
	}
	db.beforeChange(r)
	return db.relayout(r, false, 0)
}

// relayout copies a record into a new slot with or without the expiry header.
func (db *DB) relayout(r Ref, expire bool, ms int64) Ref {
	rc := db.rec(r)
	key := rc.key()
	vlen := 0
	if rc.typ() == TypeString {
		vlen = rc.valLen()
	}
	h, b := db.arena.alloc(recordSize(len(key), vlen, expire))
	nr := rec(b)
	writeHeader(nr, rc.typ(), expire, rc.lru(), rc.denseIdx(), key, binaryU32(rc[12:]))
	nr[0] |= rc[0] & flagVisited
	if rc.typ() == TypeString {
		copy(nr[nr.keyOff()+len(key):], rc.value())
	}
	if rc.hasExpire() {
		db.removeExpiring(rc)
	}
	hv := db.hash(key)
	if db.index[hv] == r {
		db.index[hv] = h
	} else {
		db.collide[string(key)] = h
	}
	db.dense[nr.denseIdx()] = h
	if expire {
		nr.setExpireAt(ms)
		nr.setExpiringIdx(uint32(len(db.expiring)))
		db.expiring = append(db.expiring, h)
	}
	db.arena.free(r)
	return h
}

func binaryU32(b []byte) uint32 {
	return uint32(b[0]) | uint32(b[1])<<8 | uint32(b[2])<<16 | uint32(b[3])<<24
}

// RandomKey returns a random record, or false when the DB is empty.
func (db *DB) RandomKey() (Ref, bool) {
	if len(db.dense) == 0 {
		return 0, false
	}
	return db.dense[db.rng.IntN(len(db.dense))], true
}

// RandomExpiring returns a random record with a TTL, or false when there is none.
func (db *DB) RandomExpiring() (Ref, bool) {
	if len(db.expiring) == 0 {
		return 0, false
	}
	return db.expiring[db.rng.IntN(len(db.expiring))], true
}

// Scan visits up to count records starting at cursor and returns the next cursor (0 when done).
// It walks the dense list from its end: deletions move the last record into the hole, which the
// walk has always visited already or will visit, so every key present for the whole scan is
// returned at least once, as SCAN guarantees.
func (db *DB) Scan(cursor uint64, count int, fn func(Ref)) uint64 {
	pos := len(db.dense) - 1
	if cursor != 0 {
		pos = int(cursor) - 1
		if pos > len(db.dense)-1 {
			pos = len(db.dense) - 1
		}
	}
	for ; pos >= 0 && count > 0; pos-- {
		fn(db.dense[pos])
		count--
	}
	if pos < 0 {
		return 0
	}
	return uint64(pos) + 1
}

// Each calls fn for every record until fn returns false. fn must not write to the DB.
func (db *DB) Each(fn func(Ref) bool) {
	for _, h := range db.dense {
		if !fn(h) {
			return
		}
	}
}

// Refs returns a snapshot of all records; for commands that delete while walking (FLUSHDB-like
// work done key by key).
func (db *DB) Refs() []Ref { return append([]Ref(nil), db.dense...) }

// UsedMemory is the bytes this DB's data occupies: record slots, index, lists and collections.
// Free slots inside arena pages are not counted (they are reused by new records); see
// Fragmentation.
func (db *DB) UsedMemory() int64 {
	db.Settle()
	// A Swiss-table slot for a uint64→uint64 entry is 16 bytes plus a control byte, at a load
	// factor between 7/16 and 7/8; 24 bytes per entry is the middle of that range.
	index := int64(len(db.index)) * 24
	lists := int64(cap(db.dense)+cap(db.expiring))*8 + int64(cap(db.objects))*16
	return db.arena.used + db.arena.metaBytes() + index + lists + db.objBytes
}

// Fragmentation is the memory held in free arena slots: reserved by the process, reusable by new
// records of the same size, not data.
func (db *DB) Fragmentation() int64 { return db.arena.fragmentation() }
