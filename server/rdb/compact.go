package rdb

import (
	"encoding/binary"
	"math"
	"strconv"
)

// The other compact blobs an RDB may hold: intsets (written for small all-integer sets) and, on
// load only, ziplists and zipmaps from files of Redis before 7.0.

// buildIntset encodes sorted, distinct integers as an intset: encoding width (2, 4 or 8 bytes),
// count, then the values, all little endian.
func buildIntset(dst []byte, vals []int64) []byte {
	width := 2
	for _, v := range vals {
		switch {
		case v < math.MinInt32 || v > math.MaxInt32:
			width = 8
		case (v < math.MinInt16 || v > math.MaxInt16) && width < 4:
			width = 4
		}
	}
	b := binary.LittleEndian.AppendUint32(dst[:0], uint32(width))
	b = binary.LittleEndian.AppendUint32(b, uint32(len(vals)))
	for _, v := range vals {
		switch width {
		case 2:
			b = binary.LittleEndian.AppendUint16(b, uint16(v))
		case 4:
			b = binary.LittleEndian.AppendUint32(b, uint32(v))
		default:
			b = binary.LittleEndian.AppendUint64(b, uint64(v))
		}
	}
	return b
}

// parseIntset validates an intset (size, strictly ascending values) and calls fn for each value.
func parseIntset(b []byte, fn func(int64) error) error {
	if len(b) < 8 {
		return ErrFormat
	}
	width := int(binary.LittleEndian.Uint32(b))
	n := uint64(binary.LittleEndian.Uint32(b[4:]))
	if width != 2 && width != 4 && width != 8 || uint64(len(b)-8) != n*uint64(width) {
		return ErrFormat
	}
	var prev int64
	for i := 0; i < int(n); i++ {
		p := b[8+i*width:]
		var v int64
		switch width {
		case 2:
			v = int64(int16(binary.LittleEndian.Uint16(p)))
		case 4:
			v = int64(int32(binary.LittleEndian.Uint32(p)))
		default:
			v = int64(binary.LittleEndian.Uint64(p))
		}
		if i > 0 && v <= prev {
			return ErrFormat
		}
		prev = v
		if err := fn(v); err != nil {
			return err
		}
	}
	return nil
}

// parseZiplist validates a ziplist (ziplist.c: 10-byte header of total bytes, tail offset and
// count; entries of previous-length, encoding and data; end byte 0xFF) and calls fn with each
// entry as a string (integers formatted into a scratch buffer, valid during the call).
func parseZiplist(b []byte, fn func([]byte) error) error {
	if len(b) < 11 || int(binary.LittleEndian.Uint32(b)) != len(b) || b[len(b)-1] != 0xff {
		return ErrFormat
	}
	tail := int(binary.LittleEndian.Uint32(b[4:]))
	declared := int(binary.LittleEndian.Uint16(b[8:]))
	p, prevSize, last, n := 10, 0, 10, 0
	var num [20]byte
	for b[p] != 0xff {
		start := p
		// previous entry's length: one byte below 254, else 0xFE and 4 bytes
		if b[p] < 254 {
			if int(b[p]) != prevSize {
				return ErrFormat
			}
			p++
		} else {
			if b[p] != 254 || p+5 > len(b)-1 || int(binary.LittleEndian.Uint32(b[p+1:])) != prevSize {
				return ErrFormat
			}
			p += 5
		}
		if p >= len(b)-1 {
			return ErrFormat
		}
		var val []byte
		c := b[p]
		need := func(k int) bool { return p+k <= len(b)-1 }
		switch c >> 6 {
		case 0:
			l := int(c & 0x3f)
			if !need(1 + l) {
				return ErrFormat
			}
			val, p = b[p+1:p+1+l], p+1+l
		case 1:
			if !need(2) {
				return ErrFormat
			}
			l := int(c&0x3f)<<8 | int(b[p+1])
			if !need(2 + l) {
				return ErrFormat
			}
			val, p = b[p+2:p+2+l], p+2+l
		case 2:
			if c != 0x80 || !need(5) {
				return ErrFormat
			}
			l := uint64(binary.BigEndian.Uint32(b[p+1:]))
			if !need(5 + int(min(l, uint64(len(b))))) {
				return ErrFormat
			}
			val, p = b[p+5:p+5+int(l)], p+5+int(l)
		default:
			var v int64
			size := 0
			switch {
			case c == 0xc0:
				size = 2
			case c == 0xd0:
				size = 4
			case c == 0xe0:
				size = 8
			case c == 0xf0:
				size = 3
			case c == 0xfe:
				size = 1
			case c >= 0xf1 && c <= 0xfd:
				v = int64(c&0x0f) - 1
			default:
				return ErrFormat
			}
			if !need(1 + size) {
				return ErrFormat
			}
			d := b[p+1:]
			switch size {
			case 1:
				v = int64(int8(d[0]))
			case 2:
				v = int64(int16(binary.LittleEndian.Uint16(d)))
			case 3:
				v = int64(int32(uint32(d[0])<<8|uint32(d[1])<<16|uint32(d[2])<<24) >> 8)
			case 4:
				v = int64(int32(binary.LittleEndian.Uint32(d)))
			case 8:
				v = int64(binary.LittleEndian.Uint64(d))
			}
			val, p = strconv.AppendInt(num[:0], v, 10), p+1+size
		}
		last, prevSize = start, p-start
		n++
		if err := fn(val); err != nil {
			return err
		}
	}
	if p != len(b)-1 || (n > 0 && tail != last) || (n == 0 && tail != 10) || (declared != 65535 && declared != n) {
		return ErrFormat
	}
	return nil
}

// parseZipmap validates a zipmap (Redis 2.x small hashes: a count byte, then entries of key
// length, key, value length, free byte count, value and free bytes; end byte 0xFF) and calls fn
// for each field and value.
func parseZipmap(b []byte, fn func(field, value []byte) error) error {
	if len(b) < 2 || b[len(b)-1] != 0xff {
		return ErrFormat
	}
	p := 1
	readLen := func() (int, bool) {
		if p >= len(b)-1 {
			return 0, false
		}
		if b[p] < 254 {
			p++
			return int(b[p-1]), true
		}
		if b[p] != 254 || p+5 > len(b)-1 {
			return 0, false
		}
		l := binary.LittleEndian.Uint32(b[p+1:])
		p += 5
		return int(min(l, uint32(len(b)))), true
	}
	for p < len(b)-1 {
		kl, ok := readLen()
		if !ok || p+kl > len(b)-1 {
			return ErrFormat
		}
		k := b[p : p+kl]
		p += kl
		vl, ok := readLen()
		if !ok || p+1 > len(b)-1 {
			return ErrFormat
		}
		free := int(b[p])
		p++
		if p+vl+free > len(b)-1 {
			return ErrFormat
		}
		v := b[p : p+vl]
		p += vl + free
		if err := fn(k, v); err != nil {
			return err
		}
	}
	return nil
}
