package engine

import (
	"math"
	"math/bits"
	"strconv"

	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/keyspace"
	"github.com/iocache/iocache/server/resp"
)

// Bitmaps and bit fields on string values: SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP, BITFIELD and
// BITFIELD_RO, with Redis 7.0's argument order, ranges (BYTE and BIT) and overflow rules. Bit 0
// is the most significant bit of the first byte, as in Redis.

const errBitValue = "ERR bit is not an integer or out of range"

// bitOffsetArg reads a bit offset; with hashOK, "#N" means N times width (BITFIELD).
func (s *Server) bitOffsetArg(c *client, b []byte, hashOK bool, width int) (int64, bool) {
	mul := int64(1)
	if hashOK && len(b) > 0 && b[0] == '#' {
		b, mul = b[1:], int64(width)
	}
	v, ok := parseInt(b)
	if ok && mul > 1 {
		if v > math.MaxInt64/mul || v < 0 {
			ok = false
		}
		v *= mul
	}
	if !ok || v < 0 || v>>3 >= s.cfg.ProtoMaxBulkLen {
		s.addError(c, errBitOffset)
		return 0, false
	}
	return v, true
}

// stringForBits returns key's string for reading (nil when missing), after the type check.
func (s *Server) stringForBits(c *client, key []byte) ([]byte, bool, bool) {
	r, exists := s.lookupRead(c, key)
	if !exists {
		return nil, false, true
	}
	db := s.dbs[c.db]
	if db.Type(r) != keyspace.TypeString {
		s.wrongType(c)
		return nil, false, false
	}
	return db.Str(r), true, true
}

// growString returns key's string grown with zero bytes to at least n bytes, creating it;
// grown reports that it was created or lengthened.
func (s *Server) growString(c *client, key []byte, n int) (v []byte, grown, ok bool) {
	db := s.dbs[c.db]
	r, exists := s.lookupWrite(c, key)
	if exists && db.Type(r) != keyspace.TypeString {
		s.wrongType(c)
		return nil, false, false
	}
	if !exists {
		r, _ = db.SetString(key, nil, 0, false, s.initialClock())
	}
	old := len(db.Str(r))
	if n <= old {
		return db.StrForWrite(r), !exists, true
	}
	_, v = db.ResizeString(r, n)
	clear(v[old:])
	return v, true, true
}

func getBit(v []byte, off int64) int {
	if off>>3 >= int64(len(v)) {
		return 0
	}
	return int(v[off>>3]>>(7-uint(off&7))) & 1
}

func setBit(v []byte, off int64, on int) {
	mask := byte(1) << (7 - uint(off&7))
	if on != 0 {
		v[off>>3] |= mask
	} else {
		v[off>>3] &^= mask
	}
}

func cmdSetBit(s *Server, c *client, argv [][]byte) {
	off, ok := s.bitOffsetArg(c, argv[2], false, 0)
	if !ok {
		return
	}
	on, ok := parseInt(argv[3])
	if !ok || on&^1 != 0 {
		s.addError(c, errBitValue)
		return
	}
	v, grown, ok := s.growString(c, argv[1], int(off>>3)+1)
	if !ok {
		return
	}
	old := getBit(v, off)
	setBit(v, off, int(on))
	if grown || old != int(on) {
		// Like Redis, a SETBIT that changes nothing is not a write: no WATCH abort, no event.
		s.wrote(c.db, argv[1], nil, config.NotifyString, "setbit")
	}
	c.w.Int(int64(old))
}

func cmdGetBit(s *Server, c *client, argv [][]byte) {
	off, ok := s.bitOffsetArg(c, argv[2], false, 0)
	if !ok {
		return
	}
	v, _, ok := s.stringForBits(c, argv[1])
	if !ok {
		return
	}
	c.w.Int(int64(getBit(v, off)))
}

// bitRange turns BITCOUNT/BITPOS start and end (bytes, or bits with BIT; negative from the end)
// into an inclusive bit range; ok is false for an empty one.
func bitRange(start, end int64, isBit bool, strlen int) (lo, hi int64, ok bool) {
	total := int64(strlen)
	if isBit {
		total <<= 3
	}
	if start < 0 {
		start += total
	}
	if end < 0 {
		end += total
	}
	start, end = max(start, 0), max(end, 0)
	if end >= total {
		end = total - 1
	}
	if start > end {
		return 0, 0, false
	}
	if isBit {
		return start, end, true
	}
	return start << 3, end<<3 + 7, true
}

