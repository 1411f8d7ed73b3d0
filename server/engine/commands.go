package engine

import (
	"strings"

	"github.com/iocache/iocache/server/acl"
	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/keyspace"
	"github.com/iocache/iocache/server/resp"
)

// Command flags, named as COMMAND INFO prints them.
const (
	cmdWrite    = 1 << iota // modifies the keyspace
	cmdReadonly             // reads the keyspace
	cmdDenyOOM              // refused when over maxmemory under noeviction
	cmdAdmin                // server administration
	cmdPubSub               // pub/sub
	cmdNoScript
	cmdBlocking   // may block the client
	cmdFast       // O(1) or O(log n)
	cmdNoAuth     // allowed before AUTH
	cmdLoading    // allowed while loading
	cmdStale      // allowed on stale replicas
	cmdNoMulti    // not allowed inside MULTI
	cmdSubscribed // allowed in RESP2 subscribed mode
	cmdSkipMonitor
	cmdMayReplicate
	cmdAllowBusy
	// cmdTouchesArbitraryKeys: the keys the command expires on its way are propagated one by
	// one, not with the command as a transaction (Redis's CMD_TOUCHES_ARBITRARY_KEYS, hidden
	// from COMMAND INFO as there).
	cmdTouchesArbitraryKeys
)

var flagNames = []string{"write", "readonly", "denyoom", "admin", "pubsub", "noscript", "blocking", "fast", "no_auth", "loading", "stale", "no_multi", "", "skip_monitor", "may_replicate", "allow_busy"}

// command is one entry of the command table.
type command struct {
	name     string
	handler  func(s *Server, c *client, argv [][]byte)
	arity    int // Redis convention: n means exactly n arguments (name included), -n at least n
	flags    int
	firstKey int
	lastKey  int
	step     int
	// keyless: the command can never name a key (cluster mode routes it at no cost); keyRange:
	// its keys are one range of arguments, read without the key-spec walker (cluster.go).
	keyless  bool
	keyRange *keySpec
	group    string
	summary  string
	// subNames maps a container's subcommands to their full names ("list" → "client|list"), for
	// CLIENT LIST's cmd field; nil for other commands.
	subNames map[string]string
	// subs holds a container's statistics per subcommand ("config|get"), kept as Redis keeps
	// them (command_stats.go); nil for other commands.
	subs map[string]*command

	calls, usecNs, rejected, failed int64
	hist                            [latencyBuckets]int64 // execution time, log2 µs buckets
}

// lowerName lowers an ASCII command or subcommand name into buf, for map lookups that do not
// allocate; false when it is longer than buf (no name of the table is).
func lowerName(buf *[32]byte, name []byte) ([]byte, bool) {
	if len(name) > len(buf) {
		return nil, false
	}
	for i, ch := range name {
		if ch >= 'A' && ch <= 'Z' {
			ch += 'a' - 'A'
		}
		buf[i] = ch
	}
	return buf[:len(name)], true
}

// fullName is the full name of a container's subcommand, as Redis reports the last command
// ("client|list"), or "" (NULL) for a subcommand it does not have. It does not allocate.
func (cmd *command) fullName(sub []byte) string {
	var buf [32]byte
	low, ok := lowerName(&buf, sub)
	if !ok {
		return ""
	}
	return cmd.subNames[string(low)]
}

// subcommand is a container's entry for a subcommand (its Redis flags and statistics), or nil.
// It does not allocate.
func (cmd *command) subcommand(sub []byte) *command {
	var buf [32]byte
	low, ok := lowerName(&buf, sub)
	if !ok {
		return nil
	}
	return cmd.subs[string(low)]
}

// lookupCommand finds a command by name, case-insensitively, without allocating (a name
// renamed past 32 bytes is lowered into a new string).
func (s *Server) lookupCommand(name []byte) *command {
	var buf [32]byte
	low, ok := lowerName(&buf, name)
	if !ok {
		return s.commands[strings.ToLower(string(name))]
	}
	return s.commands[string(low)]
}

