// Package keyspace is iocache's data store: databases of keys with their values, expiry times and
// LRU/LFU clocks, built so the garbage collector has almost nothing to scan. String keys live
// entirely in pointer-free arena pages; so do compact collections, their packed bytes after the
// key (inline.go), while larger ones keep their key there and their Go object in a side table.
// A DB is not safe for concurrent use: the server's main thread owns every DB.
package keyspace

import (
	"bytes"
	"hash/maphash"
	"math/rand/v2"

	"github.com/iocache/iocache/server/cluster"
)

// Ref identifies a key's record inside its DB. A Ref is invalidated by any write to the DB except
// Touch; look the key up again after writing.
type Ref = handle

// DB is one logical database (SELECT n).
type DB struct {
	// OnNew, when set, is told of each key added (not of one replaced): keyspace notifications'
	// "new" event, which Redis sends from dbAdd.
	OnNew func(key []byte)
	seed  maphash.Seed
	// hashMask is all ones; tests narrow it to make keys collide in index and over.
	hashMask uint64
	arena    *arena
	// index maps the low 32 bits of a key's hash to the key's position in dense: 9 bytes a slot
	// (with the map's control byte) where hash and handle took 17, which is most of the index's
	// share of the memory per key. Both are plain integers, so the garbage collector never scans
	// the map. A key found through index is compared with the record's key.
	index map[uint32]uint32
	// over holds, by full 64-bit hash, the keys whose 32-bit hash another key already holds in
	// index (about n/2^32 of n keys), and collide, by key, those whose 64-bit hash another key
	// holds in over (practically none). Find looks there only when index fails and they are not
	// empty.
	over    map[uint64]uint32
	collide map[string]uint32
	// dense lists every record, for SCAN, KEYS and random sampling; records know their position,
	// and the index points at it, so a record that moves in the arena leaves the index alone.
	dense []handle
	// expiring lists the records with a TTL, for active expiry and volatile-* eviction.
	expiring []handle
	objects  []any
	freeObjs []uint32
	// writes, rviews and wviews serve inline collections (inline.go).
	writes   []pendingWrite
	rviews   viewPool
	wviews   viewPool
	objBytes int64
	pending  []pendingObj // see accounting.go
	// owed, when the server shares one, lists the DB while it has something to settle
	// (owing); accounting.go.
	owed  *Owed
	owing bool
	// pendingIndex finds a pending object when many are (accounting.go).
	pendingIndex map[any]struct{}
	rng          *rand.Rand
	// visited is the value of a record's flagVisited bit that means "already in the running (or
	// last) snapshot"; snapshot is the running one, if any (see snapshot.go).
	visited  byte
	snapshot Snapshotter
	// slots lists the keys by hash slot in cluster mode (slots.go); nil otherwise.
	slots *slotIndex
}

// NewDB returns an empty database. All DBs of a server share one hash seed, so a key moved
// between them (MOVE, SWAPDB) keeps its hash.
func NewDB(seed maphash.Seed) *DB {
	return &DB{
		seed:     seed,
		hashMask: ^uint64(0),
		arena:    newArena(),
		index:    make(map[uint32]uint32),
		objects:  []any{nil},
		rng:      rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64())),
	}
}

func (db *DB) hash(key []byte) uint64 { return maphash.Bytes(db.seed, key) & db.hashMask }

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
	hv := db.hash(key)
	if i, ok := db.index[uint32(hv)]; ok {
		if h := db.dense[i]; bytes.Equal(db.rec(h).key(), key) {
			return h, true
		}
	}
	if len(db.over) == 0 {
		return 0, false
	}
	// The key's 32-bit hash may be another key's, or may have been freed by the deletion of the
	// key that held it while this one stayed in over.
	if i, ok := db.over[hv]; ok {
		if h := db.dense[i]; bytes.Equal(db.rec(h).key(), key) {
			return h, true
		}
	}
	if i, ok := db.collide[string(key)]; ok {
		return db.dense[i], true
	}
	return 0, false
}

// Type returns the record's type.
func (db *DB) Type(r Ref) Type { return db.rec(r).typ() }

// Key returns the record's key (valid until the next write).
func (db *DB) Key(r Ref) []byte { return db.rec(r).key() }

// Str returns a string record's value (valid until the next write).
func (db *DB) Str(r Ref) []byte { return db.rec(r).value() }

