package scripting

import (
	"bytes"
	"slices"
	"sort"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/iocache/iocache/server/lualib"
	"github.com/iocache/iocache/server/resp"
)

// Redis 7.0 functions, on the State EVAL's scripts use. A library is Lua code under a "#!lua
// name=<library>" line; loading it runs its top level once, where only
// redis.register_function, redis.log and redis's constants exist (as in Redis, not even the
// string library), and keeps the functions it registers. Each library's code gets an
// environment of its own: while it loads, that restricted one; afterwards the sandboxed globals
// scripts see, without KEYS and ARGV, which functions get as their arguments instead. Stores
// into it raise Redis's read-only error. The engine keeps the Registry of what is loaded, saves
// the libraries' code in RDB files and FUNCTION DUMP payloads (package rdb has the format), and
// runs the commands.

// functionFlags are the flags a function may declare.
var functionFlags = map[string]bool{"no-writes": true, "allow-oom": true, "allow-stale": true, "no-cluster": true, "allow-cross-slot-keys": true}

// Library is a FUNCTION library: its name and code as loaded, and the functions its code
// registered.
type Library struct {
	Name, Code string
	Functions  []*Function // in the order they were registered
}

// Function is a function a library registered with redis.register_function.
type Function struct {
	Name    string
	Library *Library
	Flags   []string // as registered, in that order, which FUNCTION LIST keeps

	description lua.LValue // a string, or nil
	callback    *lua.LFunction
}

// Description is the description the function was registered with, if any.
func (f *Function) Description() (string, bool) {
	if f.description == lua.LNil {
		return "", false
	}
	return f.description.String(), true
}

// NoWrites says whether the function declared no-writes: it may run from FCALL_RO and during
// CLIENT PAUSE WRITE, and its redis.call may not write.
func (f *Function) NoWrites() bool { return slices.Contains(f.Flags, "no-writes") }

// AllowOOM says whether the function declared allow-oom: it runs over maxmemory, and so do its
// writes.
func (f *Function) AllowOOM() bool { return slices.Contains(f.Flags, "allow-oom") }

// Registry holds the loaded libraries and, by name, their functions. Function names are
// case-insensitive, as in Redis 7.0 (functionDictType compares them without case); library
// names are not. The zero Registry is empty and ready to use. A Registry is a value whose maps
// a copy shares: FUNCTION FLUSH replaces it with a zero one, RESTORE with what Restore built.
type Registry struct {
	libs  map[string]*Library
	funcs map[string]*Function // by funcKey
}

// funcKey is the key of a function name in funcs.
func funcKey(name string) string { return strings.ToLower(name) }

// Add installs a library, replacing one of the same name. The caller has checked Conflicts.
func (r *Registry) Add(lib *Library) {
	if r.libs == nil {
		r.libs, r.funcs = map[string]*Library{}, map[string]*Function{}
	}
	r.Remove(lib.Name)
	r.libs[lib.Name] = lib
	for _, f := range lib.Functions {
		r.funcs[funcKey(f.Name)] = f
	}
}

// Remove uninstalls the library of that name and its functions, and says whether there was one.
func (r *Registry) Remove(name string) bool {
	old := r.libs[name]
	if old == nil {
		return false
	}
	for _, f := range old.Functions {
		delete(r.funcs, funcKey(f.Name))
	}
	delete(r.libs, name)
	return true
}

// Library is the library of that name, or nil.
func (r *Registry) Library(name string) *Library { return r.libs[name] }

// Function is the function of that name, in any case, or nil.
func (r *Registry) Function(name string) *Function { return r.funcs[funcKey(name)] }

