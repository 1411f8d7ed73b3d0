package lualib

import (
	"bytes"
	"encoding/binary"
	"math"
	"strconv"

	lua "github.com/yuin/gopher-lua"
)

// The struct library Redis's Lua carries (Roberto Ierusalimschy's struct 0.2): pack, unpack and
// size over format strings of b B h H l L T i[n] I[n] f d c[n] s x, with < > for byte order
// (native, little endian, by default) and ![n] for alignment, laid out as on the 64-bit x86 Redis
// runs on (short 2, int 4, long and size_t 8 bytes).

const (
	structMaxIntSize = 32
	structMaxAlign   = 8
)

// structFormat walks a format string.
type structFormat struct {
	L     *lua.LState
	fn    string
	f     string
	pos   int
	big   bool
	align int
}

// num reads the digits after an option, or def.
func (sf *structFormat) num(def int) int {
	start := sf.pos
	for sf.pos < len(sf.f) && sf.f[sf.pos] >= '0' && sf.f[sf.pos] <= '9' {
		sf.pos++
	}
	if start == sf.pos {
		return def
	}
	n, _ := strconv.Atoi(sf.f[start:sf.pos])
	return n
}

// size is an option's size; 0 for options that have none.
func (sf *structFormat) size(opt byte) int {
	switch opt {
	case 'b', 'B', 'x':
		return 1
	case 'h', 'H':
		return 2
	case 'l', 'L', 'T', 'd':
		return 8
	case 'f':
		return 4
	case 'c':
		return sf.num(1)
	case 'i', 'I':
		n := sf.num(4)
		if n > structMaxIntSize {
			sf.L.RaiseError("integral size %d is larger than limit of %d", n, structMaxIntSize)
		}
		return n
	}
	return 0
}

// padding is what aligns an item of size at offset.
func (sf *structFormat) padding(offset int, opt byte, size int) int {
	if size == 0 || opt == 'c' {
		return 0
	}
	size = min(size, sf.align)
	return (size - (offset & (size - 1))) & (size - 1)
}

// control applies a byte-order, alignment or blank option, and refuses any other.
func (sf *structFormat) control(opt byte) {
	switch opt {
	case ' ':
	case '>':
		sf.big = true
	case '<':
		sf.big = false
	case '!':
		a := sf.num(structMaxAlign)
		if a <= 0 || a&(a-1) != 0 {
			sf.L.RaiseError("alignment %d is not a power of 2", a)
		}
		sf.align = a
	default:
		sf.L.RaiseError("bad argument #1 to '%s' (invalid format option '%c')", sf.fn, opt)
	}
}

// structNumber is luaL_checknumber, with Lua's error text. pack pushes a nil after its
// arguments, so a missing one is "nil" there.
func structNumber(L *lua.LState, i int, fn string) float64 {
	switch v := L.Get(i).(type) {
	case lua.LNumber:
		return float64(v)
	case lua.LString:
		if f, err := strconv.ParseFloat(string(v), 64); err == nil {
			return f
		}
	}
	got := "no value"
	if i <= L.GetTop() || fn == "pack" {
		got = L.Get(i).Type().String()
	}
	L.RaiseError("bad argument #%d to '%s' (number expected, got %s)", i, fn, got)
	return 0
}

func structString(L *lua.LState, i int, fn string) string {
	switch v := L.Get(i).(type) {
	case lua.LString:
		return string(v)
	case lua.LNumber:
		return NumberString(v)
	}
	got := "no value"
	if i <= L.GetTop() || (fn == "pack" && i > 1) {
		got = L.Get(i).Type().String()
	}
	L.RaiseError("bad argument #%d to '%s' (string expected, got %s)", i, fn, got)
	return ""
}

// OpenStruct builds the struct table.
func OpenStruct(L *lua.LState) *lua.LTable {
	t := L.NewTable()
	t.RawSetString("pack", L.NewFunction(structPack))
	t.RawSetString("unpack", L.NewFunction(structUnpack))
	t.RawSetString("size", L.NewFunction(structSize))
	return t
}

