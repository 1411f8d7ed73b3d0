package keyspace

import (
	"encoding/binary"
	"math"
)

// intset is a sorted array of distinct integers, each in the width the largest of them needs
// (2, 4 or 8 bytes, little endian), after a byte that says the width: Redis's intset. Lookups are
// binary searches; an insert moves the tail, O(n), bounded by set-max-intset-entries.
type intset []byte

func widthFor(v int64) int {
	switch {
	case v >= math.MinInt16 && v <= math.MaxInt16:
		return 2
	case v >= math.MinInt32 && v <= math.MaxInt32:
		return 4
	}
	return 8
}

func (s intset) width() int {
	if len(s) == 0 {
		return 2
	}
	return int(s[0])
}

func (s intset) len() int {
	if len(s) == 0 {
		return 0
	}
	return (len(s) - 1) / int(s[0])
}

func (s intset) get(i int) int64 {
	w := int(s[0])
	p := s[1+i*w:]
	switch w {
	case 2:
		return int64(int16(binary.LittleEndian.Uint16(p)))
	case 4:
		return int64(int32(binary.LittleEndian.Uint32(p)))
	}
	return int64(binary.LittleEndian.Uint64(p))
}

func (s intset) put(i int, v int64) {
	w := int(s[0])
	p := s[1+i*w:]
	switch w {
	case 2:
		binary.LittleEndian.PutUint16(p, uint16(v))
	case 4:
		binary.LittleEndian.PutUint32(p, uint32(v))
	default:
		binary.LittleEndian.PutUint64(p, uint64(v))
	}
}

// search returns v's position, or where it would be inserted, and whether it is there.
func (s intset) search(v int64) (int, bool) {
	lo, hi := 0, s.len()
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if s.get(mid) < v {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo, lo < s.len() && s.get(lo) == v
}

// insert adds v (not present) at position i, widening the encoding when v needs it.
func (s intset) insert(i int, v int64) intset {
	n := s.len()
	w := max(s.width(), widthFor(v))
	if len(s) == 0 || w != s.width() {
		ns := make(intset, 1+(n+1)*w)
		ns[0] = byte(w)
		for j := 0; j < n; j++ {
			ns.put(j+boolInt(j >= i), s.get(j))
		}
		ns.put(i, v)
		return ns
	}
	if len(s)+w > cap(s) {
		ns := make(intset, len(s), packedCap(len(s)+w))
		copy(ns, s)
		s = ns
	}
	s = s[:len(s)+w]
	copy(s[1+(i+1)*w:], s[1+i*w:len(s)-w])
	s.put(i, v)
	return s
}

func (s intset) removeAt(i int) intset {
	w := int(s[0])
	copy(s[1+i*w:], s[1+(i+1)*w:])
	s = s[:len(s)-w]
	if s.len() == 0 {
		return nil
	}
	return intset(shrinkPacked(s))
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}