// lookupFor is lookupCommand remembering the client's last name: the table never changes
// after start (rename-command is read from the configuration file only).
func (s *Server) lookupFor(c *client, name []byte) *command {
	if len(name) == int(c.lookupLen) && string(name) == string(c.lookupName[:c.lookupLen]) {
		return c.lookupCmd
	}
	cmd := s.lookupCommand(name)
	if cmd != nil && len(name) <= len(c.lookupName) {
		c.lookupLen = uint8(copy(c.lookupName[:], name))
		c.lookupCmd = cmd
	}
	return cmd
}

// process runs the client's parsed commands on the main thread. It stops early when a command
// blocks the client; the blocking code resumes it.
func (s *Server) process(c *client) {
	c.mainOwned = true
	start := 0
	if c.nextCmd > 0 {
		start = c.conn.CmdEnds[c.nextCmd-1]
	}
	first := c.nextCmd
	prevEnd := int64(0) // when the previous command of this batch ended, if it executed
	for c.nextCmd < len(c.conn.CmdEnds) && c.flags&flagCloseASAP == 0 {
		end := c.conn.CmdEnds[c.nextCmd]
		argv := c.conn.Argv[start:end]
		start = end
		c.nextCmd++
		cmd := s.lookupFor(c, argv[0]) // once per command: callCommand takes it
		if s.script.busy && c.isMaster {
			// As in Redis, the primary's stream waits for a busy script rather than be
			// answered BUSY: the main loop resumes it once the script has ended.
			c.nextCmd--
			s.masterApplied(c, first, c.nextCmd)
			s.yieldClient(c)
			return
		}
		// A busy script's BUSY comes before a pause's hold, as in Redis.
		if cmd != nil && !s.script.busy && s.pauseHolds(c, cmd, argv) && !c.isMaster && c.replLink == nil {
			// Held by CLIENT PAUSE: run this command again when the pause ends. Replication
			// links are never held, as in Redis.
			c.nextCmd--
			c.flags |= flagPaused
			s.pause.waiting = append(s.pause.waiting, c)
			return
		}
		mark := len(c.w.Buf)
		s.cmdStart, s.cmdEnd = prevEnd, 0
		s.topCmdStart = 0
		s.callCommand(c, cmd, argv)
		if c.flags&flagAsking != 0 && cmd != nil && cmd.name != "asking" && c.flags&flagMulti == 0 {
			c.flags &^= flagAsking // ASKING is good for the next command only, as in Redis
		}
		began := s.topCmdStart
		s.cmdStart, prevEnd = 0, s.cmdEnd
		if c.replyOff || c.replySkip || c.replySkipNext {
			s.applyReplyMode(c, mark)
		}
		if c.tracking != nil || len(c.pendingInvalidations) > 0 {
			s.trackingAfterCommand(c, argv[0])
		}
		s.enforceOutputLimit(c)
		if c.blocked != nil {
			return // stays mainOwned until unblocked
		}
		if c.flags&(flagCloseASAP|flagCloseAfterReply) != 0 {
			break
		}
		if c.nextCmd < len(c.conn.CmdEnds) && s.ranLong(began, prevEnd) {
			// The others' turn (yield.go): stays mainOwned, like a blocked client. What the
			// primary's stream applied so far goes to the backlog now: the rest is another call.
			if c.isMaster {
				s.masterApplied(c, first, c.nextCmd)
			}
			s.yieldClient(c)
			return
		}
	}
	if c.isMaster {
		s.masterApplied(c, first, c.nextCmd)
	}
	c.nextCmd = 0
	if c.conn.ProtoErr != "" {
		c.w.Error("ERR " + c.conn.ProtoErr)
		c.conn.ProtoErr = ""
		c.flags |= flagCloseAfterReply
	}
	c.lastInteraction.Store(s.unixtime)
	c.mainOwned = false
}

// applyReplyMode drops the reply of the command that just ran when CLIENT REPLY OFF or SKIP
// silences it, and moves SKIP on to the next command, as Redis does after each call.
func (s *Server) applyReplyMode(c *client, mark int) {
	if (c.replyOff || c.replySkip) && len(c.w.Buf) >= mark && !isSubscriptionConfirmation(c, mark) {
		c.w.Buf = c.w.Buf[:mark]
	}
	c.replySkip = false
	if c.replySkipNext {
		c.replySkip, c.replySkipNext = true, false
	}
}

