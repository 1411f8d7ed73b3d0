package engine

import (
	"crypto/sha1"
	"encoding/hex"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/iocache/iocache/server/lualib"
	"github.com/iocache/iocache/server/scripting"
	"github.com/iocache/iocache/server/version"
)

// Lua scripting: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT LOAD|EXISTS|FLUSH|KILL, with
// Redis 7.0's conversions between RESP and Lua values, its read-only globals, its error texts
// and its "#!lua flags=..." shebang (script_shebang.go); functions, FUNCTION and FCALL, are in
// script_function.go.
// Scripts run on the main thread like any command, so each is atomic. The interpreter is
// gopher-lua (Lua 5.1, the version Redis embeds), opened with the base, table, string and math
// libraries, and Redis's bit, cjson, cmsgpack and struct libraries (package lualib, which also
// has Lua 5.1's pattern matching): no os, io or package, so a script cannot reach the file
// system.
//
// Unlike Redis, a script that runs past busy-reply-threshold (default 5 s) is stopped with an
// error, because a main thread that no other command can reach (no SCRIPT KILL while a script
// runs here) would otherwise hang every client. Writes it made before that stay, as they would
// after SCRIPT KILL's alternative in Redis, SHUTDOWN NOSAVE, did not.

type scriptHost struct {
	L       *lua.LState
	scripts map[string]*lua.LFunction  // by lower-case SHA1 of the body
	flags   map[string]scripting.Flags // each script's shebang flags, by the same SHA1
	sc      *client                    // the client redis.call runs commands as
	caller  *client                    // the client running the script (its user is sc's)
	// callerKeys are the keys the script declared (KEYS): what a tracking caller is taken to
	// have read once the script runs a read-only command, as Redis tracks scripts.
	callerKeys [][]byte
	sha        string // the running script's SHA1
	line       int    // the script line of the last redis.call
	chunk      string // the running code's chunk name: "user_script" or "user_function"
	readOnly   bool
	globals    *lua.LTable                 // the global table behind the read-only proxy scripts see
	env        *lua.LTable                 // that proxy
	trampoline *lua.LFunction              // see protectedCall
	guard      *scriptGuard                // the running script's
	guarded    map[*lua.LTable]*lua.LTable // each read-only proxy and the table it guards
}

// The chunk names of EVAL scripts and of FUNCTION libraries, as errors name them.
const (
	scriptChunk   = "@user_script"
	functionChunk = "@user_function"
)

// chunkText words gopher-lua's "@user_script:3:" positions as Lua's "user_script:3:".
func chunkText(s string) string {
	s = strings.ReplaceAll(s, scriptChunk+":", "user_script:")
	return strings.ReplaceAll(s, functionChunk+":", "user_function:")
}

func (s *Server) scriptHost() *scriptHost {
	if s.lua != nil {
		return s.lua
	}
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
	sl := &scriptHost{L: L, scripts: map[string]*lua.LFunction{}, flags: map[string]scripting.Flags{}}
	sl.sc = newClient(0, -1, 0)
	sl.sc.addr, sl.sc.authed = "lua", true
	redisTable := L.NewTable()
	L.SetFuncs(redisTable, map[string]lua.LGFunction{
		"call":               func(L *lua.LState) int { return s.luaRedisCall(L, true) },
		"acl_check_cmd":      s.luaACLCheckCmd,
		"pcall":              func(L *lua.LState) int { return s.luaRedisCall(L, false) },
		"error_reply":        luaErrorReply,
		"status_reply":       luaStatusReply,
		"sha1hex":            luaSHA1Hex,
		"log":                func(L *lua.LState) int { return s.luaLog(L) },
		"setresp":            func(L *lua.LState) int { return luaSetResp(L, sl.sc) },
		"set_repl":           func(L *lua.LState) int { return 0 },
		"replicate_commands": func(L *lua.LState) int { L.Push(lua.LTrue); return 1 },
	})
	for name, v := range map[string]int{"LOG_DEBUG": 0, "LOG_VERBOSE": 1, "LOG_NOTICE": 2, "LOG_WARNING": 3, "REPL_NONE": 0, "REPL_AOF": 1, "REPL_SLAVE": 2, "REPL_REPLICA": 2, "REPL_ALL": 3} {
		redisTable.RawSetString(name, lua.LNumber(v))
	}
	redisTable.RawSetString("REDIS_VERSION", lua.LString(version.RedisVersion))
	redisTable.RawSetString("REDIS_VERSION_NUM", lua.LNumber(versionNum(version.RedisVersion)))
	g.RawSetString("redis", redisTable)
	g.RawSetString("bit", lualib.OpenBit(L))
	g.RawSetString("cjson", lualib.OpenCJSON(L))
	g.RawSetString("cmsgpack", lualib.OpenCMsgpack(L))
	g.RawSetString("struct", lualib.OpenStruct(L))
	str := g.RawGetString(lua.StringLibName).(*lua.LTable)
	s.boundStrings(L, str, g.RawGetString(lua.TabLibName).(*lua.LTable))
	lualib.Patterns(L, str, func() bool { return sl.guard != nil && sl.guard.ctx.Err() != nil },
		func() int64 { return s.cfg.ProtoMaxBulkLen })
	sl.sandbox(L)
	s.lua = sl
	return sl
}

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

