package keyspace

// Hash is a field → value map.
type Hash struct {
	m     map[string][]byte
	bytes int64
}

// NewHash returns an empty hash.
func NewHash() *Hash { return &Hash{m: map[string][]byte{}} }

// Len is the number of fields.
func (h *Hash) Len() int { return len(h.m) }

// Bytes is the memory held, for accounting.
func (h *Hash) Bytes() int64 { return h.bytes }

// Get returns a field's value.
func (h *Hash) Get(field []byte) ([]byte, bool) {
	v, ok := h.m[string(field)]
	return v, ok
}

// Set stores a copy of value under field and reports whether the field is new.
func (h *Hash) Set(field, value []byte) bool {
	if old, ok := h.m[string(field)]; ok {
		if cap(old) >= len(value) {
			h.m[string(field)] = append(old[:0], value...)
		} else {
			h.m[string(field)] = append([]byte(nil), value...)
		}
		h.bytes += int64(len(value) - len(old))
		return false
	}
	h.m[string(field)] = append([]byte(nil), value...)
	h.bytes += int64(len(field)+len(value)) + 48
	return true
}

// Delete removes field and reports whether it existed.
func (h *Hash) Delete(field []byte) bool {
	old, ok := h.m[string(field)]
	if ok {
		delete(h.m, string(field))
		h.bytes -= int64(len(field)+len(old)) + 48
	}
	return ok
}

// Each calls fn for every field until it returns false.
func (h *Hash) Each(fn func(field string, value []byte) bool) {
	for f, v := range h.m {
		if !fn(f, v) {
			return
		}
	}
}

// Release drops the contents.
func (h *Hash) Release() { clear(h.m) }
