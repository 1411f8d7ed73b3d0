package keyspace

import "github.com/iocache/iocache/server/cluster"

// slotIndex lists a DB's keys by hash slot, for a server in cluster mode: CLUSTER
// COUNTKEYSINSLOT in O(1) and GETKEYSINSLOT (what a slot move walks) in O(keys returned), where
// a scan of the whole keyspace would cost O(keys) per call. Each slot is a doubly linked list
// through two arrays that parallel DB.dense (positions plus one; 0 ends a list), so the index
// costs 8 bytes a key and nothing the garbage collector scans: Redis 7.0 pays 16 bytes a key
// for its slot lists. Standalone servers have no index and pay nothing.
type slotIndex struct {
	head  [cluster.Slots]uint32
	count [cluster.Slots]uint32
	next  []uint32
	prev  []uint32
}

// IndexSlots starts indexing the DB's keys by hash slot (cluster mode). Keys already there are
// indexed now.
func (db *DB) IndexSlots() {
	if db.slots != nil {
		return
	}
	db.slots = &slotIndex{next: make([]uint32, 0, len(db.dense)), prev: make([]uint32, 0, len(db.dense))}
	for pos, h := range db.dense {
		db.slots.add(cluster.KeySlot(db.rec(h).key()), uint32(pos))
	}
}

// CountInSlot is how many keys of the DB hash to slot; 0 without IndexSlots.
func (db *DB) CountInSlot(slot int) int {
	if db.slots == nil {
		return 0
	}
	return int(db.slots.count[slot])
}

// KeysInSlot calls fn with up to max keys of slot (IndexSlots must have been called), stopping
// early when fn returns false. fn must not write to the DB.
func (db *DB) KeysInSlot(slot, max int, fn func(key []byte) bool) {
	if db.slots == nil {
		return
	}
	for p := db.slots.head[slot]; p != 0 && max > 0; p = db.slots.next[p-1] {
		if !fn(db.rec(db.dense[p-1]).key()) {
			return
		}
		max--
	}
}

// add links position pos (the last of dense) at the head of slot's list.
func (x *slotIndex) add(slot int, pos uint32) {
	first := x.head[slot]
	x.next = append(x.next, first)
	x.prev = append(x.prev, 0)
	if first != 0 {
		x.prev[first-1] = pos + 1
	}
	x.head[slot] = pos + 1
	x.count[slot]++
}

// remove unlinks position pos from slot's list.
func (x *slotIndex) remove(slot int, pos uint32) {
	p, n := x.prev[pos], x.next[pos]
	if p != 0 {
		x.next[p-1] = n
	} else {
		x.head[slot] = n
	}
	if n != 0 {
		x.prev[n-1] = p
	}
	x.count[slot]--
}

// move relinks the key at position from, of slot, at position to (dense's swap-remove).
func (x *slotIndex) move(slot int, from, to uint32) {
	p, n := x.prev[from], x.next[from]
	x.prev[to], x.next[to] = p, n
	if p != 0 {
		x.next[p-1] = to + 1
	} else {
		x.head[slot] = to + 1
	}
	if n != 0 {
		x.prev[n-1] = to + 1
	}
}

// truncate drops the links of positions n and above (dense shrank to n).
func (x *slotIndex) truncate(n uint32) {
	x.next, x.prev = x.next[:n], x.prev[:n]
}

// shrink gives back link capacity after mass deletion (DB.ShrinkLists).
func (x *slotIndex) shrink() {
	if c := cap(x.next); c > 1024 && len(x.next) < c/4 {
		x.next = append(make([]uint32, 0, c/2), x.next...)
		x.prev = append(make([]uint32, 0, c/2), x.prev...)
	}
}

// memory is what the index holds; 0 for none.
func (x *slotIndex) memory() int64 {
	if x == nil {
		return 0
	}
	return int64(len(x.head)+len(x.count))*4 + int64(cap(x.next)+cap(x.prev))*4
}