// isSubscriptionConfirmation reports whether the reply written since mark confirms a
// (P|S)SUBSCRIBE or (P|S)UNSUBSCRIBE. Redis 7.0 sends those even under CLIENT REPLY OFF or SKIP
// (they are pushes, like the messages that follow); errors of those commands are dropped.
func isSubscriptionConfirmation(c *client, mark int) bool {
	if len(c.w.Buf) == mark || c.w.Buf[mark] == '-' {
		return false
	}
	switch c.lastCmd {
	case "subscribe", "unsubscribe", "psubscribe", "punsubscribe", "ssubscribe", "sunsubscribe":
		return true
	}
	return false
}

// call validates and executes one command, as Redis's processCommand and call do.
func (s *Server) call(c *client, argv [][]byte) { s.callCommand(c, s.lookupCommand(argv[0]), argv) }

// callCommand is call for a command already looked up (nil: unknown), so that the per-request
// path looks each name up once.
func (s *Server) callCommand(c *client, cmd *command, argv [][]byte) {
	s.stats.commandsProcessed++
	if cmd == nil {
		c.lastCmd = ""
		s.rejectUnknown(c, argv)
		return
	}
	// CLIENT LIST's cmd: the last command received, queued or refused too, as Redis records it.
	c.lastCmd = cmd.name
	st := cmd // where a rejection counts: the subcommand's statistics, as in Redis
	if cmd.subNames != nil && len(argv) > 1 {
		c.lastCmd = cmd.fullName(argv[1])
		st = cmd.statsOf(argv)
	}
	if (cmd.arity > 0 && len(argv) != cmd.arity) || len(argv) < -cmd.arity {
		s.reject(c, st, "ERR wrong number of arguments for '"+cmd.name+"' command")
		return
	}
	if st != cmd && ((st.arity > 0 && len(argv) != st.arity) || len(argv) < -st.arity) {
		// A subcommand's arity, as Redis checks it when it looks the command up.
		s.reject(c, st, "ERR wrong number of arguments for '"+st.name+"' command")
		return
	}
	if cmd.name == "debug" && !s.debugAllowed(c) {
		s.reject(c, st, "ERR DEBUG command not allowed. If the enable-debug-command option is set to \"local\", you can run it from a local connection, otherwise you need to set this option in the configuration file, and then restart the server.")
		return
	}
	if !c.authed && cmd.flags&cmdNoAuth == 0 {
		s.reject(c, st, "NOAUTH Authentication required.")
		return
	}
	if c.user.Restricted() {
		// The one branch the default user (allcommands, allkeys, allchannels) pays.
		if reason, object := s.aclCheck(c.user, cmd, argv); reason != acl.Allowed {
			s.aclDeny(c, cmd, reason, object)
			return
		}
	}
	if c.guest {
		s.callGuest(c, cmd.name, argv)
		return
	}
	if s.cluster != nil {
		if msg := s.clusterRoute(c, cmd, argv); msg != "" {
			s.rejectRedirect(c, st, msg)
			return
		}
	}
	if c.flags&flagPubSub != 0 && !c.w.RESP3 && cmd.flags&cmdSubscribed == 0 {
		s.reject(c, st, "ERR Can't execute '"+cmd.name+"': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / RESET are allowed in this context")
		return
	}
	if s.writesDenied() && (s.flagsOf(c, cmd)&cmdWrite != 0 || cmd.name == "ping") && !c.isMaster {
		s.reject(c, st, s.misconfError())
		return
	}
	if s.repl.gate {
		if msg := s.replicationRefuses(c, cmd); msg != "" {
			s.reject(c, st, msg)
			return
		}
	}
	// Evict before every command, as Redis's processCommand does, not only before those that may
	// be refused: a read after a write that passed maxmemory makes room too, and the clients
	// tracking the evicted keys hear of it before that read's reply. While a script runs past
	// busy-reply-threshold (script_busy.go), another client's command is answered BUSY unless
	// Redis allows it then, and nothing is evicted: the deletions would be propagated in the
	// middle of the script's.
	if s.script.busy && c != s.lua.sc {
		if st.flags&cmdAllowBusy == 0 {
			s.reject(c, st, s.busyError()) // EXEC discards its transaction with it
			return
		}
	} else if s.cfg.MaxMemory > 0 && !c.scriptAllowOOM && !c.isMaster && !s.freeMemoryIfNeeded() && s.rejectsOnOOM(c, cmd, argv) {
		s.reject(c, st, "OOM command not allowed when used memory > 'maxmemory'.")
		return
	}
	if c.flags&flagMulti != 0 && !isMultiControl(cmd) {
		s.queueMulti(c, cmd, argv)
		return
	}
	s.execute(c, cmd, argv)
}

