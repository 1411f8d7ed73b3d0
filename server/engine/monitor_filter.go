package engine

import "github.com/iocache/iocache/server/resp"

// What MONITOR and the slow log may show of a command, decided as Redis 7.0 decides it:
// administrative commands and subcommands are never shown to monitors, and passwords are
// replaced by "(redacted)" in both, so that neither leaks a secret to whoever watches.

// hiddenFromMonitors reports whether MONITOR must not show this command: flagged skip_monitor
// (EXEC and EVAL feed monitors themselves, in their own order) or administrative — for a
// container, when Redis 7.0 flags the subcommand admin (CONFIG SET is, CLIENT ID is not).
func hiddenFromMonitors(cmd *command, argv [][]byte) bool {
	if cmd.flags&cmdSkipMonitor != 0 {
		return true
	}
	if cmd.flags&cmdAdmin == 0 {
		return false
	}
	if cmd.subs == nil || len(argv) < 2 {
		return true
	}
	sub := cmd.subcommand(argv[1])
	return sub != nil && sub.flags&cmdAdmin != 0
}

const redacted = "(redacted)"

// redactSecrets returns argv with its passwords replaced by "(redacted)" (AUTH's arguments,
// HELLO's AUTH username and password, MIGRATE's AUTH and AUTH2, everything after ACL SETUSER,
// CONFIG SET's requirepass and masterauth values), or argv itself when it holds none. Only monitors and the slow log call it, so the copy costs nothing on the hot path.
func redactSecrets(argv [][]byte) [][]byte {
	var out [][]byte
	hide := func(i int) {
		if i >= len(argv) {
			return
		}
		if out == nil {
			out = append([][]byte(nil), argv...)
		}
		out[i] = []byte(redacted)
	}
	switch {
	case resp.EqualFold(argv[0], "auth"):
		for i := 1; i < len(argv); i++ {
			hide(i)
		}
	case resp.EqualFold(argv[0], "hello"):
		for i := 2; i < len(argv); i++ {
			if resp.EqualFold(argv[i], "auth") {
				hide(i + 1)
				hide(i + 2)
				i += 2
			}
		}
	case resp.EqualFold(argv[0], "acl") && len(argv) > 2 && resp.EqualFold(argv[1], "setuser"):
		for i := 2; i < len(argv); i++ {
			hide(i)
		}
	case resp.EqualFold(argv[0], "config") && len(argv) > 3 && resp.EqualFold(argv[1], "set"):
		for i := 2; i+1 < len(argv); i += 2 {
			if resp.EqualFold(argv[i], "requirepass") || resp.EqualFold(argv[i], "masterauth") {
				hide(i + 1)
			}
		}
	case resp.EqualFold(argv[0], "migrate"):
		for i := 6; i < len(argv); i++ {
			switch {
			case resp.EqualFold(argv[i], "auth"):
				hide(i + 1)
				i++
			case resp.EqualFold(argv[i], "auth2"):
				hide(i + 1)
				hide(i + 2)
				i += 2
			}
		}
	}
	if out == nil {
		return argv
	}
	return out
}
