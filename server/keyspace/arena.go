package keyspace

// The arena stores records (key, value and metadata of string keys; key and metadata of
// collections) in large pointer-free byte pages, addressed by 64-bit handles. The garbage collector
// sees a few thousand page slices instead of millions of small objects, and a record costs its size
// class and nothing else: no object header, no pointer.
//
// Each page holds slots of one size class and keeps its own free list. A page whose last slot is
// freed goes back to the Go heap at once, so memory follows the data down after deletions and
// evictions instead of staying at its peak, and free space in a class never hides memory that
// eviction could not reclaim.

// handle addresses a record: page id in the high 32 bits, byte offset in the low 32. 0 is never a
// valid handle (page ids start at 1).
type handle uint64

func makeHandle(page, off uint32) handle { return handle(uint64(page)<<32 | uint64(off)) }
func (h handle) page() uint32            { return uint32(h >> 32) }
func (h handle) offset() uint32          { return uint32(h) }

// Size classes: 8-byte steps to 128, 16-byte steps to 256, then four classes per power of two up
// to maxClassSize. Records above maxClassSize get a page of their own.
const (
	maxClassSize = 64 << 10
	bigPageSize  = 64 << 10
	smallPage    = 4 << 10
	largeClass   = 255
)

var classSizes = func() []uint32 {
	var s []uint32
	for c := uint32(16); c <= 128; c += 8 {
		s = append(s, c)
	}
	for c := uint32(144); c <= 256; c += 16 {
		s = append(s, c)
	}
	for base := uint32(256); base < maxClassSize; base *= 2 {
		step := base / 4
		for c := base + step; c <= base*2; c += step {
			s = append(s, c)
		}
	}
	return s
}()

// classFor returns the smallest class that holds size bytes.
func classFor(size int) int {
	lo, hi := 0, len(classSizes)-1
	for lo < hi {
		mid := (lo + hi) / 2
		if int(classSizes[mid]) >= size {
			hi = mid
		} else {
			lo = mid + 1
		}
	}
	return lo
}

type pageMeta struct {
	class     uint8
	inPartial bool
	live      uint32   // allocated slots
	free      []uint32 // offsets of freed slots
}

type sizeClass struct {
	partial []uint32 // pages that may have free slots (checked when popped)
	curPage uint32   // page being carved from its end
	curOff  uint32
	curEnd  uint32
}

// arena is a slab allocator. It is used by one goroutine at a time (the main thread).
type arena struct {
	pages     [][]byte // indexed by page id; nil once freed
	meta      []pageMeta
	freePages []uint32 // ids of freed pages, for reuse
	classes   []sizeClass
	used      int64 // bytes in allocated slots (class sizes)
	reserved  int64 // bytes in pages
}

func newArena() *arena {
	return &arena{
		pages:   [][]byte{nil}, // page 0 is never used, so handle 0 means "none"
		meta:    []pageMeta{{}},
		classes: make([]sizeClass, len(classSizes)),
	}
}

// alloc returns a slot of at least size bytes and its first size bytes.
func (a *arena) alloc(size int) (handle, []byte) {
	if size > maxClassSize {
		page := a.newPage(make([]byte, size), largeClass)
		a.meta[page].live = 1
		a.used += int64(size)
		return makeHandle(page, 0), a.pages[page]
	}
	ci := classFor(size)
	cs := &a.classes[ci]
	slot := classSizes[ci]
	a.used += int64(slot)
	for len(cs.partial) > 0 {
		p := cs.partial[len(cs.partial)-1]
		m := &a.meta[p]
		if a.pages[p] == nil || m.class != uint8(ci) || len(m.free) == 0 {
			// Released, reused for another class, or emptied by earlier allocations.
			cs.partial = cs.partial[:len(cs.partial)-1]
			if a.pages[p] != nil && m.class == uint8(ci) {
				m.inPartial = false
			}
			continue
		}
		off := m.free[len(m.free)-1]
		m.free = m.free[:len(m.free)-1]
		m.live++
		return makeHandle(p, off), a.pages[p][off : off+uint32(size)]
	}
	if cs.curPage == 0 || cs.curOff+slot > cs.curEnd {
		pageSize := uint32(bigPageSize)
		if slot*4 > pageSize {
			pageSize = slot * 4
		}
		// Small classes start with small pages, so that a server with few keys stays small.
		if a.reserved < 16*bigPageSize && slot <= 512 {
			pageSize = smallPage
		}
		pageSize -= pageSize % slot
		cs.curPage = a.newPage(make([]byte, pageSize), uint8(ci))
		cs.curOff, cs.curEnd = 0, pageSize
	}
	h := makeHandle(cs.curPage, cs.curOff)
	cs.curOff += slot
	a.meta[cs.curPage].live++
	return h, a.pages[h.page()][h.offset() : h.offset()+uint32(size)]
}

// adoptLarge makes b, a record too large for any size class, a page of its own without copying it.
func (a *arena) adoptLarge(b []byte) handle {
	page := a.newPage(b, largeClass)
	a.meta[page].live = 1
	a.used += int64(len(b))
	return makeHandle(page, 0)
}

func (a *arena) newPage(b []byte, class uint8) uint32 {
	a.reserved += int64(len(b))
	m := pageMeta{class: class}
	if n := len(a.freePages); n > 0 {
		id := a.freePages[n-1]
		a.freePages = a.freePages[:n-1]
		a.pages[id], a.meta[id] = b, m
		return id
	}
	a.pages = append(a.pages, b)
	a.meta = append(a.meta, m)
	return uint32(len(a.pages) - 1)
}

func (a *arena) releasePage(p uint32) {
	a.reserved -= int64(len(a.pages[p]))
	a.pages[p] = nil
	a.meta[p] = pageMeta{}
	a.freePages = append(a.freePages, p)
}

// free returns a slot; a page left empty goes back to the Go heap.
func (a *arena) free(h handle) {
	p := h.page()
	m := &a.meta[p]
	if m.class == largeClass {
		a.used -= int64(len(a.pages[p]))
		a.releasePage(p)
		return
	}
	a.used -= int64(classSizes[m.class])
	m.live--
	cs := &a.classes[m.class]
	if m.live == 0 && p != cs.curPage {
		a.releasePage(p)
		return
	}
	m.free = append(m.free, h.offset())
	if !m.inPartial {
		m.inPartial = true
		cs.partial = append(cs.partial, p)
	}
}

// slotSize is the capacity of the slot at h.
func (a *arena) slotSize(h handle) int {
	p := h.page()
	if a.meta[p].class == largeClass {
		return len(a.pages[p])
	}
	return int(classSizes[a.meta[p].class])
}

// fragmentation is the memory the arena holds in free slots and page tails: reserved, but
// reusable, so it does not count towards maxmemory; RSS includes it.
func (a *arena) fragmentation() int64 { return a.reserved - a.used }

// metaBytes estimates the page table and free lists.
func (a *arena) metaBytes() int64 { return int64(cap(a.pages))*24 + int64(cap(a.meta))*48 }