// execute runs a validated command and accounts for it.
func (s *Server) execute(c *client, cmd *command, argv [][]byte) {
	start := s.cmdStart
	s.cmdStart = 0 // the commands this one runs (EXEC, scripts) read the clock themselves
	// A blocked command that runs again once its key is ready was shown when it first ran.
	if len(s.pubsub.monitors) > 0 && c.rerunDeadline == 0 && !hiddenFromMonitors(cmd, argv) {
		s.feedMonitors(c, redactSecrets(argv))
		start = 0
	}
	errsBefore := s.stats.errorReplies
	// Replication and the AOF: one flag, false until a replica first attaches or the AOF is on
	// (propagate.go).
	feeding := s.propagating
	var mark propMark
	if feeding {
		mark = s.propagateBegin()
	}
	if start == 0 {
		start = nanotime()
	}
	prev, prevCmd := s.executing, s.executingCmd
	if prev == nil {
		s.topCmdStart = start // for process's yield (yield.go); not the commands a script runs
	}
	s.executing, s.executingCmd = c, cmd
	cmd.handler(s, c, argv)
	if len(s.writing) > 0 {
		s.endWrites()
	}
	s.settleMemory()
	s.executing, s.executingCmd = prev, prevCmd
	if feeding {
		s.propagateEnd(c, cmd, argv, mark)
	}
	if c.tracking != nil && cmd.flags&cmdReadonly != 0 {
		s.trackingRemember(c, cmd, argv)
	} else if cmd.flags&cmdReadonly != 0 && s.lua != nil && c == s.lua.sc {
		s.trackingRememberScript()
	}
	end := nanotime()
	dur := end - start
	s.cmdEnd = end
	st := cmd
	if cmd.subs != nil {
		// An unknown subcommand is refused before it runs in Redis, and counted nowhere.
		st = cmd.statsOf(argv)
	}
	if st == cmd && cmd.subs != nil {
		st = &s.unknownSubStats
	}
	st.calls++
	st.usecNs += dur
	st.hist[latencyBucket(dur)]++
	if s.stats.errorReplies != errsBefore {
		st.failed++
	}
	// EXEC is the one command Redis 7.0 flags skip_slowlog: the commands it ran are logged.
	if s.cfg.SlowlogLogSlowerThan >= 0 && dur/1000 >= s.cfg.SlowlogLogSlowerThan && cmd.name != "exec" {
		s.slowlog.add(s, c, redactSecrets(argv), dur/1000)
	}
	if s.latency.thresholdMs > 0 {
		if cmd.flags&cmdFast != 0 {
			s.noteLatency("fast-command", dur)
		} else {
			s.noteLatency("command", dur)
		}
	}
}

// deniedOnOOM reports whether a command is one Redis flags deny-oom: by its own flags, or, for
// a container, by its subcommand's (FUNCTION LOAD and RESTORE, XGROUP CREATE and CREATECONSUMER).
func deniedOnOOM(cmd *command, argv [][]byte) bool {
	if cmd.flags&cmdDenyOOM != 0 {
		return true
	}
	if len(argv) < 2 {
		return false
	}
	switch cmd.name {
	case "function":
		return resp.EqualFold(argv[1], "load") || resp.EqualFold(argv[1], "restore")
	case "xgroup":
		return resp.EqualFold(argv[1], "create") || resp.EqualFold(argv[1], "createconsumer")
	}
	return false
}

