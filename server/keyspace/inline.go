package keyspace

import "slices"

// Inline collections: a compact collection (a listpack hash or sorted set, an intset, a list of
// one node) keeps its packed bytes in its key's arena record, after the key, as a string keeps
// its value. It then costs its payload and the record's header, and nothing else: no Go object,
// no object-table slot, no allocation of its own, and nothing for the garbage collector to scan
// or to leave behind as garbage. Most hashes, sets and sorted sets of a cache are small, and
// those per-key words are what made them cost more than in Redis.
//
// Commands still see collections as objects (*Hash, *Set, *ZSet, *List):
//
//   - Obj hands out a read view: a pooled object whose bytes are the record's own, valid until
//     the running command ends (Settle) or the key is written.
//   - ObjForWrite hands out a write view: a pooled object holding a copy of the bytes in a buffer
//     the DB keeps for reuse, so a write allocates nothing once the pool is warm. The record is
//     marked pending, and Obj returns the same view until the command ends.
//   - CreateObject adds a key whose collection the command fills after adding it.
//   - Settle, after every command, writes each pending collection back: into the record while it
//     is compact and at most inlineMax bytes, or else (converted to its large form, or grown) into
//     a heap object in the object table, where large collections live.

const (
	// flagInline marks a record whose value bytes are its collection's compact payload.
	flagInline = 0x40
	// flagPending marks a record whose collection the running command is writing (db.writes).
	flagPending = 0x80
	// inlineMax bounds an inline payload: past it a write-back copy would cost more than the
	// object's words save. Redis's default thresholds keep ten-element collections far below.
	inlineMax = 2048
)

// pendingWrite is a collection the running command writes, by key (records move).
type pendingWrite struct {
	key  []byte // a copy, in a buffer kept for the next command
	obj  any
	view bool // obj belongs to db.wviews; otherwise it is a heap object
}

// payloadSize is the bytes obj takes inline, or false when it cannot be inline.
func payloadSize(obj any) (int, bool) {
	n := -1
	switch o := obj.(type) {
	case *Hash:
		if o.big == nil {
			n = len(o.lp)
		}
	case *Set:
		if o.big == nil {
			n = len(o.ints)
		}
	case *ZSet:
		if o.big == nil {
			n = len(o.lp)
		}
	case *List:
		switch len(o.nodes) {
		case 0:
			n = 0
		case 1:
			nd := o.nodes[0]
			n = nodeHeader + len(nd) - nodeStart(nd)
		}
	}
	return n, n >= 0 && n <= inlineMax
}

// putPayload writes obj's payload (payloadSize bytes) to dst. A list node is written without
// the free room in front of its first element.
func putPayload(dst []byte, obj any) {
	switch o := obj.(type) {
	case *Hash:
		copy(dst, o.lp)
	case *Set:
		copy(dst, o.ints)
	case *ZSet:
		copy(dst, o.lp)
	case *List:
		if len(o.nodes) == 1 {
			nd := o.nodes[0]
			copy(dst, nd[:nodeHeader])
			copy(dst[nodeHeader:], nd[nodeStart(nd):])
			setNodeStart(dst, nodeHeader)
		}
	}
}

// FromPayload returns a collection of type t reading payload in place: for a snapshot's writer,
// which receives inline collections as bytes (AppendPayload).
func FromPayload(t Type, payload []byte) any {
	var v viewPool
	return v.view(t, payload)
}

// AppendPayload appends the compact payload of an inline collection to dst; false when the
// record is a string or its collection lives in the object table.
func (db *DB) AppendPayload(dst []byte, r Ref) ([]byte, bool) {
	rc := db.rec(r)
	switch {
	case rc[0]&flagPending != 0:
		obj := db.findWrite(rc.key()).obj
		n, ok := payloadSize(obj)
		if !ok {
			return dst, false
		}
		dst = slices.Grow(dst, n)[:len(dst)+n]
		putPayload(dst[len(dst)-n:], obj)
		return dst, true
	case rc[0]&flagInline != 0:
		return append(dst, rc.value()...), true
	}
	return dst, false
}

// pool hands out reusable objects; reset makes them all available again.
type pool[T any] struct {
	items []*T
	n     int
}

func (p *pool[T]) next() *T {
	if p.n == len(p.items) {
		p.items = append(p.items, new(T))
	}
	v := p.items[p.n]
	p.n++
	return v
}

