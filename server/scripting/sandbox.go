package scripting

import (
	"errors"

	lua "github.com/yuin/gopher-lua"
)

// The script sandbox keeps one script from changing what the next one runs. Redis 7.0 marks the
// global table and every library table read-only (a flag its patched Lua checks on each store);
// gopher-lua has no such flag, and a __newindex metamethod only guards keys a table does not
// hold, so here each of those tables is replaced by an empty proxy: reads fall through to the
// real table, stores into the proxy raise Redis's error, and the library functions that write
// raw (rawset, setmetatable, table.insert, table.remove, table.sort) refuse a proxy. The real
// tables stay reachable only from Go.
//
// It also keeps an error from costing more than the script did. gopher-lua builds a traceback
// for an error caught without a handler, and a traceback lists each tail call the failing frame
// made: a tail-recursive loop killed by SCRIPT KILL has made millions, and the traceback would
// hold them all at once. Protected calls here raise errors that carry none (see
// protectedCall).

const errReadonlyTable = "Attempt to modify a readonly table"

// sandbox sets up the read-only environment on a fresh state whose libraries and redis table are
// in place: it wraps the raw-writing functions, protects the library tables and the globals, and
// makes the proxy of the globals what scripts see as _G and as their environment.
func (st *State) sandbox(L *lua.LState) {
	st.guarded = map[*lua.LTable]*lua.LTable{}
	g := L.G.Global
	st.globals = g
	readonly := L.NewFunction(func(L *lua.LState) int {
		L.RaiseError(errReadonlyTable)
		return 0
	})
	for _, name := range []string{"getfenv", "setfenv", "newproxy"} { // as Redis 7.0 removes them
		g.RawSetString(name, lua.LNil)
	}
	// gopher-lua's collectgarbage collects the whole server's heap, for as long as that takes,
	// each time: a loop of them would keep every thread of the server collecting.
	g.RawSetString("collectgarbage", L.NewFunction(func(L *lua.LState) int {
		if L.OptString(1, "collect") == "count" {
			L.Push(lua.LNumber(float64(heapObjectBytes()) / 1024))
		} else {
			L.Push(lua.LNumber(0))
		}
		return 1
	}))
	boundLoaders(L, g)
	st.trampoline = L.NewFunction(st.trampolineFunc)
	g.RawSetString("pcall", L.NewFunction(st.pcall))
	g.RawSetString("xpcall", L.NewFunction(st.xpcall))
	st.refuseProxy(L, g, "rawset", "setmetatable")
	tab := g.RawGetString(lua.TabLibName).(*lua.LTable)
	st.refuseProxy(L, tab, "insert", "remove", "sort")
	st.readThrough(L, g, "rawget", "next")
	g.RawSetString("pairs", L.NewFunction(func(L *lua.LState) int {
		t := L.CheckTable(1)
		L.Push(g.RawGetString("next"))
		L.Push(t)
		L.Push(lua.LNil)
		return 3
	}))
	for _, name := range []string{lua.StringLibName, lua.MathLibName, lua.TabLibName, "redis", "bit", "cjson", "cmsgpack", "struct"} {
		g.RawSetString(name, st.protect(L, g.RawGetString(name).(*lua.LTable), readonly))
	}
	// The string library is also the metatable of every string, which getmetatable('') returns
	// and whose __index method calls go through.
	str := st.guarded[g.RawGetString(lua.StringLibName).(*lua.LTable)]
	str.RawSetString("__index", g.RawGetString(lua.StringLibName))
	str.RawSetString("__metatable", lua.LFalse)

	missing := L.NewTable()
	missing.RawSetString("__index", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError("Script attempted to access nonexistent global variable '%s'", L.CheckAny(2).String())
		return 0
	}))
	L.SetMetatable(g, missing)
	proxy := st.protect(L, g, readonly)
	g.RawSetString("_G", proxy)
	L.G.Global = proxy
	L.Env = proxy
	st.env = proxy
}

// protect returns an empty table that reads through to t and refuses stores.
func (st *State) protect(L *lua.LState, t *lua.LTable, readonly *lua.LFunction) *lua.LTable {
	mt := L.NewTable()
	mt.RawSetString("__index", t)
	mt.RawSetString("__newindex", readonly)
	mt.RawSetString("__metatable", lua.LFalse)
	proxy := L.NewTable()
	L.SetMetatable(proxy, mt)
	st.guarded[proxy] = t
	return proxy
}