// rejectsOnOOM reports whether cmd is refused when memory stays over maxmemory, as Redis's
// processCommand decides: a denyoom command, EXEC of a transaction holding one, and inside MULTI
// any command but EXEC, DISCARD, QUIT and RESET, since queueing grows memory without bound.
func (s *Server) rejectsOnOOM(c *client, cmd *command, argv [][]byte) bool {
	if deniedOnOOM(cmd, argv) {
		return true
	}
	if c.flags&flagMulti == 0 {
		return false
	}
	switch cmd.name {
	case "exec":
		for _, q := range c.multiQueue {
			if deniedOnOOM(q.cmd, q.argv) {
				return true
			}
		}
		return false
	case "discard", "quit", "reset":
		return false
	}
	return true
}

// flagsOf are the flags Redis's processCommand checks a command by: EXEC's are those of the
// transaction it would run, write when any queued command writes, and stale only when all of
// them are stale (a refused EXEC discards the transaction).
func (s *Server) flagsOf(c *client, cmd *command) int {
	if cmd.name != "exec" || c.flags&flagMulti == 0 {
		return cmd.flags
	}
	flags := cmd.flags
	for _, q := range c.multiQueue {
		f := q.cmd.statsOf(q.argv).flags
		flags |= f & cmdWrite
		if f&cmdStale == 0 {
			flags &^= cmdStale
		}
	}
	return flags
}

func isMultiControl(cmd *command) bool {
	switch cmd.name {
	case "exec", "discard", "multi", "watch", "quit", "reset":
		return true
	}
	return false
}

func (s *Server) rejectUnknown(c *client, argv [][]byte) {
	var b strings.Builder
	b.WriteString("ERR unknown command '")
	b.WriteString(truncate(string(argv[0]), 128))
	b.WriteString("', with args beginning with: ")
	for i, a := range argv[1:] {
		if i >= 10 || b.Len() >= 256 {
			break
		}
		b.WriteString("'")
		b.WriteString(truncate(string(a), 256-b.Len()))
		b.WriteString("' ")
	}
	s.stats.unknownCommands++
	if c.flags&flagMulti != 0 {
		c.flags |= flagDirtyExec
	}
	s.addError(c, b.String())
}

func truncate(s string, n int) string {
	if n < 0 {
		n = 0
	}
	if len(s) > n {
		return s[:n]
	}
	return s
}

// reject answers an error before execution (arity, auth, OOM, context) and counts it. EXEC
// refused discards the transaction, as Redis's rejectCommand does (execCommandAbort), whose
// reply names the error without its ERR.
func (s *Server) reject(c *client, cmd *command, msg string) {
	cmd.rejected++
	if cmd.name == "exec" {
		s.discardTransaction(c)
		s.addError(c, "EXECABORT Transaction discarded because of: "+strings.TrimPrefix(msg, "ERR "))
		return
	}
	if c.flags&flagMulti != 0 {
		c.flags |= flagDirtyExec
	}
	s.addError(c, msg)
}

// rejectRedirect refuses a command that this cluster node does not serve: the redirection as
// the reply, a queued command marking its transaction (EXEC then aborts), EXEC discarding its
// own, as Redis does.
func (s *Server) rejectRedirect(c *client, cmd *command, msg string) {
	cmd.rejected++
	if cmd.name == "exec" {
		s.discardTransaction(c)
	} else if c.flags&flagMulti != 0 {
		c.flags |= flagDirtyExec
	}
	s.addError(c, msg)
}

// addError writes an error reply and counts it in errorstats.
func (s *Server) addError(c *client, msg string) {
	s.countErrorReply(msg)
	c.w.Error(msg)
}

// countErrorReply counts an error reply in the stats (INFO stats and errorstats).
func (s *Server) countErrorReply(msg string) {
	s.stats.errorReplies++
	code := msg
	if i := strings.IndexByte(msg, ' '); i > 0 {
		code = msg[:i]
	}
	s.stats.countError(code)
}

