package scripting

import (
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/iocache/iocache/server/resp"
)

// Conversions between RESP and Lua values, both ways, as Redis 7.0's script_lua.c makes them:
// the replies of redis.call become Lua values, and what a script returns becomes its reply.
// RESP3's own types are in resp3.go.

// replyToLua converts one reply to a Lua value: integers to numbers, bulk strings to strings,
// RESP2 nulls to false, arrays to tables, status replies to {ok=...} and errors to {err=...};
// RESP3's types (after redis.setresp(3)) as resp3ToLua says.
func replyToLua(L *lua.LState, b []byte) (v lua.LValue, rest []byte, isErr bool) {
	if len(b) < 3 {
		return lua.LFalse, nil, false
	}
	end := indexCRLF(b)
	line, rest := b[1:end], b[end+2:]
	switch b[0] {
	case ':':
		n, _ := strconv.ParseInt(string(line), 10, 64)
		return lua.LNumber(n), rest, false
	case '+':
		t := L.NewTable()
		t.RawSetString("ok", lua.LString(line))
		return t, rest, false
	case '-':
		t := L.NewTable()
		t.RawSetString("err", lua.LString(line))
		return t, rest, true
	case '$':
		n, _ := strconv.Atoi(string(line))
		if n < 0 {
			return lua.LFalse, rest, false
		}
		return lua.LString(rest[:n]), rest[n+2:], false
	case '*', '>':
		n, _ := strconv.Atoi(string(line))
		if n < 0 {
			return lua.LFalse, rest, false
		}
		t := L.CreateTable(n, 0)
		for i := 0; i < n; i++ {
			var e lua.LValue
			e, rest, _ = replyToLua(L, rest)
			t.RawSetInt(i+1, e)
		}
		return t, rest, false
	}
	return resp3ToLua(L, b[0], line, rest)
}

func indexCRLF(b []byte) int {
	for i := 0; i+1 < len(b); i++ {
		if b[i] == '\r' && b[i+1] == '\n' {
			return i
		}
	}
	return len(b) - 2
}

// luaReplyMaxDepth is how deep Redis 7.0 nests a script's returned tables before Lua's stack
// (LUAI_MAXCSTACK, 8000 slots, two already used) runs out: there it answers "reached lua stack
// limit" in place of the deeper table. A table that contains itself stops there too.
const luaReplyMaxDepth = 7995

// WriteReply writes v, what a script or function returned, to w as the reply to its caller:
// numbers as integers (truncated), strings as bulk strings, true as 1 and false as null (after
// redis.setresp(3) in the run that returned v: as booleans), nil as null, {ok=} as a status,
// {err=} as an error, the RESP3 tables writeResp3 knows as their types, and other tables as
// arrays up to their first nil. Nesting is bounded as in Redis, and the whole reply by limit
// bytes (a table that holds itself many times over would otherwise expand without end): a
// reply that would pass it is not written, w is left as it was, and WriteReply returns false.
func (st *State) WriteReply(w *resp.Writer, v lua.LValue, limit int64) (fits bool) {
	mark := len(w.Buf)
	if !st.writeValue(w, v, 0, int64(mark)+limit) {
		w.Buf = w.Buf[:mark]
		return false
	}
	return true
}

func (st *State) writeValue(w *resp.Writer, v lua.LValue, depth int, limit int64) bool {
	if int64(len(w.Buf)) > limit {
		return false
	}
	if depth >= luaReplyMaxDepth {
		st.writeError(w, "ERR reached lua stack limit")
		return true
	}
	switch v := v.(type) {
	case lua.LNumber:
		w.Int(int64(v))
	case lua.LString:
		w.Bulk([]byte(v))
	case lua.LBool:
		switch {
		case st.resp3: // the script chose RESP3 (redis.setresp)
			w.Bool(bool(v))
		case bool(v):
			w.Int(1)
		default:
			w.Null()
		}
	case *lua.LTable:
		if e := v.RawGetString("err"); e.Type() == lua.LTString {
			st.writeError(w, oneLine(strings.TrimPrefix(e.String(), "-"), true))
			return true
		}
		if ok := v.RawGetString("ok"); ok.Type() == lua.LTString {
			w.Simple(oneLine(ok.String(), false))
			return true
		}
		if done, fits := st.writeResp3(w, v, depth, limit); done {
			return fits
		}
		n := 0
		for v.RawGetInt(n+1) != lua.LNil {
			n++
		}
		w.Array(n)
		for i := 1; i <= n; i++ {
			if !st.writeValue(w, v.RawGetInt(i), depth+1, limit) {
				return false
			}
		}
	default:
		w.Null()
	}
	return true
}

// writeError writes an error reply, which the host counts.
func (st *State) writeError(w *resp.Writer, msg string) {
	st.host.CountError(msg)
	w.Error(msg)
}

// oneLine keeps a script's status or error text from breaking the protocol, as Redis does:
// line breaks become spaces, and an error first loses those at its ends.
func oneLine(msg string, isError bool) string {
	if !strings.ContainsAny(msg, "\r\n") {
		return msg
	}
	if isError {
		msg = strings.Trim(msg, "\r\n")
	}
	return strings.Map(func(r rune) rune {
		if r == '\r' || r == '\n' {
			return ' '
		}
		return r
	}, msg)
}