func sha1Hex(b []byte) string {
	sum := sha1.Sum(b)
	return hex.EncodeToString(sum[:])
}

// load compiles a script body and caches it under its SHA1.
func (sl *scriptHost) load(body []byte) (string, *lua.LFunction, error) {
	sha := sha1Hex(body)
	if fn, ok := sl.scripts[sha]; ok {
		return sha, fn, nil
	}
	flags, code, err := scripting.ParseShebang(body)
	if err != nil {
		return sha, nil, &shebangError{err}
	}
	if lualib.TooDeep(code) {
		return sha, nil, errors.New("user_script:1: chunk has too many syntax levels")
	}
	fn, err := sl.L.Load(strings.NewReader(string(code)), scriptChunk)
	if err != nil {
		return sha, nil, compileError(err, code)
	}
	lualib.Compact(fn)
	sl.scripts[sha] = fn
	sl.flags[sha] = flags
	return sha, fn, nil
}

func cmdEval(s *Server, c *client, argv [][]byte)      { evalGeneric(s, c, argv, false, false) }
func cmdEvalSHA(s *Server, c *client, argv [][]byte)   { evalGeneric(s, c, argv, true, false) }
func cmdEvalRO(s *Server, c *client, argv [][]byte)    { evalGeneric(s, c, argv, false, true) }
func cmdEvalSHARO(s *Server, c *client, argv [][]byte) { evalGeneric(s, c, argv, true, true) }

func evalGeneric(s *Server, c *client, argv [][]byte, bySHA, readOnly bool) {
	// EVAL is flagged skip_monitor and shown here, before the commands its script runs.
	if len(s.pubsub.monitors) > 0 {
		s.feedMonitors(c, argv)
	}
	numKeys, ok := parseInt(argv[2])
	if !ok {
		s.addError(c, errNotInt)
		return
	}
	if numKeys > int64(len(argv)-3) {
		s.addError(c, "ERR Number of keys can't be greater than number of args")
		return
	}
	if numKeys < 0 {
		s.addError(c, "ERR Number of keys can't be negative")
		return
	}
	sl := s.scriptHost()
	var fn *lua.LFunction
	var sha string
	if bySHA {
		sha = strings.ToLower(string(argv[1]))
		if fn = sl.scripts[sha]; fn == nil {
			s.addError(c, "NOSCRIPT No matching script. Please use EVAL.")
			return
		}
	} else {
		var err error
		if sha, fn, err = sl.load(argv[1]); err != nil {
			s.addError(c, loadErrorReply(err))
			return
		}
	}
	flags := sl.flags[sha]
	if flags&scripting.Shebang != 0 && flags&(scripting.NoWrites|scripting.AllowOOM) == 0 && s.cfg.MaxMemory > 0 && !s.freeMemoryIfNeeded() {
		s.addError(c, "OOM command not allowed when used memory > 'maxmemory'.")
		return
	}
	readOnly = readOnly || flags&scripting.NoWrites != 0
	keys, args := argv[3:3+numKeys], argv[3+numKeys:]
	L := sl.L
	sl.globals.RawSetString("KEYS", luaStrings(L, keys))
	sl.globals.RawSetString("ARGV", luaStrings(L, args))
	L.Env = sl.env // setfenv(0, t) in an earlier script must not last
	sl.sha, sl.line, sl.readOnly, sl.chunk = sha, 0, readOnly, "user_script"
	sl.sc.db = c.db
	sl.sc.user, sl.caller, sl.callerKeys = c.user, c, keys
	sl.sc.scriptAllowOOM = flags&scripting.AllowOOM != 0
	sl.sc.w.RESP3 = false
	guard, stop := s.guardScript()
	defer stop()
	sl.guard = guard
	defer func() { sl.guard = nil }()
	L.SetContext(guard.ctx)
	defer L.RemoveContext()
	base := L.GetTop() + 1
	L.Push(fn)
	err := sl.protectedCall(L, base)
	var ret lua.LValue = lua.LNil
	if err == nil && L.GetTop() >= base {
		ret = L.Get(base)
	}
	L.SetTop(base - 1)
	if why := guard.stopped(); why != nil { // even when the script caught the error and returned
		s.addError(c, sl.stoppedReply(why, guard))
		return
	}
	if err != nil {
		s.addError(c, oneLine(sl.errorReply(err), true))
		return
	}
	s.luaToReply(c, ret)
}

