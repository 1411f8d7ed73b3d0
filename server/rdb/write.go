package rdb

import (
	"encoding/binary"
	"io"
	"math"
	"strconv"
)

// writer accumulates encoded bytes. With a destination it flushes whenever its buffer fills,
// keeping the file's running CRC; without one it only accumulates (DUMP payloads, and the values
// a snapshot serializes ahead of the main thread's writes).
type writer struct {
	buf      []byte
	dst      io.Writer
	crc      uint64
	written  int64
	err      error
	compress bool
	lzfBuf   []byte
	lzfTable *[1 << lzfHashLog]int32
}

const flushSize = 64 << 10

func (w *writer) maybeFlush() {
	if w.dst != nil && len(w.buf) >= flushSize {
		w.flush()
	}
}

func (w *writer) flush() {
	if w.dst == nil || len(w.buf) == 0 {
		return
	}
	w.crc = crc64Update(w.crc, w.buf)
	if w.err == nil {
		_, w.err = w.dst.Write(w.buf)
	}
	w.written += int64(len(w.buf))
	w.buf = w.buf[:0]
}

func (w *writer) byte(b byte)        { w.buf = append(w.buf, b) }
func (w *writer) raw(b []byte)       { w.buf = append(w.buf, b...) }
func (w *writer) rawString(s string) { w.buf = append(w.buf, s...) }

// length writes a length (rdbSaveLen): 6 bits, 14 bits, or a marker byte and 32 or 64 bits big
// endian.
func (w *writer) length(n uint64) {
	switch {
	case n < 1<<6:
		w.byte(byte(n))
	case n < 1<<14:
		w.buf = append(w.buf, byte(n>>8)|0x40, byte(n))
	case n <= math.MaxUint32:
		w.byte(0x80)
		w.buf = binary.BigEndian.AppendUint32(w.buf, uint32(n))
	default:
		w.byte(0x81)
		w.buf = binary.BigEndian.AppendUint64(w.buf, n)
	}
}

// millis writes a millisecond time: 8 bytes little endian.
func (w *writer) millis(ms int64) { w.buf = binary.LittleEndian.AppendUint64(w.buf, uint64(ms)) }

// Special string encodings (the 11 marker in the top bits of a length).
const (
	encInt8  = 0
	encInt16 = 1
	encInt32 = 2
	encLZF   = 3
)

// string writes a string as rdbSaveRawString does: short decimal integers in 32 bits take the
// integer encoding, strings over 20 bytes are LZF-compressed when compression is on and that
// saves at least 4 bytes, everything else is raw.
func (w *writer) string(s []byte) {
	if len(s) <= 11 {
		if v, ok := parseInt(s); ok && v >= math.MinInt32 && v <= math.MaxInt32 {
			w.integer(v)
			return
		}
	}
	if w.compress && len(s) > 20 && w.lzf(s) {
		return
	}
	w.length(uint64(len(s)))
	w.raw(s)
	w.maybeFlush()
}

// integer writes v, which fits 32 bits, in the smallest integer string encoding.
func (w *writer) integer(v int64) {
	switch {
	case v >= math.MinInt8 && v <= math.MaxInt8:
		w.buf = append(w.buf, 0xc0|encInt8, byte(v))
	case v >= math.MinInt16 && v <= math.MaxInt16:
		w.buf = append(w.buf, 0xc0|encInt16)
		w.buf = binary.LittleEndian.AppendUint16(w.buf, uint16(v))
	default:
		w.buf = append(w.buf, 0xc0|encInt32)
		w.buf = binary.LittleEndian.AppendUint32(w.buf, uint32(v))
	}
}

func (w *writer) lzf(s []byte) bool {
	if w.lzfTable == nil {
		w.lzfTable = new([1 << lzfHashLog]int32)
	}
	out := lzfCompress(w.lzfBuf, s, len(s)-4, w.lzfTable)
	if out == nil {
		return false
	}
	w.lzfBuf = out
	w.byte(0xc0 | encLZF)
	w.length(uint64(len(out)))
	w.length(uint64(len(s)))
	w.raw(out)
	w.maybeFlush()
	return true
}

// binaryDouble writes a float64 as 8 bytes little endian (RDB_TYPE_ZSET_2 scores).
func (w *writer) binaryDouble(f float64) {
	w.buf = binary.LittleEndian.AppendUint64(w.buf, math.Float64bits(f))
}

// parseInt parses s as Redis's string2ll does: an optional minus sign, no leading zeros, no
// plus sign, no spaces, within int64. Only strings that print back identically qualify, so an
// integer encoding never changes a value.
func parseInt(s []byte) (int64, bool) {
	if len(s) == 0 || len(s) > 20 {
		return 0, false
	}
	if len(s) == 1 && s[0] == '0' {
		return 0, true
	}
	neg := s[0] == '-'
	d := s
	if neg {
		d = s[1:]
	}
	if len(d) == 0 || d[0] < '1' || d[0] > '9' {
		return 0, false
	}
	var u uint64
	for _, c := range d {
		if c < '0' || c > '9' {
			return 0, false
		}
		if u > (math.MaxUint64-9)/10 {
			return 0, false
		}
		u = u*10 + uint64(c-'0')
	}
	if neg {
		if u > 1<<63 {
			return 0, false
		}
		return -int64(u), true
	}
	if u > math.MaxInt64 {
		return 0, false
	}
	return int64(u), true
}

// formatScore prints a sorted-set score as Redis 7.0's d2string does for listpack entries:
// integers in the exactly representable range as integers, everything else with 17 significant
// digits.
func formatScore(dst []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(dst, "nan"...)
	case math.IsInf(f, 1):
		return append(dst, "inf"...)
	case math.IsInf(f, -1):
		return append(dst, "-inf"...)
	case f == 0:
		if math.Signbit(f) {
			return append(dst, "-0"...)
		}
		return append(dst, '0')
	case f > -4503599627370495 && f < 4503599627370496 && f == math.Trunc(f):
		return strconv.AppendInt(dst, int64(f), 10)
	}
	return strconv.AppendFloat(dst, f, 'g', 17, 64)
}
