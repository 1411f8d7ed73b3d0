package keyspace

import "github.com/iocache/iocache/server/cluster"

// slotIndex lists a DB's keys by hash slot, for a server in cluster mode: CLUSTER
// COUNTKEYSINSLOT in O(1) and GETKEYSINSLOT (what a slot move walks) in O(keys returned), where
// a scan of the whole keyspace would cost O(keys) per call. Each slot is a doubly linked list
// through links indexed like DB.dense (positions plus one; 0 ends a list), so the index costs 8
// bytes a key and nothing the garbage collector scans: Redis 7.0 pays 16 bytes a key for its
// slot lists. The links live in fixed pages, added as keys are and freed as they go: a growing
// keyspace never copies them, so no outgrown array waits for the collector (one contiguous
// slice, grown by append, cost 20–30 bytes a key of resident memory, not 8). Standalone servers
// have no index, and a DB of a cluster node that never holds a key allocates nothing but this
// struct (SELECT of another database is refused in cluster mode).
type slotIndex struct {
	slots *[cluster.Slots]slotList // allocated with the first key
	pages []*linkPage
	n     uint32 // positions linked: len(DB.dense)
}

// slotList is one slot's list: its first position plus one, and its length.
type slotList struct{ head, count uint32 }

const (
	linkPageBits = 12
	linkPageLen  = 1 << linkPageBits // 4,096 positions, 32 KiB a page
)

// linkPage holds the next and previous positions (plus one) of linkPageLen positions.
type linkPage [linkPageLen]struct{ next, prev uint32 }

func (x *slotIndex) link(pos uint32) *struct{ next, prev uint32 } {
	return &x.pages[pos>>linkPageBits][pos&(linkPageLen-1)]
}

// IndexSlots starts indexing the DB's keys by hash slot (cluster mode). Keys already there are
// indexed now.
func (db *DB) IndexSlots() {
	if db.slots != nil {
		return
	}
	db.slots = &slotIndex{}
	for pos, h := range db.dense {
		db.slots.add(cluster.KeySlot(db.rec(h).key()), uint32(pos))
	}
}

// CountInSlot is how many keys of the DB hash to slot; 0 without IndexSlots.
func (db *DB) CountInSlot(slot int) int {
	if db.slots == nil || db.slots.slots == nil {
		return 0
	}
	return int(db.slots.slots[slot].count)
}

// KeysInSlot calls fn with up to max keys of slot (IndexSlots must have been called), stopping
// early when fn returns false. fn must not write to the DB.
func (db *DB) KeysInSlot(slot, max int, fn func(key []byte) bool) {
	if db.slots == nil || db.slots.slots == nil {
		return
	}
	x := db.slots
	for p := x.slots[slot].head; p != 0 && max > 0; p = x.link(p - 1).next {
		if !fn(db.rec(db.dense[p-1]).key()) {
			return
		}
		max--
	}
}

// add links position pos (the last of dense) at the head of slot's list.
func (x *slotIndex) add(slot int, pos uint32) {
	if x.slots == nil {
		x.slots = new([cluster.Slots]slotList)
	}
	if int(pos>>linkPageBits) == len(x.pages) {
		x.pages = append(x.pages, new(linkPage))
	}
	x.n = pos + 1
	l := &x.slots[slot]
	*x.link(pos) = struct{ next, prev uint32 }{next: l.head}
	if l.head != 0 {
		x.link(l.head - 1).prev = pos + 1
	}
	l.head = pos + 1
	l.count++
}

// remove unlinks position pos from slot's list.
func (x *slotIndex) remove(slot int, pos uint32) {
	lk := x.link(pos)
	p, n := lk.prev, lk.next
	if p != 0 {
		x.link(p - 1).next = n
	} else {
		x.slots[slot].head = n
	}
	if n != 0 {
		x.link(n - 1).prev = p
	}
	x.slots[slot].count--
}

// move relinks the key at position from, of slot, at position to (dense's swap-remove).
func (x *slotIndex) move(slot int, from, to uint32) {
	lk := *x.link(from)
	*x.link(to) = lk
	if lk.prev != 0 {
		x.link(lk.prev - 1).next = to + 1
	} else {
		x.slots[slot].head = to + 1
	}
	if lk.next != 0 {
		x.link(lk.next - 1).prev = to + 1
	}
}

// truncate forgets the links of positions n and above (dense shrank to n), giving back the pages
// past the one n is on and one more (so that a key added and removed at a page's edge does not
// allocate and free a page each time).
func (x *slotIndex) truncate(n uint32) {
	x.n = n
	if keep := int(n>>linkPageBits) + 2; len(x.pages) > keep {
		clear(x.pages[keep:])
		x.pages = x.pages[:keep]
	}
}

// memory is what the index holds; 0 for none.
func (x *slotIndex) memory() int64 {
	if x == nil {
		return 0
	}
	n := int64(len(x.pages)) * linkPageLen * 8
	if x.slots != nil {
		n += cluster.Slots * 8
	}
	return n
}