// refuseProxy wraps functions of lib that store into their first argument without metamethods,
// so that they raise Redis's error on a protected table. Redis raises it from C, without the
// script's line.
func (st *State) refuseProxy(L *lua.LState, lib *lua.LTable, names ...string) {
	for _, name := range names {
		orig := lib.RawGetString(name)
		lib.RawSetString(name, L.NewFunction(func(L *lua.LState) int {
			if t, ok := L.Get(1).(*lua.LTable); ok && st.guarded[t] != nil {
				L.Error(lua.LString(errReadonlyTable), 0)
			}
			return callWith(L, orig)
		}))
	}
}

// readThrough wraps functions of lib that read their first argument raw, so that on a protected
// table they read the table it guards.
func (st *State) readThrough(L *lua.LState, lib *lua.LTable, names ...string) {
	for _, name := range names {
		orig := lib.RawGetString(name)
		lib.RawSetString(name, L.NewFunction(func(L *lua.LState) int {
			if t, ok := L.Get(1).(*lua.LTable); ok {
				if real := st.guarded[t]; real != nil {
					L.Replace(1, real)
				}
			}
			return callWith(L, orig)
		}))
	}
}

// callWith calls fn with the current function's arguments and returns all its results.
func callWith(L *lua.LState, fn lua.LValue) int {
	n := L.GetTop()
	L.Insert(fn, 1)
	L.Call(n, lua.MultRet)
	return L.GetTop()
}

// raise is the state's panic function inside protected calls (see protectedCall). It raises the
// error as gopher-lua's own does, but with no traceback for PCall to build, and it notes the
// line the error was raised on, which Redis 7.0 names in its reply ("on @user_script:N.").
func (st *State) raise(L *lua.LState) {
	for level := 0; level < 8; level++ {
		if n := lineOf(chunkText(L.Where(level))); n > 0 {
			st.line = n
			break
		}
	}
	panic(&lua.ApiError{Type: lua.ApiErrorRun, Object: L.Get(-1), StackTrace: "stack traceback:\n\t(not kept)"})
}

// protectedCall calls the function at index base of the stack with the values above it as
// arguments, leaving its results in their place, as L.PCall(n, MultRet, nil) would. gopher-lua's
// PCall builds a traceback for an error caught without a handler, and a handler is no way out:
// PCall pushes it after the error, which overflows a full registry (unpack({}, 1, 1e9)) with a
// panic nothing recovers. So the call goes through a function that replaces the state's panic
// function with raise, whose errors already carry a traceback.
func (st *State) protectedCall(L *lua.LState, base int) error {
	L.Insert(st.trampoline, base)
	return L.PCall(L.GetTop()-base, lua.MultRet, nil)
}

func (st *State) trampolineFunc(L *lua.LState) int {
	L.Panic = st.raise
	L.Call(L.GetTop()-1, lua.MultRet)
	return L.GetTop()
}

// errorValue is the Lua value of an error a protected call returned.
func errorValue(err error) lua.LValue {
	var apiErr *lua.ApiError
	if errors.As(err, &apiErr) {
		return apiErr.Object
	}
	return lua.LString(err.Error())
}

// pcall is Lua 5.1's pcall.
func (st *State) pcall(L *lua.LState) int {
	v := L.CheckAny(1)
	if v.Type() != lua.LTFunction && L.GetMetaField(v, "__call").Type() != lua.LTFunction {
		L.Push(lua.LFalse)
		L.Push(lua.LString("attempt to call a " + v.Type().String() + " value"))
		return 2
	}
	if err := st.protectedCall(L, 1); err != nil {
		L.Push(lua.LFalse)
		L.Push(errorValue(err))
		return 2
	}
	L.Insert(lua.LTrue, 1)
	return L.GetTop()
}

// xpcall is Lua 5.1's xpcall, except that the handler runs once the failed call has unwound;
// without the debug library a handler cannot tell. An error in the handler gives Lua's "error in
// error handling".
func (st *State) xpcall(L *lua.LState) int {
	fn := L.CheckFunction(1)
	handler := L.CheckFunction(2)
	top := L.GetTop()
	L.Push(fn)
	err := st.protectedCall(L, top+1)
	if err == nil {
		L.Insert(lua.LTrue, top+1)
		return L.GetTop() - top
	}
	L.SetTop(top)
	L.Push(handler)
	L.Push(errorValue(err))
	var res lua.LValue = lua.LString("error in error handling")
	if st.protectedCall(L, top+1) == nil {
		res = lua.LNil
		if L.GetTop() > top {
			res = L.Get(top + 1)
		}
	}
	L.SetTop(top)
	L.Push(lua.LFalse)
	L.Push(res)
	return 2
}
