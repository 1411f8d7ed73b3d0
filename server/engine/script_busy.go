package engine

// Scripts past busy-reply-threshold, as Redis 7.0 runs them: the script goes on, and from then
// on, every millisecond or so while it runs (scripting calls scriptHost.Busy between two of its
// instructions, as Redis's Lua hook calls processEventsWhileBlocked), the main thread serves the
// events that arrived: other clients' commands are answered BUSY, except those Redis flags
// allow_busy (AUTH, HELLO, MULTI, DISCARD, WATCH, UNWATCH, RESET, QUIT, REPLCONF, SHUTDOWN,
// SCRIPT KILL, FUNCTION KILL, FUNCTION STATS), which run. SCRIPT KILL or FUNCTION KILL ends a
// script that has not written (it gets "Script killed by user with SCRIPT KILL..."); one that
// wrote is UNKILLABLE, and only SHUTDOWN NOSAVE ends it, with the server.
//
// The script's own client is held by the main thread meanwhile (its thread holds its socket
// until the script returns), so its pipeline waits, and it stays linked even if its peer goes.
// The primary's stream on a replica waits too, rather than be answered BUSY (its client is parked
// until the script ends, yield.go). Nothing else of the main loop runs while a script is busy: no
// cron, no expiry or eviction (whose deletions would be propagated in the middle of the
// script's), no blocked client is served (a key the script pushed to is served once it
// ended), the clock stays at the script's start (its keys expire as of then), and no
// connection moves between threads. The replies of clients answered meanwhile wait for the AOF
// write as usual: the AOF buffer is written, holding only whole units (the script's unit is
// propagated when it ends).
//
// The I/O threads do not answer BUSY themselves: what a command gets during a busy script
// depends on the client's state, which only the main thread may read (NOAUTH, ACL and the
// RESP2 subscribed mode come first, as in Redis; a refused command flags the client's MULTI;
// errorstats count it), so each batch goes to the main thread as always, which serves them
// every millisecond.

// runningScript is the script or function that runs (its caller non-nil), for BUSY, SCRIPT
// KILL, FUNCTION KILL and FUNCTION STATS.
type runningScript struct {
	caller *client
	argv   [][]byte // the command that runs it (FUNCTION STATS)
	name   string   // the function's name, or the script's SHA1
	eval   bool     // EVAL or EVALSHA, not FCALL
	// wrote: it called a write command, so SCRIPT KILL cannot end it (Redis's
	// SCRIPT_WRITE_DIRTY).
	wrote bool
	// busy: it ran past busy-reply-threshold, and other clients are being served.
	busy bool
	// serving: Busy is serving events (it is not re-entered).
	serving bool
	// shutdown: SHUTDOWN NOSAVE ended it; nothing it changed is propagated.
	shutdown bool
}

// Redis's BUSY replies, for a script and for a function.
const (
	errBusyScript   = "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
	errBusyFunction = "BUSY Redis is busy running a script. You can only call FUNCTION KILL or SHUTDOWN NOSAVE."
)

// busyError is the BUSY reply for the running script or function.
func (s *Server) busyError() string {
	if s.script.eval {
		return errBusyScript
	}
	return errBusyFunction
}

// startScript notes that c runs a script (eval) or function named name, with argv.
func (s *Server) startScript(c *client, argv [][]byte, name string, eval bool) {
	s.script = runningScript{caller: c, argv: argv, name: name, eval: eval}
}

// endScript notes that c's script returned, and says whether SHUTDOWN NOSAVE ended it: then
// nothing it changed is propagated and c gets no reply, its connection closes, as when Redis
// exits in the middle of a script.
func (s *Server) endScript(c *client) (shutdown bool) {
	shutdown = s.script.shutdown
	s.script = runningScript{}
	if shutdown {
		p := &s.repl.prop
		p.ops, p.unit = p.ops[:0], p.unit[:0]
		c.flags |= flagCloseASAP
	}
	return shutdown
}

