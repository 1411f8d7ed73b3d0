package scripting

// RESP3 in scripts: redis.setresp(3) makes redis.call return RESP3's types as Lua tables, and a
// script may return such tables to produce RESP3 replies, as in Redis 7.0 (script_lua.c,
// redisProtocolToLuaType_* and luaReplyToRedisReply).

import (
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/iocache/iocache/server/resp"
)

// setResp is redis.setresp: the protocol the script's redis.call replies are read in, from the
// next call on, and whether the booleans it returns are RESP3's (WriteReply). Every script
// starts in RESP2.
func (st *State) setResp(L *lua.LState) int {
	fail := func(msg string) int {
		t := L.NewTable()
		t.RawSetString("err", lua.LString(msg))
		L.Error(t, 0)
		return 0
	}
	if L.GetTop() != 1 {
		return fail("ERR redis.setresp() requires one argument.")
	}
	n, _ := L.Get(1).(lua.LNumber) // as lua_tonumber: anything else is 0
	if n != 2 && n != 3 {
		return fail("ERR RESP version must be 2 or 3.")
	}
	st.resp3 = n == 3
	return 0
}

// resp3ToLua converts a reply of a RESP3-only type: a map to {map={k=v...}}, a set to
// {set={member=true...}}, null to nil, a boolean to a boolean, a double to {double=n}, a big
// number to {big_number=digits}, a verbatim string to {verbatim_string={format=, string=}}; an
// attribute is skipped and the reply after it converted.
func resp3ToLua(L *lua.LState, kind byte, line, rest []byte) (lua.LValue, []byte, bool) {
	wrap := func(field string, v lua.LValue) *lua.LTable {
		t := L.NewTable()
		t.RawSetString(field, v)
		return t
	}
	switch kind {
	case '%', '~', '|':
		n, _ := strconv.Atoi(string(line))
		inner := L.NewTable()
		for i := 0; i < n; i++ {
			var k, v lua.LValue
			k, rest, _ = replyToLua(L, rest)
			v = lua.LTrue
			if kind != '~' {
				v, rest, _ = replyToLua(L, rest)
			}
			if k != lua.LNil {
				inner.RawSet(k, v)
			}
		}
		switch kind {
		case '%':
			return wrap("map", inner), rest, false
		case '~':
			return wrap("set", inner), rest, false
		}
		return replyToLua(L, rest) // attributes are not shown to scripts
	case '_':
		return lua.LNil, rest, false
	case '#':
		return lua.LBool(len(line) == 1 && line[0] == 't'), rest, false
	case ',':
		f, _ := strconv.ParseFloat(string(line), 64)
		return wrap("double", lua.LNumber(f)), rest, false
	case '(':
		return wrap("big_number", lua.LString(line)), rest, false
	case '=':
		n, _ := strconv.Atoi(string(line))
		if n < 4 || len(rest) < n+2 {
			return lua.LFalse, nil, false
		}
		v := L.NewTable()
		v.RawSetString("string", lua.LString(rest[4:n]))
		v.RawSetString("format", lua.LString(rest[:3]))
		return wrap("verbatim_string", v), rest[n+2:], false
	}
	return lua.LFalse, nil, false
}

// writeResp3 writes the reply a script's {double=}, {big_number=}, {verbatim_string=}, {map=}
// or {set=} table stands for, in that order of precedence as in Redis; done is false for any
// other table. fits is false when the reply passed limit.
func (st *State) writeResp3(w *resp.Writer, t *lua.LTable, depth int, limit int64) (done, fits bool) {
	if d, ok := t.RawGetString("double").(lua.LNumber); ok {
		w.Double(float64(d))
		return true, true
	}
	if b, ok := t.RawGetString("big_number").(lua.LString); ok {
		w.BigNumber(strings.NewReplacer("\r", " ", "\n", " ").Replace(string(b)))
		return true, true
	}
	if v, ok := t.RawGetString("verbatim_string").(*lua.LTable); ok {
		format, okf := v.RawGetString("format").(lua.LString)
		str, oks := v.RawGetString("string").(lua.LString)
		if okf && oks {
			w.VerbatimAs(string(format), string(str))
			return true, true
		}
	}
	for _, kind := range []string{"map", "set"} {
		inner, ok := t.RawGetString(kind).(*lua.LTable)
		if !ok {
			continue
		}
		n := 0
		inner.ForEach(func(lua.LValue, lua.LValue) { n++ })
		if kind == "map" {
			w.Map(n)
		} else {
			w.Set(n)
		}
		fits = true
		inner.ForEach(func(k, v lua.LValue) {
			if !fits {
				return
			}
			fits = st.writeValue(w, k, depth+1, limit)
			if fits && kind == "map" {
				fits = st.writeValue(w, v, depth+1, limit)
			}
		})
		return true, fits
	}
	return false, true
}