// Bytes estimates the memory the libraries hold: their code and names, and the compiled
// functions (INFO memory's used_memory_functions and used_memory_vm_functions).
func (r *Registry) Bytes() (codeBytes, compiledBytes int64) {
	seen := map[*lua.FunctionProto]bool{}
	for _, lib := range r.libs {
		codeBytes += int64(len(lib.Name) + len(lib.Code))
		for _, f := range lib.Functions {
			codeBytes += int64(len(f.Name)) + 64 // the Function and its map entry
			if f.callback != nil && f.callback.Proto != nil && !seen[f.callback.Proto] {
				seen[f.callback.Proto] = true
				compiledBytes += lualib.ProtoBytes(f.callback)
			}
		}
	}
	return codeBytes, compiledBytes
}

// Len is how many libraries and functions are loaded (FUNCTION STATS).
func (r *Registry) Len() (libraries, functions int) { return len(r.libs), len(r.funcs) }

// Libraries are the loaded libraries in name order, as FUNCTION LIST, DUMP and RDB files have
// them.
func (r *Registry) Libraries() []*Library {
	out := make([]*Library, 0, len(r.libs))
	for _, l := range r.libs {
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// Conflicts is the error reply for a function of lib that another library already has, or "".
func (r *Registry) Conflicts(lib *Library) string {
	for _, f := range lib.Functions {
		if other := r.funcs[funcKey(f.Name)]; other != nil && other.Library.Name != lib.Name {
			return "ERR Function " + f.Name + " already exists"
		}
	}
	return ""
}

// RestorePolicy is what FUNCTION RESTORE does with the libraries already loaded.
type RestorePolicy int

const (
	// RestoreAppend adds the restored libraries; one with a loaded library's name fails it.
	RestoreAppend RestorePolicy = iota
	// RestoreReplace adds them, replacing loaded libraries of the same names.
	RestoreReplace
	// RestoreFlush drops the loaded libraries first.
	RestoreFlush
)

// Restore is the registry FUNCTION RESTORE leaves: r with libs added as policy says, or the
// error reply for a collision (a library of the same name under RestoreAppend, a function
// another library has). r itself is left as it is, so that a restore happens whole or not at
// all.
func (r *Registry) Restore(libs []*Library, policy RestorePolicy) (Registry, string) {
	var next Registry
	if policy != RestoreFlush {
		for _, lib := range r.libs {
			next.Add(lib)
		}
	}
	for _, lib := range libs {
		if next.libs[lib.Name] != nil && policy == RestoreAppend {
			return Registry{}, "ERR Library " + lib.Name + " already exists"
		}
		if policy == RestoreReplace {
			next.Remove(lib.Name)
		}
		if errText := next.Conflicts(lib); errText != "" {
			return Registry{}, errText
		}
		next.Add(lib)
	}
	return next, ""
}

// validFunctionName is Redis's rule for library and function names.
func validFunctionName(name string) bool {
	if name == "" {
		return false
	}
	for i := 0; i < len(name); i++ {
		ch := name[i]
		if !(ch >= 'a' && ch <= 'z' || ch >= 'A' && ch <= 'Z' || ch >= '0' && ch <= '9' || ch == '_') {
			return false
		}
	}
	return true
}

const errFunctionName = "Library names can only contain letters, numbers, or underscores(_) and must be at least one character long"

// LibraryName reads the name a library's code declares on its "#!lua name=<library>" line
// (FUNCTION LOAD looks for a library of that name before it loads the code), or the error
// reply for a line that declares none.
func LibraryName(code []byte) (name, errReply string) {
	name, _, errReply = parseLibraryHeader(code)
	return name, errReply
}

// parseLibraryHeader reads the "#!lua name=<library>" line and returns the name and the code
// with that line blanked, so that errors keep their line numbers.
func parseLibraryHeader(code []byte) (string, []byte, string) {
	if !bytes.HasPrefix(code, []byte("#!")) {
		return "", nil, "ERR Missing library metadata"
	}
	nl := bytes.IndexByte(code, '\n')
	if nl < 0 {
		return "", nil, "ERR Invalid library metadata"
	}
	// Split as Redis splits it (sdssplitargs): name="foo" is foo. SplitArgs works in place.
	args, ok := resp.SplitArgs(bytes.Clone(code[2:nl]), nil)
	if !ok || len(args) == 0 {
		return "", nil, "ERR Invalid library metadata"
	}
	parts := make([]string, len(args))
	for i, a := range args {
		parts[i] = string(a)
	}
	name, named := "", false
	for _, p := range parts[1:] {
		if len(p) < 5 || !strings.EqualFold(p[:5], "name=") {
			return "", nil, "ERR Invalid metadata value given: " + p
		}
		v := p[5:]
		if named {
			return "", nil, "ERR Invalid metadata value, name argument was given multiple times"
		}
		name, named = v, true
	}
	if !named {
		return "", nil, "ERR Library name was not given"
	}
	if !strings.EqualFold(parts[0], "lua") {
		return "", nil, "ERR Engine '" + parts[0] + "' not found"
	}
	if !validFunctionName(name) {
		return "", nil, "ERR " + errFunctionName
	}
	return name, code[nl:], ""
}

// LoadLibrary compiles a library's code and runs its top level, within the host's limits, and
// returns the library it registers, or the error reply. It does not install the library:
// that is the Registry's (Add), once the caller has checked for collisions.
func (st *State) LoadLibrary(code []byte) (*Library, string) {
	name, body, errText := parseLibraryHeader(code)
	if errText != "" {
		return nil, errText
	}
	L := st.l
	if lualib.TooDeep(body) {
		return nil, "ERR Error compiling function: user_function:1: chunk has too many syntax levels"
	}
	chunk, err := L.Load(bytes.NewReader(body), functionChunk)
	lualib.Compact(chunk)
	if err != nil {
		return nil, "ERR Error compiling function: " + luaErrorText(compileErrorText(err, body))
	}
	lib := &Library{Name: name, Code: string(code)}
	env, setIndex := st.libraryEnv(L)
	setIndex(st.loadingGlobals(L, lib))
	chunk.Env = env
	// st.name stays the last script's or function's: a library's top level stopped at its
	// memory limit is answered with that name, as it always was here.
	st.begin("user_function", true)
	defer st.end()
	base := L.GetTop() + 1
	L.Push(chunk)
	err = st.protectedCall(L, base)
	L.SetTop(base - 1)
	if why := st.guard.stopped(); why != nil {
		return nil, st.stoppedReply(why)
	}
	if err != nil {
		msg := luaErrorText(err)
		if v := errorValue(err); isErrTable(v) {
			msg = strings.TrimPrefix(v.(*lua.LTable).RawGetString("err").String(), "ERR ")
		}
		return nil, "ERR Error registering functions: ERR " + msg
	}
	if len(lib.Functions) == 0 {
		return nil, "ERR No functions registered"
	}
	setIndex(st.functionGlobals(L))
	return lib, ""
}

// libraryEnv is a library's environment: an empty table whose reads go where setIndex says and
// whose stores raise Redis's read-only error.
func (st *State) libraryEnv(L *lua.LState) (*lua.LTable, func(lua.LValue)) {
	env, mt := L.NewTable(), L.NewTable()
	mt.RawSetString("__newindex", L.NewFunction(func(L *lua.LState) int {
		L.RaiseError(errReadonlyTable)
		return 0
	}))
	mt.RawSetString("__metatable", lua.LFalse)
	L.SetMetatable(env, mt)
	return env, func(index lua.LValue) { mt.RawSetString("__index", index) }
}

// loadingGlobals are what a library's top level sees: redis with register_function, log and the
// constants, and nothing else.
func (st *State) loadingGlobals(L *lua.LState, lib *Library) *lua.LTable {
	missing := func(L *lua.LState) int {
		L.RaiseError("Script attempted to access nonexistent global variable '%s'", L.CheckAny(2).String())
		return 0
	}
	readonly := func(L *lua.LState) int {
		L.RaiseError(errReadonlyTable)
		return 0
	}
	api := L.NewTable()
	api.RawSetString("register_function", L.NewFunction(func(L *lua.LState) int { return st.registerFunction(L, lib) }))
	full := st.guarded[st.globals.RawGetString("redis").(*lua.LTable)]
	api.RawSetString("log", full.RawGetString("log"))
	full.ForEach(func(k, v lua.LValue) {
		if name := k.String(); strings.HasPrefix(name, "LOG_") || strings.HasPrefix(name, "REDIS_VERSION") {
			api.RawSet(k, v)
		}
	})
	apiMeta := L.NewTable()
	apiMeta.RawSetString("__index", L.NewFunction(missing))
	apiMeta.RawSetString("__newindex", L.NewFunction(readonly))
	L.SetMetatable(api, apiMeta)
	g := L.NewTable()
	g.RawSetString("redis", api)
	gMeta := L.NewTable()
	gMeta.RawSetString("__index", L.NewFunction(missing))
	L.SetMetatable(g, gMeta)
	return g
}

// functionGlobals are what functions see when they run: the scripts' globals, less KEYS and ARGV.
func (st *State) functionGlobals(L *lua.LState) *lua.LFunction {
	return L.NewFunction(func(L *lua.LState) int {
		k := L.CheckAny(2)
		if name, ok := k.(lua.LString); ok && (name == "KEYS" || name == "ARGV") {
			L.RaiseError("Script attempted to access nonexistent global variable '%s'", name)
		}
		L.Push(L.GetField(st.env, k.String()))
		return 1
	})
}

// registerFunction is redis.register_function(name, callback) or
// redis.register_function{function_name=, callback=, flags=, description=}.
func (st *State) registerFunction(L *lua.LState, lib *Library) int {
	fail := func(msg string) int {
		L.Error(lua.LString(msg), 0)
		return 0
	}
	f := &Function{Library: lib, description: lua.LNil}
	var nameV, callbackV lua.LValue
	switch L.GetTop() {
	case 1:
		t, ok := L.Get(1).(*lua.LTable)
		if !ok {
			return fail("calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments).")
		}
		var bad string
		t.ForEach(func(k, v lua.LValue) {
			switch k.String() {
			case "function_name":
				nameV = v
			case "callback":
				callbackV = v
			case "description":
				f.description = v
			case "flags":
				ft, ok := v.(*lua.LTable)
				if !ok {
					bad = "flags argument to redis.register_function must be a table representing function flags"
					return
				}
				ft.ForEach(func(_, flag lua.LValue) {
					if s, ok := flag.(lua.LString); ok && functionFlags[string(s)] {
						f.Flags = append(f.Flags, string(s))
					} else if bad == "" {
						bad = "unknown flag given"
					}
				})
			default:
				if bad == "" {
					bad = "unknown argument given to redis.register_function"
				}
			}
		})
		if bad != "" {
			return fail(bad)
		}
		if f.description != lua.LNil && f.description.Type() != lua.LTString {
			return fail("description argument given to redis.register_function must be a string")
		}
	case 2:
		nameV, callbackV = L.Get(1), L.Get(2)
	default:
		return fail("wrong number of arguments to redis.register_function")
	}
	if nameV == nil || (nameV.Type() != lua.LTString && nameV.Type() != lua.LTNumber) {
		return fail("function_name argument given to redis.register_function must be a string")
	}
	cb, ok := callbackV.(*lua.LFunction)
	if !ok {
		return fail("callback argument given to redis.register_function must be a function")
	}
	f.Name, f.callback = nameV.String(), cb
	if !validFunctionName(f.Name) {
		return fail(errFunctionName)
	}
	for _, other := range lib.Functions {
		if other.Name == f.Name {
			return fail("Function already exists in the library")
		}
	}
	lib.Functions = append(lib.Functions, f)
	return 0
}
