package keyspace

// The arena stores records (key, value and metadata of string keys; key and metadata of
// collections) in large pointer-free byte pages, addressed by 64-bit handles. The garbage collector
// sees a few hundred page slices instead of millions of small objects, and a record costs its size
// class and nothing else: no object header, no pointer.

// handle addresses a record: page id in the high 32 bits, byte offset in the low 32. 0 is never a
// valid handle (page ids start at 1).
type handle uint64

func makeHandle(page, off uint32) handle { return handle(uint64(page)<<32 | uint64(off)) }
func (h handle) page() uint32            { return uint32(h >> 32) }
func (h handle) offset() uint32          { return uint32(h) }

// Size classes: 16-byte steps to 256, then four classes per power of two up to maxClassSize.
// Records above maxClassSize get a page of their own.
const (
	maxClassSize = 64 << 10
	minPageSize  = 64 << 10
	largeClass   = 255
)

var classSizes = func() []uint32 {
	var s []uint32
	for c := uint32(16); c <= 256; c += 16 {
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

// classIndex maps a size (in 16-byte units up to 256, then by search) to its class.
func classFor(size int) int {
	if size <= 256 {
		if size <= 0 {
			return 0
		}
		return (size - 1) / 16
	}
	lo, hi := 16, len(classSizes)-1
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

type sizeClass struct {
	free    []handle // freed slots, reused last-in first-out (warm in cache)
	curPage uint32
	curOff  uint32
	curEnd  uint32
}

// arena is a slab allocator. It is used by one goroutine at a time (the main thread).
type arena struct {
	pages     [][]byte // indexed by page id; nil once a large page is freed
	pageClass []uint8
	freePages []uint32 // ids of freed large pages, for reuse
	classes   []sizeClass
	used      int64 // bytes in allocated slots (class sizes)
	reserved  int64 // bytes in pages
}

func newArena() *arena {
	return &arena{
		pages:     [][]byte{nil}, // page 0 is never used, so handle 0 means "none"
		pageClass: []uint8{0},
		classes:   make([]sizeClass, len(classSizes)),
	}
}

// alloc returns a slot of at least size bytes and its bytes (exactly size long).
func (a *arena) alloc(size int) (handle, []byte) {
	if size > maxClassSize {
		page := a.newPage(make([]byte, size), largeClass)
		a.used += int64(size)
		return makeHandle(page, 0), a.pages[page]
	}
	ci := classFor(size)
	cs := &a.classes[ci]
	slot := classSizes[ci]
	a.used += int64(slot)
	if n := len(cs.free); n > 0 {
		h := cs.free[n-1]
		cs.free = cs.free[:n-1]
		return h, a.pages[h.page()][h.offset() : h.offset()+uint32(size)]
	}
	if cs.curPage == 0 || cs.curOff+slot > cs.curEnd {
		pageSize := uint32(minPageSize)
		if slot*4 > pageSize {
			pageSize = slot * 4
		}
		// Small classes start with small pages, so that a server with few keys stays small.
		if a.reserved < 16*minPageSize && slot <= 1024 {
			pageSize = 4 << 10
		}
		pageSize -= pageSize % slot
		cs.curPage = a.newPage(make([]byte, pageSize), uint8(ci))
		cs.curOff, cs.curEnd = 0, pageSize
	}
	h := makeHandle(cs.curPage, cs.curOff)
	cs.curOff += slot
	return h, a.pages[h.page()][h.offset() : h.offset()+uint32(size)]
}

func (a *arena) newPage(b []byte, class uint8) uint32 {
	a.reserved += int64(len(b))
	if n := len(a.freePages); n > 0 {
		id := a.freePages[n-1]
		a.freePages = a.freePages[:n-1]
		a.pages[id], a.pageClass[id] = b, class
		return id
	}
	a.pages = append(a.pages, b)
	a.pageClass = append(a.pageClass, class)
	return uint32(len(a.pages) - 1)
}

// free returns a slot. Large pages go back to the Go heap at once.
func (a *arena) free(h handle) {
	p := h.page()
	class := a.pageClass[p]
	if class == largeClass {
		n := int64(len(a.pages[p]))
		a.used -= n
		a.reserved -= n
		a.pages[p] = nil
		a.freePages = append(a.freePages, p)
		return
	}
	a.used -= int64(classSizes[class])
	a.classes[class].free = append(a.classes[class].free, h)
}

// slotSize is the capacity of the slot at h.
func (a *arena) slotSize(h handle) int {
	p := h.page()
	if a.pageClass[p] == largeClass {
		return len(a.pages[p])
	}
	return int(classSizes[a.pageClass[p]])
}

// bytes returns n bytes of the slot at h.
func (a *arena) bytes(h handle, n int) []byte {
	off := h.offset()
	return a.pages[h.page()][off : off+uint32(n)]
}

// overhead is the memory the arena holds beyond its live slots: free slots, page tails, free
// lists. It counts towards used_memory, since the process holds it.
func (a *arena) overhead() int64 {
	var lists int64
	for i := range a.classes {
		lists += int64(cap(a.classes[i].free)) * 8
	}
	return a.reserved - a.used + lists + int64(cap(a.pages))*24
}
