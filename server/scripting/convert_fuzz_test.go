package scripting

import (
	"encoding/binary"
	"math"
	"testing"

	lua "github.com/yuin/gopher-lua"

	"github.com/iocache/iocache/server/resp"
)

// luaValueFrom decodes fuzz bytes into a Lua value: numbers, strings, booleans, nil, status and
// error tables, arrays, and arrays that hold themselves.
func luaValueFrom(L *lua.LState, data []byte, self *lua.LTable, depth int) (lua.LValue, []byte) {
	if len(data) == 0 {
		return lua.LNil, nil
	}
	op, data := data[0], data[1:]
	str := func() (string, []byte) {
		if len(data) == 0 {
			return "", nil
		}
		n := min(int(data[0]), len(data)-1)
		return string(data[1 : 1+n]), data[1+n:]
	}
	switch op % 9 {
	case 0:
		var bits uint64
		if len(data) >= 8 {
			bits, data = binary.LittleEndian.Uint64(data), data[8:]
		}
		return lua.LNumber(math.Float64frombits(bits)), data
	case 1:
		s, rest := str()
		return lua.LString(s), rest
	case 2:
		return lua.LTrue, data
	case 3:
		return lua.LFalse, data
	case 4:
		return lua.LNil, data
	case 5, 6:
		s, rest := str()
		t := L.NewTable()
		t.RawSetString(map[byte]string{5: "ok", 6: "err"}[op%9], lua.LString(s))
		return t, rest
	case 7:
		t := L.NewTable()
		if depth > 20 || len(data) == 0 {
			return t, data
		}
		n := int(data[0] % 8)
		data = data[1:]
		for i := 1; i <= n; i++ {
			var v lua.LValue
			v, data = luaValueFrom(L, data, t, depth+1)
			t.RawSetInt(i, v)
		}
		return t, data
	}
	if self != nil {
		return self, data
	}
	return lua.LNil, data
}

// FuzzWriteReply: whatever a script returns, the reply is exactly one well-formed RESP value
// and stays within the reply bound, tables that hold themselves included; a reply past the
// bound is not written at all.
func FuzzWriteReply(f *testing.F) {
	for _, seed := range [][]byte{
		{0, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f}, {1, 3, 'a', 'b', 'c'}, {2}, {3}, {4}, {5, 2, 'o', 'k'}, {6, 3, 'E', 'R', 'R'},
		{7, 3, 1, 1, 'x', 2, 7, 2, 8, 8}, {7, 7, 8, 8, 8, 8, 8, 8, 8}, {7, 2, 4, 1, 1, 'y'},
		{0, 0, 0, 0, 0, 0, 0, 0xf8, 0x7f}, {6, 1, '-'},
	} {
		f.Add(seed)
	}
	const limit = 1 << 16
	st, _ := newTestState(f)
	f.Fuzz(func(t *testing.T, data []byte) {
		v, _ := luaValueFrom(st.l, data, nil, 0)
		w := &resp.Writer{}
		if !st.WriteReply(w, v, limit) {
			if len(w.Buf) != 0 {
				t.Fatalf("a reply past the bound left %d bytes", len(w.Buf))
			}
			return
		}
		if len(w.Buf) > limit+64 {
			t.Fatalf("reply of %d bytes past the bound", len(w.Buf))
		}
		if rest, ok := skipReply(w.Buf); !ok || len(rest) != 0 {
			t.Fatalf("reply %q is not one well-formed value (%d bytes left over)", w.Buf, len(rest))
		}
	})
}