// maxPooled bounds the views a DB keeps between commands; a command that needed more (SORT ...
// GET over thousands of hashes) leaves the rest to the garbage collector.
const maxPooled = 64

func (p *pool[T]) reset(clearItem func(*T)) {
	for _, v := range p.items[:p.n] {
		clearItem(v)
	}
	if len(p.items) > maxPooled {
		clear(p.items[maxPooled:])
		p.items = p.items[:maxPooled]
	}
	p.n = 0
}

// A view is a collection object embedded with the buffer a write view copies into.
type (
	hashView struct {
		Hash
		buf []byte
	}
	setView struct {
		Set
		buf []byte
	}
	zsetView struct {
		ZSet
		buf []byte
	}
	listView struct {
		List
		one [1][]byte
		buf []byte
	}
)

type viewPool struct {
	hashes pool[hashView]
	sets   pool[setView]
	zsets  pool[zsetView]
	lists  pool[listView]
}

func (p *viewPool) inUse() bool { return p.hashes.n|p.sets.n|p.zsets.n|p.lists.n != 0 }

// view returns a read view of payload (which it does not copy).
func (p *viewPool) view(t Type, payload []byte) any {
	if len(payload) == 0 {
		payload = nil
	} else {
		// Capacity ends with the payload: an append can never write past it into the arena.
		payload = payload[:len(payload):len(payload)]
	}
	switch t {
	case TypeHash:
		v := p.hashes.next()
		v.Hash = Hash{lp: payload}
		return &v.Hash
	case TypeSet:
		v := p.sets.next()
		v.Set = Set{ints: payload}
		return &v.Set
	case TypeZSet:
		v := p.zsets.next()
		v.ZSet = ZSet{lp: payload}
		return &v.ZSet
	case TypeList:
		v := p.lists.next()
		v.List = List{}
		if payload != nil {
			v.one[0] = payload
			v.List = List{nodes: v.one[:1:1], n: nodeCount(payload), caps: len(payload)}
		}
		return &v.List
	}
	return nil
}

// listFrontRoom is the room a write view leaves before a list's first element, so that LPUSH
// on an inline list writes into the buffer instead of reallocating the node.
const listFrontRoom = 32

// writable returns a write view holding a copy of payload in the view's own buffer.
func (p *viewPool) writable(t Type, payload []byte) any {
	switch t {
	case TypeHash:
		v := p.hashes.next()
		v.Hash = Hash{lp: copyInto(v.buf, payload)}
		return &v.Hash
	case TypeSet:
		v := p.sets.next()
		v.Set = Set{ints: copyInto(v.buf, payload)}
		return &v.Set
	case TypeZSet:
		v := p.zsets.next()
		v.ZSet = ZSet{lp: copyInto(v.buf, payload)}
		return &v.ZSet
	case TypeList:
		v := p.lists.next()
		v.List = List{}
		if len(payload) == 0 {
			// An empty list keeps the buffer as a spare just past its (no) nodes, for its first
			// node (List.spareNode).
			v.one[0] = emptyBuf(v.buf)
			v.List = List{nodes: v.one[:0:1]}
			return &v.List
		}
		body := payload[nodeHeader:]
		need := nodeHeader + listFrontRoom + len(body)
		nd := v.buf
		if cap(nd) < need {
			nd = make([]byte, need, packedCap(need+listFrontRoom))
		}
		nd = nd[:need]
		copy(nd, payload[:nodeHeader])
		copy(nd[nodeHeader+listFrontRoom:], body)
		setNodeStart(nd, nodeHeader+listFrontRoom)
		v.one[0] = nd
		v.List = List{nodes: v.one[:1], n: nodeCount(payload), caps: cap(nd)}
		return &v.List
	}
	return nil
}

func copyInto(buf, payload []byte) []byte {
	if len(payload) == 0 {
		return emptyBuf(buf)
	}
	return append(buf[:0], payload...)
}

// emptyBuf returns buf emptied, with the header bytes past its end zeroed: the collections
// extend an empty slice over their header (a count, a width) and expect zeros there, as a new
// allocation has.
func emptyBuf(buf []byte) []byte {
	clear(buf[:min(cap(buf), nodeHeader)])
	return buf[:0]
}

// maxViewBuf bounds the buffer a write view keeps for the next command.
const maxViewBuf = 16 << 10