// pausedScript reports whether CLIENT PAUSE WRITE must hold this EVAL or EVALSHA: every
// script may write unless it declares no-writes (EVALSHA: as loaded; unknown scripts are held
// and answer NOSCRIPT once the pause ends, as in Redis).
func (s *Server) pausedScript(argv [][]byte) bool {
	if len(argv) < 2 {
		return true
	}
	var flags scripting.Flags
	if equalFold(argv[0], "evalsha") {
		if s.lua == nil {
			return true
		}
		flags = s.lua.flags[strings.ToLower(string(argv[1]))]
	} else {
		flags, _, _ = scripting.ParseShebang(argv[1])
	}
	return flags&scripting.NoWrites == 0
}

// shebangError is a script's invalid "#!" line, which Redis reports as it is, not as a
// compilation error.
type shebangError struct{ err error }

func (e *shebangError) Error() string { return e.err.Error() }

// loadErrorReply is the error for a script that cannot be loaded.
func loadErrorReply(err error) string {
	var sh *shebangError
	if errors.As(err, &sh) {
		return "ERR " + sh.Error()
	}
	return "ERR Error compiling script (new function): " + luaErrorText(err)
}

func luaStrings(L *lua.LState, args [][]byte) *lua.LTable {
	t := L.CreateTable(len(args), 0)
	for _, a := range args {
		t.Append(lua.LString(a))
	}
	return t
}

var (
	syntaxErrAt  = regexp.MustCompile(`^@(user_script|user_function) line:(\d+)\(column:\d+\) near '(.*)':\s+(.*)$`)
	syntaxErrEOF = regexp.MustCompile(`^@(user_script|user_function) at EOF:\s+(.*)$`)
)

// compileError words gopher-lua's syntax errors as Lua's ("user_script:3: ... near 'x'"), which
// is what clients and people reading logs know from Redis.
func compileError(err error, body []byte) error {
	msg := strings.TrimSpace(err.Error())
	if m := syntaxErrAt.FindStringSubmatch(msg); m != nil {
		return fmt.Errorf("%s:%s: %s near '%s'", m[1], m[2], m[4], m[3])
	}
	if m := syntaxErrEOF.FindStringSubmatch(msg); m != nil {
		return fmt.Errorf("%s:%d: %s near '<eof>'", m[1], 1+strings.Count(string(body), "\n"), m[2])
	}
	return err
}

// luaErrorText turns gopher-lua's compile and runtime messages into Lua's own wording.
func luaErrorText(err error) string {
	msg := err.Error()
	var apiErr *lua.ApiError
	if errors.As(err, &apiErr) {
		msg = apiErr.Object.String()
	}
	msg = chunkText(msg)
	if i := strings.Index(msg, "\nstack traceback:"); i >= 0 {
		msg = msg[:i]
	}
	return strings.TrimSpace(msg)
}

// errorReply is the EVAL reply for a script that raised an error: Redis 7.0 appends
// "script: <sha>, on @user_script:<line>." to the error.
func (sl *scriptHost) errorReply(err error) string {
	var apiErr *lua.ApiError
	var msg string
	line := sl.line
	switch {
	case errors.As(err, &apiErr) && isErrTable(apiErr.Object):
		// redis.call's error reply, or a script's own error(redis.error_reply(...)).
		msg = apiErr.Object.(*lua.LTable).RawGetString("err").String()
	default:
		msg = luaErrorText(err)
		if l := lineOf(msg); l > 0 {
			line = l
		}
		msg = "ERR " + msg
	}
	msg = strings.TrimPrefix(msg, "-")
	return fmt.Sprintf("%s script: %s, on @%s:%d.", msg, sl.sha, sl.chunk, line)
}

