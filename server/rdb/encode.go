package rdb

import (
	"math"

	"github.com/iocache/iocache/server/keyspace"
)

// Value is one key's value: a string, or a collection object of the keyspace.
type Value struct {
	Type keyspace.Type
	Str  []byte // TypeString
	// Buf, when set, is the allocation Str ends: free bytes, then Str (RestoreOptions.Headroom),
	// so that the keyspace can make it a record without copying the value.
	Buf []byte
	Obj any // *keyspace.List, *keyspace.Hash, *keyspace.Set, *keyspace.ZSet, *keyspace.Stream
}

// Options are the settings that shape what is written: compression and the thresholds (Redis's
// *-max-listpack-* directives) below which collections take their compact encodings.
type Options struct {
	Compression            bool // rdbcompression: LZF for strings over 20 bytes
	Checksum               bool // rdbchecksum: a CRC64 at the end of files (0 when off)
	ListMaxListpackSize    int  // list-max-listpack-size: >0 elements per node, <0 a size class
	HashMaxListpackEntries int
	HashMaxListpackValue   int
	SetMaxIntsetEntries    int
	ZSetMaxListpackEntries int
	ZSetMaxListpackValue   int
	StreamNodeMaxBytes     int
	StreamNodeMaxEntries   int
}

// DefaultOptions are redis-server's defaults.
func DefaultOptions() Options {
	return Options{
		Compression: true, Checksum: true,
		ListMaxListpackSize:    -2,
		HashMaxListpackEntries: 128, HashMaxListpackValue: 64,
		SetMaxIntsetEntries:    512,
		ZSetMaxListpackEntries: 128, ZSetMaxListpackValue: 64,
		StreamNodeMaxBytes: 4096, StreamNodeMaxEntries: 100,
	}
}

// valueEncoder writes values; it keeps scratch buffers between values.
type valueEncoder struct {
	w    writer
	opts Options
	lp   []byte
	ints []int64
	num  []byte
	// streamBody holds a stream node's entries while its master entry is not yet written.
	streamBody []byte
}

func newValueEncoder(o Options) *valueEncoder {
	return &valueEncoder{w: writer{compress: o.Compression}, opts: o}
}

// typeOf is the RDB type byte v will be written with.
func (e *valueEncoder) typeOf(v Value) byte {
	switch o := v.Obj.(type) {
	case *keyspace.List:
		return typeListQuicklist2
	case *keyspace.Hash:
		// Each collection is written in the encoding it has in memory, as Redis writes it, so
		// redis-server loads a compact one without converting it.
		if o.Compact() {
			return typeHashListpack
		}
		return typeHash
	case *keyspace.Set:
		if o.Encoding() == "intset" {
			return typeSetIntset
		}
		return typeSet
	case *keyspace.ZSet:
		if o.Encoding() == "listpack" {
			return typeZSetListpack
		}
		return typeZSet2
	case *keyspace.Stream:
		return typeStreamListpacks2
	}
	return typeString
}

// value writes v's type byte and its encoding.
func (e *valueEncoder) value(v Value) {
	t := e.typeOf(v)
	e.w.byte(t)
	e.body(t, v)
}

// body writes v's encoding for type t.
func (e *valueEncoder) body(t byte, v Value) {
	w := &e.w
	switch t {
	case typeString:
		w.string(v.Str)
	case typeListQuicklist2:
		e.list(v.Obj.(*keyspace.List))
	case typeHashListpack:
		lp := newListpack(e.lp)
		v.Obj.(*keyspace.Hash).Each(func(f, val []byte) bool {
			lp.appendString(f)
			lp.appendString(val)
			return true
		})
		e.lp = lp.finish()
		w.string(e.lp)
	case typeHash:
		h := v.Obj.(*keyspace.Hash)
		w.length(uint64(h.Len()))
		h.Each(func(f, val []byte) bool {
			w.string(f)
			w.string(val)
			return true
		})
	case typeSetIntset:
		vals, _ := v.Obj.(*keyspace.Set).AppendInts(e.ints[:0])
		e.ints = vals
		e.lp = buildIntset(e.lp, vals)
		w.string(e.lp)
	case typeSet:
		s := v.Obj.(*keyspace.Set)
		w.length(uint64(s.Len()))
		s.Each(func(m []byte) bool { w.string(m); return true })
	case typeZSetListpack:
		lp := newListpack(e.lp)
		v.Obj.(*keyspace.ZSet).Each(func(en keyspace.Entry) bool {
			lp.appendString(en.Member)
			e.num = formatScore(e.num[:0], en.Score)
			lp.appendString(e.num)
			return true
		})
		e.lp = lp.finish()
		w.string(e.lp)
	case typeZSet2:
		// Greatest first, as Redis writes them, so that loading inserts each at the head.
		z := v.Obj.(*keyspace.ZSet)
		w.length(uint64(z.Len()))
		z.RangeByRank(0, z.Len()-1, true, func(en keyspace.Entry) bool {
			w.string(en.Member)
			w.binaryDouble(en.Score)
			return true
		})
	case typeStreamListpacks2:
		e.stream(v.Obj.(*keyspace.Stream))
	}
}

