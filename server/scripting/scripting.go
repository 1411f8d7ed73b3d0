package scripting

import (
	"container/list"
	"strconv"
	"strings"
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/iocache/iocache/server/lualib"
)

// Host is the server as scripts reach it: the commands redis.call runs, ACL, the log, the
// limits and a thread for slow work. The engine implements it; a test can fake it. Its methods
// are called on the goroutine that runs the script.
type Host interface {
	// Call runs argv for redis.call and redis.pcall, as the script's client and user, and
	// returns the command's reply, in RESP3 when resp3 (the script called redis.setresp(3)),
	// else RESP2. The reply is read before the next Call, which may reuse its bytes. A command
	// the script may not run (unknown, of the wrong arity, not allowed from scripts, a write in
	// a read-only script, denied by ACL) is not run: refused is the error reply the script gets
	// in its place.
	Call(argv [][]byte, resp3 bool) (reply []byte, refused string)
	// MayCall is redis.acl_check_cmd: whether the script's user may run argv, keys and channels
	// included, as ACL decides it; refused is the error to raise instead (an unknown command).
	MayCall(argv [][]byte) (allowed bool, refused string)
	// Log writes a line of redis.log to the server's log.
	Log(level LogLevel, msg string)
	// CountError is told of each error reply WriteReply writes, nested ones included, so that
	// the server counts them (INFO errorstats) as it counts its commands' own.
	CountError(msg string)
	// Limits are the server's limits as they are now. A run reads them as it starts, and the
	// string functions each time they build a string.
	Limits() Limits
	// Background runs job off the goroutine that runs scripts (the engine's bio thread).
	Background(job func())
	// Busy is called while a script or function runs past Limits.Time (busy-reply-threshold),
	// every millisecond or so, between two of its instructions, as Redis's Lua hook calls
	// processEventsWhileBlocked: the host serves its other clients meanwhile (they get BUSY, or
	// run SCRIPT KILL, which calls Kill). A library's top level never calls it.
	Busy()
}

// Limits bound what one run may cost (limits.go applies them).
type Limits struct {
	// Time is busy-reply-threshold: a run still going after it goes on, and calls Host.Busy
	// until it ends. 0 is none.
	Time time.Duration
	// MaxBulkLen is proto-max-bulk-len: the longest string a library function builds in one
	// step. A run's memory budget is twice it.
	MaxBulkLen int64
}

// LogLevel is the level of a redis.log line: its redis.LOG_* constant.
type LogLevel int

// The levels of redis.LOG_DEBUG, LOG_VERBOSE, LOG_NOTICE and LOG_WARNING.
const (
	LogDebug LogLevel = iota
	LogVerbose
	LogNotice
	LogWarning
)

// State is the Lua interpreter every script and function runs in, the scripts compiled into it
// (the script cache) and the running code's context. Scripts run on the server's main thread
// like any command, so each is atomic; a State is used from that one goroutine, one run at a
// time. Closing it (SCRIPT FLUSH) drops the cache with it.
//
// The interpreter is gopher-lua (Lua 5.1, the version Redis embeds), opened with the base,
// table, string and math libraries, and Redis's bit, cjson, cmsgpack and struct libraries
// (package lualib, which also has Lua 5.1's pattern matching): no os, io or package, so a
// script cannot reach the file system. sandbox.go keeps one script from changing what the
// next one runs, limits.go bounds what one may cost.
type State struct {
	l       *lua.LState
	host    Host
	scripts map[string]Script // by lower-case SHA1 of the body
	// codeBytes and entryBytes are the scripts' compiled code and their cache entries with
	// their bodies (CacheStats).
	codeBytes, entryBytes int64
	// evalOnly and evalLRU are the scripts only EVAL loaded, least recently used first; evicted
	// counts those dropped past maxEvalScripts (cache.go).
	evalOnly map[string]*list.Element
	evalLRU  *list.List
	evicted  int64

	// The running code: the name errors give (a script's SHA1 or a function's name), its chunk
	// ("user_script" or "user_function"), the script line of the last redis.call (or of the
	// error), whether it chose RESP3 (redis.setresp), and its guard. resp3 outlives the run:
	// WriteReply reads it once the script has returned.
	name  string
	chunk string
	line  int
	resp3 bool
	guard *guard

	globals    *lua.LTable                 // the global table behind the read-only proxy scripts see
	env        *lua.LTable                 // that proxy
	trampoline *lua.LFunction              // see protectedCall
	guarded    map[*lua.LTable]*lua.LTable // each read-only proxy and the table it guards
}

