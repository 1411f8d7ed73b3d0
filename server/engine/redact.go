package engine

// Secrets never reach MONITOR or SLOWLOG: as Redis 7.0 does, the passwords of AUTH and HELLO
// AUTH, everything after ACL SETUSER and the value of CONFIG SET requirepass are shown as
// "(redacted)", and administrative commands (CONFIG, ACL SETUSER...) are not fed to monitors at
// all. This runs only when a monitor is attached or a command is slow enough for the slow log.

var redactedArg = []byte("(redacted)")

// redact returns argv with its secret arguments replaced, or argv itself when it has none.
func redact(cmd *command, argv [][]byte) [][]byte {
	from, to := 0, 0 // argv[from:to] are replaced
	switch cmd.name {
	case "auth":
		from, to = 1, len(argv)
	case "hello":
		for i := 2; i+2 < len(argv); i++ {
			if equalFold(argv[i], "auth") {
				from, to = i+1, i+3
				break
			}
		}
	case "acl":
		if len(argv) > 2 && equalFold(argv[1], "setuser") {
			from, to = 2, len(argv)
		}
	case "config":
		if len(argv) > 3 && equalFold(argv[1], "set") {
			out := append([][]byte(nil), argv...)
			for i := 2; i+1 < len(out); i += 2 {
				if equalFold(out[i], "requirepass") || equalFold(out[i], "masterauth") {
					out[i+1] = redactedArg
				}
			}
			return out
		}
	}
	if from == 0 {
		return argv
	}
	out := append([][]byte(nil), argv...)
	for i := from; i < to; i++ {
		out[i] = redactedArg
	}
	return out
}

// monitorShows reports whether MONITOR sees a command: not administrative ones, judged by the
// subcommand for containers (ACL WHOAMI is shown, ACL SETUSER is not).
func (s *Server) monitorShows(cmd *command, argv [][]byte) bool {
	if cmd.flags&(cmdSkipMonitor|cmdAdmin) != 0 {
		return false
	}
	return s.acl.table.unitFor(cmd, argv).cats&categoryBit("admin") == 0
}
