package engine

import "github.com/iocache/iocache/server/resp"

// CLIENT PAUSE: while a pause is in force, commands of the paused kind (all commands, or only
// writes) are held without running; their clients wait in arrival order, owned by the main
// thread, and resume when the pause ends (CLIENT UNPAUSE or its timeout). Active expiry and
// eviction stop too, so the dataset does not change under a paused failover or snapshot.
type pauseState struct {
	until   int64 // unix ms; 0 = not paused
	all     bool  // ALL (else WRITE)
	waiting []*client
}

func (p *pauseState) active(nowMs int64) bool { return p.until > nowMs }

// writesHeld reports whether writes wait: under CLIENT PAUSE, or while FAILOVER is under way
// (replication_failover.go).
func (s *Server) writesHeld() bool {
	return s.pause.active(s.nowMs) || s.repl.failover.state != failoverNone
}

// holds reports whether cmd must wait under the current pause.
func (s *Server) pauseHolds(c *client, cmd *command, argv [][]byte) bool {
	if !s.writesHeld() {
		return false
	}
	if s.pause.active(s.nowMs) && s.pause.all {
		return cmd.name != "client" // CLIENT UNPAUSE must get through
	}
	if cmd.name == "exec" && c.flags&flagMulti != 0 {
		// EXEC writes if a command it would run does, as Redis's EXEC takes the flags of the
		// commands queued.
		for _, q := range c.multiQueue {
			if s.pauseHolds(c, q.cmd, q.argv) {
				return true
			}
		}
		return false
	}
	if cmd.flags&(cmdWrite|cmdMayReplicate) == 0 {
		return false
	}
	if cmd.name == "eval" || cmd.name == "evalsha" {
		return s.pausedScript(argv)
	}
	if cmd.name == "fcall" && len(argv) > 1 {
		return s.pausedFunction(argv)
	}
	return true
}

func (s *Server) clientPause(c *client, argv [][]byte) {
	ms, ok := parseInt(argv[2])
	if !ok || ms < 0 {
		s.addError(c, "ERR timeout is not an integer or out of range")
		return
	}
	all := true
	if len(argv) == 4 {
		switch {
		case resp.EqualFold(argv[3], "write"):
			all = false
		case resp.EqualFold(argv[3], "all"):
		default:
			s.addError(c, "ERR CLIENT PAUSE mode must be WRITE or ALL")
			return
		}
	}
	until := s.nowMs + ms
	// A new pause never shortens or weakens one in force, as in Redis.
	if s.pause.active(s.nowMs) {
		if until < s.pause.until {
			until = s.pause.until
		}
		all = all || s.pause.all
	}
	s.pause.until, s.pause.all = until, all
	c.w.OK()
}

func (s *Server) clientUnpause(c *client) {
	s.pause.until = 0
	s.releasePaused()
	c.w.OK()
}

// releasePaused resumes held clients once the pause is over.
func (s *Server) releasePaused() {
	if len(s.pause.waiting) == 0 || s.writesHeld() {
		return
	}
	waiting := s.pause.waiting
	s.pause.waiting = nil
	for _, c := range waiting {
		c.flags &^= flagPaused
		s.resume(c)
	}
}

// flagPaused marks a client held by CLIENT PAUSE.
const flagPaused = 1 << 21

// dropPaused removes c from the clients held by a pause.
func (s *Server) dropPaused(c *client) {
	if c.flags&flagPaused == 0 {
		return
	}
	c.flags &^= flagPaused
	for i, x := range s.pause.waiting {
		if x == c {
			s.pause.waiting = append(s.pause.waiting[:i], s.pause.waiting[i+1:]...)
			return
		}
	}
}