// rangeUnitArg reads an optional BYTE|BIT.
func (s *Server) rangeUnitArg(c *client, b []byte) (isBit, ok bool) {
	switch {
	case resp.EqualFold(b, "bit"):
		return true, true
	case resp.EqualFold(b, "byte"):
		return false, true
	}
	s.addError(c, errSyntax)
	return false, false
}

// cmdBitCount looks the key up before reading the range, as Redis 7.0 does: a missing key is 0
// whatever follows.
func cmdBitCount(s *Server, c *client, argv [][]byte) {
	v, exists, ok := s.stringForBits(c, argv[1])
	if !ok {
		return
	}
	if !exists {
		c.w.Int(0)
		return
	}
	lo, hi := int64(0), int64(len(v))*8-1
	switch len(argv) {
	case 2:
	case 4, 5:
		start, ok1 := s.intArg(c, argv[2])
		if !ok1 {
			return
		}
		end, ok2 := s.intArg(c, argv[3])
		if !ok2 {
			return
		}
		isBit := false
		if len(argv) == 5 {
			if isBit, ok = s.rangeUnitArg(c, argv[4]); !ok {
				return
			}
		}
		if v == nil {
			c.w.Int(0)
			return
		}
		if start < 0 && end < 0 && start > end {
			c.w.Int(0)
			return
		}
		var nonEmpty bool
		if lo, hi, nonEmpty = bitRange(start, end, isBit, len(v)); !nonEmpty {
			c.w.Int(0)
			return
		}
	default:
		s.addError(c, errSyntax)
		return
	}
	c.w.Int(countBits(v, lo, hi))
}

// countBits counts the set bits in the inclusive bit range [lo, hi].
func countBits(v []byte, lo, hi int64) int64 {
	if hi < lo {
		return 0
	}
	var n int64
	for i := lo >> 3; i <= hi>>3; i++ {
		b := v[i]
		if i == lo>>3 {
			b &= 0xff >> uint(lo&7)
		}
		if i == hi>>3 {
			b &= 0xff << uint(7-hi&7)
		}
		n += int64(bits.OnesCount8(b))
	}
	return n
}

func cmdBitPos(s *Server, c *client, argv [][]byte) {
	bit, ok := s.intArg(c, argv[2])
	if !ok {
		return
	}
	if bit != 0 && bit != 1 {
		s.addError(c, "ERR The bit argument must be 1 or 0.")
		return
	}
	v, exists, ok := s.stringForBits(c, argv[1])
	if !ok {
		return
	}
	if !exists {
		// A missing key is an endless run of zero bits.
		if bit == 1 {
			c.w.Int(-1)
		} else {
			c.w.Int(0)
		}
		return
	}
	var start, end int64
	endGiven, isBit := false, false
	switch len(argv) {
	case 3:
		start, end = 0, int64(len(v))-1
	case 4, 5, 6:
		if start, ok = s.intArg(c, argv[3]); !ok {
			return
		}
		if len(argv) == 6 {
			if isBit, ok = s.rangeUnitArg(c, argv[5]); !ok {
				return
			}
		}
		if len(argv) >= 5 {
			if end, ok = s.intArg(c, argv[4]); !ok {
				return
			}
			endGiven = true
		} else if isBit {
			end = int64(len(v))*8 + 7
		} else {
			end = int64(len(v)) - 1
		}
	default:
		s.addError(c, errSyntax)
		return
	}
	lo, hi, nonEmpty := bitRange(start, end, isBit, len(v))
	if len(argv) == 3 {
		lo, hi, nonEmpty = 0, int64(len(v))*8-1, len(v) > 0
	}
	if !nonEmpty {
		c.w.Int(-1)
		return
	}
	for i := lo; i <= hi; i++ {
		if int64(getBit(v, i)) == bit {
			c.w.Int(i)
			return
		}
	}
	if bit == 0 && !endGiven {
		// Looking for a clear bit with no end given: the string continues with zeros.
		c.w.Int(hi + 1)
		return
	}
	c.w.Int(-1)
}