// New opens a State whose scripts reach the server through host.
func New(host Host) *State {
	// The data stack grows on demand up to luaStackMax slots: at gopher-lua's fixed 5,120, a
	// redis.call with unpack() of 7,999 arguments (which Redis accepts) failed with "registry
	// overflow".
	L := lua.NewState(lua.Options{SkipOpenLibs: true, RegistryMaxSize: luaStackMax})
	for _, lib := range []struct {
		name string
		open lua.LGFunction
	}{{lua.BaseLibName, lua.OpenBase}, {lua.TabLibName, lua.OpenTable}, {lua.StringLibName, lua.OpenString}, {lua.MathLibName, lua.OpenMath}} {
		L.Push(L.NewFunction(lib.open))
		L.Push(lua.LString(lib.name))
		L.Call(1, 0)
	}
	g := L.G.Global
	for _, name := range []string{"dofile", "loadfile", "print", "module", "require"} {
		g.RawSetString(name, lua.LNil)
	}
	g.RawSetString("unpack", L.NewFunction(luaUnpack))
	st := &State{l: L, host: host, scripts: map[string]Script{}}
	g.RawSetString("redis", st.openRedis(L))
	g.RawSetString("bit", lualib.OpenBit(L))
	g.RawSetString("cjson", lualib.OpenCJSON(L))
	g.RawSetString("cmsgpack", lualib.OpenCMsgpack(L))
	g.RawSetString("struct", lualib.OpenStruct(L))
	str := g.RawGetString(lua.StringLibName).(*lua.LTable)
	st.boundStrings(L, str, g.RawGetString(lua.TabLibName).(*lua.LTable))
	// A long match asks the guard between steps as the interpreter does between instructions.
	lualib.Patterns(L, str, func() bool { return st.guard != nil && st.guard.Done() != nil },
		func() int64 { return st.host.Limits().MaxBulkLen })
	st.sandbox(L)
	return st
}

// Close closes the interpreter. The State, its scripts and the functions loaded into it must
// not be used after.
func (st *State) Close() { st.l.Close() }

// luaCStackMax is Lua 5.1's LUAI_MAXCSTACK, the most values a C function may push (Redis's Lua
// refuses an unpack() past it); luaStackMax leaves room for the frames of the script around it.
const (
	luaCStackMax = 8000
	luaStackMax  = 8 * luaCStackMax
)

// luaUnpack is Lua 5.1's unpack, with its limit: gopher-lua's pushes without one.
func luaUnpack(L *lua.LState) int {
	tb := L.CheckTable(1)
	start := L.OptInt(2, 1)
	end := L.OptInt(3, tb.Len())
	if start > end {
		return 0
	}
	n := int64(end) - int64(start) + 1
	if n >= luaCStackMax-int64(L.GetTop())+1 {
		L.RaiseError("too many results to unpack")
	}
	for i := start; i <= end; i++ {
		L.Push(tb.RawGetInt(i))
	}
	return int(n)
}

// versionNum is a version as redis.REDIS_VERSION_NUM gives it: 7.2.5 is 0x070205.
func versionNum(v string) int {
	n := 0
	for _, part := range strings.SplitN(v, ".", 3) {
		d, _ := strconv.Atoi(part)
		n = n<<8 | d
	}
	return n
}
