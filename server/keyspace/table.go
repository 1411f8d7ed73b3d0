package keyspace

import "hash/maphash"

// table is the large form of hashes and sets (encoding "hashtable"): entries packed in pages,
// found through a map from their 32-bit hash to their position. Per element it costs the
// entry's bytes with their length prefixes, 4 bytes of position, and a slot of a Go map of two
// uint32s (about 12 bytes); a Go map of strings spends a string header, a separate allocation
// for each key and value, and a wider slot.
//
// Positions are dense (0..Len-1) and stable except that a removal moves the last entry into the
// hole, as DB.dense does: picking at random is O(1), and a scan from the end returns every entry
// present for its whole length (SSCAN, HSCAN). An entry is its key's length as a uvarint, the
// key, and, in a hash, the value's length and the value. Pages are tablePage bytes; an entry
// larger than tableLarge gets a page of its own; the first page starts small and doubles. A replaced or removed entry's bytes stay dead in
// its page until the page is mostly dead, when the live entries move to the current page and
// the page is freed: memory follows the data down without copying the whole table.
type table struct {
	pages   [][]byte
	dead    []uint32 // dead bytes per page
	free    []uint32 // ids of freed pages
	cur     uint32   // the page new entries go to, when haveCur
	haveCur bool
	offs    []uint32 // position → entry: page id << tableOffBits | offset
	index   map[uint32]uint32
	collide map[string]uint32 // keys whose 32-bit hash another key holds in index
	values  bool
	pageCap int64 // bytes of the pages, for accounting
}

const (
	tableOffBits = 15
	tablePage    = 1 << tableOffBits // 32 KiB
	tableLarge   = 4 << 10
	// tableFirstPage is a new table's first page: small tables are the common ones.
	tableFirstPage = 128
)

var tableSeed = maphash.MakeSeed()

// tableHashMask is all ones; tests narrow it to make keys collide.
var tableHashMask = ^uint32(0)

func tableHash(k []byte) uint32 { return uint32(maphash.Bytes(tableSeed, k)) & tableHashMask }

func newTable(n int, values bool) *table {
	return &table{index: make(map[uint32]uint32, n), offs: make([]uint32, 0, n), values: values}
}

func (t *table) len() int { return len(t.offs) }

// memory is the bytes the table holds, for accounting: its pages, positions and map slots.
func (t *table) memory() int64 {
	return t.pageCap + int64(cap(t.offs))*4 + int64(len(t.index))*14 + int64(len(t.collide))*40 + int64(cap(t.pages))*28
}

// entry returns the key and value of the entry at ref, and its size.
func (t *table) entry(ref uint32) (k, v []byte, size int) {
	pg := t.pages[ref>>tableOffBits]
	off := int(ref & (tablePage - 1))
	k, next := elemAt(pg, off)
	if t.values {
		v, next = elemAt(pg, next)
	}
	return k, v, next - off
}

// find returns key's position.
func (t *table) find(k []byte) (uint32, bool) {
	if p, ok := t.index[tableHash(k)]; ok {
		if ek, _, _ := t.entry(t.offs[p]); string(ek) == string(k) {
			return p, true
		}
	}
	if len(t.collide) != 0 {
		p, ok := t.collide[string(k)]
		return p, ok
	}
	return 0, false
}

// store writes an entry and returns its reference.
func (t *table) store(k, v []byte) uint32 {
	size := elemSize(len(k))
	if t.values {
		size += elemSize(len(v))
	}
	if size > tableLarge {
		pg := make([]byte, 0, size) // a page of its own: the entry is at offset 0
		pg = appendElem(pg, k)
		if t.values {
			pg = appendElem(pg, v)
		}
		return t.newPage(pg) << tableOffBits
	}
	switch {
	case !t.haveCur:
		t.cur, t.haveCur = t.newPage(make([]byte, 0, min(tablePage, max(size, tableFirstPage)))), true
	case len(t.pages[t.cur])+size > cap(t.pages[t.cur]):
		pg := t.pages[t.cur]
		if len(pg)+size > tablePage {
			t.cur = t.newPage(make([]byte, 0, tablePage))
			break
		}
		// A small table's page grows to a page's size by doubling: a set of ten members
		// does not hold 32 KiB. Entries keep their offsets in the copy.
		grown := make([]byte, len(pg), min(tablePage, max(2*cap(pg), len(pg)+size)))
		copy(grown, pg)
		t.pageCap += int64(cap(grown) - cap(pg))
		t.pages[t.cur] = grown
	}
	pg := t.pages[t.cur]
	off := len(pg)
	pg = appendElem(pg, k)
	if t.values {
		pg = appendElem(pg, v)
	}
	t.pages[t.cur] = pg
	return t.cur<<tableOffBits | uint32(off)
}