func structPack(L *lua.LState) int {
	sf := &structFormat{L: L, fn: "pack", f: structString(L, 1, "pack"), align: 1}
	var b bytes.Buffer
	arg := 2
	for sf.pos < len(sf.f) {
		opt := sf.f[sf.pos]
		sf.pos++
		size := sf.size(opt)
		b.Write(make([]byte, sf.padding(b.Len(), opt, size)))
		switch opt {
		case 'b', 'B', 'h', 'H', 'l', 'L', 'T', 'i', 'I':
			n := structNumber(L, arg, "pack")
			arg++
			var v uint64
			switch {
			case n < 0 && n >= math.MinInt64:
				v = uint64(int64(n))
			case n < 0:
				v = 1 << 63
			case n >= 1<<64:
				v = math.MaxUint64
			default:
				v = uint64(n)
			}
			buf := make([]byte, size)
			for i := 0; i < size; i++ {
				at := i
				if sf.big {
					at = size - 1 - i
				}
				buf[at] = byte(v)
				v >>= 8
			}
			b.Write(buf)
		case 'x':
			b.WriteByte(0)
		case 'f':
			bits := math.Float32bits(float32(structNumber(L, arg, "pack")))
			arg++
			if sf.big {
				b.Write(binary.BigEndian.AppendUint32(nil, bits))
			} else {
				b.Write(binary.LittleEndian.AppendUint32(nil, bits))
			}
		case 'd':
			bits := math.Float64bits(structNumber(L, arg, "pack"))
			arg++
			if sf.big {
				b.Write(binary.BigEndian.AppendUint64(nil, bits))
			} else {
				b.Write(binary.LittleEndian.AppendUint64(nil, bits))
			}
		case 'c', 's':
			s := structString(L, arg, "pack")
			arg++
			if size == 0 {
				size = len(s)
			}
			if len(s) < size {
				L.RaiseError("bad argument #%d to 'pack' (string too short)", arg) // one past the string, as struct 0.2 reports it
			}
			b.WriteString(s[:size])
			if opt == 's' {
				b.WriteByte(0)
			}
		default:
			sf.control(opt)
		}
	}
	L.Push(lua.LString(b.String()))
	return 1
}

func structUnpack(L *lua.LState) int {
	sf := &structFormat{L: L, fn: "unpack", f: structString(L, 1, "unpack"), align: 1}
	data := structString(L, 2, "unpack")
	pos := L.OptInt(3, 1) - 1
	if pos < 0 {
		L.RaiseError("bad argument #3 to 'unpack' (offset must be 1 or greater)")
	}
	L.SetTop(2)
	tooShort := func(size int) {
		if size > len(data) || pos > len(data)-size {
			L.RaiseError("bad argument #2 to 'unpack' (data string too short)")
		}
	}
	for sf.pos < len(sf.f) {
		opt := sf.f[sf.pos]
		sf.pos++
		size := sf.size(opt)
		pos += sf.padding(pos, opt, size)
		tooShort(size)
		switch opt {
		case 'b', 'B', 'h', 'H', 'l', 'L', 'T', 'i', 'I':
			var v uint64
			for i := 0; i < size; i++ {
				at := pos + size - 1 - i
				if sf.big {
					at = pos + i
				}
				v = v<<8 | uint64(data[at])
			}
			if opt >= 'a' && opt <= 'z' { // signed
				if size < 8 {
					if mask := uint64(math.MaxUint64) << (size*8 - 1); v&mask != 0 {
						v |= mask
					}
				}
				L.Push(lua.LNumber(float64(int64(v))))
			} else {
				L.Push(lua.LNumber(float64(v)))
			}
		case 'x':
		case 'f':
			raw := []byte(data[pos : pos+4])
			bits := binary.LittleEndian.Uint32(raw)
			if sf.big {
				bits = binary.BigEndian.Uint32(raw)
			}
			L.Push(lua.LNumber(math.Float32frombits(bits)))
		case 'd':
			raw := []byte(data[pos : pos+8])
			bits := binary.LittleEndian.Uint64(raw)
			if sf.big {
				bits = binary.BigEndian.Uint64(raw)
			}
			L.Push(lua.LNumber(math.Float64frombits(bits)))
		case 'c':
			if size == 0 {
				n, ok := L.Get(-1).(lua.LNumber)
				if !ok || L.GetTop() <= 2 {
					L.RaiseError("format `c0' needs a previous size")
				}
				size = int(n)
				L.Pop(1)
				tooShort(size)
			}
			L.Push(lua.LString(data[pos : pos+size]))
		case 's':
			end := bytes.IndexByte([]byte(data[pos:]), 0)
			if end < 0 {
				L.RaiseError("unfinished string in data")
			}
			size = end + 1
			L.Push(lua.LString(data[pos : pos+end]))
		default:
			sf.control(opt)
		}
		pos += size
	}
	L.Push(lua.LNumber(pos + 1))
	return L.GetTop() - 2
}

func structSize(L *lua.LState) int {
	sf := &structFormat{L: L, fn: "size", f: structString(L, 1, "size"), align: 1}
	pos := 0
	for sf.pos < len(sf.f) {
		opt := sf.f[sf.pos]
		sf.pos++
		size := sf.size(opt)
		pos += sf.padding(pos, opt, size)
		switch {
		case opt == 's':
			L.RaiseError("bad argument #1 to 'size' (option 's' has no fixed size)")
		case opt == 'c' && size == 0:
			L.RaiseError("bad argument #1 to 'size' (option 'c0' has no fixed size)")
		}
		if !(opt >= 'a' && opt <= 'z' || opt >= 'A' && opt <= 'Z' || opt >= '0' && opt <= '9') {
			sf.control(opt)
		}
		pos += size
	}
	L.Push(lua.LNumber(pos))
	return 1
}