// Common error replies, with Redis's exact texts.
const (
	errWrongType    = "WRONGTYPE Operation against a key holding the wrong kind of value"
	errNotInt       = "ERR value is not an integer or out of range"
	errNotFloat     = "ERR value is not a valid float"
	errSyntax       = "ERR syntax error"
	errNoKey        = "ERR no such key"
	errOverflow     = "ERR increment or decrement would overflow"
	errIndexRange   = "ERR index out of range"
	errInvalidDB    = "ERR DB index is out of range"
	errInvalidExp   = "ERR invalid expire time in '%s' command"
	errSelfMove     = "ERR source and destination objects are the same"
	errBitOffset    = "ERR bit offset is not an integer or out of range"
	errStringTooBig = "ERR string exceeds maximum allowed size (proto-max-bulk-len)"
	// errListElemTooBig refuses a list element longer than a list holds (4 GiB - 1 bytes,
	// keyspace.MaxListElem), which only a proto-max-bulk-len raised past 4 GiB lets through.
	errListElemTooBig = "ERR element exceeds the maximum list element size (4294967295 bytes)"
)

func (s *Server) wrongType(c *client) { s.addError(c, errWrongType) }

func (s *Server) wrongArgs(c *client, name string) {
	s.addError(c, "ERR wrong number of arguments for '"+name+"' command")
}

// parseInt reads an integer argument as Redis's string2ll does.
func parseInt(b []byte) (int64, bool) { return resp.ParseInt(b) }

// intArg reads an integer argument or replies with Redis's error.
func (s *Server) intArg(c *client, b []byte) (int64, bool) {
	v, ok := parseInt(b)
	if !ok {
		s.addError(c, errNotInt)
	}
	return v, ok
}

// lookupRead finds a live key for reading: expired keys are deleted on access (lazy expiry), and
// hits, misses and the LRU clock are updated.
func (s *Server) lookupRead(c *client, key []byte) (keyspace.Ref, bool) {
	r, ok := s.lookupReadNoTouch(c, key)
	if ok && s.touches(c) {
		s.touch(s.dbs[c.db], r)
	}
	return r, ok
}

// touches reports whether c's access counts for LRU/LFU: not under CLIENT NO-TOUCH, except for
// TOUCH itself (Redis 7.2). A script's commands count as its caller's.
func (s *Server) touches(c *client) bool {
	if s.lua != nil && c == s.lua.sc && s.lua.caller != nil {
		c = s.lua.caller
	}
	return c.flags&flagNoTouch == 0 || c.lastCmd == "touch"
}

// lookupReadNoTouch is lookupRead that leaves the key's access time alone, as Redis's
// LOOKUP_NOTOUCH does for TYPE, EXISTS and the TTL family: asking about a key is not using it,
// and OBJECT IDLETIME and LRU eviction must not count it.
func (s *Server) lookupReadNoTouch(c *client, key []byte) (keyspace.Ref, bool) {
	db := s.dbs[c.db]
	r, ok := s.lookupLive(db, c.db, key)
	if !ok {
		s.stats.keyspaceMisses++
		s.notify(config.NotifyKeyMiss, "keymiss", key, c.db)
		return 0, false
	}
	s.stats.keyspaceHits++
	return r, true
}

// lookupWrite finds a live key for writing (no hit/miss accounting).
func (s *Server) lookupWrite(c *client, key []byte) (keyspace.Ref, bool) {
	db := s.dbs[c.db]
	r, ok := s.lookupLive(db, c.db, key)
	if ok && s.touches(c) {
		s.touch(db, r)
	}
	return r, ok
}

// lookupLive finds key in db, deleting it first if it has expired.
func (s *Server) lookupLive(db *keyspace.DB, dbIndex int, key []byte) (keyspace.Ref, bool) {
	r, ok := db.Find(key)
	if !ok {
		return 0, false
	}
	if exp, has := db.ExpireAt(r); has && exp <= s.nowMs {
		if s.loading {
			return r, true // the AOF's own DEL follows, if the key expired before the crash
		}
		if s.repl.master != nil {
			// A replica keeps the key for its primary's DEL; only its own clients see it gone.
			return r, s.executing != nil && s.executing.isMaster
		}
		if s.writesHeld() && (s.executingCmd == nil || s.executingCmd.flags&cmdWrite == 0) {
			// Redis's expireIfNeeded under a pause: the key reads as gone but stays, so the
			// dataset does not change while writes are held. A write that runs anyway (inside
			// the EXEC that paused) deletes it first, so that it never finds a stale record.
			return 0, false
		}
		s.expireKey(db, dbIndex, r, key)
		return 0, false
	}
	return r, true
}
