package keyspace

// Hash is a field → value map whose iteration order is stable: fields sit in a slice indexed by
// a map, so HGETALL, HKEYS and HVALS list fields in the same order from one call to the next (a
// Go map would shuffle them on every call, and an application zipping HKEYS with HVALS would
// pair the wrong values). Deleting moves the last field into the hole.
type Hash struct {
	fields []hashField
	index  map[string]int32
	bytes  int64
}

type hashField struct {
	name  string
	value []byte
}

// NewHash returns an empty hash.
func NewHash() *Hash { return &Hash{index: map[string]int32{}} }

// Len is the number of fields.
func (h *Hash) Len() int { return len(h.fields) }

// Bytes is the memory held, for accounting.
func (h *Hash) Bytes() int64 { return h.bytes }

// Get returns a field's value.
func (h *Hash) Get(field []byte) ([]byte, bool) {
	i, ok := h.index[string(field)]
	if !ok {
		return nil, false
	}
	return h.fields[i].value, true
}

// Set stores a copy of value under field and reports whether the field is new.
func (h *Hash) Set(field, value []byte) bool {
	if i, ok := h.index[string(field)]; ok {
		old := h.fields[i].value
		if cap(old) >= len(value) {
			h.fields[i].value = append(old[:0], value...)
		} else {
			h.fields[i].value = append([]byte(nil), value...)
		}
		h.bytes += int64(len(value) - len(old))
		return false
	}
	name := string(field)
	h.index[name] = int32(len(h.fields))
	h.fields = append(h.fields, hashField{name: name, value: append([]byte(nil), value...)})
	h.bytes += int64(len(field)+len(value)) + 56
	return true
}

// Delete removes field and reports whether it existed.
func (h *Hash) Delete(field []byte) bool {
	i, ok := h.index[string(field)]
	if !ok {
		return false
	}
	h.bytes -= int64(len(field)+len(h.fields[i].value)) + 56
	delete(h.index, string(field))
	last := len(h.fields) - 1
	if int(i) != last {
		h.fields[i] = h.fields[last]
		h.index[h.fields[i].name] = i
	}
	h.fields[last] = hashField{}
	h.fields = h.fields[:last]
	if cap(h.fields) > 64 && len(h.fields) < cap(h.fields)/4 {
		h.fields = append([]hashField(nil), h.fields...)
	}
	return true
}

// Each calls fn for every field, in the hash's stable order, until it returns false.
func (h *Hash) Each(fn func(field string, value []byte) bool) {
	for _, f := range h.fields {
		if !fn(f.name, f.value) {
			return
		}
	}
}

// At returns the field at position i (0 <= i < Len) of the stable order, so a random field
// can be picked without copying the hash.
func (h *Hash) At(i int) (string, []byte) { return h.fields[i].name, h.fields[i].value }

// Release drops the contents.
func (h *Hash) Release() { clear(h.index); h.fields = nil }
