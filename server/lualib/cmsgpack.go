package lualib

import (
	"encoding/binary"
	"math"

	lua "github.com/yuin/gopher-lua"
)

// The cmsgpack library Redis's Lua carries (lua-cmsgpack 0.4): pack(...) writes each value in
// MessagePack's smallest form (integral numbers as integers, others as float32 when that is
// exact, tables without holes as arrays, others as maps, tables nested deeper than 16 as nil);
// unpack, unpack_one and unpack_limit read them back. A map's keys come out in the order the
// table yields them, which in gopher-lua is not always real Lua's.

const cmsgpackMaxNesting = 16

// OpenCMsgpack builds the cmsgpack table.
func OpenCMsgpack(L *lua.LState) *lua.LTable {
	t := L.NewTable()
	t.RawSetString("pack", L.NewFunction(func(L *lua.LState) int {
		n := L.GetTop()
		if n == 0 {
			L.RaiseError("bad argument #0 to 'pack' (MessagePack pack needs input.)")
		}
		var b []byte
		for i := 1; i <= n; i++ {
			b = msgpackEncode(b, L.Get(i), 0)
		}
		L.Push(lua.LString(b))
		return 1
	}))
	unpack := func(L *lua.LState, s string, offset, limit int, withOffset bool) int {
		if offset < 0 || offset > len(s) {
			L.RaiseError("bad argument #2 to 'unpack' (Start offset %d greater than input length %d.)", offset, len(s))
		}
		d := msgpackDecoder{L: L, s: s, pos: offset}
		var out []lua.LValue
		for d.pos < len(d.s) && (limit <= 0 || len(out) < limit) {
			out = append(out, d.value())
		}
		if withOffset {
			next := d.pos
			if next >= len(d.s) {
				next = -1
			}
			L.Push(lua.LNumber(next))
		}
		for _, v := range out {
			L.Push(v)
		}
		if withOffset {
			return len(out) + 1
		}
		return len(out)
	}
	t.RawSetString("unpack", L.NewFunction(func(L *lua.LState) int { return unpack(L, L.CheckString(1), 0, 0, false) }))
	t.RawSetString("unpack_one", L.NewFunction(func(L *lua.LState) int {
		return unpack(L, L.CheckString(1), L.OptInt(2, 0), 1, true)
	}))
	t.RawSetString("unpack_limit", L.NewFunction(func(L *lua.LState) int {
		return unpack(L, L.CheckString(1), L.OptInt(3, 0), L.CheckInt(2), true)
	}))
	return t
}

func msgpackEncode(b []byte, v lua.LValue, depth int) []byte {
	switch x := v.(type) {
	case lua.LBool:
		if x {
			return append(b, 0xc3)
		}
		return append(b, 0xc2)
	case lua.LNumber:
		f := float64(x)
		if !math.IsInf(f, 0) && f == math.Trunc(f) && f >= -9.223372036854775808e18 && f < 9.223372036854775808e18 {
			return msgpackInt(b, int64(f))
		}
		if float64(float32(f)) == f || math.IsNaN(f) {
			b = append(b, 0xca)
			return binary.BigEndian.AppendUint32(b, math.Float32bits(float32(f)))
		}
		b = append(b, 0xcb)
		return binary.BigEndian.AppendUint64(b, math.Float64bits(f))
	case lua.LString:
		n := len(x)
		switch {
		case n < 32:
			b = append(b, 0xa0|byte(n))
		case n <= 0xff:
			b = append(b, 0xd9, byte(n))
		case n <= 0xffff:
			b = binary.BigEndian.AppendUint16(append(b, 0xda), uint16(n))
		default:
			b = binary.BigEndian.AppendUint32(append(b, 0xdb), uint32(n))
		}
		return append(b, x...)
	case *lua.LTable:
		if depth >= cmsgpackMaxNesting {
			return append(b, 0xc0)
		}
		if n, ok := msgpackArrayLength(x); ok {
			b = msgpackHeader(b, n, 0x90, 0xdc, 0xdd)
			for i := 1; i <= n; i++ {
				b = msgpackEncode(b, x.RawGetInt(i), depth+1)
			}
			return b
		}
		n := 0
		x.ForEach(func(lua.LValue, lua.LValue) { n++ })
		b = msgpackHeader(b, n, 0x80, 0xde, 0xdf)
		x.ForEach(func(k, val lua.LValue) {
			b = msgpackEncode(b, k, depth+1)
			b = msgpackEncode(b, val, depth+1)
		})
		return b
	}
	return append(b, 0xc0) // nil, and what MessagePack has no form for
}

