package lualib

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	lua "github.com/yuin/gopher-lua"
)

// The cjson library Redis's Lua carries (lua-cjson 2.1): cjson.encode, cjson.decode and
// cjson.null, with its number format (%.14g), its escapes (including "\/"), its sparse-array and
// nesting limits and its error texts. An object's keys come out in the order the table yields
// them, which in gopher-lua is not always real Lua's, as lua-cjson leaves it to the table too.

const cjsonMaxDepth = 1000

// OpenCJSON builds the cjson table.
func OpenCJSON(L *lua.LState) *lua.LTable {
	t := L.NewTable()
	null := L.NewUserData()
	t.RawSetString("null", null)
	// The nesting limits scripts may set (cjson.encode_max_depth(n), decode_max_depth(n)); they
	// last as long as the Lua state, as lua-cjson's configuration does.
	cfg := &cjsonConfig{encodeMax: cjsonMaxDepth, decodeMax: cjsonMaxDepth}
	t.RawSetString("encode", L.NewFunction(func(L *lua.LState) int {
		if L.GetTop() != 1 {
			L.RaiseError("bad argument #1 to 'encode' (expected 1 argument)")
		}
		var b strings.Builder
		cjsonEncode(L, &b, L.Get(1), null, 0, cfg)
		L.Push(lua.LString(b.String()))
		return 1
	}))
	t.RawSetString("decode", L.NewFunction(func(L *lua.LState) int {
		s := L.CheckString(1)
		d := &cjsonDecoder{L: L, s: s, null: null, maxDepth: cfg.decodeMax}
		v := d.value(d.next(), 0)
		if tok := d.next(); tok.kind != "T_END" {
			d.fail("the end", tok)
		}
		L.Push(v)
		return 1
	}))
	for name, limit := range map[string]*int{"encode_max_depth": &cfg.encodeMax, "decode_max_depth": &cfg.decodeMax} {
		t.RawSetString(name, L.NewFunction(func(L *lua.LState) int {
			if L.GetTop() >= 1 && L.Get(1) != lua.LNil {
				n, ok := L.Get(1).(lua.LNumber)
				if !ok || n < 1 || n > math.MaxInt32 || float64(n) != math.Trunc(float64(n)) {
					L.ArgError(1, "expected integer between 1 and 2147483647")
				}
				*limit = int(n)
			}
			L.Push(lua.LNumber(*limit))
			return 1
		}))
	}
	// encode_invalid_numbers: false (refuse NaN and Inf), true or "on" (write nan, inf), "null".
	t.RawSetString("encode_invalid_numbers", L.NewFunction(func(L *lua.LState) int {
		switch v := L.Get(1); {
		case v == lua.LTrue || v == lua.LString("on"):
			cfg.encodeInvalid = 1
		case v == lua.LFalse || v == lua.LString("off"):
			cfg.encodeInvalid = 0
		case v == lua.LString("null"):
			cfg.encodeInvalid = 2
		case v != lua.LNil:
			L.ArgError(1, "invalid option '"+v.String()+"'")
		}
		if cfg.encodeInvalid == 2 {
			L.Push(lua.LString("null"))
		} else {
			L.Push(lua.LBool(cfg.encodeInvalid == 1))
		}
		return 1
	}))
	// The other settings functions answer with the defaults; changing them is not supported.
	for name, values := range map[string][]lua.LValue{
		"encode_number_precision": {lua.LNumber(14)}, "encode_keep_buffer": {lua.LTrue},
		"decode_invalid_numbers": {lua.LTrue},
		"encode_sparse_array":    {lua.LFalse, lua.LNumber(2), lua.LNumber(10)},
	} {
		values := values
		t.RawSetString(name, L.NewFunction(func(L *lua.LState) int {
			for _, v := range values {
				L.Push(v)
			}
			return len(values)
		}))
	}
	return t
}

// cjsonConfig is what a script may change of lua-cjson's configuration; it lasts as long as
// the Lua state, as lua-cjson's does.
type cjsonConfig struct {
	encodeMax, decodeMax int // nesting limits (encode_max_depth, decode_max_depth)
	encodeInvalid        int // encode_invalid_numbers: 0 refuse, 1 write nan/inf, 2 write null
}

func cjsonNumber(L *lua.LState, f float64, cfg *cjsonConfig) string {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		switch {
		case cfg.encodeInvalid == 0:
			L.RaiseError("Cannot serialise number: must not be NaN or Inf")
		case cfg.encodeInvalid == 2:
			return "null"
		case math.IsNaN(f):
			return "nan" // lua-cjson's spelling, whatever the platform's printf says
		case f > 0:
			return "inf" // %.14g's
		default:
			return "-inf"
		}
	}
	return cFormatG(f, 14)
}

