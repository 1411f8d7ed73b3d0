package rdb

import (
	"encoding/binary"
	"math"
	"strconv"
)

// Listpack (Redis's listpack.c): a 6-byte header (total bytes, element count, both little
// endian; a count of 65535 means "count them"), the elements, and an end byte 0xFF. Each element
// is an encoding byte with its data, then a back-length (the size of encoding and data, in 7-bit
// groups read from the right) so the list can be walked backwards. Strings that are canonical
// decimal integers are stored as integers of 7, 13, 16, 24, 32 or 64 bits.

const (
	lpHeaderSize = 6
	lpEnd        = 0xff
	lpUnknownLen = 65535
)

// listpack builds one listpack.
type listpack struct {
	b []byte
	n int
}

func newListpack(dst []byte) listpack {
	return listpack{b: append(dst[:0], 0, 0, 0, 0, 0, 0)}
}

// appendString adds a string element, as an integer when it is a canonical one.
func (lp *listpack) appendString(s []byte) {
	if v, ok := parseInt(s); ok {
		lp.appendInt(v)
		return
	}
	start := len(lp.b)
	switch n := len(s); {
	case n < 64:
		lp.b = append(lp.b, 0x80|byte(n))
	case n < 4096:
		lp.b = append(lp.b, 0xe0|byte(n>>8), byte(n))
	default:
		lp.b = append(lp.b, 0xf0)
		lp.b = binary.LittleEndian.AppendUint32(lp.b, uint32(n))
	}
	lp.b = append(lp.b, s...)
	lp.backlen(len(lp.b) - start)
}

// appendInt adds an integer element in its smallest encoding.
func (lp *listpack) appendInt(v int64) {
	start := len(lp.b)
	switch {
	case v >= 0 && v <= 127:
		lp.b = append(lp.b, byte(v))
	case v >= -4096 && v <= 4095:
		u := uint64(v) & (1<<13 - 1)
		lp.b = append(lp.b, 0xc0|byte(u>>8), byte(u))
	case v >= math.MinInt16 && v <= math.MaxInt16:
		lp.b = append(lp.b, 0xf1)
		lp.b = binary.LittleEndian.AppendUint16(lp.b, uint16(v))
	case v >= -1<<23 && v < 1<<23:
		u := uint32(v)
		lp.b = append(lp.b, 0xf2, byte(u), byte(u>>8), byte(u>>16))
	case v >= math.MinInt32 && v <= math.MaxInt32:
		lp.b = append(lp.b, 0xf3)
		lp.b = binary.LittleEndian.AppendUint32(lp.b, uint32(v))
	default:
		lp.b = append(lp.b, 0xf4)
		lp.b = binary.LittleEndian.AppendUint64(lp.b, uint64(v))
	}
	lp.backlen(len(lp.b) - start)
}

// backlen appends an element's back-length: the most significant 7-bit group first, every
// group but the first with the high bit set, in as many bytes as lpBacklenSize says.
func (lp *listpack) backlen(l int) {
	n := lpBacklenSize(l)
	for i := n - 1; i >= 0; i-- {
		b := byte(l >> (7 * i) & 127)
		if i != n-1 {
			b |= 128
		}
		lp.b = append(lp.b, b)
	}
	lp.n++
}

// lpBacklenSize is the bytes of the back-length of an element of l bytes, with Redis's
// thresholds (lpEncodeBacklen).
func lpBacklenSize(l int) int {
	switch {
	case l <= 127:
		return 1
	case l < 16383:
		return 2
	case l < 2097151:
		return 3
	case l < 268435455:
		return 4
	}
	return 5
}

// finish writes the end byte and the header and returns the bytes.
func (lp *listpack) finish() []byte {
	lp.b = append(lp.b, lpEnd)
	binary.LittleEndian.PutUint32(lp.b, uint32(len(lp.b)))
	binary.LittleEndian.PutUint16(lp.b[4:], uint16(min(lp.n, lpUnknownLen)))
	return lp.b
}

// lpElement is one decoded element: a string (str != nil or isInt false) or an integer.
type lpElement struct {
	str   []byte
	ival  int64
	isInt bool
}

// bytes returns the element as a string, formatting an integer into buf.
func (e lpElement) bytes(buf []byte) []byte {
	if e.isInt {
		return strconv.AppendInt(buf[:0], e.ival, 10)
	}
	return e.str
}

