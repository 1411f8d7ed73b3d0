package rdb

import (
	"math"
	"strconv"

	"github.com/iocache/iocache/server/keyspace"
)

// decodeValue reads a value of RDB type t. Every encoding is validated completely: counts,
// blob structure, ordering, duplicates (which would break the keyspace's invariants), so that a
// corrupt or hostile payload is refused instead of loaded. A collection with no elements is
// ErrEmptyKey.
func decodeValue(r *reader, t byte) (Value, error) {
	r.reset()
	var v Value
	var err error
	switch t {
	case typeString:
		v.Type = keyspace.TypeString
		v.Str, err = r.ownString()
		return v, err
	case typeList, typeListZiplist, typeListQuicklist, typeListQuicklist2:
		v.Type = keyspace.TypeList
		v.Obj, err = decodeList(r, t)
	case typeSet, typeSetIntset:
		v.Type = keyspace.TypeSet
		v.Obj, err = decodeSet(r, t)
	case typeZSet, typeZSet2, typeZSetZiplist, typeZSetListpack:
		v.Type = keyspace.TypeZSet
		v.Obj, err = decodeZSet(r, t)
	case typeHash, typeHashZipmap, typeHashZiplist, typeHashListpack:
		v.Type = keyspace.TypeHash
		v.Obj, err = decodeHash(r, t)
	case typeStreamListpacks, typeStreamListpacks2:
		v.Type = keyspace.TypeStream
		var s *keyspace.Stream
		s, err = decodeStream(r, t)
		// A stream with no entries is a valid key (XADD then XDEL, or groups only).
		return Value{Type: keyspace.TypeStream, Obj: s}, err
	default:
		return v, ErrFormat
	}
	if err != nil {
		return v, err
	}
	if v.Obj.(interface{ Len() int }).Len() == 0 {
		return v, ErrEmptyKey
	}
	return v, nil
}

func decodeList(r *reader, t byte) (*keyspace.List, error) {
	l := keyspace.NewList()
	push := func(b []byte) error {
		if int64(len(b)) > keyspace.MaxListElem {
			return ErrListElemTooBig
		}
		l.PushBack(b)
		return nil
	}
	if t == typeListZiplist {
		blob, err := r.string()
		if err != nil {
			return nil, err
		}
		return l, parseZiplist(blob, push)
	}
	n, err := r.count()
	if err != nil {
		return nil, err
	}
	var num [20]byte
	for i := 0; i < n; i++ {
		r.reset()
		container := uint64(containerPacked)
		if t == typeListQuicklist2 {
			if container, err = r.length(); err != nil {
				return nil, err
			}
		}
		b, err := r.string()
		if err != nil {
			return nil, err
		}
		switch {
		case t == typeList:
			err = push(b)
		case t == typeListQuicklist:
			err = parseZiplist(b, push)
		case container == containerPlain:
			err = push(b)
		case container == containerPacked:
			_, err = parseListpack(b, func(e lpElement) error { return push(e.bytes(num[:0])) })
		default:
			err = ErrFormat
		}
		if err != nil {
			return nil, err
		}
	}
	return l, nil
}

func decodeSet(r *reader, t byte) (*keyspace.Set, error) {
	s := keyspace.NewSet()
	add := func(b []byte) error {
		if !s.Add(b) {
			return ErrFormat // duplicate member
		}
		return nil
	}
	if t == typeSetIntset {
		blob, err := r.string()
		if err != nil {
			return nil, err
		}
		var num [20]byte
		return s, parseIntset(blob, func(v int64) error { return add(strconv.AppendInt(num[:0], v, 10)) })
	}
	n, err := r.count()
	if err != nil {
		return nil, err
	}
	for i := 0; i < n; i++ {
		r.reset()
		b, err := r.string()
		if err != nil {
			return nil, err
		}
		if err := add(b); err != nil {
			return nil, err
		}
	}
	return s, nil
}

func decodeZSet(r *reader, t byte) (*keyspace.ZSet, error) {
	z := keyspace.NewZSet()
	add := func(m []byte, score float64) error {
		if math.IsNaN(score) || !z.Add(m, score) {
			return ErrFormat // NaN score or duplicate member
		}
		return nil
	}
	if t == typeZSetZiplist || t == typeZSetListpack {
		blob, err := r.string()
		if err != nil {
			return nil, err
		}
		return z, parsePairs(blob, t == typeZSetZiplist, func(m, score []byte) error {
			f, err := strconv.ParseFloat(string(score), 64)
			if err != nil {
				return ErrFormat
			}
			return add(m, f)
		})
	}
	n, err := r.count()
	if err != nil {
		return nil, err
	}
	for i := 0; i < n; i++ {
		r.reset()
		m, err := r.string()
		if err != nil {
			return nil, err
		}
		var score float64
		if t == typeZSet2 {
			score, err = r.binaryDouble()
		} else {
			score, err = r.asciiDouble()
		}
		if err != nil {
			return nil, err
		}
		if err := add(m, score); err != nil {
			return nil, err
		}
	}
	return z, nil
}

func decodeHash(r *reader, t byte) (*keyspace.Hash, error) {
	h := keyspace.NewHash()
	set := func(f, v []byte) error {
		if !h.Set(f, v) {
			return ErrFormat // duplicate field
		}
		return nil
	}
	switch t {
	case typeHashZipmap:
		blob, err := r.string()
		if err != nil {
			return nil, err
		}
		return h, parseZipmap(blob, set)
	case typeHashZiplist, typeHashListpack:
		blob, err := r.string()
		if err != nil {
			return nil, err
		}
		return h, parsePairs(blob, t == typeHashZiplist, set)
	}
	n, err := r.count()
	if err != nil {
		return nil, err
	}
	for i := 0; i < n; i++ {
		r.reset()
		f, err := r.string()
		if err != nil {
			return nil, err
		}
		v, err := r.string()
		if err != nil {
			return nil, err
		}
		if err := set(f, v); err != nil {
			return nil, err
		}
	}
	return h, nil
}

// parsePairs calls fn for each pair of elements of a ziplist or listpack; an odd count is an
// error.
func parsePairs(blob []byte, ziplist bool, fn func(a, b []byte) error) error {
	var first []byte
	var firstBuf, secondBuf [20]byte
	odd := false
	each := func(b []byte) error {
		if !odd {
			// Copy: a ziplist formats integers into one shared buffer.
			first = append(firstBuf[:0], b...)
			odd = true
			return nil
		}
		odd = false
		return fn(first, b)
	}
	var err error
	if ziplist {
		err = parseZiplist(blob, func(b []byte) error { return each(b) })
	} else {
		_, err = parseListpack(blob, func(e lpElement) error { return each(e.bytes(secondBuf[:0])) })
	}
	if err == nil && odd {
		err = ErrFormat
	}
	return err
}