func isErrTable(v lua.LValue) bool {
	t, ok := v.(*lua.LTable)
	return ok && t.RawGetString("err").Type() == lua.LTString
}

// lineOf reads N from a "user_script:N: message" (or "user_function:N: ...") error.
func lineOf(msg string) int {
	rest, ok := strings.CutPrefix(msg, "user_script:")
	if !ok {
		if rest, ok = strings.CutPrefix(msg, "user_function:"); !ok {
			return 0
		}
	}
	n, _ := strconv.Atoi(rest[:max(strings.IndexByte(rest, ':'), 0)])
	return n
}

// Commands a script may not run, as Redis 7.0 flags them noscript.
func scriptForbidden(cmd *command) bool {
	if cmd.flags&cmdNoScript != 0 {
		return true
	}
	switch cmd.name {
	case "multi", "exec", "discard", "watch", "unwatch", "subscribe", "psubscribe", "unsubscribe", "punsubscribe",
		"blpop", "brpop", "brpoplpush", "blmove", "bzpopmin", "bzpopmax", "script", "eval",
		"evalsha", "eval_ro", "evalsha_ro":
		return true
	}
	return false
}

// luaRedisCall is redis.call (raise on an error reply) and redis.pcall (return it as a table).
func (s *Server) luaRedisCall(L *lua.LState, raise bool) int {
	sl := s.lua
	if d := L.Where(1); d != "" {
		sl.line = lineOf(chunkText(d))
	}
	n := L.GetTop()
	fail := func(msg string) int {
		t := L.NewTable()
		t.RawSetString("err", lua.LString(msg))
		if raise {
			L.Error(t, 0)
			return 0
		}
		L.Push(t)
		return 1
	}
	argv, bad := luaCallArgs(L)
	if bad != "" {
		return fail(bad)
	}
	cmd := s.lookupCommand(argv[0])
	if cmd == nil {
		return fail("ERR Unknown Redis command called from script")
	}
	if (cmd.arity > 0 && n != cmd.arity) || n < -cmd.arity {
		return fail("ERR Wrong number of args calling Redis command from script")
	}
	if !s.scriptDenyOff && scriptForbidden(cmd) {
		return fail("ERR This Redis command is not allowed from script")
	}
	// May-replicate commands (PUBLISH...) count as writes here, as in Redis: that is what lets
	// read-only scripts run during CLIENT PAUSE WRITE.
	if sl.readOnly && cmd.flags&(cmdWrite|cmdMayReplicate) != 0 {
		return fail("ERR Write commands are not allowed from read-only scripts.")
	}
	sc := sl.sc
	if sc.user.restricted {
		if reason, object := s.acl.aclCheck(sc.user, cmd, argv); reason != aclDeniedNone {
			s.addACLLog(sl.caller, reason, "lua", object, sc.user.name)
			return fail(aclScriptError(reason))
		}
	}
	sc.w.Buf = sc.w.Buf[:0]
	sc.flags = flagExecuting // blocking commands answer at once, as inside MULTI
	s.call(sc, argv)
	v, _, isErr := s.respToLua(L, sc.w.Buf)
	if isErr {
		if raise {
			L.Error(v, 0)
			return 0
		}
	}
	L.Push(v)
	return 1
}

// luaCallArgs reads the arguments of redis.call and its kin as a command's argv, or says why
// they cannot be one.
func luaCallArgs(L *lua.LState) ([][]byte, string) {
	n := L.GetTop()
	if n == 0 {
		return nil, "ERR Please specify at least one argument for this redis lib call"
	}
	argv := make([][]byte, n)
	for i := 1; i <= n; i++ {
		switch v := L.Get(i).(type) {
		case lua.LString:
			argv[i-1] = []byte(v)
		case lua.LNumber:
			argv[i-1] = []byte(lualib.NumberString(v))
		default:
			return nil, "ERR Lua redis lib command arguments must be strings or integers"
		}
	}
	return argv, ""
}

// luaACLCheckCmd is redis.acl_check_cmd: whether the script's user may run the command given,
// with those arguments (keys and channels included), as ACL would decide it.
func (s *Server) luaACLCheckCmd(L *lua.LState) int {
	argv, bad := luaCallArgs(L)
	var cmd *command
	if bad == "" {
		if cmd = s.lookupCommand(argv[0]); cmd == nil {
			bad = "ERR Invalid command passed to redis.acl_check_cmd()"
		}
	}
	if bad != "" {
		t := L.NewTable()
		t.RawSetString("err", lua.LString(bad))
		L.Error(t, 0)
		return 0
	}
	user := s.lua.sc.user
	allowed := !user.restricted
	if !allowed {
		reason, _ := s.acl.aclCheck(user, cmd, argv)
		allowed = reason == aclDeniedNone
	}
	L.Push(lua.LBool(allowed))
	return 1
}

