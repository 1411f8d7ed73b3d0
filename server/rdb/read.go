package rdb

import (
	"encoding/binary"
	"io"
	"math"
	"slices"
	"strconv"
)

// reader decodes from a stream or a byte slice. Lengths in the input are never trusted for
// allocation: a string is read in bounded chunks, so a corrupt length fails at the end of the
// input instead of reserving memory it claims. Bytes read are added to a running CRC.
type reader struct {
	src    io.Reader
	data   []byte // input not yet consumed, when decoding a byte slice
	chunk  []byte // read buffer for a stream
	pos    int    // next byte in chunk
	crc    uint64
	offset int64
	// scratch holds strings decoded for the current value; callers copy what they keep. It is
	// reset between values (see reset), so it grows to the largest value's size at most.
	scratch []byte
	lzfBuf  []byte
	// maxString, when positive, is the longest string accepted: longer ones are ErrStringTooLarge
	// before their bytes are read or decompressed.
	maxString uint64
}

const readChunk = 64 << 10

func newStreamReader(src io.Reader) *reader { return &reader{src: src} }
func newBytesReader(b []byte) *reader       { return &reader{data: b} }

// fill makes at least one unread byte available in chunk.
func (r *reader) fill() error {
	if r.data != nil || r.src == nil {
		return io.ErrUnexpectedEOF
	}
	r.crc = crc64Update(r.crc, r.chunk[:r.pos])
	if cap(r.chunk) < readChunk {
		r.chunk = make([]byte, readChunk)
	}
	n, err := r.src.Read(r.chunk[:readChunk])
	r.chunk, r.pos = r.chunk[:n], 0
	if n > 0 {
		return nil
	}
	if err == nil || err == io.EOF {
		err = io.ErrUnexpectedEOF
	}
	return err
}

// checksum is the CRC of everything read so far.
func (r *reader) checksum() uint64 {
	if r.src != nil {
		return crc64Update(r.crc, r.chunk[:r.pos])
	}
	return r.crc
}

func (r *reader) readByte() (byte, error) {
	if r.data != nil || r.src == nil {
		if len(r.data) == 0 {
			return 0, io.ErrUnexpectedEOF
		}
		b := r.data[0]
		r.data = r.data[1:]
		r.offset++
		return b, nil
	}
	if r.pos == len(r.chunk) {
		if err := r.fill(); err != nil {
			return 0, err
		}
	}
	b := r.chunk[r.pos]
	r.pos++
	r.offset++
	return b, nil
}

// read appends n bytes of input to dst.
func (r *reader) read(dst []byte, n uint64) ([]byte, error) {
	if r.data != nil || r.src == nil {
		if n > uint64(len(r.data)) {
			return dst, io.ErrUnexpectedEOF
		}
		dst = append(dst, r.data[:n]...)
		r.data = r.data[n:]
		r.offset += int64(n)
		return dst, nil
	}
	for n > 0 {
		if r.pos == len(r.chunk) {
			if err := r.fill(); err != nil {
				return dst, err
			}
		}
		k := min(n, uint64(len(r.chunk)-r.pos))
		dst = append(dst, r.chunk[r.pos:r.pos+int(k)]...)
		r.pos += int(k)
		r.offset += int64(k)
		n -= k
	}
	return dst, nil
}

// fixed reads n (at most 16) bytes into a small array.
func (r *reader) fixed(n int) ([16]byte, error) {
	var a [16]byte
	for i := 0; i < n; i++ {
		b, err := r.readByte()
		if err != nil {
			return a, err
		}
		a[i] = b
	}
	return a, nil
}

func (r *reader) millis() (int64, error) {
	a, err := r.fixed(8)
	return int64(binary.LittleEndian.Uint64(a[:8])), err
}

// lengthOrEncoding reads a length; encoded reports the special-encoding marker (11 in the top
// bits), in which case the value is the encoding type.
func (r *reader) lengthOrEncoding() (n uint64, encoded bool, err error) {
	b, err := r.readByte()
	if err != nil {
		return 0, false, err
	}
	switch b >> 6 {
	case 0:
		return uint64(b & 0x3f), false, nil
	case 1:
		b2, err := r.readByte()
		return uint64(b&0x3f)<<8 | uint64(b2), false, err
	case 3:
		return uint64(b & 0x3f), true, nil
	}
	switch b {
	case 0x80:
		a, err := r.fixed(4)
		return uint64(binary.BigEndian.Uint32(a[:4])), false, err
	case 0x81:
		a, err := r.fixed(8)
		return binary.BigEndian.Uint64(a[:8]), false, err
	}
	return 0, false, ErrFormat
}

func (r *reader) length() (uint64, error) {
	n, enc, err := r.lengthOrEncoding()
	if err == nil && enc {
		err = ErrFormat
	}
	return n, err
}

// count reads a length that counts elements; it must fit an int.
func (r *reader) count() (int, error) {
	n, err := r.length()
	if err == nil && n > math.MaxInt32 {
		err = ErrFormat
	}
	return int(n), err
}

// reset discards the scratch strings of the previous value.
func (r *reader) reset() { r.scratch = r.scratch[:0] }