// Quicklist node limits (quicklist.c): a negative list-max-listpack-size picks a byte limit, a
// positive one counts elements (within a safety limit of 8 KiB); elements of packedThreshold
// bytes or more get a plain node of their own.
var quicklistSizeLimits = [...]int{4096, 8192, 16384, 32768, 65536}

const (
	quicklistSafetyLimit   = 8192
	quicklistEntryOverhead = 8
	packedThreshold        = 1 << 30
)

// nodeFull reports whether a listpack node of size bytes and count elements takes no element of
// n more bytes.
func (e *valueEncoder) nodeFull(size, count, n int) bool {
	newSize := size + n + quicklistEntryOverhead
	fill := e.opts.ListMaxListpackSize
	if fill < 0 {
		return newSize > quicklistSizeLimits[min(-fill, len(quicklistSizeLimits))-1]
	}
	return newSize > quicklistSafetyLimit || count+1 > max(fill, 1)
}

// list writes a list as a quicklist of listpacks (RDB_TYPE_LIST_QUICKLIST_2): the node count,
// then each node's container type and blob. A first pass counts the nodes so the list is never
// copied.
func (e *valueEncoder) list(l *keyspace.List) {
	nodes := 0
	e.eachListNode(l, nil, func(bool) { nodes++ })
	e.w.length(uint64(nodes))
	lp := newListpack(e.lp)
	e.eachListNode(l, func(v []byte, plain bool) {
		if plain {
			e.w.length(containerPlain)
			e.w.string(v)
			return
		}
		lp.appendString(v)
	}, func(plain bool) {
		if plain {
			return
		}
		e.lp = lp.finish()
		e.w.length(containerPacked)
		e.w.string(e.lp)
		lp = newListpack(e.lp)
	})
}

// eachListNode splits the list into nodes as quicklist would when pushing every element at the
// tail: it calls elem (when not nil) with each element and end after each node's last.
func (e *valueEncoder) eachListNode(l *keyspace.List, elem func(v []byte, plain bool), end func(plain bool)) {
	count, size := 0, lpHeaderSize+1
	l.Each(func(v []byte) bool {
		n := len(v)
		if n >= packedThreshold {
			if count > 0 {
				end(false)
			}
			if elem != nil {
				elem(v, true)
			}
			end(true)
			count, size = 0, lpHeaderSize+1
			return true
		}
		if count > 0 && e.nodeFull(size, count, n) {
			end(false)
			count, size = 0, lpHeaderSize+1
		}
		if elem != nil {
			elem(v, false)
		}
		count++
		size += lpEntrySize(v)
		return true
	})
	if count > 0 {
		end(false)
	}
}

// lpEntrySize is the bytes an element takes in a listpack.
func lpEntrySize(s []byte) int {
	var n int
	if v, ok := parseInt(s); ok {
		switch {
		case v >= 0 && v <= 127:
			n = 1
		case v >= -4096 && v <= 4095:
			n = 2
		case v >= math.MinInt16 && v <= math.MaxInt16:
			n = 3
		case v >= -1<<23 && v < 1<<23:
			n = 4
		case v >= math.MinInt32 && v <= math.MaxInt32:
			n = 5
		default:
			n = 9
		}
	} else {
		switch l := len(s); {
		case l < 64:
			n = 1 + l
		case l < 4096:
			n = 2 + l
		default:
			n = 5 + l
		}
	}
	return n + lpBacklenSize(n)
}