// Obj returns a collection record's object. An inline collection's is a view, valid until the
// running command ends (see inline.go).
func (db *DB) Obj(r Ref) any {
	rc := db.rec(r)
	if rc[0]&(flagInline|flagPending) == 0 {
		return db.objects[rc.objID()]
	}
	if rc[0]&flagPending != 0 {
		return db.findWrite(rc.key()).obj
	}
	db.owe()
	return db.rviews.view(rc.typ(), rc.value())
}

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

// register makes a new record findable: dense, index, expiring.
func (db *DB) register(key []byte, h handle) {
	pos := uint32(len(db.dense))
	hv := db.hash(key)
	if _, taken := db.index[uint32(hv)]; !taken {
		db.index[uint32(hv)] = pos
	} else if _, taken := db.over[hv]; !taken {
		if db.over == nil {
			db.over = make(map[uint64]uint32)
		}
		db.over[hv] = pos
	} else {
		if db.collide == nil {
			db.collide = make(map[string]uint32)
		}
		db.collide[string(key)] = pos
	}
	rc := db.rec(h)
	rc.setDenseIdx(pos)
	db.dense = append(db.dense, h)
	if db.slots != nil {
		db.slots.add(cluster.KeySlot(key), pos)
	}
	if rc.hasExpire() {
		rc.setExpiringIdx(uint32(len(db.expiring)))
		db.expiring = append(db.expiring, h)
	}
}

// relocate points everything that referred to old at new (same key, same positions; the index
// holds positions, so it stays as it is).
func (db *DB) relocate(old, nw handle) {
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
	i := rc.denseIdx()
	db.forgetPos(rc.key(), i)
	lastPos := uint32(len(db.dense) - 1)
	if db.slots != nil {
		db.slots.remove(cluster.KeySlot(rc.key()), i)
	}
	if i != lastPos {
		last := db.dense[lastPos]
		lr := db.rec(last)
		db.movePos(lr.key(), lastPos, i)
		db.dense[i] = last
		lr.setDenseIdx(i)
		if db.slots != nil {
			db.slots.move(cluster.KeySlot(lr.key()), lastPos, i)
		}
	}
	db.dense = db.dense[:lastPos]
	if db.slots != nil {
		db.slots.truncate(lastPos)
	}
	if rc.hasExpire() {
		db.removeExpiring(rc)
	}
}

// forgetPos removes the index entry of key, at position pos. The 32-bit hash it frees is not
// handed to a key in over with the same hash (finding one would mean a walk of over); Find looks
// in over when index fails.
func (db *DB) forgetPos(key []byte, pos uint32) {
	hv := db.hash(key)
	if p, ok := db.index[uint32(hv)]; ok && p == pos {
		delete(db.index, uint32(hv))
	} else if p, ok := db.over[hv]; ok && p == pos {
		delete(db.over, hv)
	} else {
		delete(db.collide, string(key))
	}
}

