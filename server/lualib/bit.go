package lualib

import (
	"math"
	"strconv"

	lua "github.com/yuin/gopher-lua"
)

// The bit library Redis's Lua carries (LuaBitOp 1.0): 32-bit operations on Lua numbers. An
// argument becomes its low 32 bits after rounding to the nearest integer, which LuaBitOp does by
// adding 2^52+2^51 and reading the double's low word; results are signed 32-bit numbers.

// bitArg reads argument i as LuaBitOp's barg does.
func bitArg(L *lua.LState, i int, fn string) uint32 {
	var n float64
	switch v := L.Get(i).(type) {
	case lua.LNumber:
		n = float64(v)
	case lua.LString:
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil {
			if u, uerr := strconv.ParseUint(string(v), 0, 64); uerr == nil { // "0x10"
				f, err = float64(u), nil
			}
		}
		if err != nil {
			L.RaiseError("bad argument #%d to '%s' (number expected, got string)", i, fn)
		}
		n = f
	default:
		got := "no value"
		if i <= L.GetTop() {
			got = v.Type().String()
		}
		L.RaiseError("bad argument #%d to '%s' (number expected, got %s)", i, fn, got)
	}
	return uint32(math.Float64bits(n + 6755399441055744.0))
}

func bitResult(L *lua.LState, b uint32) int {
	L.Push(lua.LNumber(int32(b)))
	return 1
}

// OpenBit builds the bit table.
func OpenBit(L *lua.LState) *lua.LTable {
	t := L.NewTable()
	unary := func(name string, op func(uint32) uint32) {
		t.RawSetString(name, L.NewFunction(func(L *lua.LState) int { return bitResult(L, op(bitArg(L, 1, name))) }))
	}
	variadic := func(name string, op func(a, b uint32) uint32) {
		t.RawSetString(name, L.NewFunction(func(L *lua.LState) int {
			b := bitArg(L, 1, name)
			for i := 2; i <= L.GetTop(); i++ {
				b = op(b, bitArg(L, i, name))
			}
			return bitResult(L, b)
		}))
	}
	shift := func(name string, op func(b uint32, n uint) uint32) {
		t.RawSetString(name, L.NewFunction(func(L *lua.LState) int {
			b, n := bitArg(L, 1, name), uint(bitArg(L, 2, name)&31)
			return bitResult(L, op(b, n))
		}))
	}
	unary("tobit", func(b uint32) uint32 { return b })
	unary("bnot", func(b uint32) uint32 { return ^b })
	unary("bswap", func(b uint32) uint32 { return b>>24 | b>>8&0xff00 | b<<8&0xff0000 | b<<24 })
	variadic("band", func(a, b uint32) uint32 { return a & b })
	variadic("bor", func(a, b uint32) uint32 { return a | b })
	variadic("bxor", func(a, b uint32) uint32 { return a ^ b })
	shift("lshift", func(b uint32, n uint) uint32 { return b << n })
	shift("rshift", func(b uint32, n uint) uint32 { return b >> n })
	shift("arshift", func(b uint32, n uint) uint32 { return uint32(int32(b) >> n) })
	shift("rol", func(b uint32, n uint) uint32 { return b<<n | b>>(32-n) })
	shift("ror", func(b uint32, n uint) uint32 { return b>>n | b<<(32-n) })
	t.RawSetString("tohex", L.NewFunction(func(L *lua.LState) int {
		b := bitArg(L, 1, "tohex")
		n := int32(8)
		if L.GetTop() >= 2 && L.Get(2) != lua.LNil {
			n = int32(bitArg(L, 2, "tohex"))
		}
		digits := "0123456789abcdef"
		if n < 0 {
			n, digits = -n, "0123456789ABCDEF"
		}
		n = min(n, 8)
		buf := make([]byte, n)
		for i := n - 1; i >= 0; i-- {
			buf[i] = digits[b&15]
			b >>= 4
		}
		L.Push(lua.LString(buf))
		return 1
	}))
	return t
}