// msgpackInt writes an integer in its smallest form: unsigned ones for positive values, as
// lua-cmsgpack does.
func msgpackInt(b []byte, v int64) []byte {
	switch {
	case v >= 0 && v <= 127:
		return append(b, byte(v))
	case v >= 0 && v <= math.MaxUint8:
		return append(b, 0xcc, byte(v))
	case v >= 0 && v <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, 0xcd), uint16(v))
	case v >= 0 && v <= math.MaxUint32:
		return binary.BigEndian.AppendUint32(append(b, 0xce), uint32(v))
	case v >= 0:
		return binary.BigEndian.AppendUint64(append(b, 0xcf), uint64(v))
	case v >= -32:
		return append(b, byte(v))
	case v >= math.MinInt8:
		return append(b, 0xd0, byte(v))
	case v >= math.MinInt16:
		return binary.BigEndian.AppendUint16(append(b, 0xd1), uint16(v))
	case v >= math.MinInt32:
		return binary.BigEndian.AppendUint32(append(b, 0xd2), uint32(v))
	}
	return binary.BigEndian.AppendUint64(append(b, 0xd3), uint64(v))
}

func msgpackHeader(b []byte, n int, fix, b16, b32 byte) []byte {
	switch {
	case n < 16:
		return append(b, fix|byte(n))
	case n <= math.MaxUint16:
		return binary.BigEndian.AppendUint16(append(b, b16), uint16(n))
	}
	return binary.BigEndian.AppendUint32(append(b, b32), uint32(n))
}

// msgpackArrayLength reports a table whose keys are exactly 1..n (an empty table included).
func msgpackArrayLength(t *lua.LTable) (int, bool) {
	count, maxKey, array := 0, 0, true
	t.ForEach(func(k, _ lua.LValue) {
		n, ok := k.(lua.LNumber)
		if !ok || float64(n) < 1 || float64(n) != math.Trunc(float64(n)) {
			array = false
			return
		}
		count++
		maxKey = max(maxKey, int(n))
	})
	return count, array && count == maxKey
}

type msgpackDecoder struct {
	L     *lua.LState
	s     string
	pos   int
	depth int
}

// msgpackMaxDepth bounds how deep unpack nests tables (and so its recursion): input of a few
// bytes per level could otherwise exhaust the stack.
const msgpackMaxDepth = 1000

func (d *msgpackDecoder) take(n int) string {
	if n < 0 || d.pos+n > len(d.s) {
		d.L.RaiseError("Missing bytes in input.")
	}
	out := d.s[d.pos : d.pos+n]
	d.pos += n
	return out
}

func (d *msgpackDecoder) uint(n int) uint64 {
	var v uint64
	for _, c := range []byte(d.take(n)) {
		v = v<<8 | uint64(c)
	}
	return v
}

func (d *msgpackDecoder) value() lua.LValue {
	c := d.take(1)[0]
	switch {
	case c <= 0x7f:
		return lua.LNumber(c)
	case c >= 0xe0:
		return lua.LNumber(int8(c))
	case c&0xf0 == 0x80:
		return d.table(int(c&0x0f), true)
	case c&0xf0 == 0x90:
		return d.table(int(c&0x0f), false)
	case c&0xe0 == 0xa0:
		return lua.LString(d.take(int(c & 0x1f)))
	}
	switch c {
	case 0xc0:
		return lua.LNil
	case 0xc2:
		return lua.LFalse
	case 0xc3:
		return lua.LTrue
	case 0xc4, 0xd9:
		return lua.LString(d.take(int(d.uint(1))))
	case 0xc5, 0xda:
		return lua.LString(d.take(int(d.uint(2))))
	case 0xc6, 0xdb:
		return lua.LString(d.take(int(d.uint(4))))
	case 0xca:
		return lua.LNumber(math.Float32frombits(uint32(d.uint(4))))
	case 0xcb:
		return lua.LNumber(math.Float64frombits(d.uint(8)))
	case 0xcc:
		return lua.LNumber(d.uint(1))
	case 0xcd:
		return lua.LNumber(d.uint(2))
	case 0xce:
		return lua.LNumber(d.uint(4))
	case 0xcf:
		return lua.LNumber(float64(d.uint(8)))
	case 0xd0:
		return lua.LNumber(int8(d.uint(1)))
	case 0xd1:
		return lua.LNumber(int16(d.uint(2)))
	case 0xd2:
		return lua.LNumber(int32(d.uint(4)))
	case 0xd3:
		return lua.LNumber(float64(int64(d.uint(8))))
	case 0xdc:
		return d.table(int(d.uint(2)), false)
	case 0xdd:
		return d.table(int(d.uint(4)), false)
	case 0xde:
		return d.table(int(d.uint(2)), true)
	case 0xdf:
		return d.table(int(d.uint(4)), true)
	}
	d.L.RaiseError("Bad data format in input.")
	return lua.LNil
}

// table reads n elements (or pairs): each takes at least one byte, so a count larger than the
// input left is refused before anything is allocated.
func (d *msgpackDecoder) table(n int, isMap bool) lua.LValue {
	if n > len(d.s)-d.pos {
		d.L.RaiseError("Missing bytes in input.")
	}
	if d.depth++; d.depth > msgpackMaxDepth {
		d.L.RaiseError("Too many nested data structures in input.")
	}
	defer func() { d.depth-- }()
	t := d.L.NewTable()
	for i := 1; i <= n; i++ {
		if isMap {
			k := d.value()
			v := d.value()
			if k != lua.LNil {
				t.RawSet(k, v)
			}
		} else {
			t.RawSetInt(i, d.value())
		}
	}
	return t
}
