package keyspace

// Point-in-time snapshots without stopping the world (Dragonfly's approach): a snapshot visits
// every record that existed at its cut exactly once, either when its walk reaches the record or,
// earlier, just before the first write that would change or remove it. Each record carries a
// visited bit; starting a snapshot flips the DB's notion of "visited", so every existing record
// becomes unvisited at once and records created afterwards are born visited (they are not part
// of the snapshot). Every method that changes a record calls beforeChange first, and collections
// are only written through ObjForWrite, so no write can slip past the snapshot.

// flagVisited is the record bit compared with DB.visited.
const flagVisited = 0x20

// Snapshotter is what a running snapshot asks the DB to call, on the main thread.
type Snapshotter interface {
	// Preserve receives a record the snapshot has not visited, as it was at the cut, just before
	// it changes or goes away. Afterwards the record counts as visited.
	Preserve(db *DB, r Ref)
	// WriteObject is called before every write to a collection while the snapshot runs: the
	// snapshot may still be reading the object on another thread, and may swap in a copy with
	// ReplaceObj.
	WriteObject(db *DB, r Ref)
}

// BeginSnapshot starts a snapshot of the DB as it is now; s is told about writes until
// EndSnapshot. It returns the position the walk starts at.
func (db *DB) BeginSnapshot(s Snapshotter) int {
	db.visited ^= flagVisited
	db.snapshot = s
	return len(db.dense) - 1
}

// EndSnapshot stops reporting writes. Records the walk did not reach stay unvisited until the
// next snapshot's flip, which makes them unvisited anyway; a snapshot that ends early must still
// walk to the end (see Walk) so that none is left marked for the next one.
func (db *DB) EndSnapshot() { db.snapshot = nil }

// Walk visits up to max unvisited records at or below position pos, from the end of the dense
// list towards its start, marking each visited before calling fn; it returns the next position
// (-1 when the walk is complete). Walking from the end is what makes the walk complete while
// keys come and go: a deletion moves the last record into the hole, and the last record is
// either already walked or, if the list has shrunk below the walk, still ahead of it.
func (db *DB) Walk(pos, max int, fn func(Ref)) int {
	if pos > len(db.dense)-1 {
		pos = len(db.dense) - 1
	}
	for ; pos >= 0 && max > 0; pos-- {
		h := db.dense[pos]
		rc := db.rec(h)
		if rc[0]&flagVisited == db.visited {
			continue
		}
		rc[0] = rc[0]&^flagVisited | db.visited
		max--
		if fn != nil {
			fn(h)
		}
	}
	return pos
}

// beforeChange lets a running snapshot keep the record's value at the cut.
func (db *DB) beforeChange(h handle) {
	if db.snapshot == nil {
		return
	}
	rc := db.rec(h)
	if rc[0]&flagVisited == db.visited {
		return
	}
	db.snapshot.Preserve(db, h)
	rc = db.rec(h)
	rc[0] = rc[0]&^flagVisited | db.visited
}

// ObjForWrite returns a collection record's object for a command that is about to change it.
// Every write to a collection goes through here, which is what lets a snapshot keep the value it
// had at the cut and the DB account for the collection's new size (accounting.go).
func (db *DB) ObjForWrite(r Ref) any {
	rc := db.rec(r)
	if rc[0]&flagPending != 0 {
		return db.findWrite(rc.key()).obj
	}
	if rc[0]&flagInline != 0 {
		// The snapshot, if one runs, copies the payload as it is now (Preserve): the write
		// view below is a copy, so nothing it shares can change under the snapshot's writer.
		db.beforeChange(r)
		rc = db.rec(r)
		obj := db.wviews.writable(rc.typ(), rc.value())
		rc[0] |= flagPending
		db.addWrite(rc.key(), obj, true)
		return obj
	}
	if db.snapshot != nil {
		db.beforeChange(r)
		db.snapshot.WriteObject(db, r)
	}
	obj := db.objects[db.rec(r).objID()]
	db.noteWrite(obj, sizeOf(obj))
	return obj
}

// StrForWrite returns a string record's value for a command that changes bytes in place
// (SETBIT, SETRANGE within the length, PFADD).
func (db *DB) StrForWrite(r Ref) []byte {
	db.beforeChange(r)
	return db.rec(r).value()
}

// ReplaceObj puts obj in place of a collection record's object (a snapshot keeps the original).
func (db *DB) ReplaceObj(r Ref, obj any) {
	id := db.rec(r).objID()
	db.replacePending(db.objects[id], obj)
	db.objects[id] = obj
}