// cFormatG formats f as C's printf("%.<prec>g") does.
func cFormatG(f float64, prec int) string {
	if f == 0 {
		if math.Signbit(f) {
			return "-0"
		}
		return "0"
	}
	// The exponent after rounding to prec digits decides between the two layouts, as in C.
	e := strconv.FormatFloat(f, 'e', prec-1, 64)
	exp, _ := strconv.Atoi(e[strings.IndexByte(e, 'e')+1:])
	if exp < -4 || exp >= prec {
		mant, ex, _ := strings.Cut(e, "e")
		if strings.Contains(mant, ".") {
			mant = strings.TrimRight(strings.TrimRight(mant, "0"), ".")
		}
		sign, digits := ex[:1], ex[1:]
		if len(digits) < 2 {
			digits = "0" + digits
		}
		return mant + "e" + sign + digits
	}
	s := strconv.FormatFloat(f, 'f', max(prec-1-exp, 0), 64)
	if strings.Contains(s, ".") {
		s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	}
	return s
}

func cjsonString(b *strings.Builder, s string) {
	b.WriteByte('"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '/':
			b.WriteString(`\/`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		default:
			if c < 0x20 || c == 0x7f {
				fmt.Fprintf(b, `\u%04x`, c)
			} else {
				b.WriteByte(c)
			}
		}
	}
	b.WriteByte('"')
}

func cjsonEncode(L *lua.LState, b *strings.Builder, v lua.LValue, null *lua.LUserData, depth int, cfg *cjsonConfig) {
	switch x := v.(type) {
	case *lua.LNilType:
		b.WriteString("null")
	case lua.LBool:
		b.WriteString(strconv.FormatBool(bool(x)))
	case lua.LNumber:
		b.WriteString(cjsonNumber(L, float64(x), cfg))
	case lua.LString:
		cjsonString(b, string(x))
	case *lua.LUserData:
		if x != null {
			L.RaiseError("Cannot serialise userdata: type not supported")
		}
		b.WriteString("null")
	case *lua.LTable:
		depth++
		if depth > cfg.encodeMax {
			L.RaiseError("Cannot serialise, excessive nesting (%d)", depth)
		}
		if n := cjsonArrayLength(L, x); n >= 0 {
			b.WriteByte('[')
			for i := 1; i <= n; i++ {
				if i > 1 {
					b.WriteByte(',')
				}
				cjsonEncode(L, b, x.RawGetInt(i), null, depth, cfg)
			}
			b.WriteByte(']')
			return
		}
		b.WriteByte('{')
		first := true
		x.ForEach(func(k, val lua.LValue) {
			if !first {
				b.WriteByte(',')
			}
			first = false
			switch key := k.(type) {
			case lua.LString:
				cjsonString(b, string(key))
			case lua.LNumber:
				b.WriteByte('"')
				b.WriteString(cjsonNumber(L, float64(key), cfg))
				b.WriteByte('"')
			default:
				L.RaiseError("Cannot serialise %s: table key must be a number or string", k.Type().String())
			}
			b.WriteByte(':')
			cjsonEncode(L, b, val, null, depth, cfg)
		})
		b.WriteByte('}')
	default:
		L.RaiseError("Cannot serialise %s: type not supported", v.Type().String())
	}
}

// cjsonArrayLength is the length of t as an array, or -1 when it is an object: every key a
// positive integer, and not excessively sparse (lua-cjson's ratio 2 above 10 elements). An empty
// table is an object.
func cjsonArrayLength(L *lua.LState, t *lua.LTable) int {
	maxKey, items, object := 0, 0, false
	t.ForEach(func(k, _ lua.LValue) {
		n, ok := k.(lua.LNumber)
		if !ok || float64(n) < 1 || float64(n) != math.Floor(float64(n)) {
			object = true
			return
		}
		maxKey = max(maxKey, int(n))
		items++
	})
	if object || items == 0 {
		return -1
	}
	if maxKey > items*2 && maxKey > 10 {
		L.RaiseError("Cannot serialise table: excessively sparse array")
	}
	return maxKey
}

// cjsonToken is one token of a JSON text; for an error (lua-cjson's T_ERROR), kind holds the
// error's words after a "!" and at where the error is.
type cjsonToken struct {
	kind  string
	at    int // 0-based index of its first byte
	value lua.LValue
}

type cjsonDecoder struct {
	maxDepth int
	L        *lua.LState
	s        string
	pos      int
	null     *lua.LUserData
}

func (d *cjsonDecoder) fail(expected string, tok cjsonToken) {
	found := strings.TrimPrefix(tok.kind, "!")
	d.L.RaiseError("Expected %s but found %s at character %d", expected, found, tok.at+1)
}