// respToLua converts one reply to a Lua value: integers to numbers, bulk strings to strings,
// RESP2 nulls to false, arrays to tables, status replies to {ok=...} and errors to {err=...};
// RESP3's types (after redis.setresp(3)) as resp3ToLua says.
func (s *Server) respToLua(L *lua.LState, b []byte) (v lua.LValue, rest []byte, isErr bool) {
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
			e, rest, _ = s.respToLua(L, rest)
			t.RawSetInt(i+1, e)
		}
		return t, rest, false
	}
	return s.resp3ToLua(L, b[0], line, rest)
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

// luaToReply converts a script's return value for the caller: numbers to integers (truncated),
// strings to bulk strings, true to 1 and false to null (after redis.setresp(3): booleans), nil
// to null, {ok=} to a status, {err=} to an error, the RESP3 tables luaResp3ToReply knows to
// their types, and other tables to arrays up to their first nil. Nesting is bounded as in Redis, and the
// whole reply by maxReplyBytes (a table that holds itself many times over would otherwise
// expand without end): past it the reply is replaced by errReplyTooBig.
func (s *Server) luaToReply(c *client, v lua.LValue) {
	mark := len(c.w.Buf)
	limit := int64(mark) + s.maxReplyBytes(c)
	if !s.luaValueToReply(c, v, 0, limit) {
		c.w.Buf = c.w.Buf[:mark]
		s.addError(c, errReplyTooBig)
	}
}

