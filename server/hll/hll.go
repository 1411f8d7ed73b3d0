// Package hll is Redis's HyperLogLog in Redis's own string format, so that values move between
// iocache and Redis with GET/SET and counts agree: a 16-byte header ("HYLL", encoding, cached
// cardinality) and 16384 six-bit registers, sparse (run-length opcodes ZERO, XZERO, VAL) while
// small, dense (12 KiB) past 3000 bytes or a register above 32, exactly as Redis promotes them.
// Elements are hashed with MurmurHash64A and seed 0xadc83b19, and the count uses Redis's
// estimator (Otmar Ertl's improved raw estimate), so counts are Redis's numbers. It knows nothing
// of keys or commands (PFADD and kin are in package engine).
//
// Sparse values are re-encoded whole after each change (at most 3000 bytes): simpler than Redis's
// in-place opcode splitting, with the same opcodes for the same registers in all but rare
// histories, where adjacent runs may be grouped differently; the count never differs.
package hll

import (
	"encoding/binary"
	"math"
	"math/bits"
)

const (
	p              = 14
	q              = 64 - p
	registers      = 1 << p
	regBits        = 6
	registerMax    = 1<<regBits - 1
	HeaderSize     = 16
	DenseSize      = HeaderSize + (registers*regBits+7)/8
	EncodingDense  = 0
	EncodingSparse = 1
	sparseMaxVal   = 32
	sparseMax      = 3000 // hll-sparse-max-bytes
	alphaInf       = 0.721347520444481703680
)

// murmurHash64A is Redis's hash for HyperLogLog elements (little-endian word reads).
func murmurHash64A(key []byte, seed uint64) uint64 {
	const m = 0xc6a4a7935bd1e995
	const r = 47
	h := seed ^ (uint64(len(key)) * m)
	n := len(key) &^ 7
	for i := 0; i < n; i += 8 {
		k := binary.LittleEndian.Uint64(key[i:])
		k *= m
		k ^= k >> r
		k *= m
		h ^= k
		h *= m
	}
	tail := key[n:]
	switch len(tail) {
	case 7:
		h ^= uint64(tail[6]) << 48
		fallthrough
	case 6:
		h ^= uint64(tail[5]) << 40
		fallthrough
	case 5:
		h ^= uint64(tail[4]) << 32
		fallthrough
	case 4:
		h ^= uint64(tail[3]) << 24
		fallthrough
	case 3:
		h ^= uint64(tail[2]) << 16
		fallthrough
	case 2:
		h ^= uint64(tail[1]) << 8
		fallthrough
	case 1:
		h ^= uint64(tail[0])
		h *= m
	}
	h ^= h >> r
	h *= m
	h ^= h >> r
	return h
}

// patLen is the register an element goes to and the length of its run of zeros plus one.
func patLen(elem []byte) (int, uint8) {
	h := murmurHash64A(elem, 0xadc83b19)
	index := int(h & (registers - 1))
	h >>= p
	h |= 1 << q
	return index, uint8(bits.TrailingZeros64(h) + 1)
}

// Sketch is a decoded HyperLogLog: its registers and the header it came with.
type Sketch struct {
	regs   [registers]uint8
	header [HeaderSize]byte
}

// Decode reads Redis's format; ok is false for anything else (the caller says which error).
func Decode(b []byte) (*Sketch, bool) {
	if len(b) < HeaderSize || string(b[:4]) != "HYLL" {
		return nil, false
	}
	h := &Sketch{}
	copy(h.header[:], b[:HeaderSize])
	regs := b[HeaderSize:]
	switch b[4] {
	case EncodingDense:
		if len(b) != DenseSize {
			return nil, false
		}
		for i := 0; i < registers; i++ {
			h.regs[i] = denseRegister(regs, i)
		}
		return h, true
	case EncodingSparse:
		idx := 0
		for p := 0; p < len(regs); {
			op := regs[p]
			switch {
			case op&0xc0 == 0x00: // ZERO: 00xxxxxx
				idx += int(op&0x3f) + 1
				p++
			case op&0xc0 == 0x40: // XZERO: 01xxxxxx xxxxxxxx
				if p+1 >= len(regs) {
					return nil, false
				}
				idx += (int(op&0x3f)<<8 | int(regs[p+1])) + 1
				p += 2
			default: // VAL: 1vvvvvxx
				v, n := (op>>2)&0x1f+1, int(op&0x3)+1
				if idx+n > registers {
					return nil, false
				}
				for j := 0; j < n; j++ {
					h.regs[idx+j] = v
				}
				idx += n
				p++
			}
			if idx > registers {
				return nil, false
			}
		}
		return h, idx == registers
	}
	return nil, false
}

func denseRegister(regs []byte, i int) uint8 {
	byteAt, fb := i*regBits/8, uint(i*regBits&7)
	b0 := uint(regs[byteAt])
	var b1 uint
	if byteAt+1 < len(regs) {
		b1 = uint(regs[byteAt+1])
	}
	return uint8((b0>>fb | b1<<(8-fb)) & registerMax)
}

