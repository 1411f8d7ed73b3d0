package engine

import (
	"bytes"
	"sort"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/iocache/iocache/server/glob"
	"github.com/iocache/iocache/server/lualib"
	"github.com/iocache/iocache/server/rdb"
	"github.com/iocache/iocache/server/resp"
)

// Redis 7.0 functions: FUNCTION LOAD|LIST|DELETE|FLUSH|DUMP|RESTORE|STATS|KILL and FCALL,
// FCALL_RO, on the Lua state EVAL uses (script.go). A library is Lua code under a "#!lua
// name=<library>" line; loading it runs its top level once, where only redis.register_function,
// redis.log and redis's constants exist (as in Redis, not even the string library), and keeps
// the functions it registers. Each library's code gets an environment of its own: while it loads,
// that restricted one; afterwards the sandboxed globals scripts see, without KEYS and ARGV, which
// functions get as their arguments instead. Stores into it raise Redis's read-only error.
// Libraries are saved in RDB files (persist.go) after the aux fields, as Redis saves them.

// functionFlags are the flags a function may declare.
var functionFlags = map[string]bool{"no-writes": true, "allow-oom": true, "allow-stale": true, "no-cluster": true, "allow-cross-slot-keys": true}

type functionLibrary struct {
	name, code string
	functions  []*scriptFunction // in the order they were registered
}

type scriptFunction struct {
	name        string
	lib         *functionLibrary
	callback    *lua.LFunction
	flags       []string
	description lua.LValue // a string, or nil
}

func (f *scriptFunction) noWrites() bool { return hasString(f.flags, "no-writes") }

// functionRegistry holds the loaded libraries and, by name, their functions. Function names are
// case-insensitive, as in Redis 7.0 (functionDictType compares them without case): funcs is keyed
// by funcKey. Library names are not.
type functionRegistry struct {
	libs  map[string]*functionLibrary
	funcs map[string]*scriptFunction
}

// funcKey is the key of a function name in funcs.
func funcKey(name string) string { return strings.ToLower(name) }

func (r *functionRegistry) init() {
	if r.libs == nil {
		r.libs, r.funcs = map[string]*functionLibrary{}, map[string]*scriptFunction{}
	}
}

// add installs a library, replacing one of the same name.
func (r *functionRegistry) add(lib *functionLibrary) {
	r.remove(lib.name)
	r.libs[lib.name] = lib
	for _, f := range lib.functions {
		r.funcs[funcKey(f.name)] = f
	}
}

func (r *functionRegistry) remove(name string) bool {
	old := r.libs[name]
	if old == nil {
		return false
	}
	for _, f := range old.functions {
		delete(r.funcs, funcKey(f.name))
	}
	delete(r.libs, name)
	return true
}