func cmdBitOp(s *Server, c *client, argv [][]byte) {
	op := lowerASCII(string(argv[1]))
	switch op {
	case "and", "or", "xor", "not":
	default:
		s.addError(c, errSyntax)
		return
	}
	if op == "not" && len(argv) != 4 {
		s.addError(c, "ERR BITOP NOT must be called with a single source key.")
		return
	}
	db := s.dbs[c.db]
	srcs := make([][]byte, 0, len(argv)-3)
	maxLen := 0
	for _, k := range argv[3:] {
		var v []byte
		if r, ok := s.lookupRead(c, k); ok {
			if db.Type(r) != keyspace.TypeString {
				s.wrongType(c)
				return
			}
			v = db.Str(r)
		}
		srcs = append(srcs, v)
		maxLen = max(maxLen, len(v))
	}
	res := make([]byte, maxLen)
	at := func(v []byte, j int) byte {
		if j < len(v) {
			return v[j]
		}
		return 0
	}
	for j := range res {
		out := at(srcs[0], j)
		if op == "not" {
			out = ^out
		}
		for _, v := range srcs[1:] {
			switch op {
			case "and":
				out &= at(v, j)
			case "or":
				out |= at(v, j)
			case "xor":
				out ^= at(v, j)
			}
		}
		res[j] = out
	}
	dest := argv[2]
	if maxLen > 0 {
		db.SetString(dest, res, 0, false, s.initialClock())
		s.wrote(c.db, dest, nil, config.NotifyString, "set")
	} else if r, ok := s.lookupWrite(c, dest); ok {
		s.deleteKey(db, r)
		s.wrote(c.db, dest, nil, config.NotifyGeneric, "del")
	}
	c.w.Int(int64(maxLen))
}

// bitfieldOp is one GET, SET or INCRBY of BITFIELD.
type bitfieldOp struct {
	kind     byte // 'g', 's', 'i'
	signed   bool
	width    int
	offset   int64
	value    int64
	overflow byte // 'w' (WRAP), 's' (SAT), 'f' (FAIL)
}

func cmdBitField(s *Server, c *client, argv [][]byte)   { bitfieldGeneric(s, c, argv, false) }
func cmdBitFieldRO(s *Server, c *client, argv [][]byte) { bitfieldGeneric(s, c, argv, true) }

func (s *Server) bitfieldType(c *client, b []byte) (signed bool, width int, ok bool) {
	if len(b) >= 2 && (b[0] == 'i' || b[0] == 'I' || b[0] == 'u' || b[0] == 'U') {
		signed = b[0] == 'i' || b[0] == 'I'
		n, err := strconv.Atoi(string(b[1:]))
		if err == nil && n >= 1 && ((signed && n <= 64) || (!signed && n <= 63)) {
			return signed, n, true
		}
	}
	s.addError(c, "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not supported but i64 is.")
	return false, 0, false
}