func (d *cjsonDecoder) next() cjsonToken {
	for d.pos < len(d.s) && strings.IndexByte(" \t\n\r", d.s[d.pos]) >= 0 {
		d.pos++
	}
	at := d.pos
	if d.pos >= len(d.s) {
		return cjsonToken{kind: "T_END", at: at}
	}
	c := d.s[d.pos]
	single := map[byte]string{'{': "T_OBJ_BEGIN", '}': "T_OBJ_END", '[': "T_ARR_BEGIN", ']': "T_ARR_END", ':': "T_COLON", ',': "T_COMMA"}
	if k, ok := single[c]; ok {
		d.pos++
		return cjsonToken{kind: k, at: at}
	}
	switch {
	case c == '"':
		return d.stringToken()
	case c == '-' || c >= '0' && c <= '9':
		end := d.pos + 1
		for end < len(d.s) && strings.IndexByte("0123456789+-.eE", d.s[end]) >= 0 {
			end++
		}
		f, err := strconv.ParseFloat(d.s[d.pos:end], 64)
		if err != nil {
			return cjsonToken{kind: "!invalid number", at: at}
		}
		d.pos = end
		return cjsonToken{kind: "T_NUMBER", at: at, value: lua.LNumber(f)}
	}
	for word, v := range map[string]lua.LValue{"true": lua.LTrue, "false": lua.LFalse, "null": d.null} {
		if strings.HasPrefix(d.s[d.pos:], word) {
			d.pos += len(word)
			kind := "T_BOOLEAN"
			if word == "null" {
				kind = "T_NULL"
			}
			return cjsonToken{kind: kind, at: at, value: v}
		}
	}
	return cjsonToken{kind: "!invalid token", at: at}
}

func (d *cjsonDecoder) stringToken() cjsonToken {
	at := d.pos
	d.pos++
	var b strings.Builder
	for {
		if d.pos >= len(d.s) {
			return cjsonToken{kind: "!unexpected end of string", at: d.pos}
		}
		c := d.s[d.pos]
		if c == '"' {
			d.pos++
			return cjsonToken{kind: "T_STRING", at: at, value: lua.LString(b.String())}
		}
		if c != '\\' {
			b.WriteByte(c)
			d.pos++
			continue
		}
		if d.pos+1 >= len(d.s) {
			return cjsonToken{kind: "!unexpected end of string", at: d.pos + 1}
		}
		escAt, esc := d.pos, d.s[d.pos+1]
		d.pos += 2
		switch esc {
		case '"', '\\', '/':
			b.WriteByte(esc)
		case 'b':
			b.WriteByte('\b')
		case 'f':
			b.WriteByte('\f')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 't':
			b.WriteByte('\t')
		case 'u':
			r, ok := d.hex4()
			if !ok {
				return cjsonToken{kind: "!invalid unicode escape code", at: escAt}
			}
			if r >= 0xd800 && r <= 0xdbff { // a surrogate pair
				if !strings.HasPrefix(d.s[d.pos:], `\u`) {
					return cjsonToken{kind: "!invalid unicode escape code", at: escAt}
				}
				d.pos += 2
				lo, ok := d.hex4()
				if !ok || lo < 0xdc00 || lo > 0xdfff {
					return cjsonToken{kind: "!invalid unicode escape code", at: escAt}
				}
				r = 0x10000 + (r-0xd800)<<10 + (lo - 0xdc00)
			}
			var buf [4]byte
			b.Write(buf[:utf8.EncodeRune(buf[:], rune(r))])
		default:
			return cjsonToken{kind: "!invalid escape code", at: escAt}
		}
	}
}

func (d *cjsonDecoder) hex4() (int, bool) {
	if d.pos+4 > len(d.s) {
		return 0, false
	}
	v, err := strconv.ParseUint(d.s[d.pos:d.pos+4], 16, 32)
	if err != nil {
		return 0, false
	}
	d.pos += 4
	return int(v), true
}

func (d *cjsonDecoder) value(tok cjsonToken, depth int) lua.LValue {
	switch tok.kind {
	case "T_STRING", "T_NUMBER", "T_BOOLEAN", "T_NULL":
		return tok.value
	case "T_OBJ_BEGIN", "T_ARR_BEGIN":
		if depth+1 > d.maxDepth {
			d.L.RaiseError("Found too many nested data structures (%d) at character %d", depth+1, tok.at+1)
		}
		t := d.L.NewTable()
		if tok.kind == "T_ARR_BEGIN" {
			next := d.next()
			if next.kind == "T_ARR_END" {
				return t
			}
			for i := 1; ; i++ {
				t.RawSetInt(i, d.value(next, depth+1))
				sep := d.next()
				if sep.kind == "T_ARR_END" {
					return t
				}
				if sep.kind != "T_COMMA" {
					d.fail("comma or array end", sep)
				}
				next = d.next()
			}
		}
		key := d.next()
		if key.kind == "T_OBJ_END" {
			return t
		}
		for {
			if key.kind != "T_STRING" {
				d.fail("object key string", key)
			}
			if colon := d.next(); colon.kind != "T_COLON" {
				d.fail("colon", colon)
			}
			t.RawSet(key.value, d.value(d.next(), depth+1))
			sep := d.next()
			if sep.kind == "T_OBJ_END" {
				return t
			}
			if sep.kind != "T_COMMA" {
				d.fail("comma or object end", sep)
			}
			key = d.next()
		}
	}
	d.fail("value", tok)
	return lua.LNil
}
