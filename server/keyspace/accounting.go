package keyspace

// Memory accounting of collections, owned by the DB so that no write path can forget it. A
// collection's size is taken before its first write (ObjForWrite) or when it enters the DB
// (SetObject, counted from zero), and settled to its new size by Settle, which the server calls
// after every command and UsedMemory calls before answering. A collection leaving the DB
// (Delete, or a string written over it) is subtracted at the size it was accounted at.

// sized is what every collection offers.
type sized interface{ Bytes() int64 }

func sizeOf(obj any) int64 {
	if o, ok := obj.(sized); ok {
		return o.Bytes()
	}
	return 0
}

// pendingObj is a collection written since the last Settle and the size accounted for it.
type pendingObj struct {
	obj       any
	accounted int64
}

// pendingIndexFrom is the number of pending objects past which noteWrite finds them through
// pendingIndex rather than by comparing each: a command that writes many collections
// (XREADGROUP over 100,000 streams) made the comparisons quadratic.
const pendingIndexFrom = 16

// noteWrite remembers obj's accounted size before a write, once until the next Settle.
func (db *DB) noteWrite(obj any, accounted int64) {
	if db.pendingIndex != nil {
		if _, ok := db.pendingIndex[obj]; ok {
			return
		}
	} else {
		for i := range db.pending {
			if db.pending[i].obj == obj {
				return
			}
		}
	}
	db.addPendingObj(obj, accounted)
}

// addPendingObj appends to pending, indexing it once it is long.
func (db *DB) addPendingObj(obj any, accounted int64) {
	db.owe()
	db.pending = append(db.pending, pendingObj{obj, accounted})
	switch {
	case db.pendingIndex != nil:
		db.pendingIndex[obj] = struct{}{}
	case len(db.pending) > pendingIndexFrom:
		db.pendingIndex = make(map[any]struct{}, 2*len(db.pending))
		for _, p := range db.pending {
			db.pendingIndex[p.obj] = struct{}{}
		}
	}
}

// Owed lists the DBs that have something to settle since the server last settled them: the
// server settles those after every command instead of visiting all of its DBs (16 by default)
// when almost every command leaves at most one of them owing.
type Owed struct{ dbs []*DB }

// ShareOwed makes the DB list itself in o whenever it has something to settle.
func (db *DB) ShareOwed(o *Owed) { db.owed = o }

// owe lists the DB in its Owed, once until the next settling.
func (db *DB) owe() {
	if db.owed != nil && !db.owing {
		db.owing = true
		db.owed.dbs = append(db.owed.dbs, db)
	}
}

// Settle settles the DBs that owe, and empties the list.
func (o *Owed) Settle() {
	for i, db := range o.dbs {
		db.owing = false
		db.Settle()
		o.dbs[i] = nil
	}
	o.dbs = o.dbs[:0]
}

// Settle accounts for the growth or shrinking of the collections written since the last call.
func (db *DB) Settle() {
	// Small enough to inline: the server settles every DB after every command, and almost
	// always finds nothing pending.
	if len(db.pending)|len(db.writes) != 0 || db.rviews.inUse() {
		db.settleWrites()
		db.settle()
	}
}

func (db *DB) settle() {
	for _, p := range db.pending {
		db.objBytes += sizeOf(p.obj) - p.accounted
	}
	clear(db.pending)
	db.pending = db.pending[:0]
	db.pendingIndex = nil
}

// unaccount subtracts a collection leaving the DB, at the size it was accounted at.
func (db *DB) unaccount(obj any) {
	if db.pendingIndex != nil {
		if _, ok := db.pendingIndex[obj]; !ok {
			db.objBytes -= sizeOf(obj)
			return
		}
		delete(db.pendingIndex, obj)
	}
	for i, p := range db.pending {
		if p.obj == obj {
			db.objBytes -= p.accounted
			db.pending = append(db.pending[:i], db.pending[i+1:]...)
			return
		}
	}
	db.objBytes -= sizeOf(obj)
}

// replacePending moves a pending entry from old to its replacement (a copy of the same size).
func (db *DB) replacePending(old, nw any) {
	if db.pendingIndex != nil {
		if _, ok := db.pendingIndex[old]; !ok {
			return
		}
		delete(db.pendingIndex, old)
		db.pendingIndex[nw] = struct{}{}
	}
	for i := range db.pending {
		if db.pending[i].obj == old {
			db.pending[i].obj = nw
		}
	}
}

// ObjectBytes is the memory accounted to collections.
func (db *DB) ObjectBytes() int64 {
	db.settleObjects()
	return db.objBytes
}

// settleObjects is Settle for the collections in the object table only: what UsedMemory and
// ObjectBytes need, and safe in the middle of a command, which may hold views of inline
// collections that Settle's write-back would end (inline.go). Inline collections a command is
// writing are counted at their size before the command until it ends.
func (db *DB) settleObjects() {
	if len(db.pending) != 0 {
		db.settle()
	}
}
