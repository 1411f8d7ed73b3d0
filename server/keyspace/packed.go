package keyspace

import (
	"encoding/binary"
	"sync/atomic"
	"unsafe"
)

// Compact encodings. A small hash, sorted set or list node keeps its elements packed in one byte
// slice, each element its length as a uvarint followed by its bytes: one allocation the garbage
// collector does not scan, and 1 byte of overhead per element of up to 127 bytes (Redis's listpack
// spends 2). Commands scan a compact collection linearly, as Redis scans a listpack; the
// thresholds that bound that scan are Redis's own directives (Limits), and a collection that
// crosses one is converted to its large form at the point Redis converts it.
//
// Elements read from a packed slice are views into it: valid until the collection's next write.
// A caller that keeps one across a write copies it.

// Limits are the thresholds below which collections keep their compact encodings.
type Limits struct {
	HashMaxListpackEntries int // hash-max-listpack-entries
	HashMaxListpackValue   int // hash-max-listpack-value
	SetMaxIntsetEntries    int // set-max-intset-entries
	ZSetMaxListpackEntries int // zset-max-listpack-entries
	ZSetMaxListpackValue   int // zset-max-listpack-value
	// ListMaxListpackSize is list-max-listpack-size: > 0 elements per list node, -1 to -5 a
	// node size of 4, 8, 16, 32 or 64 KiB.
	ListMaxListpackSize int
}

// DefaultLimits are redis-server's built-in defaults.
func DefaultLimits() Limits {
	return Limits{
		HashMaxListpackEntries: 512, HashMaxListpackValue: 64,
		SetMaxIntsetEntries:    512,
		ZSetMaxListpackEntries: 128, ZSetMaxListpackValue: 64,
		ListMaxListpackSize: -2,
	}
}

// limits is read by every write to a collection (on the main thread, and by a replica's or a
// restore's loader) and replaced whole by CONFIG SET, so it is an atomic pointer to an immutable
// value.
var limits atomic.Pointer[Limits]

func init() {
	l := DefaultLimits()
	limits.Store(&l)
}

// SetLimits replaces the thresholds; collections already converted stay converted, as in Redis.
func SetLimits(l Limits) { limits.Store(&l) }

// CurrentLimits returns the thresholds in force.
func CurrentLimits() Limits { return *limits.Load() }

// appendElem appends s as a packed element.
func appendElem(b, s []byte) []byte {
	b = binary.AppendUvarint(b, uint64(len(s)))
	return append(b, s...)
}

// elemSize is the bytes s takes as a packed element.
func elemSize(n int) int {
	return uvarintLen(uint64(n)) + n
}

func uvarintLen(v uint64) int {
	n := 1
	for v >= 0x80 {
		v >>= 7
		n++
	}
	return n
}

// elemAt reads the element at off and returns it with the offset of the next one. The slice
// must hold a valid element there (the collection wrote it).
func elemAt(b []byte, off int) ([]byte, int) {
	n := int(b[off])
	off++
	if n >= 0x80 {
		v, w := binary.Uvarint(b[off-1:])
		n, off = int(v), off-1+w
	}
	return b[off : off+n : off+n], off + n
}

// stringView returns s's bytes without copying; the caller must not modify them.
func stringView(s string) []byte {
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

// packedCap is the capacity to give a packed slice that must hold n bytes: the exact size up to
// 64 bytes, then a quarter more, so a collection growing one element at a time reallocates
// O(log n) times without keeping Go's doubling as slack.
func packedCap(n int) int {
	if n <= 64 {
		return n
	}
	return n + n/4
}

// grow returns b with room for extra more bytes.
func growPacked(b []byte, extra int) []byte {
	if cap(b)-len(b) >= extra {
		return b
	}
	nb := make([]byte, len(b), packedCap(len(b)+extra))
	copy(nb, b)
	return nb
}

// shrinkPacked gives back a packed slice's spare capacity once it is mostly unused.
func shrinkPacked(b []byte) []byte {
	if cap(b) > 64 && len(b) < cap(b)/2 {
		return append(make([]byte, 0, packedCap(len(b))), b...)
	}
	return b
}
