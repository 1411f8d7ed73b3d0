package scripting

import (
	"crypto/sha1"
	"encoding/hex"
	"strings"

	lua "github.com/yuin/gopher-lua"

	"github.com/iocache/iocache/server/lualib"
	"github.com/iocache/iocache/server/version"
)

// The redis table scripts see: redis.call and pcall (through Host.Call), acl_check_cmd, log,
// error_reply, status_reply, sha1hex, setresp, Redis 7.0's no-op set_repl and
// replicate_commands, and its constants.

// openRedis builds the redis table.
func (st *State) openRedis(L *lua.LState) *lua.LTable {
	t := L.NewTable()
	L.SetFuncs(t, map[string]lua.LGFunction{
		"call":               func(L *lua.LState) int { return st.redisCall(L, true) },
		"acl_check_cmd":      st.aclCheckCmd,
		"pcall":              func(L *lua.LState) int { return st.redisCall(L, false) },
		"error_reply":        luaErrorReply,
		"status_reply":       luaStatusReply,
		"sha1hex":            luaSHA1Hex,
		"log":                st.log,
		"setresp":            st.setResp,
		"set_repl":           func(L *lua.LState) int { return 0 },
		"replicate_commands": func(L *lua.LState) int { L.Push(lua.LTrue); return 1 },
	})
	for name, v := range map[string]int{"LOG_DEBUG": int(LogDebug), "LOG_VERBOSE": int(LogVerbose), "LOG_NOTICE": int(LogNotice), "LOG_WARNING": int(LogWarning), "REPL_NONE": 0, "REPL_AOF": 1, "REPL_SLAVE": 2, "REPL_REPLICA": 2, "REPL_ALL": 3} {
		t.RawSetString(name, lua.LNumber(v))
	}
	t.RawSetString("REDIS_VERSION", lua.LString(version.RedisVersion))
	t.RawSetString("REDIS_VERSION_NUM", lua.LNumber(versionNum(version.RedisVersion)))
	return t
}

// redisCall is redis.call (raise on an error reply) and redis.pcall (return it as a table).
func (st *State) redisCall(L *lua.LState, raise bool) int {
	if d := L.Where(1); d != "" {
		st.line = lineOf(chunkText(d))
	}
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
	reply, refused := st.host.Call(argv, st.resp3)
	if refused != "" {
		return fail(refused)
	}
	v, _, isErr := replyToLua(L, reply)
	if isErr && raise {
		L.Error(v, 0)
		return 0
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

// aclCheckCmd is redis.acl_check_cmd: whether the script's user may run the command given,
// with those arguments (keys and channels included), as ACL would decide it.
func (st *State) aclCheckCmd(L *lua.LState) int {
	argv, bad := luaCallArgs(L)
	allowed := false
	if bad == "" {
		allowed, bad = st.host.MayCall(argv)
	}
	if bad != "" {
		t := L.NewTable()
		t.RawSetString("err", lua.LString(bad))
		L.Error(t, 0)
		return 0
	}
	L.Push(lua.LBool(allowed))
	return 1
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

func sha1Hex(b []byte) string {
	sum := sha1.Sum(b)
	return hex.EncodeToString(sum[:])
}

// log is redis.log(level, ...): the arguments joined by spaces. A level that is not one of
// redis.LOG_* logs as LOG_NOTICE.
func (st *State) log(L *lua.LState) int {
	level := L.CheckInt(1)
	parts := make([]string, 0, L.GetTop()-1)
	for i := 2; i <= L.GetTop(); i++ {
		parts = append(parts, L.Get(i).String())
	}
	lv := LogNotice
	switch LogLevel(level) {
	case LogDebug, LogVerbose, LogWarning:
		lv = LogLevel(level)
	}
	st.host.Log(lv, strings.Join(parts, " "))
	return 0
}