func (s *Server) luaValueToReply(c *client, v lua.LValue, depth int, limit int64) bool {
	if int64(len(c.w.Buf)) > limit {
		return false
	}
	if depth >= luaReplyMaxDepth {
		s.addError(c, "ERR reached lua stack limit")
		return true
	}
	switch v := v.(type) {
	case lua.LNumber:
		c.w.Int(int64(v))
	case lua.LString:
		c.w.Bulk([]byte(v))
	case lua.LBool:
		switch {
		case s.lua != nil && s.lua.sc.w.RESP3: // the script chose RESP3 (redis.setresp)
			c.w.Bool(bool(v))
		case bool(v):
			c.w.Int(1)
		default:
			c.w.Null()
		}
	case *lua.LTable:
		if e := v.RawGetString("err"); e.Type() == lua.LTString {
			s.addError(c, oneLine(strings.TrimPrefix(e.String(), "-"), true))
			return true
		}
		if ok := v.RawGetString("ok"); ok.Type() == lua.LTString {
			c.w.Simple(oneLine(ok.String(), false))
			return true
		}
		if done, fits := s.luaResp3ToReply(c, v, depth, limit); done {
			return fits
		}
		n := 0
		for v.RawGetInt(n+1) != lua.LNil {
			n++
		}
		c.w.Array(n)
		for i := 1; i <= n; i++ {
			if !s.luaValueToReply(c, v.RawGetInt(i), depth+1, limit) {
				return false
			}
		}
	default:
		c.w.Null()
	}
	return true
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

// luaErrorReply is redis.error_reply. As in Redis 7.0, the text's first word (past an optional
// '-') is its error code, and a text of one word gets the code ERR.
func luaErrorReply(L *lua.LState) int {
	t := L.NewTable()
	msg := strings.TrimPrefix(L.CheckString(1), "-")
	if !strings.Contains(msg, " ") {
		msg = "ERR " + msg
	}
	t.RawSetString("err", lua.LString(msg))
	L.Push(t)
	return 1
}

func luaStatusReply(L *lua.LState) int {
	t := L.NewTable()
	t.RawSetString("ok", lua.LString(L.CheckString(1)))
	L.Push(t)
	return 1
}

func luaSHA1Hex(L *lua.LState) int {
	L.Push(lua.LString(sha1Hex([]byte(L.CheckString(1)))))
	return 1
}

func (s *Server) luaLog(L *lua.LState) int {
	level := L.CheckInt(1)
	parts := make([]string, 0, L.GetTop()-1)
	for i := 2; i <= L.GetTop(); i++ {
		parts = append(parts, L.Get(i).String())
	}
	lv := logNotice
	switch level {
	case 0:
		lv = logDebug
	case 1:
		lv = logVerbose
	case 3:
		lv = logWarning
	}
	s.logf(lv, "%s", strings.Join(parts, " "))
	return 0
}

// errNoLuaDebugger answers SCRIPT DEBUG YES and SYNC.
const errNoLuaDebugger = "ERR SCRIPT DEBUG YES and SYNC are not supported: iocache has no Lua debugger (LDB)"

// SCRIPT LOAD|EXISTS|FLUSH|KILL|DEBUG|HELP
func cmdScript(s *Server, c *client, argv [][]byte) {
	sub := argv[1]
	switch {
	case equalFold(sub, "load") && len(argv) == 3:
		sha, _, err := s.scriptHost().load(argv[2])
		if err != nil {
			s.addError(c, loadErrorReply(err))
			return
		}
		c.w.BulkString(sha)
	case equalFold(sub, "exists") && len(argv) >= 3:
		sl := s.scriptHost()
		c.w.Array(len(argv) - 2)
		for _, a := range argv[2:] {
			if sl.scripts[strings.ToLower(string(a))] != nil {
				c.w.Int(1)
			} else {
				c.w.Int(0)
			}
		}
	case equalFold(sub, "flush") && len(argv) <= 3:
		if len(argv) == 3 && !equalFold(argv[2], "sync") && !equalFold(argv[2], "async") {
			s.addError(c, "ERR SCRIPT FLUSH only support SYNC|ASYNC option")
			return
		}
		if s.lua != nil {
			s.lua.L.Close()
			s.lua = nil
		}
		c.w.OK()
	case equalFold(sub, "debug") && len(argv) == 3:
		// Redis's YES and SYNC start a session of its Lua debugger (LDB) at the next EVAL; iocache
		// has no debugger and refuses them rather than run the script undebugged. NO, the
		// default, is what every script gets.
		switch {
		case equalFold(argv[2], "no"):
			c.w.OK()
		case equalFold(argv[2], "yes"), equalFold(argv[2], "sync"):
			s.addError(c, errNoLuaDebugger)
		default:
			s.addError(c, "ERR Use SCRIPT DEBUG YES/SYNC/NO")
		}
	case equalFold(sub, "kill") && len(argv) == 2:
		// A script holds the main thread until it ends, so none is ever running when this runs.
		s.addError(c, "NOTBUSY No scripts in execution right now.")
	case equalFold(sub, "help") && len(argv) == 2:
		writeHelp(c, "SCRIPT", []string{
			"DEBUG (YES|SYNC|NO)", "    Set the debug mode for subsequent scripts executed.",
			"EXISTS <sha1> [<sha1> ...]", "    Return information about the existence of the scripts in the script cache.",
			"FLUSH [ASYNC|SYNC]", "    Flush the Lua scripts cache. Very dangerous on replicas.",
			"    When called without the optional mode argument, the behavior is determined by the",
			"    lazyfree-lazy-user-flush configuration directive. Valid modes are:",
			"    * ASYNC: Asynchronously flush the scripts cache.",
			"    * SYNC: Synchronously flush the scripts cache.",
			"KILL", "    Kill the currently executing Lua script.",
			"LOAD <script>", "    Load a script into the scripts cache without executing it.",
		})
	default:
		s.subcommandError(c, argv)
	}
}

// scriptCommands registers this file's commands (see table.go).
var scriptCommands = []commandSpec{
	{"eval", cmdEval, -3, cmdNoScript | cmdStale | cmdSkipMonitor | cmdMayReplicate, 0, 0, 0, "scripting", "Executes a server-side Lua script."},
	{"evalsha", cmdEvalSHA, -3, cmdNoScript | cmdStale | cmdSkipMonitor | cmdMayReplicate, 0, 0, 0, "scripting", "Executes a server-side Lua script by SHA1 digest."},
	{"eval_ro", cmdEvalRO, -3, cmdNoScript | cmdStale | cmdSkipMonitor | cmdReadonly, 0, 0, 0, "scripting", "Executes a read-only server-side Lua script."},
	{"evalsha_ro", cmdEvalSHARO, -3, cmdNoScript | cmdStale | cmdSkipMonitor | cmdReadonly, 0, 0, 0, "scripting", "Executes a read-only server-side Lua script by SHA1 digest."},
	{"script", cmdScript, -2, cmdNoScript, 0, 0, 0, "scripting", "A container for Lua scripts management commands."},
}