// Busy serves the other clients while the script runs past busy-reply-threshold
// (scripting.Host); the first call logs it, as Redis does.
func (h *scriptHost) Busy() {
	s := h.s
	r := &s.script
	if r.caller == nil || r.serving || !s.looping || s.loading {
		return // a script run while loading (an AOF, DEBUG LOADAOF) serves no one meanwhile
	}
	if !r.busy {
		r.busy = true
		how := "FUNCTION KILL"
		if r.eval {
			how = "SCRIPT KILL"
		}
		s.logf(logWarning, "Slow script detected: still in execution after %d milliseconds. You can try killing the script using the %s command. Script name is: %s.",
			h.state.RunTime().Milliseconds(), how, r.name)
	}
	r.serving = true
	s.serveWhileBusy()
	r.serving = false
	if s.stopping.Load() && !r.shutdown {
		// Shutdown, the embedding program's (a test's) way to stop the server, ends the script
		// as SHUTDOWN NOSAVE would. A signal waits for the script, as in Redis.
		s.shutdownBusy()
	}
}

// serveWhileBusy is one iteration of the main loop's socket work, from inside the script: the
// events of the iteration the script started in that were not handled yet, then those that
// arrived since, and the I/O threads' batches.
func (s *Server) serveWhileBusy() {
	cmdStart, cmdEnd, topCmdStart := s.cmdStart, s.cmdEnd, s.topCmdStart
	executing, executingCmd := s.executing, s.executingCmd
	s.handleEvents()
	s.events, s.nextEvent = s.io.Wait(0), 0
	s.handleEvents()
	s.io.ServeBusy()
	if s.aof.file != nil || len(s.aof.held) > 0 {
		s.aofBeforeSleep()
	}
	s.io.Flush()
	s.cmdStart, s.cmdEnd, s.topCmdStart = cmdStart, cmdEnd, topCmdStart
	s.executing, s.executingCmd = executing, executingCmd
}

// scriptKill is SCRIPT KILL (eval) and FUNCTION KILL, with Redis's replies.
func (s *Server) scriptKill(c *client, eval bool) {
	r := &s.script
	switch {
	case r.caller == nil:
		s.addError(c, "NOTBUSY No scripts in execution right now.")
	case r.caller.isMaster:
		s.addError(c, "UNKILLABLE The busy script was sent by a master instance in the context of replication and cannot be killed.")
	case r.wrote:
		s.addError(c, "UNKILLABLE Sorry the script already executed write commands against the dataset. You can either wait the script termination or kill the server in a hard way using the SHUTDOWN NOSAVE command.")
	case eval && !r.eval:
		s.addError(c, errBusyFunction)
	case !eval && r.eval:
		s.addError(c, errBusyScript)
	default:
		s.logf(logWarning, "Lua script killed by user with SCRIPT KILL.")
		s.lua.state.Kill()
		c.w.OK()
	}
}

// shutdownBusy ends the busy script for SHUTDOWN NOSAVE. The listeners close now, before the
// client that asked sees its connection close, as they would in Redis, which exits at once.
func (s *Server) shutdownBusy() {
	s.script.shutdown = true
	s.lua.state.Kill()
	for _, l := range s.listeners {
		s.io.RemoveListener(l)
	}
	s.closeListeners()
}

// runningScriptStats is FUNCTION STATS's running_script: nil between functions, else the
// function's name, the command that runs it and for how long it has run.
func (s *Server) runningScriptStats(c *client) {
	r := &s.script
	if r.caller == nil {
		c.w.Null()
		return
	}
	c.w.Map(3)
	c.w.BulkString("name")
	c.w.BulkString(r.name)
	c.w.BulkString("command")
	c.w.Array(len(r.argv))
	for _, a := range r.argv {
		c.w.Bulk(a)
	}
	c.w.BulkString("duration_ms")
	c.w.Int(s.lua.state.RunTime().Milliseconds())
}
