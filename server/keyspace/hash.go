package keyspace

import "encoding/binary"

// Hash is a field → value map. Small hashes are compact (encoding "listpack"): the pairs packed
// in one slice, in insertion order, after a 4-byte count; a hash that passes
// hash-max-listpack-entries, or is given a field or value longer than hash-max-listpack-value,
// becomes a table (encoding "hashtable") for good, as in Redis. Both orders are stable from one
// call to the next until the hash changes, so HKEYS and HVALS pair up.
type Hash struct {
	lp  []byte // compact form: count (uint32 LE), then field, value, field, value, ...
	big *table // large form; nil while compact
}

// NewHash returns an empty, compact hash.
func NewHash() *Hash { return &Hash{} }

const lpCountSize = 4

func lpCount(lp []byte) int {
	if len(lp) == 0 {
		return 0
	}
	return int(binary.LittleEndian.Uint32(lp))
}

func lpSetCount(lp []byte, n int) { binary.LittleEndian.PutUint32(lp, uint32(n)) }

// Compact reports whether the hash is in its compact encoding.
func (h *Hash) Compact() bool { return h.big == nil }

// Encoding is the name OBJECT ENCODING gives the hash's encoding.
func (h *Hash) Encoding() string {
	if h.big == nil {
		return "listpack"
	}
	return "hashtable"
}

// Len is the number of fields.
func (h *Hash) Len() int {
	if h.big != nil {
		return h.big.len()
	}
	return lpCount(h.lp)
}

// hashHeader is the bytes of the Hash itself and of its reference in the DB's object table.
const hashHeader = 32 + 16

// Bytes is the memory held, for accounting.
func (h *Hash) Bytes() int64 {
	if h.big != nil {
		return h.big.memory() + hashHeader
	}
	return int64(cap(h.lp)) + hashHeader
}

// PayloadBytes is the bytes of the fields and values themselves (with their length prefixes in
// the compact form), for bounding the replies that list them.
func (h *Hash) PayloadBytes() int64 {
	if h.big != nil {
		return h.big.pageCap
	}
	return int64(max(len(h.lp)-lpCountSize, 0))
}

// Pairs returns views of every field and value, in order, for a command that picks many by
// position: At is a scan in the compact form, and picking count fields with it would cost
// count times the hash.
func (h *Hash) Pairs() [][2][]byte {
	out := make([][2][]byte, 0, h.Len())
	h.Each(func(f, v []byte) bool { out = append(out, [2][]byte{f, v}); return true })
	return out
}

// find returns the offsets of field's name and of the pair after it, or -1.
func (h *Hash) find(field []byte) (at, next int) {
	lp := h.lp
	for off := lpCountSize; off < len(lp); {
		f, voff := elemAt(lp, off)
		_, nxt := elemAt(lp, voff)
		if string(f) == string(field) {
			return off, nxt
		}
		off = nxt
	}
	return -1, 0
}

// Get returns a field's value (a view, valid until the next write).
func (h *Hash) Get(field []byte) ([]byte, bool) {
	if h.big != nil {
		return h.big.get(field)
	}
	at, _ := h.find(field)
	if at < 0 {
		return nil, false
	}
	_, voff := elemAt(h.lp, at)
	v, _ := elemAt(h.lp, voff)
	return v, true
}

// ConvertForLengths converts a compact hash when any of args is longer than
// hash-max-listpack-value: HSET, HMSET and HSETNX check their arguments before writing, so a long
// field or value converts the hash even when the write then changes nothing (HSETNX of an
// existing field), as Redis's hashTypeTryConversion does.
func (h *Hash) ConvertForLengths(args [][]byte) {
	if h.big != nil {
		return
	}
	max := limits.Load().HashMaxListpackValue
	for _, a := range args {
		if len(a) > max {
			h.convert()
			return
		}
	}
}