func (r *functionRegistry) sortedLibraries() []*functionLibrary {
	out := make([]*functionLibrary, 0, len(r.libs))
	for _, l := range r.libs {
		out = append(out, l)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
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

// loadLibrary compiles and runs a library's code and returns the library it registers, or the
// error reply.
func (s *Server) loadLibrary(code []byte) (*functionLibrary, string) {
	name, body, errText := parseLibraryHeader(code)
	if errText != "" {
		return nil, errText
	}
	sl := s.scriptHost()
	L := sl.L
	if lualib.TooDeep(body) {
		return nil, "ERR Error compiling function: user_function:1: chunk has too many syntax levels"
	}
	chunk, err := L.Load(bytes.NewReader(body), functionChunk)
	lualib.Compact(chunk)
	if err != nil {
		return nil, "ERR Error compiling function: " + luaErrorText(compileError(err, body))
	}
	lib := &functionLibrary{name: name, code: string(code)}
	env, setIndex := sl.libraryEnv(L)
	setIndex(sl.loadingGlobals(L, lib))
	chunk.Env = env
	guard, stop := s.guardScript()
	defer stop()
	sl.guard = guard
	defer func() { sl.guard = nil }()
	L.SetContext(guard.ctx)
	defer L.RemoveContext()
	sl.chunk, sl.line = "user_function", 0
	base := L.GetTop() + 1
	L.Push(chunk)
	err = sl.protectedCall(L, base)
	L.SetTop(base - 1)
	if why := guard.stopped(); why != nil {
		return nil, sl.stoppedReply(why, guard)
	}
	if err != nil {
		msg := luaErrorText(err)
		if v := errorValue(err); isErrTable(v) {
			msg = strings.TrimPrefix(v.(*lua.LTable).RawGetString("err").String(), "ERR ")
		}
		return nil, "ERR Error registering functions: ERR " + msg
	}
	if len(lib.functions) == 0 {
		return nil, "ERR No functions registered"
	}
	setIndex(sl.functionGlobals(L))
	return lib, ""
}

// libraryEnv is a library's environment: an empty table whose reads go where setIndex says and
// whose stores raise Redis's read-only error.
func (sl *scriptHost) libraryEnv(L *lua.LState) (*lua.LTable, func(lua.LValue)) {
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
func (sl *scriptHost) loadingGlobals(L *lua.LState, lib *functionLibrary) *lua.LTable {
	missing := func(L *lua.LState) int {
		L.RaiseError("Script attempted to access nonexistent global variable '%s'", L.CheckAny(2).String())
		return 0
	}
	readonly := func(L *lua.LState) int {
		L.RaiseError(errReadonlyTable)
		return 0
	}
	api := L.NewTable()
	api.RawSetString("register_function", L.NewFunction(func(L *lua.LState) int { return sl.registerFunction(L, lib) }))
	full := sl.guarded[sl.globals.RawGetString("redis").(*lua.LTable)]
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
func (sl *scriptHost) functionGlobals(L *lua.LState) *lua.LFunction {
	return L.NewFunction(func(L *lua.LState) int {
		k := L.CheckAny(2)
		if name, ok := k.(lua.LString); ok && (name == "KEYS" || name == "ARGV") {
			L.RaiseError("Script attempted to access nonexistent global variable '%s'", name)
		}
		L.Push(L.GetField(sl.env, k.String()))
		return 1
	})
}

// registerFunction is redis.register_function(name, callback) or
// redis.register_function{function_name=, callback=, flags=, description=}.
func (sl *scriptHost) registerFunction(L *lua.LState, lib *functionLibrary) int {
	fail := func(msg string) int {
		L.Error(lua.LString(msg), 0)
		return 0
	}
	f := &scriptFunction{lib: lib, description: lua.LNil}
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
						f.flags = append(f.flags, string(s))
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
	f.name, f.callback = nameV.String(), cb
	if !validFunctionName(f.name) {
		return fail(errFunctionName)
	}
	for _, other := range lib.functions {
		if other.name == f.name {
			return fail("Function already exists in the library")
		}
	}
	lib.functions = append(lib.functions, f)
	return 0
}

func cmdFunction(s *Server, c *client, argv [][]byte) {
	s.functions.init()
	sub := argv[1]
	switch {
	case equalFold(sub, "load") && len(argv) >= 3:
		s.functionLoad(c, argv[2:])
	case equalFold(sub, "list"):
		s.functionList(c, argv[2:])
	case equalFold(sub, "delete") && len(argv) == 3:
		if !s.functions.remove(string(argv[2])) {
			s.addError(c, "ERR Library not found")
			return
		}
		c.w.OK()
	case equalFold(sub, "flush") && len(argv) <= 3:
		if len(argv) == 3 && !equalFold(argv[2], "async") && !equalFold(argv[2], "sync") {
			s.addError(c, "ERR FUNCTION FLUSH only supports SYNC|ASYNC option")
			return
		}
		s.functions = functionRegistry{}
		c.w.OK()
	case equalFold(sub, "stats") && len(argv) == 2:
		c.w.Map(2)
		c.w.BulkString("running_script")
		c.w.Null() // a function runs on the main thread: none is running while this answers
		c.w.BulkString("engines")
		c.w.Map(1)
		c.w.BulkString("LUA")
		c.w.Map(2)
		c.w.BulkString("libraries_count")
		c.w.Int(int64(len(s.functions.libs)))
		c.w.BulkString("functions_count")
		c.w.Int(int64(len(s.functions.funcs)))
	case equalFold(sub, "kill") && len(argv) == 2:
		s.addError(c, "NOTBUSY No scripts in execution right now.")
	case equalFold(sub, "dump") && len(argv) == 2:
		c.w.Bulk(rdb.DumpFunctions(s.functionCodes(), s.rdbOptions()))
	case equalFold(sub, "restore") && (len(argv) == 3 || len(argv) == 4):
		s.functionRestore(c, argv[2:])
	case equalFold(sub, "help") && len(argv) == 2:
		writeHelp(c, "FUNCTION", functionHelp)
	default:
		s.subcommandError(c, argv)
	}
}

// functionLoad is FUNCTION LOAD [REPLACE] code.
func (s *Server) functionLoad(c *client, args [][]byte) {
	replace := false
	if len(args) == 2 && equalFold(args[0], "replace") {
		replace, args = true, args[1:]
	}
	if len(args) != 1 {
		s.addError(c, "ERR Unknown option given: "+string(args[0]))
		return
	}
	if name, _, errText := parseLibraryHeader(args[0]); errText == "" && !replace && s.functions.libs[name] != nil {
		s.addError(c, "ERR Library '"+name+"' already exists")
		return
	}
	lib, errText := s.loadLibrary(args[0])
	if errText != "" {
		s.addError(c, errText)
		return
	}
	if errText := s.functions.conflicts(lib); errText != "" {
		s.addError(c, errText)
		return
	}
	s.functions.add(lib)
	c.w.BulkString(lib.name)
}

// conflicts reports a function of lib that another library already has.
func (r *functionRegistry) conflicts(lib *functionLibrary) string {
	for _, f := range lib.functions {
		if other := r.funcs[funcKey(f.name)]; other != nil && other.lib.name != lib.name {
			return "ERR Function " + f.name + " already exists"
		}
	}
	return ""
}

// functionList is FUNCTION LIST [LIBRARYNAME pattern] [WITHCODE].
func (s *Server) functionList(c *client, args [][]byte) {
	withCode := false
	var pattern []byte
	for i := 0; i < len(args); i++ {
		switch {
		case equalFold(args[i], "withcode") && !withCode:
			withCode = true
		case equalFold(args[i], "libraryname") && pattern == nil:
			if i+1 >= len(args) {
				s.addError(c, "ERR library name argument was not given")
				return
			}
			pattern = args[i+1]
			i++
		default:
			s.addError(c, "ERR Unknown argument "+string(args[i]))
			return
		}
	}
	var libs []*functionLibrary
	for _, lib := range s.functions.sortedLibraries() {
		if pattern == nil || glob.Match(pattern, []byte(lib.name), false) {
			libs = append(libs, lib)
		}
	}
	c.w.Array(len(libs))
	for _, lib := range libs {
		if withCode {
			c.w.Map(4)
		} else {
			c.w.Map(3)
		}
		c.w.BulkString("library_name")
		c.w.BulkString(lib.name)
		c.w.BulkString("engine")
		c.w.BulkString("LUA")
		c.w.BulkString("functions")
		c.w.Array(len(lib.functions))
		for _, f := range lib.functions {
			c.w.Map(3)
			c.w.BulkString("name")
			c.w.BulkString(f.name)
			c.w.BulkString("description")
			if f.description == lua.LNil {
				c.w.Null()
			} else {
				c.w.BulkString(f.description.String())
			}
			c.w.BulkString("flags")
			c.w.Set(len(f.flags))
			for _, flag := range f.flags {
				c.w.Simple(flag)
			}
		}
		if withCode {
			c.w.BulkString("library_code")
			c.w.BulkString(lib.code)
		}
	}
}

// functionRestore is FUNCTION RESTORE payload [FLUSH|APPEND|REPLACE]: every library in the
// payload loads, or none does.
func (s *Server) functionRestore(c *client, args [][]byte) {
	policy := "append"
	if len(args) == 2 {
		policy = lowerASCII(string(args[1]))
		if policy != "flush" && policy != "append" && policy != "replace" {
			s.addError(c, "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.")
			return
		}
	}
	codes, err := rdb.RestoreFunctions(args[0])
	if err == rdb.ErrDumpPayload {
		s.addError(c, "ERR DUMP payload version or checksum are wrong")
		return
	}
	if err != nil {
		s.addError(c, "ERR given type is not a function")
		return
	}
	var loaded []*functionLibrary
	for _, code := range codes {
		lib, errText := s.loadLibrary(code)
		if errText != "" {
			s.addError(c, errText)
			return
		}
		loaded = append(loaded, lib)
	}
	next := functionRegistry{}
	next.init()
	if policy != "flush" {
		for _, lib := range s.functions.libs {
			next.add(lib)
		}
	}
	for _, lib := range loaded {
		if next.libs[lib.name] != nil && policy == "append" {
			s.addError(c, "ERR Library "+lib.name+" already exists")
			return
		}
		if policy == "replace" {
			next.remove(lib.name)
		}
		if errText := next.conflicts(lib); errText != "" {
			s.addError(c, errText)
			return
		}
		next.add(lib)
	}
	s.functions = next
	c.w.OK()
}

// pausedFunction reports whether CLIENT PAUSE WRITE must hold this FCALL: a function may write
// unless it declares no-writes; an unknown one is held and answers once the pause ends.
func (s *Server) pausedFunction(argv [][]byte) bool {
	f := s.functions.funcs[funcKey(string(argv[1]))]
	return f == nil || !f.noWrites()
}

func cmdFCall(s *Server, c *client, argv [][]byte)   { fcallGeneric(s, c, argv, false) }
func cmdFCallRO(s *Server, c *client, argv [][]byte) { fcallGeneric(s, c, argv, true) }

// fcallGeneric is FCALL and FCALL_RO function numkeys [key ...] [arg ...].
func fcallGeneric(s *Server, c *client, argv [][]byte, readOnly bool) {
	// FCALL is flagged skip_monitor and shown here, before the commands its function runs, as
	// Redis's fcallCommandGeneric does (an unknown function included).
	if len(s.pubsub.monitors) > 0 {
		s.feedMonitors(c, argv)
	}
	f := s.functions.funcs[funcKey(string(argv[1]))]
	if f == nil {
		s.addError(c, "ERR Function not found")
		return
	}
	numKeys, ok := parseInt(argv[2])
	switch {
	case !ok:
		s.addError(c, "ERR Bad number of keys provided")
		return
	case numKeys > int64(len(argv)-3):
		s.addError(c, "ERR Number of keys can't be greater than number of args")
		return
	case numKeys < 0:
		s.addError(c, "ERR Number of keys can't be negative")
		return
	}
	if readOnly && !f.noWrites() {
		s.addError(c, "ERR Can not execute a script with write flag using *_ro command.")
		return
	}
	// As for a script with a shebang: one that may write and does not allow OOM is refused as a
	// whole over maxmemory.
	if !f.noWrites() && !hasString(f.flags, "allow-oom") && s.cfg.MaxMemory > 0 && !s.freeMemoryIfNeeded() {
		s.addError(c, "OOM command not allowed when used memory > 'maxmemory'.")
		return
	}
	sl := s.scriptHost()
	L := sl.L
	sl.sha, sl.line, sl.readOnly, sl.chunk = f.name, 0, readOnly || f.noWrites(), "user_function"
	sl.sc.db = c.db
	sl.sc.user, sl.caller = c.user, c // the function's commands run as the caller's user
	sl.callerKeys = argv[3 : 3+numKeys]
	sl.sc.scriptAllowOOM = hasString(f.flags, "allow-oom")
	sl.sc.w.RESP3 = false
	guard, stop := s.guardScript()
	defer stop()
	sl.guard = guard
	defer func() { sl.guard = nil }()
	L.SetContext(guard.ctx)
	defer L.RemoveContext()
	base := L.GetTop() + 1
	L.Push(f.callback)
	L.Push(luaStrings(L, argv[3:3+numKeys]))
	L.Push(luaStrings(L, argv[3+numKeys:]))
	err := sl.protectedCall(L, base)
	var ret lua.LValue = lua.LNil
	if err == nil && L.GetTop() >= base {
		ret = L.Get(base)
	}
	L.SetTop(base - 1)
	if why := guard.stopped(); why != nil {
		s.addError(c, sl.stoppedReply(why, guard))
		return
	}
	if err != nil {
		s.addError(c, oneLine(sl.errorReply(err), true))
		return
	}
	s.luaToReply(c, ret)
}

var functionHelp = []string{
	"LOAD [REPLACE] <FUNCTION CODE>", "    Create a new library with the given library name and code.",
	"DELETE <LIBRARY NAME>", "    Delete the given library.",
	"LIST [LIBRARYNAME PATTERN] [WITHCODE]", "    Return general information on all the libraries:",
	"    * Library name", "    * The engine used to run the Library", "    * Library description", "    * Functions list",
	"    * Library code (if WITHCODE is given)",
	"    It also possible to get only function that matches a pattern using LIBRARYNAME argument.",
	"STATS", "    Return information about the current function running:", "    * Function name",
	"    * Command used to run the function", "    * Duration in MS that the function is running",
	"    If no function is running, return nil", "    In addition, returns a list of available engines.",
	"KILL", "    Kill the current running function.",
	"FLUSH [ASYNC|SYNC]", "    Delete all the libraries.",
	"    When called without the optional mode argument, the behavior is determined by the",
	"    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
	"    * ASYNC: Asynchronously flush the libraries.", "    * SYNC: Synchronously flush the libraries.",
	"DUMP", "    Return a serialized payload representing the current libraries, can be restored using FUNCTION RESTORE command",
	"RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
	"    Restore the libraries represented by the given payload, it is possible to give a restore policy to",
	"    control how to handle existing libraries (default APPEND):", "    * FLUSH: delete all existing libraries.",
	"    * APPEND: appends the restored libraries to the existing libraries. On collision, abort.",
	"    * REPLACE: appends the restored libraries to the existing libraries, On collision, replace the old",
	"      libraries with the new libraries (notice that even on this option there is a chance of failure",
	"      in case of functions name collision with another library).",
}

// functionCommands registers this file's commands (see table.go).
var functionCommands = []commandSpec{
	{"function", cmdFunction, -2, cmdNoScript, 0, 0, 0, "scripting", "A container for function commands."},
	{"fcall", cmdFCall, -3, cmdNoScript | cmdSkipMonitor | cmdMayReplicate | cmdStale, 0, 0, 0, "scripting", "Invokes a function."},
	{"fcall_ro", cmdFCallRO, -3, cmdNoScript | cmdSkipMonitor | cmdStale | cmdReadonly, 0, 0, 0, "scripting", "Invokes a read-only function."},
}