func keepBuf(b []byte) []byte {
	if cap(b) > maxViewBuf {
		return nil
	}
	return b[:0]
}

// resetReads makes every read view available again.
func (p *viewPool) resetReads() {
	p.hashes.reset(func(v *hashView) { v.Hash = Hash{} })
	p.sets.reset(func(v *setView) { v.Set = Set{} })
	p.zsets.reset(func(v *zsetView) { v.ZSet = ZSet{} })
	p.lists.reset(func(v *listView) { v.List, v.one[0] = List{}, nil })
}

// resetWrites makes every write view available again, keeping as its next buffer the bytes it
// holds when they are still its own: a compact payload (now written back), not what detach
// handed to a heap object (the view was cleared) or a large form.
func (p *viewPool) resetWrites() {
	p.hashes.reset(func(v *hashView) { v.buf, v.Hash = ownBytes(v.big == nil, v.lp), Hash{} })
	p.sets.reset(func(v *setView) { v.buf, v.Set = ownBytes(v.big == nil, v.ints), Set{} })
	p.zsets.reset(func(v *zsetView) { v.buf, v.ZSet = ownBytes(v.big == nil, v.lp), ZSet{} })
	p.lists.reset(func(v *listView) {
		switch {
		case len(v.nodes) == 1:
			v.buf = keepBuf(v.nodes[0])
		case v.nodes != nil && len(v.nodes) == 0 && cap(v.nodes) == 1:
			v.buf = keepBuf(v.nodes[:1][0]) // the spare of a list left empty
		default:
			v.buf = nil
		}
		v.List, v.one[0] = List{}, nil
	})
}

// ownBytes is the buffer a view keeps: its compact payload, nil once detach took it (or for a
// large form).
func ownBytes(compact bool, b []byte) []byte {
	if compact && b != nil {
		return keepBuf(b)
	}
	return nil
}

// detach moves a write view's contents into a new heap object, which the object table keeps;
// the view forgets them, so its buffers are never reused under the object.
func detach(obj any) any {
	switch o := obj.(type) {
	case *Hash:
		h := &Hash{lp: o.lp, big: o.big}
		*o = Hash{}
		return h
	case *Set:
		s := &Set{ints: o.ints, big: o.big}
		*o = Set{}
		return s
	case *ZSet:
		z := &ZSet{lp: o.lp, big: o.big}
		*o = ZSet{}
		return z
	case *List:
		nodes := o.nodes
		if len(nodes) == 1 && cap(nodes) == 1 {
			// The view's one-node array is the view's: the list gets a slice of its own.
			nodes = [][]byte{nodes[0]}
		}
		l := &List{nodes: nodes, n: o.n, caps: o.caps, slab: o.slab}
		*o = List{}
		return l
	}
	return obj
}

// ownedCopy returns obj as an object the caller may keep: views are cloned.
func ownedCopy(obj any) any {
	switch o := obj.(type) {
	case *Hash:
		return o.Clone()
	case *Set:
		return o.Clone()
	case *ZSet:
		return o.Clone()
	case *List:
		return o.Clone()
	}
	return obj
}

// Create adds an empty collection of type t (a hash, set, sorted set or list) under key, which
// must not exist, for the running command to fill, and returns it: a write view, so that a new
// small collection is built in a reused buffer and copied into its record, and creating one
// allocates nothing (CreateObject, for other types and for collections the caller built).
func (db *DB) Create(key []byte, t Type, clock uint32) any {
	obj := db.wviews.writable(t, nil)
	db.addPending(key, t, clock, obj, true)
	return obj
}

// addPending adds key's record, pending with obj as its collection.
func (db *DB) addPending(key []byte, t Type, clock uint32, obj any, view bool) Ref {
	h, b := db.arena.alloc(recordSize(len(key), 0, false))
	writeHeader(rec(b), t, false, clock, 0, key, 0)
	b[0] |= db.visited | flagInline | flagPending
	db.register(key, h)
	db.addWrite(key, obj, view)
	if db.OnNew != nil {
		db.OnNew(key)
	}
	return h
}

// findWrite returns the pending write of key; the record's flagPending says there is one.
func (db *DB) findWrite(key []byte) *pendingWrite {
	for i := range db.writes {
		if string(db.writes[i].key) == string(key) {
			return &db.writes[i]
		}
	}
	panic("keyspace: a pending record without its pending write")
}

