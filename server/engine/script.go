package engine

import (
	"time"

	lua "github.com/yuin/gopher-lua"

	"github.com/iocache/iocache/server/acl"
	"github.com/iocache/iocache/server/resp"
	"github.com/iocache/iocache/server/scripting"
)

// Lua scripting's commands: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO and SCRIPT
// LOAD|EXISTS|FLUSH|KILL; functions, FUNCTION and FCALL, are in script_function.go. The Lua
// side (the interpreter and its sandbox, the script cache, the conversions between RESP and
// Lua, the limits, the function registry) is package scripting; what a script reaches of the
// server goes through scriptHost, this file's scripting.Host: redis.call's dispatch into the
// command table, ACL, the log.
//
// Scripts run on the main thread like any command, so each is atomic. As in Redis, one that runs
// past busy-reply-threshold (default 5 s) goes on, and the other clients are answered BUSY
// meanwhile, until it ends or SCRIPT KILL, FUNCTION KILL or SHUTDOWN NOSAVE ends it
// (script_busy.go).

// scriptHost is the server as scripts see it (scripting.Host), with the context of the run in
// progress that redis.call's dispatch needs.
type scriptHost struct {
	state  *scripting.State
	s      *Server
	sc     *client // the client redis.call runs commands as
	caller *client // the client running the script (its user is sc's)
	// callerKeys are the keys the script declared (KEYS): what a tracking caller is taken to
	// have read once the script runs a read-only command, as Redis tracks scripts.
	callerKeys [][]byte
	readOnly   bool // EVAL_RO, FCALL_RO, or a script or function declared no-writes
}

// scriptHost returns the scripting state, which the first script command creates, and the
// first after SCRIPT FLUSH again.
func (s *Server) scriptHost() *scriptHost {
	if s.lua != nil {
		return s.lua
	}
	h := &scriptHost{s: s, sc: newClient(0, -1, 0)}
	h.sc.addr, h.sc.authed = "lua", true
	h.state = scripting.New(h)
	s.lua = h
	return h
}

// run prepares the scripting client for a script or function that c called with argv: it runs
// in c's database as c's user. name is the function's, or the script's SHA1 (eval).
func (h *scriptHost) run(c *client, argv, keys [][]byte, name string, eval, readOnly, allowOOM bool) {
	h.s.startScript(c, argv, name, eval)
	h.sc.db = c.db
	h.sc.user, h.caller, h.callerKeys = c.user, c, keys
	h.sc.scriptAllowOOM = allowOOM
	h.readOnly = readOnly
}

// scriptReply answers c with what its script or function returned, or with the error reply.
func (s *Server) scriptReply(c *client, ret lua.LValue, errReply string) {
	if errReply != "" {
		s.addError(c, errReply)
		return
	}
	if !s.lua.state.WriteReply(c.w, ret, s.maxReplyBytes(c)) {
		s.addError(c, errReplyTooBig)
	}
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
	h := s.scriptHost()
	var script scripting.Script
	if bySHA {
		if script, ok = h.state.Lookup(argv[1]); !ok {
			s.addError(c, "NOSCRIPT No matching script. Please use EVAL.")
			return
		}
		h.state.Used(script.SHA)
	} else {
		var errReply string
		evicted := h.state.Evicted()
		script, errReply = h.state.Load(argv[1], true)
		s.stats.evictedScripts += h.state.Evicted() - evicted
		if errReply != "" {
			s.addError(c, errReply)
			return
		}
	}
	flags := script.Flags
	if flags&scripting.Shebang != 0 && flags&(scripting.NoWrites|scripting.AllowOOM) == 0 && s.cfg.MaxMemory > 0 && !s.freeMemoryIfNeeded() {
		s.addError(c, "OOM command not allowed when used memory > 'maxmemory'.")
		return
	}
	keys, args := argv[3:3+numKeys], argv[3+numKeys:]
	h.run(c, argv, keys, script.SHA, true, readOnly || flags&scripting.NoWrites != 0, flags&scripting.AllowOOM != 0)
	ret, errReply := h.state.Eval(script, keys, args)
	if !s.endScript(c) {
		s.scriptReply(c, ret, errReply)
	}
}

// pausedScript reports whether CLIENT PAUSE WRITE must hold this EVAL or EVALSHA: every
// script may write unless it declares no-writes (EVALSHA: as loaded; unknown scripts are held
// and answer NOSCRIPT once the pause ends, as in Redis).
func (s *Server) pausedScript(argv [][]byte) bool {
	if len(argv) < 2 {
		return true
	}
	var flags scripting.Flags
	if resp.EqualFold(argv[0], "evalsha") {
		if s.lua == nil {
			return true
		}
		script, _ := s.lua.state.Lookup(argv[1])
		flags = script.Flags
	} else {
		flags, _, _ = scripting.ParseShebang(argv[1])
	}
	return flags&scripting.NoWrites == 0
}

// Commands a script may not run: Redis 7.0 flags them noscript.
func scriptForbidden(cmd *command) bool { return cmd.flags&cmdNoScript != 0 }