// integer returns the element as an integer, parsing a string one.
func (e lpElement) integer() (int64, bool) {
	if e.isInt {
		return e.ival, true
	}
	return parseInt(e.str)
}

// parseListpack validates a whole listpack and calls fn for each element in order; returned
// strings point into b. It checks the header's total, every back-length, the end byte and, when
// the header has one, the element count.
func parseListpack(b []byte, fn func(lpElement) error) (int, error) {
	if len(b) < lpHeaderSize+1 || int(binary.LittleEndian.Uint32(b)) != len(b) || b[len(b)-1] != lpEnd {
		return 0, ErrFormat
	}
	declared := int(binary.LittleEndian.Uint16(b[4:]))
	p := lpHeaderSize
	n := 0
	for b[p] != lpEnd {
		e, size, ok := lpDecodeElement(b[p : len(b)-1])
		if !ok {
			return 0, ErrFormat
		}
		blSize, ok := lpCheckBacklen(b[p+size:len(b)-1], size)
		if !ok {
			return 0, ErrFormat
		}
		p += size + blSize
		n++
		if err := fn(e); err != nil {
			return 0, err
		}
	}
	if p != len(b)-1 || (declared != lpUnknownLen && declared != n) {
		return 0, ErrFormat
	}
	return n, nil
}

// lpDecodeElement decodes the element at the start of b and returns it with the size of its
// encoding and data.
func lpDecodeElement(b []byte) (lpElement, int, bool) {
	if len(b) == 0 {
		return lpElement{}, 0, false
	}
	c := b[0]
	str := func(hdr, n int) (lpElement, int, bool) {
		if n < 0 || hdr+n > len(b) {
			return lpElement{}, 0, false
		}
		return lpElement{str: b[hdr : hdr+n : hdr+n]}, hdr + n, true
	}
	integer := func(size int, v int64) (lpElement, int, bool) {
		return lpElement{ival: v, isInt: true}, size, true
	}
	switch {
	case c&0x80 == 0:
		return integer(1, int64(c&0x7f))
	case c&0xc0 == 0x80:
		return str(1, int(c&0x3f))
	case c&0xe0 == 0xc0:
		if len(b) < 2 {
			return lpElement{}, 0, false
		}
		u := uint64(c&0x1f)<<8 | uint64(b[1])
		v := int64(u)
		if u >= 1<<12 {
			v = int64(u) - 1<<13
		}
		return integer(2, v)
	case c&0xf0 == 0xe0:
		if len(b) < 2 {
			return lpElement{}, 0, false
		}
		return str(2, int(c&0x0f)<<8|int(b[1]))
	}
	switch c {
	case 0xf0:
		if len(b) < 5 {
			return lpElement{}, 0, false
		}
		n := binary.LittleEndian.Uint32(b[1:])
		if uint64(n) > uint64(len(b)) {
			return lpElement{}, 0, false
		}
		return str(5, int(n))
	case 0xf1:
		if len(b) < 3 {
			return lpElement{}, 0, false
		}
		return integer(3, int64(int16(binary.LittleEndian.Uint16(b[1:]))))
	case 0xf2:
		if len(b) < 4 {
			return lpElement{}, 0, false
		}
		u := uint32(b[1]) | uint32(b[2])<<8 | uint32(b[3])<<16
		return integer(4, int64(int32(u<<8)>>8))
	case 0xf3:
		if len(b) < 5 {
			return lpElement{}, 0, false
		}
		return integer(5, int64(int32(binary.LittleEndian.Uint32(b[1:]))))
	case 0xf4:
		if len(b) < 9 {
			return lpElement{}, 0, false
		}
		return integer(9, int64(binary.LittleEndian.Uint64(b[1:])))
	}
	return lpElement{}, 0, false
}

// lpCheckBacklen reports whether b starts with the back-length of an element of size bytes.
func lpCheckBacklen(b []byte, size int) (int, bool) {
	n := lpBacklenSize(size)
	if len(b) < n {
		return 0, false
	}
	v := 0
	for i := 0; i < n; i++ {
		if (b[i]&128 != 0) != (i != 0) {
			return 0, false
		}
		v = v<<7 | int(b[i]&127)
	}
	return n, v == size
}