// addWrite records a pending write, reusing the key buffer of an earlier command's entry.
func (db *DB) addWrite(key []byte, obj any, view bool) {
	db.owe()
	n := len(db.writes)
	if n < cap(db.writes) {
		db.writes = db.writes[:n+1]
	} else {
		db.writes = append(db.writes, pendingWrite{})
	}
	w := &db.writes[n]
	w.key = append(w.key[:0], key...)
	w.obj, w.view = obj, view
}

// dropWrite forgets key's pending write (its record is going away) and returns its object when
// that is a heap object, for the caller to free.
func (db *DB) dropWrite(key []byte) any {
	w := db.findWrite(key)
	var freed any
	if !w.view {
		freed = w.obj
	}
	last := len(db.writes) - 1
	i := w
	*i, db.writes[last] = db.writes[last], *i
	db.writes[last].obj = nil
	db.writes = db.writes[:last]
	return freed
}

// settleWrites writes back every pending collection and frees the views.
func (db *DB) settleWrites() {
	for i := range db.writes {
		w := &db.writes[i]
		if r, ok := db.Find(w.key); ok && db.rec(r)[0]&flagPending != 0 {
			db.writeBack(r, w.obj, w.view)
		}
		w.obj = nil
	}
	db.writes = db.writes[:0]
	db.wviews.resetWrites()
	db.rviews.resetReads()
}

// writeBack stores a pending record's collection: inline when it fits, else in the object table.
func (db *DB) writeBack(r Ref, obj any, view bool) {
	if n, ok := payloadSize(obj); ok {
		rc := db.resizeValue(r, n)
		rc[0] = rc[0]&^flagPending | flagInline
		putPayload(rc[rc.keyOff()+rc.keyLen():], obj)
		return
	}
	if view {
		obj = detach(obj)
	}
	id := db.allocObj(obj)
	db.objBytes += sizeOf(obj)
	rc := db.resizeValue(r, 0)
	rc[0] &^= flagPending | flagInline
	binaryPutU32(rc[12:], id)
}

// resizeValue gives record r room for a value of n bytes, in place when its slot fits without
// wasting half of it, and returns the record (moved or not) with its value length set.
func (db *DB) resizeValue(r Ref, n int) rec {
	rc := db.rec(r)
	need := recordSize(rc.keyLen(), n, rc.hasExpire())
	if slot := db.arena.slotSize(r); need <= slot && need > slot/2 {
		putValLen(rc, n)
		return rc[:need]
	}
	h, b := db.arena.alloc(need)
	copy(b, rc[:rc.keyOff()+rc.keyLen()])
	db.relocate(r, h)
	db.arena.free(r)
	nr := rec(b)
	putValLen(nr, n)
	return nr
}

func binaryPutU32(b []byte, v uint32) {
	b[0], b[1], b[2], b[3] = byte(v), byte(v>>8), byte(v>>16), byte(v>>24)
}

// InlineBytes is the size of an inline collection's payload, or false when the record is a
// string or its collection lives in the object table (and is accounted there).
func (db *DB) InlineBytes(r Ref) (int, bool) {
	rc := db.rec(r)
	if rc[0]&flagInline == 0 || rc.typ() == TypeString {
		return 0, false
	}
	if rc[0]&flagPending != 0 {
		return payloadSize(db.findWrite(rc.key()).obj)
	}
	return rc.valLen(), true
}

// ReleaseViews makes the read views handed out so far available again, for a command that walks
// many keys (SAVE, DEBUG DIGEST) and holds none of the views it had.
func (db *DB) ReleaseViews() { db.rviews.resetReads() }

// Detach removes a collection record and returns its collection as an object the caller owns
// (RENAME and MOVE put it under another key).
func (db *DB) Detach(r Ref) any {
	rc := db.rec(r)
	var obj any
	switch {
	case rc[0]&flagPending != 0:
		w := db.findWrite(rc.key())
		obj = w.obj
		if w.view {
			obj = ownedCopy(obj)
		}
	case rc[0]&flagInline != 0:
		db.owe()
		obj = ownedCopy(db.rviews.view(rc.typ(), rc.value()))
	default:
		obj = db.objects[rc.objID()]
	}
	db.Delete(r)
	return obj
}
