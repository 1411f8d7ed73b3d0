package scripting

import (
	"errors"
	"fmt"
	"regexp"
	"runtime/debug"
	"strconv"
	"strings"
	"time"

	lua "github.com/yuin/gopher-lua"
)

// Running scripts and functions, and wording their errors as Redis 7.0 does: clients and people
// reading logs match on Redis's texts ("user_script:3: ... script: <sha>, on
// @user_script:3."), not gopher-lua's.

// The chunk names of EVAL scripts and of FUNCTION libraries, as errors name them.
const (
	scriptChunk   = "@user_script"
	functionChunk = "@user_function"
)

// Eval runs a script of the cache with its KEYS and ARGV, and returns what it returned, or the
// error reply when it raised an error, was stopped at a limit (Limits) or was killed (Kill). What it returned is
// written to the caller with WriteReply; it is only good until the next run.
func (st *State) Eval(s Script, keys, args [][]byte) (ret lua.LValue, errReply string) {
	L := st.l
	st.globals.RawSetString("KEYS", luaStrings(L, keys))
	st.globals.RawSetString("ARGV", luaStrings(L, args))
	L.Env = st.env // setfenv(0, t) in an earlier script must not last
	st.name, st.resp3 = s.SHA, false
	st.begin("user_script", false)
	defer st.end()
	base := L.GetTop() + 1
	L.Push(s.fn)
	return st.call(base)
}

// FCall runs a function with its keys and arguments as its two arguments, as Eval runs a
// script.
func (st *State) FCall(f *Function, keys, args [][]byte) (ret lua.LValue, errReply string) {
	L := st.l
	st.name, st.resp3 = f.Name, false
	st.begin("user_function", false)
	defer st.end()
	base := L.GetTop() + 1
	L.Push(f.callback)
	L.Push(luaStrings(L, keys))
	L.Push(luaStrings(L, args))
	return st.call(base)
}

// begin starts a run of code of the chunk named ("user_script" or "user_function", as errors
// name it): its line count and its guard. load: a library's top level (see limits.go).
func (st *State) begin(chunk string, load bool) {
	st.chunk, st.line = chunk, 0
	st.guard = startGuard(st.host, st.host.Limits(), load)
	st.l.SetContext(st.guard)
}

// Kill stops the running script or function at its next instruction, with Redis's "Script
// killed by user with SCRIPT KILL..." error, which it cannot catch: the host calls it from Busy,
// for SCRIPT KILL, FUNCTION KILL or SHUTDOWN NOSAVE. It does nothing between runs.
func (st *State) Kill() {
	if st.guard != nil {
		st.guard.kill(errKilled)
	}
}

// RunTime is how long the running script or function has run (FUNCTION STATS); 0 between runs.
func (st *State) RunTime() time.Duration {
	if st.guard == nil {
		return 0
	}
	return time.Since(st.guard.start)
}

// end ends the run begin started. A run stopped at its limits leaves what it built: the memory
// goes back to the system now (see limits.go).
func (st *State) end() {
	st.l.RemoveContext()
	if st.guard.stop() {
		st.host.Background(debug.FreeOSMemory)
	}
	st.guard = nil
}

// call calls the function at index base of the stack with the values above it, and returns
// its first result or the error reply.
func (st *State) call(base int) (lua.LValue, string) {
	L := st.l
	err := st.protectedCall(L, base)
	ret := lua.LNil
	if err == nil && L.GetTop() >= base {
		ret = L.Get(base)
	}
	L.SetTop(base - 1)
	if why := st.guard.stopped(); why != nil { // even if the script caught the error and returned
		return lua.LNil, st.stoppedReply(why)
	}
	if err != nil {
		return lua.LNil, oneLine(st.errorReply(err), true)
	}
	return ret, ""
}

func luaStrings(L *lua.LState, args [][]byte) *lua.LTable {
	t := L.CreateTable(len(args), 0)
	for _, a := range args {
		t.Append(lua.LString(a))
	}
	return t
}

// chunkText words gopher-lua's "@user_script:3:" positions as Lua's "user_script:3:".
func chunkText(s string) string {
	s = strings.ReplaceAll(s, scriptChunk+":", "user_script:")
	return strings.ReplaceAll(s, functionChunk+":", "user_function:")
}

var (
	syntaxErrAt  = regexp.MustCompile(`^@(user_script|user_function) line:(\d+)\(column:\d+\) near '(.*)':\s+(.*)$`)
	syntaxErrEOF = regexp.MustCompile(`^@(user_script|user_function) at EOF:\s+(.*)$`)
)

// compileErrorText words gopher-lua's syntax errors as Lua's ("user_script:3: ... near 'x'").
func compileErrorText(err error, body []byte) error {
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

// errorReply is the reply for a script that raised an error: Redis 7.0 appends
// "script: <sha>, on @user_script:<line>." to the error.
func (st *State) errorReply(err error) string {
	var apiErr *lua.ApiError
	var msg string
	line := st.line
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
	return fmt.Sprintf("%s script: %s, on @%s:%d.", msg, st.name, st.chunk, line)
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