// Reserve makes room in a compact hash for the fields and values of pairs (HSET's arguments),
// so a command that sets many fields allocates once (exactly, for a new hash).
func (h *Hash) Reserve(pairs [][]byte) {
	if h.big != nil {
		return
	}
	n := 0
	for _, a := range pairs {
		n += elemSize(len(a))
	}
	if len(h.lp) == 0 {
		// Exactly: most hashes are written once. A write view's buffer (inline.go) is reused.
		if cap(h.lp) < n+lpCountSize {
			h.lp = make([]byte, 0, n+lpCountSize)
		}
		h.lp = h.lp[:0]
		return
	}
	h.lp = growPacked(h.lp, n)
}

// Set stores a copy of value under field and reports whether the field is new.
func (h *Hash) Set(field, value []byte) bool {
	if h.big == nil {
		l := limits.Load()
		if len(field) > l.HashMaxListpackValue || len(value) > l.HashMaxListpackValue {
			h.convert()
		} else if at, next := h.find(field); at >= 0 {
			_, voff := elemAt(h.lp, at)
			h.lp = splice(h.lp, voff, next, nil, value)
			return false
		} else if lpCount(h.lp)+1 > l.HashMaxListpackEntries {
			h.convert()
		} else {
			if len(h.lp) == 0 {
				h.lp = growPacked(h.lp, lpCountSize+elemSize(len(field))+elemSize(len(value)))
				h.lp = h.lp[:lpCountSize]
			} else {
				h.lp = growPacked(h.lp, elemSize(len(field))+elemSize(len(value)))
			}
			h.lp = appendElem(appendElem(h.lp, field), value)
			lpSetCount(h.lp, lpCount(h.lp)+1)
			return true
		}
	}
	return h.big.set(field, value)
}

// splice replaces lp[from:to] with the packed elements a (when not nil) and b.
func splice(lp []byte, from, to int, a, b []byte) []byte {
	size := elemSize(len(b))
	if a != nil {
		size += elemSize(len(a))
	}
	tail := len(lp) - to
	newLen := from + size + tail
	if newLen > cap(lp) {
		nb := make([]byte, from, packedCap(newLen))
		copy(nb, lp[:from])
		if a != nil {
			nb = appendElem(nb, a)
		}
		nb = appendElem(nb, b)
		return append(nb, lp[to:]...)
	}
	old := len(lp)
	lp = lp[:max(newLen, old)]
	copy(lp[from+size:], lp[to:old])
	p := lp[:from]
	if a != nil {
		p = appendElem(p, a)
	}
	appendElem(p, b)
	return shrinkPacked(lp[:newLen])
}

// cut removes lp[from:to].
func cut(lp []byte, from, to int) []byte {
	n := copy(lp[from:], lp[to:])
	return shrinkPacked(lp[:from+n])
}

// Delete removes field and reports whether it existed.
func (h *Hash) Delete(field []byte) bool {
	if h.big != nil {
		return h.big.remove(field)
	}
	at, next := h.find(field)
	if at < 0 {
		return false
	}
	h.lp = cut(h.lp, at, next)
	lpSetCount(h.lp, lpCount(h.lp)-1)
	return true
}

// Each calls fn for every field, in the hash's stable order, until it returns false. The slices
// are views: fn must not keep them past a write to the hash.
func (h *Hash) Each(fn func(field, value []byte) bool) {
	if h.big != nil {
		h.big.each(fn)
		return
	}
	lp := h.lp
	for off := lpCountSize; off < len(lp); {
		f, voff := elemAt(lp, off)
		v, next := elemAt(lp, voff)
		if !fn(f, v) {
			return
		}
		off = next
	}
}

// At returns the field at position i (0 <= i < Len) of the stable order, so a random field can
// be picked without copying the hash: O(1) in the large form, a scan of the compact one.
func (h *Hash) At(i int) (field, value []byte) {
	if h.big != nil {
		return h.big.at(i)
	}
	h.Each(func(f, v []byte) bool {
		if i == 0 {
			field, value = f, v
			return false
		}
		i--
		return true
	})
	return field, value
}

// convert moves a compact hash to its large form.
func (h *Hash) convert() {
	t := newTable(lpCount(h.lp), true)
	h.Each(func(f, v []byte) bool { t.set(f, v); return true })
	h.big, h.lp = t, nil
}

// Release drops the contents.
func (h *Hash) Release() {
	h.big, h.lp = nil, nil
}