// string reads a string in any of its encodings into scratch space (valid until reset).
func (r *reader) string() ([]byte, error) {
	n, enc, err := r.lengthOrEncoding()
	if err != nil {
		return nil, err
	}
	return r.stringOf(n, enc)
}

// stringOf is string after its length or encoding byte was read.
func (r *reader) stringOf(n uint64, enc bool) (b []byte, err error) {
	start := len(r.scratch)
	if !enc {
		if err := r.checkString(n); err != nil {
			return nil, err
		}
		r.scratch, err = r.read(r.scratch, n)
		return r.scratch[start:len(r.scratch):len(r.scratch)], err
	}
	switch n {
	case encInt8, encInt16, encInt32:
		size := 1 << n
		a, err := r.fixed(size)
		if err != nil {
			return nil, err
		}
		var v int64
		switch size {
		case 1:
			v = int64(int8(a[0]))
		case 2:
			v = int64(int16(binary.LittleEndian.Uint16(a[:2])))
		default:
			v = int64(int32(binary.LittleEndian.Uint32(a[:4])))
		}
		r.scratch = strconv.AppendInt(r.scratch, v, 10)
		return r.scratch[start:len(r.scratch):len(r.scratch)], nil
	case encLZF:
		ulen, err := r.lzfHeader()
		if err != nil {
			return nil, err
		}
		// Grown in place: appending make(ulen) held a second copy of the value while it ran.
		r.scratch = slices.Grow(r.scratch, int(ulen))[:start+int(ulen)]
		if !lzfDecompress(r.lzfBuf, r.scratch[start:]) {
			return nil, ErrFormat
		}
		return r.scratch[start:len(r.scratch):len(r.scratch)], nil
	}
	return nil, ErrFormat
}

// checkString refuses a string of n bytes past maxString, or past what is left of a payload
// held in memory, before anything is allocated for it.
func (r *reader) checkString(n uint64) error {
	if r.maxString > 0 && n > r.maxString {
		return ErrStringTooLarge
	}
	if (r.data != nil || r.src == nil) && n > uint64(len(r.data)) {
		return io.ErrUnexpectedEOF
	}
	return nil
}

// lzfHeader reads an LZF string's lengths and its compressed bytes (into lzfBuf), and returns
// the length it decompresses to, checked against what the compressed bytes can hold.
func (r *reader) lzfHeader() (uint64, error) {
	clen, err := r.length()
	if err != nil {
		return 0, err
	}
	ulen, err := r.length()
	if err != nil {
		return 0, err
	}
	if err := r.checkString(clen); err != nil {
		return 0, err
	}
	if r.maxString > 0 && ulen > r.maxString {
		return 0, ErrStringTooLarge
	}
	if r.lzfBuf, err = r.read(r.lzfBuf[:0], clen); err != nil {
		return 0, err
	}
	// A compressed run expands at most 264/2 times; a claimed length beyond that is corrupt
	// and must not be allocated.
	if ulen == 0 || ulen > uint64(len(r.lzfBuf))*lzfMaxMatch {
		return 0, ErrFormat
	}
	return ulen, nil
}

// headroomString reads a string into an allocation of its own with headroom free bytes before
// it, and returns the allocation: one copy of the value, which the keyspace can adopt as its
// record (keyspace.DB.AdoptString) instead of copying it from scratch space.
func (r *reader) headroomString(headroom int) ([]byte, error) {
	n, enc, err := r.lengthOrEncoding()
	if err != nil {
		return nil, err
	}
	switch {
	case !enc:
		if err := r.checkString(n); err != nil {
			return nil, err
		}
		return r.read(make([]byte, headroom, headroom+int(n)), n)
	case n == encLZF:
		ulen, err := r.lzfHeader()
		if err != nil {
			return nil, err
		}
		buf := make([]byte, headroom+int(ulen))
		if !lzfDecompress(r.lzfBuf, buf[headroom:]) {
			return nil, ErrFormat
		}
		return buf, nil
	}
	// An integer: a few bytes, read as any string.
	s, err := r.stringOf(n, enc)
	return append(make([]byte, headroom, headroom+len(s)), s...), err
}

// ownString reads a string into memory of its own.
func (r *reader) ownString() ([]byte, error) {
	s, err := r.string()
	if err != nil {
		return nil, err
	}
	return append([]byte(nil), s...), nil
}

// binaryDouble reads an 8-byte little-endian float64.
func (r *reader) binaryDouble() (float64, error) {
	a, err := r.fixed(8)
	return math.Float64frombits(binary.LittleEndian.Uint64(a[:8])), err
}

// asciiDouble reads an old-style score (RDB_TYPE_ZSET): a length byte (253 nan, 254 +inf,
// 255 -inf) and that many ASCII characters.
func (r *reader) asciiDouble() (float64, error) {
	n, err := r.readByte()
	if err != nil {
		return 0, err
	}
	switch n {
	case 253:
		return math.NaN(), nil
	case 254:
		return math.Inf(1), nil
	case 255:
		return math.Inf(-1), nil
	}
	a, err := r.read(nil, uint64(n))
	if err != nil {
		return 0, err
	}
	f, perr := strconv.ParseFloat(string(a), 64)
	if perr != nil {
		return 0, ErrFormat
	}
	return f, nil
}
