package engine

import (
	"encoding/binary"
	"math"
	"math/bits"

	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/keyspace"
)

// HyperLogLog (PFADD, PFCOUNT, PFMERGE) in Redis's own string format, so values move between
// iocache and Redis with GET/SET and counts agree: a 16-byte header ("HYLL", encoding, cached
// cardinality) and 16384 six-bit registers, sparse (run-length opcodes ZERO, XZERO, VAL) while
// small, dense (12 KiB) past 3000 bytes or a register above 32, exactly as Redis promotes them.
// Elements are hashed with MurmurHash64A and seed 0xadc83b19, and the count uses Redis's
// estimator (Otmar Ertl's improved raw estimate), so PFCOUNT returns Redis's number.
//
// Sparse values are re-encoded whole after each change (at most 3000 bytes): simpler than Redis's
// in-place opcode splitting, with the same opcodes for the same registers in all but rare
// histories, where adjacent runs may be grouped differently; the count never differs.

const (
	hllP            = 14
	hllQ            = 64 - hllP
	hllRegisters    = 1 << hllP
	hllBits         = 6
	hllRegisterMax  = 1<<hllBits - 1
	hllHdrSize      = 16
	hllDenseSize    = hllHdrSize + (hllRegisters*hllBits+7)/8
	hllEncDense     = 0
	hllEncSparse    = 1
	hllSparseMaxVal = 32
	hllSparseMax    = 3000 // hll-sparse-max-bytes
	hllAlphaInf     = 0.721347520444481703680
	errHLLInvalid   = "WRONGTYPE Key is not a valid HyperLogLog string value."
	errHLLCorrupt   = "INVALIDOBJ Corrupted HLL object detected"
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

// hllPatLen is the register an element goes to and the length of its run of zeros plus one.
func hllPatLen(elem []byte) (int, uint8) {
	h := murmurHash64A(elem, 0xadc83b19)
	index := int(h & (hllRegisters - 1))
	h >>= hllP
	h |= 1 << hllQ
	return index, uint8(bits.TrailingZeros64(h) + 1)
}

// hll is a decoded HyperLogLog: its registers and the header it came with.
type hll struct {
	regs   [hllRegisters]uint8
	header [hllHdrSize]byte
}

// decodeHLL reads Redis's format; ok is false for anything else (the caller says which error).
func decodeHLL(b []byte) (*hll, bool) {
	if len(b) < hllHdrSize || string(b[:4]) != "HYLL" {
		return nil, false
	}
	h := &hll{}
	copy(h.header[:], b[:hllHdrSize])
	regs := b[hllHdrSize:]
	switch b[4] {
	case hllEncDense:
		if len(b) != hllDenseSize {
			return nil, false
		}
		for i := 0; i < hllRegisters; i++ {
			h.regs[i] = denseRegister(regs, i)
		}
		return h, true
	case hllEncSparse:
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
				if idx+n > hllRegisters {
					return nil, false
				}
				for j := 0; j < n; j++ {
					h.regs[idx+j] = v
				}
				idx += n
				p++
			}
			if idx > hllRegisters {
				return nil, false
			}
		}
		return h, idx == hllRegisters
	}
	return nil, false
}

func denseRegister(regs []byte, i int) uint8 {
	byteAt, fb := i*hllBits/8, uint(i*hllBits&7)
	b0 := uint(regs[byteAt])
	var b1 uint
	if byteAt+1 < len(regs) {
		b1 = uint(regs[byteAt+1])
	}
	return uint8((b0>>fb | b1<<(8-fb)) & hllRegisterMax)
}

func setDenseRegister(regs []byte, i int, v uint8) {
	byteAt, fb := i*hllBits/8, uint(i*hllBits&7)
	regs[byteAt] &^= byte(hllRegisterMax << fb)
	regs[byteAt] |= byte(uint(v) << fb)
	if byteAt+1 < len(regs) {
		regs[byteAt+1] &^= byte(hllRegisterMax >> (8 - fb))
		regs[byteAt+1] |= byte(uint(v) >> (8 - fb))
	}
}

