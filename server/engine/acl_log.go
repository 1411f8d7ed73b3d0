package engine

// The security log (ACL LOG) and the replies of denied commands: NOPERM at top level and in
// MULTI, the script and EXEC texts, each denial logged and counted as Redis 7.0 does it.

// aclLogEntry is one ACL LOG entry; similar denials within a minute are counted in one.
type aclLogEntry struct {
	count      int64
	reason     int
	context    string // toplevel, multi, lua
	object     string
	username   string
	updatedMs  int64 // the last denial counted in it
	clientInfo string
}

// aclLog holds the newest entries first, at most acllog-max-len of them.
type aclLog struct {
	entries recentLog[aclLogEntry]
}

var aclReasonNames = [...]string{aclDeniedCmd: "command", aclDeniedKey: "key", aclDeniedChannel: "channel", aclDeniedAuth: "auth"}

// aclLogGroupMs is how close in time a denial must be to an equal one to be counted in it.
const aclLogGroupMs = 60000

// addACLLog records a denial; caller is the client whose request it was (the one running the
// script, for context lua). The password of a failed AUTH is never recorded.
func (s *Server) addACLLog(caller *client, reason int, context, object, username string) {
	switch reason {
	case aclDeniedAuth:
		s.acl.deniedAuth++
	case aclDeniedCmd:
		s.acl.deniedCmd++
	case aclDeniedKey:
		s.acl.deniedKey++
	case aclDeniedChannel:
		s.acl.deniedChannel++
	}
	max := s.cfg.ACLLogMaxLen
	if max <= 0 {
		s.acl.log.entries.Reset()
		return
	}
	info := s.clientInfoLine(caller, nil)
	l := &s.acl.log
	// Like Redis, only the ten newest entries are candidates for grouping.
	for i := 0; i < l.entries.Len() && i < 10; i++ {
		e := l.entries.At(i)
		if e.reason == reason && e.context == context && e.object == object && e.username == username && s.nowMs-e.updatedMs < aclLogGroupMs {
			e.count++
			e.updatedMs, e.clientInfo = s.nowMs, info
			l.entries.ToFront(i) // as Redis does
			return
		}
	}
	e := aclLogEntry{count: 1, reason: reason, context: context, object: truncate(object, 128), username: truncate(username, 128),
		updatedMs: s.nowMs, clientInfo: info}
	l.entries.Push(e, max)
}

// aclDeny answers a command the client's user may not run, and logs it.
func (s *Server) aclDeny(c *client, cmd *command, reason int, object string) {
	context := "toplevel"
	if c.flags&flagMulti != 0 {
		context = "multi"
	}
	s.addACLLog(c, reason, context, object, c.user.name)
	msg := "NOPERM this user has no permissions to run the '" + object + "' command"
	switch reason {
	case aclDeniedKey:
		msg = "NOPERM this user has no permissions to access one of the keys used as arguments"
	case aclDeniedChannel:
		msg = "NOPERM this user has no permissions to access one of the channels used as arguments"
	}
	if cmd.name == "exec" {
		// As Redis's rejectCommand does for EXEC: the transaction goes with it.
		s.discardTransaction(c)
		msg = "EXECABORT Transaction discarded because of: " + msg
	}
	s.reject(c, cmd, msg)
}

// aclScriptError is the error redis.call() raises when the script's user may not run a command.
func aclScriptError(reason int) string {
	switch reason {
	case aclDeniedKey:
		return "ERR The user executing the script can't access at least one of the keys mentioned in the command arguments"
	case aclDeniedChannel:
		return "ERR The user executing the script can't publish to the channel mentioned in the command"
	}
	return "ERR The user executing the script can't run this command or subcommand"
}

// aclExecError is EXEC's reply for a queued command the user may no longer run.
func aclExecError(reason int) string {
	why := "no permission to execute the command or subcommand"
	switch reason {
	case aclDeniedKey:
		why = "no permission to touch the specified keys"
	case aclDeniedChannel:
		why = "no permission to access one of the channels used as arguments"
	}
	return "NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: " + why
}
