package scripting

import (
	"fmt"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/iocache/iocache/server/lualib"
)

// maxLoadChunk bounds what a script may compile at run time with loadstring or load. gopher-lua
// parses a chunk whole into a syntax tree of about 85 bytes per byte of source, and without
// looking at the script's time limit: `loadstring('return {' .. string.rep('1,', 10^7) .. '}')`
// grew the server past 3 GiB. Redis's scripts compile their body through EVAL, which
// proto-max-bulk-len bounds; code built at run time is rarely more than a few kilobytes.
const maxLoadChunk = 4 << 20

// boundLoaders replaces loadstring and load by versions that refuse a chunk past maxLoadChunk
// or nested past what the parser can take, with load's own way of failing (nil and a message),
// and compact what they compile as the script cache does.
func boundLoaders(L *lua.LState, g *lua.LTable) {
	g.RawSetString("loadstring", L.NewFunction(func(L *lua.LState) int {
		return loadChunk(L, L.CheckString(1), L.OptString(2, "<string>"))
	}))
	g.RawSetString("load", L.NewFunction(func(L *lua.LState) int {
		fn := L.CheckFunction(1)
		name := L.OptString(2, "?")
		top := L.GetTop()
		var b strings.Builder
		for {
			L.SetTop(top)
			L.Push(fn)
			L.Call(0, 1)
			ret := L.Get(-1)
			L.Pop(1)
			if ret == lua.LNil {
				break
			}
			if !lua.LVCanConvToString(ret) {
				L.Push(lua.LNil)
				L.Push(lua.LString("reader function must return a string"))
				return 2
			}
			piece := ret.String()
			if piece == "" {
				break
			}
			if b.Len()+len(piece) > maxLoadChunk {
				return refuseChunk(L, b.Len()+len(piece))
			}
			b.WriteString(piece)
		}
		return loadChunk(L, b.String(), name)
	}))
}

func loadChunk(L *lua.LState, src, name string) int {
	if len(src) > maxLoadChunk {
		return refuseChunk(L, len(src))
	}
	if lualib.TooDeep([]byte(src)) {
		L.Push(lua.LNil)
		L.Push(lua.LString(name + ": chunk has too many syntax levels"))
		return 2
	}
	fn, err := L.Load(strings.NewReader(src), name)
	if err != nil {
		L.Push(lua.LNil)
		L.Push(lua.LString(err.Error()))
		return 2
	}
	lualib.Compact(fn)
	L.Push(fn)
	return 1
}

func refuseChunk(L *lua.LState, n int) int {
	L.Push(lua.LNil)
	L.Push(lua.LString(fmt.Sprintf("chunk of %d bytes or more is larger than a script may load (%d)", n, maxLoadChunk)))
	return 2
}