// Call is redis.call's dispatch (scripting.Host): Redis's checks of a command called from a
// script, then the command, run as the scripting client.
func (h *scriptHost) Call(argv [][]byte, resp3 bool) ([]byte, string) {
	s := h.s
	cmd := s.lookupCommand(argv[0])
	if cmd == nil {
		return nil, "ERR Unknown Redis command called from script"
	}
	if n := len(argv); (cmd.arity > 0 && n != cmd.arity) || n < -cmd.arity {
		return nil, "ERR Wrong number of args calling Redis command from script"
	}
	if !s.scriptDenyOff && scriptForbidden(cmd) {
		return nil, "ERR This Redis command is not allowed from script"
	}
	// May-replicate commands (PUBLISH...) count as writes here, as in Redis: that is what lets
	// read-only scripts run during CLIENT PAUSE WRITE.
	if h.readOnly && cmd.flags&(cmdWrite|cmdMayReplicate) != 0 {
		return nil, "ERR Write commands are not allowed from read-only scripts."
	}
	sc := h.sc
	if sc.user.Restricted() {
		if reason, object := h.s.aclCheck(sc.user, cmd, argv); reason != acl.Allowed {
			s.addACLLog(h.caller, reason, "lua", object, sc.user.Name())
			return nil, aclScriptError(reason)
		}
	}
	if cmd.flags&cmdWrite != 0 {
		s.script.wrote = true // SCRIPT KILL can no longer end it
	}
	sc.w.Buf = sc.w.Buf[:0]
	sc.w.RESP3 = resp3
	sc.flags = flagExecuting // blocking commands answer at once, as inside MULTI
	if s.cluster != nil && !h.caller.isMaster {
		// A cluster node's script reaches only the keys this node serves, declared or not, with
		// its caller's ASKING and READONLY (Redis's scriptVerifyClusterState).
		sc.flags |= h.caller.flags & (flagAsking | flagReadonly)
		if msg := s.clusterRoute(sc, cmd, argv); msg != "" {
			return nil, scriptClusterError(msg)
		}
	}
	s.call(sc, argv)
	return sc.w.Buf, ""
}

// MayCall is redis.acl_check_cmd (scripting.Host): whether the script's user may run argv.
func (h *scriptHost) MayCall(argv [][]byte) (bool, string) {
	cmd := h.s.lookupCommand(argv[0])
	if cmd == nil {
		return false, "ERR Invalid command passed to redis.acl_check_cmd()"
	}
	user := h.sc.user
	if !user.Restricted() {
		return true, ""
	}
	reason, _ := h.s.aclCheck(user, cmd, argv)
	return reason == acl.Allowed, ""
}

// Log is redis.log (scripting.Host).
func (h *scriptHost) Log(level scripting.LogLevel, msg string) {
	lv := logNotice
	switch level {
	case scripting.LogDebug:
		lv = logDebug
	case scripting.LogVerbose:
		lv = logVerbose
	case scripting.LogWarning:
		lv = logWarning
	}
	h.s.logf(lv, "%s", msg)
}

// CountError counts an error reply a script's result holds (scripting.Host), as addError
// counts the server's own.
func (h *scriptHost) CountError(msg string) { h.s.countErrorReply(msg) }

// Limits are busy-reply-threshold and proto-max-bulk-len (scripting.Host).
func (h *scriptHost) Limits() scripting.Limits {
	return scripting.Limits{
		Time:       time.Duration(h.s.cfg.BusyReplyThreshold) * time.Millisecond,
		MaxBulkLen: h.s.cfg.ProtoMaxBulkLen,
	}
}

// Background runs job on the bio thread (scripting.Host).
func (h *scriptHost) Background(job func()) { h.s.bio.submit(job) }

// errNoLuaDebugger answers SCRIPT DEBUG YES and SYNC.
const errNoLuaDebugger = "ERR SCRIPT DEBUG YES and SYNC are not supported: iocache has no Lua debugger (LDB)"

// SCRIPT LOAD|EXISTS|FLUSH|KILL|DEBUG|HELP
func cmdScript(s *Server, c *client, argv [][]byte) {
	sub := argv[1]
	switch {
	case resp.EqualFold(sub, "load") && len(argv) == 3:
		script, errReply := s.scriptHost().state.Load(argv[2], false)
		if errReply != "" {
			s.addError(c, errReply)
			return
		}
		c.w.BulkString(script.SHA)
	case resp.EqualFold(sub, "exists") && len(argv) >= 3:
		h := s.scriptHost()
		c.w.Array(len(argv) - 2)
		for _, a := range argv[2:] {
			if _, ok := h.state.Lookup(a); ok {
				c.w.Int(1)
			} else {
				c.w.Int(0)
			}
		}
	case resp.EqualFold(sub, "flush") && len(argv) <= 3:
		if len(argv) == 3 && !resp.EqualFold(argv[2], "sync") && !resp.EqualFold(argv[2], "async") {
			s.addError(c, "ERR SCRIPT FLUSH only support SYNC|ASYNC option")
			return
		}
		if s.lua != nil {
			s.lua.state.Close()
			s.lua = nil
		}
		c.w.OK()
	case resp.EqualFold(sub, "debug") && len(argv) == 3:
		// Redis's YES and SYNC start a session of its Lua debugger (LDB) at the next EVAL; iocache
		// has no debugger and refuses them rather than run the script undebugged. NO, the
		// default, is what every script gets.
		switch {
		case resp.EqualFold(argv[2], "no"):
			c.w.OK()
		case resp.EqualFold(argv[2], "yes"), resp.EqualFold(argv[2], "sync"):
			s.addError(c, errNoLuaDebugger)
		default:
			s.addError(c, "ERR Use SCRIPT DEBUG YES/SYNC/NO")
		}
	case resp.EqualFold(sub, "kill") && len(argv) == 2:
		s.scriptKill(c, true)
	case resp.EqualFold(sub, "help") && len(argv) == 2:
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
	{name: "eval", h: cmdEval, own: cmdMayReplicate},       // Redis's, hidden by COMMAND INFO
	{name: "evalsha", h: cmdEvalSHA, own: cmdMayReplicate}, // Redis's, hidden by COMMAND INFO
	{name: "eval_ro", h: cmdEvalRO},
	{name: "evalsha_ro", h: cmdEvalSHARO},
	{name: "script", h: cmdScript, own: cmdNoScript}, // a container: Redis flags its subcommands
}