func setDenseRegister(regs []byte, i int, v uint8) {
	byteAt, fb := i*regBits/8, uint(i*regBits&7)
	regs[byteAt] &^= byte(registerMax << fb)
	regs[byteAt] |= byte(uint(v) << fb)
	if byteAt+1 < len(regs) {
		regs[byteAt+1] &^= byte(registerMax >> (8 - fb))
		regs[byteAt+1] |= byte(uint(v) >> (8 - fb))
	}
}

// Encode writes the HLL sparse when it can (and dense was not asked for), dense otherwise.
func (h *Sketch) Encode(dense bool) []byte {
	if !dense {
		if b, ok := h.encodeSparse(); ok {
			return b
		}
	}
	out := make([]byte, DenseSize)
	copy(out, h.header[:])
	out[4] = EncodingDense
	for i, v := range h.regs {
		if v != 0 {
			setDenseRegister(out[HeaderSize:], i, v)
		}
	}
	return out
}

func (h *Sketch) encodeSparse() ([]byte, bool) {
	out := make([]byte, HeaderSize, HeaderSize+64)
	copy(out, h.header[:])
	out[4] = EncodingSparse
	for i := 0; i < registers; {
		v := h.regs[i]
		run := 1
		for i+run < registers && h.regs[i+run] == v {
			run++
		}
		i += run
		if v == 0 {
			for run > 0 {
				if run > 64 {
					n := min(run, 16384)
					out = append(out, 0x40|byte((n-1)>>8), byte(n-1))
					run -= n
				} else {
					out = append(out, byte(run-1))
					run = 0
				}
			}
			continue
		}
		if v > sparseMaxVal {
			return nil, false
		}
		for run > 0 {
			n := min(run, 4)
			out = append(out, 0x80|(v-1)<<2|byte(n-1))
			run -= n
		}
		if len(out) > HeaderSize+sparseMax {
			return nil, false
		}
	}
	return out, len(out) <= HeaderSize+sparseMax
}

// InvalidateCache marks the cached count stale, as Redis does whenever a PFADD "updated" the
// value (a new key included).
func (h *Sketch) InvalidateCache() { h.header[15] |= 0x80 }

// New is an empty HyperLogLog as Redis creates one: sparse, cached count 0.
func New() *Sketch {
	h := &Sketch{}
	copy(h.header[:], "HYLL")
	h.header[4] = EncodingSparse
	return h
}

// Count is Redis's hllCount.
func (h *Sketch) Count() uint64 {
	var histo [64]int
	for _, v := range h.regs {
		histo[v]++
	}
	m := float64(registers)
	z := m * tau((m-float64(histo[q+1]))/m)
	for j := q; j >= 1; j-- {
		z += float64(histo[j])
		z *= 0.5
	}
	z += m * sigma(float64(histo[0])/m)
	return uint64(math.Round(alphaInf * m * m / z))
}

func sigma(x float64) float64 {
	if x == 1 {
		return math.Inf(1)
	}
	y, z := 1.0, x
	for {
		x *= x
		zPrime := z
		z += x * y
		y += y
		if zPrime == z {
			return z
		}
	}
}

func tau(x float64) float64 {
	if x == 0 || x == 1 {
		return 0
	}
	y, z := 1.0, 1-x
	for {
		x = math.Sqrt(x)
		zPrime := z
		y *= 0.5
		z -= math.Pow(1-x, 2) * y
		if zPrime == z {
			return z / 3
		}
	}
}

// Valid says whether v has the HyperLogLog header (dense ones at their exact size), as Redis's
// isHLLObjectOrReply checks before using a string as one.
func Valid(v []byte) bool {
	return len(v) >= HeaderSize && string(v[:4]) == "HYLL" && v[4] <= EncodingSparse && (v[4] != EncodingDense || len(v) == DenseSize)
}

// IsDense says whether a valid value is dense.
func IsDense(v []byte) bool { return v[4] == EncodingDense }

// Add counts an element; it reports whether a register changed.
func (h *Sketch) Add(elem []byte) bool {
	i, n := patLen(elem)
	if n > h.regs[i] {
		h.regs[i] = n
		h.InvalidateCache()
		return true
	}
	return false
}

// Merge takes the larger of each register from o.
func (h *Sketch) Merge(o *Sketch) {
	for i, v := range o.regs {
		h.regs[i] = max(h.regs[i], v)
	}
	h.InvalidateCache()
}

// AddDense counts an element in a dense value where it is stored, as Redis does, instead of
// decoding and re-encoding 12 KiB; it reports whether a register changed (the cached count is
// then marked stale).
func AddDense(v []byte, elem []byte) bool {
	i, n := patLen(elem)
	regs := v[HeaderSize:]
	if n <= denseRegister(regs, i) {
		return false
	}
	setDenseRegister(regs, i, n)
	v[15] |= 0x80
	return true
}

// CachedCount returns the count stored in a value's header, unless it is stale.
func CachedCount(v []byte) (uint64, bool) {
	if v[15]&0x80 != 0 {
		return 0, false
	}
	return binary.LittleEndian.Uint64(v[8:16]), true
}

// SetCachedCount stores a fresh count in a value's header, as Redis does on PFCOUNT.
func SetCachedCount(v []byte, n uint64) { binary.LittleEndian.PutUint64(v[8:16], n) }

// Registers is how many registers a sketch has.
const Registers = registers

// Register is register i's value.
func (h *Sketch) Register(i int) uint8 { return h.regs[i] }