// reserve makes the first page of an empty table hold n bytes of entries, so a table written
// by one command is not regrown.
func (t *table) reserve(n int) {
	if !t.haveCur && n <= tablePage {
		t.cur, t.haveCur = t.newPage(make([]byte, 0, max(n, 16))), true
	}
}

func (t *table) newPage(pg []byte) uint32 {
	t.pageCap += int64(cap(pg))
	if n := len(t.free); n > 0 {
		id := t.free[n-1]
		t.free = t.free[:n-1]
		t.pages[id], t.dead[id] = pg, 0
		return id
	}
	t.pages = append(t.pages, pg)
	t.dead = append(t.dead, 0)
	return uint32(len(t.pages) - 1)
}

// release marks the entry at ref dead, freeing or compacting its page when it is mostly dead.
func (t *table) release(ref uint32, size int) {
	id := ref >> tableOffBits
	t.dead[id] += uint32(size)
	pg := t.pages[id]
	switch {
	case int(t.dead[id]) == len(pg):
		t.freePage(id)
	case (id != t.cur || !t.haveCur) && int(t.dead[id]) > tablePage/2:
		t.compact(id)
	}
}

func (t *table) freePage(id uint32) {
	t.pageCap -= int64(cap(t.pages[id]))
	t.pages[id] = nil
	t.free = append(t.free, id)
	if id == t.cur {
		t.haveCur = false
	}
}

// compact moves the live entries of page id to the current page and frees it.
func (t *table) compact(id uint32) {
	pg := t.pages[id]
	for off := 0; off < len(pg); {
		ref := id<<tableOffBits | uint32(off)
		k, v, size := t.entry(ref)
		if p, ok := t.find(k); ok && t.offs[p] == ref {
			t.offs[p] = t.store(k, v)
		}
		off += size
	}
	t.freePage(id)
}

// get returns key's value (hashes).
func (t *table) get(k []byte) ([]byte, bool) {
	p, ok := t.find(k)
	if !ok {
		return nil, false
	}
	_, v, _ := t.entry(t.offs[p])
	return v, true
}

// set adds key (with value v in a hash) or replaces its value, and reports whether it is new.
func (t *table) set(k, v []byte) bool {
	if p, ok := t.find(k); ok {
		if !t.values {
			return false
		}
		ref := t.offs[p]
		_, old, size := t.entry(ref)
		if len(old) == len(v) {
			copy(old, v)
			return false
		}
		t.offs[p] = t.store(k, v)
		t.release(ref, size)
		return false
	}
	h := tableHash(k)
	pos := uint32(len(t.offs))
	t.offs = append(t.offs, t.store(k, v))
	if _, taken := t.index[h]; !taken {
		t.index[h] = pos
	} else {
		if t.collide == nil {
			t.collide = make(map[string]uint32)
		}
		t.collide[string(k)] = pos
	}
	return true
}

// remove deletes key and reports whether it was there.
func (t *table) remove(k []byte) bool {
	p, ok := t.find(k)
	if !ok {
		return false
	}
	t.removeAt(p)
	return true
}

// removeAt deletes the entry at position p, moving the last entry into its place.
func (t *table) removeAt(p uint32) {
	ref := t.offs[p]
	k, _, size := t.entry(ref)
	t.forget(k, p)
	last := uint32(len(t.offs) - 1)
	if p != last {
		lk, _, _ := t.entry(t.offs[last])
		t.move(lk, last, p)
		t.offs[p] = t.offs[last]
	}
	t.offs = t.offs[:last]
	if cap(t.offs) > 64 && len(t.offs) < cap(t.offs)/4 {
		t.offs = append([]uint32(nil), t.offs...)
	}
	t.release(ref, size) // last: k and v view the entry
}

// forget removes key's index entry, at position p.
func (t *table) forget(k []byte, p uint32) {
	h := tableHash(k)
	if q, ok := t.index[h]; ok && q == p {
		delete(t.index, h)
	} else {
		delete(t.collide, string(k))
	}
}

// move points key's index entry from position from to position to.
func (t *table) move(k []byte, from, to uint32) {
	h := tableHash(k)
	if q, ok := t.index[h]; ok && q == from {
		t.index[h] = to
	} else {
		t.collide[string(k)] = to
	}
}

// at returns the key and value at position p.
func (t *table) at(p int) (k, v []byte) {
	k, v, _ = t.entry(t.offs[p])
	return k, v
}

// each calls fn for every entry in position order until it returns false.
func (t *table) each(fn func(k, v []byte) bool) {
	for _, ref := range t.offs {
		k, v, _ := t.entry(ref)
		if !fn(k, v) {
			return
		}
	}
}

// clone returns a deep copy with the entries packed anew.
func (t *table) clone() *table {
	c := newTable(len(t.offs), t.values)
	t.each(func(k, v []byte) bool { c.set(k, v); return true })
	return c
}
