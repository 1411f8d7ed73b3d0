package engine

// The security log (ACL LOG) and the replies of denied commands: NOPERM at top level and in
// MULTI, the script and EXEC texts, each denial logged and counted as Redis 7.0 does it. The
// entries and how similar denials group are package acl's (acl.LogEntry).

import "github.com/iocache/iocache/server/acl"

// aclLog holds the newest entries first, at most acllog-max-len of them.
type aclLog struct {
	entries recentLog[acl.LogEntry]
}

// addACLLog records a denial; caller is the client whose request it was (the one running the
// script, for context lua). The password of a failed AUTH is never recorded.
func (s *Server) addACLLog(caller *client, reason acl.Reason, context, object, username string) {
	switch reason {
	case acl.DeniedAuth:
		s.acl.deniedAuth++
	case acl.DeniedCommand:
		s.acl.deniedCmd++
	case acl.DeniedKey:
		s.acl.deniedKey++
	case acl.DeniedChannel:
		s.acl.deniedChannel++
	}
	max := s.cfg.ACLLogMaxLen
	if max <= 0 {
		s.acl.log.entries.Reset()
		return
	}
	info := s.clientInfoLine(caller, nil)
	d := acl.Denial{Reason: reason, Context: context, Object: object, Username: username}
	l := &s.acl.log
	// Like Redis, only the ten newest entries are candidates for grouping.
	for i := 0; i < l.entries.Len() && i < 10; i++ {
		if l.entries.At(i).Merge(d, s.nowMs, info) {
			l.entries.ToFront(i) // as Redis does
			return
		}
	}
	l.entries.Push(acl.NewLogEntry(d, s.nowMs, info), max)
}

// aclDeny answers a command the client's user may not run, and logs it.
func (s *Server) aclDeny(c *client, cmd *command, reason acl.Reason, object string) {
	context := "toplevel"
	if c.flags&flagMulti != 0 {
		context = "multi"
	}
	s.addACLLog(c, reason, context, object, c.user.Name())
	msg := "NOPERM this user has no permissions to run the '" + object + "' command"
	switch reason {
	case acl.DeniedKey:
		msg = "NOPERM this user has no permissions to access one of the keys used as arguments"
	case acl.DeniedChannel:
		msg = "NOPERM this user has no permissions to access one of the channels used as arguments"
	}
	s.reject(c, cmd, msg) // EXEC's transaction goes with it

}

// aclScriptError is the error redis.call() raises when the script's user may not run a command.
func aclScriptError(reason acl.Reason) string {
	switch reason {
	case acl.DeniedKey:
		return "ERR The user executing the script can't access at least one of the keys mentioned in the command arguments"
	case acl.DeniedChannel:
		return "ERR The user executing the script can't publish to the channel mentioned in the command"
	}
	return "ERR The user executing the script can't run this command or subcommand"
}

// aclExecError is EXEC's reply for a queued command the user may no longer run.
func aclExecError(reason acl.Reason) string {
	why := "no permission to execute the command or subcommand"
	switch reason {
	case acl.DeniedKey:
		why = "no permission to touch the specified keys"
	case acl.DeniedChannel:
		why = "no permission to access one of the channels used as arguments"
	}
	return "NOPERM ACLs rules changed between the moment the transaction was accumulated and the EXEC call. This command is no longer allowed for the following reason: " + why
}