// movePos points the index entry of key from position from to position to.
func (db *DB) movePos(key []byte, from, to uint32) {
	hv := db.hash(key)
	if p, ok := db.index[uint32(hv)]; ok && p == from {
		db.index[uint32(hv)] = to
	} else if p, ok := db.over[hv]; ok && p == from {
		db.over[hv] = to
	} else {
		db.collide[string(key)] = to
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
		if db.OnNew != nil {
			db.OnNew(key)
		}
		return h, nil
	}
	db.beforeChange(old)
	freed := db.releaseValue(old)
	rc := db.rec(old)
	if expireAt == 0 && keepTTL && rc.hasExpire() {
		expireAt = rc.expireAt()
	}
	hadExpire := rc.hasExpire()
	wantExpire := expireAt > 0
	need := recordSize(len(key), len(val), wantExpire)
	if hadExpire == wantExpire && need <= db.arena.slotSize(old) && need > db.arena.slotSize(old)/2 {
		// Same layout, and the slot fits without wasting half of it: overwrite in place. This is
		// the common SET-over-existing-key path, and it allocates nothing.
		rc[0] = byte(TypeString) | (rc[0] &^ (typeMask | flagInline | flagPending))
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

// StringHeadroom is the bytes a string record needs before its value, for a key of keyLen bytes
// (with room for a TTL): what AdoptString wants free in front of a value.
func StringHeadroom(keyLen int) int { return recordSize(keyLen, 0, true) }

// AdoptString stores a new string under key, which must not exist, whose value is buf[off:]. When
// the record is too large for the arena's size classes and buf has StringHeadroom free bytes before
// the value, buf becomes the record's page without a copy: a RESTOREd value of a gigabyte is held
// once, not decoded into one buffer and copied into another. Otherwise it is SetString.
func (db *DB) AdoptString(key, buf []byte, off int, expireAt int64, clock uint32) Ref {
	val := buf[off:]
	size := recordSize(len(key), len(val), expireAt > 0)
	head := size - len(val)
	if size <= maxClassSize || off < head {
		r, _ := db.SetString(key, val, expireAt, false, clock)
		return r
	}
	b := buf[off-head : len(buf) : len(buf)]
	rc := rec(b)
	writeHeader(rc, TypeString, expireAt > 0, clock, 0, key, uint32(len(val)))
	rc[0] |= db.visited
	if expireAt > 0 {
		rc.setExpireAt(expireAt)
	}
	h := db.arena.adoptLarge(b)
	db.register(key, h)
	if db.OnNew != nil {
		db.OnNew(key)
	}
	return h
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
	db.relocate(r, h)
	db.arena.free(r)
	return h, db.rec(h).value()
}

// SetObject stores a new collection, complete, under key, which must not exist: inline when it
// is compact and small enough (the caller must not write to obj afterwards), else in the object
// table.
func (db *DB) SetObject(key []byte, t Type, obj any, clock uint32) Ref {
	var h handle
	if n, ok := payloadSize(obj); ok {
		var b []byte
		h, b = db.arena.alloc(recordSize(len(key), n, false))
		writeHeader(rec(b), t, false, clock, 0, key, uint32(n))
		b[0] |= db.visited | flagInline
		putPayload(b[hdrSize+len(key):], obj)
	} else {
		id := db.allocObj(obj)
		// Accounted from zero at the next Settle. A new object is in no pending entry: no need
		// for noteWrite's search, which a load of many large collections would make quadratic.
		db.addPendingObj(obj, 0)
		var b []byte
		h, b = db.arena.alloc(recordSize(len(key), 0, false))
		writeHeader(rec(b), t, false, clock, 0, key, id)
		b[0] |= db.visited
	}
	db.register(key, h)
	if db.OnNew != nil {
		db.OnNew(key)
	}
	return h
}

// CreateObject adds obj, a new and empty collection, under key, which must not exist, for the
// running command to fill: until the command ends Obj and ObjForWrite return obj, and Settle
// then stores it inline or in the object table.
func (db *DB) CreateObject(key []byte, t Type, obj any, clock uint32) Ref {
	return db.addPending(key, t, clock, obj, false)
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
	freed := db.releaseValue(r)
	db.unregister(r)
	db.arena.free(r)
	return freed
}

// releaseValue lets go of a record's collection, if it has one in the object table or pending,
// and returns it for the caller to free (an inline collection has nothing to free).
func (db *DB) releaseValue(r Ref) any {
	rc := db.rec(r)
	switch {
	case rc[0]&flagPending != 0:
		return db.dropWrite(rc.key())
	case rc[0]&flagInline != 0, rc.typ() == TypeString:
		return nil
	}
	return db.releaseObj(rc.objID())
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
	hasValue := rc.typ() == TypeString || rc[0]&flagInline != 0
	if hasValue {
		vlen = rc.valLen()
	}
	h, b := db.arena.alloc(recordSize(len(key), vlen, expire))
	nr := rec(b)
	writeHeader(nr, rc.typ(), expire, rc.lru(), rc.denseIdx(), key, binaryU32(rc[12:]))
	nr[0] |= rc[0] & (flagVisited | flagInline | flagPending)
	if hasValue {
		copy(nr[nr.keyOff()+len(key):], rc.value())
	}
	if rc.hasExpire() {
		db.removeExpiring(rc)
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
	db.settleObjects()
	// A Swiss-table slot for a uint32→uint32 entry is 8 bytes plus a control byte, at a load
	// factor between 7/16 and 7/8; 13 bytes per entry is the middle of that range. over's entries
	// (uint64→uint32) take 16 and a control byte.
	index := int64(len(db.index))*13 + int64(len(db.over))*24
	lists := int64(cap(db.dense)+cap(db.expiring))*8 + int64(cap(db.objects))*16
	return db.arena.used + db.arena.metaBytes() + index + lists + db.objBytes + db.slots.memory()
}

// Fragmentation is the memory held in free arena slots: reserved by the process, reusable by new
// records of the same size, not data.
func (db *DB) Fragmentation() int64 { return db.arena.fragmentation() }