func bitfieldGeneric(s *Server, c *client, argv [][]byte, readOnly bool) {
	var ops []bitfieldOp
	overflow := byte('w')
	writes := false
	var highest int64 = -1
	for i := 2; i < len(argv); i++ {
		rem := len(argv) - i - 1
		a := argv[i]
		switch {
		case resp.EqualFold(a, "get") && rem >= 2, resp.EqualFold(a, "set") && rem >= 3, resp.EqualFold(a, "incrby") && rem >= 3:
			op := bitfieldOp{kind: lowerASCII(string(a[:1]))[0], overflow: overflow}
			var ok bool
			if op.signed, op.width, ok = s.bitfieldType(c, argv[i+1]); !ok {
				return
			}
			if op.offset, ok = s.bitOffsetArg(c, argv[i+2], true, op.width); !ok {
				return
			}
			i += 2
			if op.kind != 'g' {
				if op.value, ok = s.intArg(c, argv[i+1]); !ok {
					return
				}
				i++
				writes = true
				highest = max(highest, op.offset+int64(op.width)-1)
			}
			ops = append(ops, op)
		case resp.EqualFold(a, "overflow") && rem >= 1:
			switch v := argv[i+1]; {
			case resp.EqualFold(v, "wrap"):
				overflow = 'w'
			case resp.EqualFold(v, "sat"):
				overflow = 's'
			case resp.EqualFold(v, "fail"):
				overflow = 'f'
			default:
				s.addError(c, "ERR Invalid OVERFLOW type specified")
				return
			}
			i++
		default:
			s.addError(c, errSyntax)
			return
		}
	}
	if readOnly && writes {
		s.addError(c, "ERR BITFIELD_RO only supports the GET subcommand")
		return
	}
	var v []byte
	grown := false
	if writes {
		var ok bool
		if v, grown, ok = s.growString(c, argv[1], int(highest>>3)+1); !ok {
			return
		}
	} else {
		var ok bool
		if v, _, ok = s.stringForBits(c, argv[1]); !ok {
			return
		}
	}
	c.w.Array(len(ops))
	changed := false
	for _, op := range ops {
		old := readBitfield(v, op.offset, op.width, op.signed)
		if op.kind == 'g' {
			c.w.Int(old)
			continue
		}
		var nv int64
		var over bool
		if op.kind == 's' {
			nv, over = fitBitfield(op.value, 0, op.width, op.signed, op.overflow)
		} else {
			nv, over = fitBitfield(old, op.value, op.width, op.signed, op.overflow)
		}
		if over && op.overflow == 'f' {
			c.w.Null()
			continue
		}
		writeBitfield(v, op.offset, op.width, nv)
		changed = changed || nv != old || grown
		if op.kind == 's' {
			c.w.Int(old)
		} else {
			c.w.Int(nv)
		}
	}
	if changed { // as in Redis: a write that changes no bit of an existing string is not announced
		s.wrote(c.db, argv[1], nil, config.NotifyString, "setbit")
	}
}

func readBitfield(v []byte, off int64, width int, signed bool) int64 {
	var u uint64
	for i := 0; i < width; i++ {
		u = u<<1 | uint64(getBit(v, off+int64(i)))
	}
	if signed && width < 64 && u&(1<<(width-1)) != 0 {
		u |= ^uint64(0) << width // sign-extend
	}
	return int64(u)
}

func writeBitfield(v []byte, off int64, width int, val int64) {
	u := uint64(val)
	for i := 0; i < width; i++ {
		setBit(v, off+int64(i), int((u>>(width-1-i))&1))
	}
}

// fitBitfield adds incr to value in a field of width bits and applies the overflow rule, as
// Redis's checkSignedBitfieldOverflow and checkUnsignedBitfieldOverflow do; over reports an
// overflow.
func fitBitfield(value, incr int64, width int, signed bool, rule byte) (int64, bool) {
	wrap := func() int64 {
		c := uint64(value) + uint64(incr)
		if width < 64 {
			mask := ^uint64(0) << width
			if signed && c&(1<<(width-1)) != 0 {
				c |= mask
			} else {
				c &^= mask
			}
		}
		return int64(c)
	}
	if signed {
		mx := int64(math.MaxInt64)
		if width < 64 {
			mx = 1<<(width-1) - 1
		}
		mn := -mx - 1
		maxIncr, minIncr := mx-value, mn-value
		switch {
		case value > mx || (width != 64 && incr > maxIncr) || (value >= 0 && incr > 0 && incr > maxIncr):
			if rule == 's' {
				return mx, true
			}
			return wrap(), true
		case value < mn || (width != 64 && incr < minIncr) || (value < 0 && incr < 0 && incr < minIncr):
			if rule == 's' {
				return mn, true
			}
			return wrap(), true
		}
		return value + incr, false
	}
	mx := uint64(1)<<width - 1
	uv := uint64(value)
	maxIncr := int64(mx - uv)
	minIncr := -int64(uv)
	switch {
	case uv > mx || (incr > 0 && incr > maxIncr):
		if rule == 's' {
			return int64(mx), true
		}
		return wrap(), true
	case incr < 0 && incr < minIncr:
		if rule == 's' {
			return 0, true
		}
		return wrap(), true
	}
	return value + incr, false
}

// bitmapCommands registers this file's commands (see table.go).
var bitmapCommands = []commandSpec{
	{name: "setbit", h: cmdSetBit},
	{name: "getbit", h: cmdGetBit},
	{name: "bitcount", h: cmdBitCount},
	{name: "bitpos", h: cmdBitPos},
	{name: "bitop", h: cmdBitOp},
	{name: "bitfield", h: cmdBitField},
	{name: "bitfield_ro", h: cmdBitFieldRO},
}