// encode writes the HLL sparse when it can (and dense was not asked for), dense otherwise.
func (h *hll) encode(dense bool) []byte {
	if !dense {
		if b, ok := h.encodeSparse(); ok {
			return b
		}
	}
	out := make([]byte, hllDenseSize)
	copy(out, h.header[:])
	out[4] = hllEncDense
	for i, v := range h.regs {
		if v != 0 {
			setDenseRegister(out[hllHdrSize:], i, v)
		}
	}
	return out
}

func (h *hll) encodeSparse() ([]byte, bool) {
	out := make([]byte, hllHdrSize, hllHdrSize+64)
	copy(out, h.header[:])
	out[4] = hllEncSparse
	for i := 0; i < hllRegisters; {
		v := h.regs[i]
		run := 1
		for i+run < hllRegisters && h.regs[i+run] == v {
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
		if v > hllSparseMaxVal {
			return nil, false
		}
		for run > 0 {
			n := min(run, 4)
			out = append(out, 0x80|(v-1)<<2|byte(n-1))
			run -= n
		}
		if len(out) > hllHdrSize+hllSparseMax {
			return nil, false
		}
	}
	return out, len(out) <= hllHdrSize+hllSparseMax
}

func (h *hll) invalidateCache() { h.header[15] |= 0x80 }

// newHLL is an empty HyperLogLog as Redis creates one: sparse, cached count 0.
func newHLL() *hll {
	h := &hll{}
	copy(h.header[:], "HYLL")
	h.header[4] = hllEncSparse
	return h
}

// count is Redis's hllCount.
func (h *hll) count() uint64 {
	var histo [64]int
	for _, v := range h.regs {
		histo[v]++
	}
	m := float64(hllRegisters)
	z := m * hllTau((m-float64(histo[hllQ+1]))/m)
	for j := hllQ; j >= 1; j-- {
		z += float64(histo[j])
		z *= 0.5
	}
	z += m * hllSigma(float64(histo[0])/m)
	return uint64(math.Round(hllAlphaInf * m * m / z))
}

func hllSigma(x float64) float64 {
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

func hllTau(x float64) float64 {
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

// hllString looks key up and returns its value after Redis's isHLLObjectOrReply checks (a string
// with the HLL header, dense ones at their exact size); v is nil for a missing key and ok is
// false after an error reply.
func (s *Server) hllString(c *client, key []byte, write bool) (v []byte, ok bool) {
	db := s.dbs[c.db]
	lookup := s.lookupRead
	if write {
		lookup = s.lookupWrite
	}
	r, exists := lookup(c, key)
	if !exists {
		return nil, true
	}
	if db.Type(r) != keyspace.TypeString {
		s.wrongType(c)
		return nil, false
	}
	v = db.Str(r)
	if len(v) < hllHdrSize || string(v[:4]) != "HYLL" || v[4] > hllEncSparse || (v[4] == hllEncDense && len(v) != hllDenseSize) {
		s.addError(c, errHLLInvalid)
		return nil, false
	}
	return v, true
}

// decodeHLLOrReply decodes a value hllString accepted; only a corrupt sparse one can fail.
func (s *Server) decodeHLLOrReply(c *client, v []byte) (*hll, bool) {
	h, valid := decodeHLL(v)
	if !valid {
		s.addError(c, errHLLCorrupt)
	}
	return h, valid
}

// loadHLL reads key's HLL: nil for a missing key; ok is false after an error reply.
func (s *Server) loadHLL(c *client, key []byte, write bool) (h *hll, dense bool, ok bool) {
	v, ok := s.hllString(c, key, write)
	if !ok || v == nil {
		return nil, false, ok
	}
	dense = v[4] == hllEncDense
	h, ok = s.decodeHLLOrReply(c, v)
	return h, dense, ok
}

// storeHLL writes an HLL back, keeping the key's TTL.
func (s *Server) storeHLL(c *client, key []byte, b []byte) {
	db := s.dbs[c.db]
	if r, ok := db.Find(key); ok {
		_, v := db.ResizeString(r, len(b))
		copy(v, b)
		return
	}
	db.SetString(key, b, 0, false, s.initialClock())
}

func cmdPFAdd(s *Server, c *client, argv [][]byte) {
	v, ok := s.hllString(c, argv[1], true)
	if !ok {
		return
	}
	if v != nil && v[4] == hllEncDense {
		s.pfaddDense(c, argv, v)
		return
	}
	var h *hll
	updated := false
	if v == nil {
		h, updated = newHLL(), true
	} else if h, ok = s.decodeHLLOrReply(c, v); !ok {
		return
	}
	for _, e := range argv[2:] {
		i, n := hllPatLen(e)
		if n > h.regs[i] {
			h.regs[i] = n
			updated = true
		}
	}
	if updated {
		h.invalidateCache()
		s.storeHLL(c, argv[1], h.encode(false))
		s.modified(c.db, argv[1])
		s.notify(config.NotifyString, "pfadd", argv[1], c.db)
		c.w.Int(1)
		return
	}
	c.w.Int(0)
}

// pfaddDense updates a dense HLL's registers where they are stored, as Redis does, instead of
// decoding and re-encoding 12 KiB per command.
func (s *Server) pfaddDense(c *client, argv [][]byte, v []byte) {
	regs := v[hllHdrSize:]
	updated := false
	for _, e := range argv[2:] {
		i, n := hllPatLen(e)
		if n > denseRegister(regs, i) {
			setDenseRegister(regs, i, n)
			updated = true
		}
	}
	if !updated {
		c.w.Int(0)
		return
	}
	v[15] |= 0x80 // the cached count is stale
	s.modified(c.db, argv[1])
	s.notify(config.NotifyString, "pfadd", argv[1], c.db)
	c.w.Int(1)
}

func cmdPFCount(s *Server, c *client, argv [][]byte) {
	if len(argv) > 2 {
		merged := &hll{}
		for _, k := range argv[1:] {
			h, _, ok := s.loadHLL(c, k, false)
			if !ok {
				return
			}
			if h != nil {
				for i, v := range h.regs {
					merged.regs[i] = max(merged.regs[i], v)
				}
			}
		}
		c.w.Int(int64(merged.count()))
		return
	}
	v, ok := s.hllString(c, argv[1], false)
	if !ok {
		return
	}
	if v == nil {
		c.w.Int(0)
		return
	}
	if v[15]&0x80 == 0 { // a valid cached count: no need to look at the registers
		c.w.Int(int64(binary.LittleEndian.Uint64(v[8:16])))
		return
	}
	h, ok := s.decodeHLLOrReply(c, v)
	if !ok {
		return
	}
	// Redis stores the count in the header even though PFCOUNT reads: the value changes.
	n := h.count()
	binary.LittleEndian.PutUint64(v[8:16], n)
	s.modified(c.db, argv[1])
	c.w.Int(int64(n))
}

func cmdPFMerge(s *Server, c *client, argv [][]byte) {
	merged := &hll{}
	useDense := false
	for _, k := range argv[1:] {
		h, dense, ok := s.loadHLL(c, k, false)
		if !ok {
			return
		}
		if h == nil {
			continue
		}
		useDense = useDense || dense
		for i, v := range h.regs {
			merged.regs[i] = max(merged.regs[i], v)
		}
	}
	dest, destDense, _ := s.loadHLL(c, argv[1], true)
	if dest == nil {
		dest = newHLL()
	}
	for i, v := range merged.regs {
		dest.regs[i] = max(dest.regs[i], v)
	}
	dest.invalidateCache()
	s.storeHLL(c, argv[1], dest.encode(useDense || destDense))
	s.modified(c.db, argv[1])
	s.notify(config.NotifyString, "pfadd", argv[1], c.db)
	c.w.OK()
}
