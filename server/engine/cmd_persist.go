package engine

import "github.com/iocache/iocache/server/resp"

// SAVE, BGSAVE, LASTSAVE and SHUTDOWN's save (persist.go and bgsave.go do the work).

func cmdSave(s *Server, c *client, argv [][]byte) {
	if s.persist.running != nil && s.persist.running.aof == nil {
		s.addError(c, "ERR Background save already in progress")
		return
	}
	if err := s.saveRDB(s.rdbPath()); err != nil {
		s.addError(c, "ERR")
		return
	}
	c.w.OK()
}

// BGSAVE [SCHEDULE]. While an AOF rewrite runs, SCHEDULE starts the save after it, as in Redis.
func cmdBGSave(s *Server, c *client, argv [][]byte) {
	if len(argv) > 2 || (len(argv) == 2 && !resp.EqualFold(argv[1], "schedule")) {
		s.addError(c, errSyntax)
		return
	}
	if s.aofRewriteRunning() {
		if len(argv) == 2 || c.flags&flagExecuting != 0 {
			s.persist.bgsaveScheduled = true
			c.w.Simple("Background saving scheduled")
			return
		}
		s.addError(c, "ERR Another child process is active (AOF?): can't BGSAVE right now. Use BGSAVE SCHEDULE in order to schedule a BGSAVE whenever possible.")
		return
	}
	if s.persist.running != nil {
		s.addError(c, "ERR Background save already in progress")
		return
	}
	if c.flags&flagExecuting != 0 {
		// Inside a transaction the save starts after it, as Redis schedules it.
		s.persist.bgsaveScheduled = true
		c.w.Simple("Background saving scheduled")
		return
	}
	if err := s.startBGSave(); err != nil {
		s.addError(c, "ERR "+err.Error())
		return
	}
	c.w.Simple("Background saving started")
}

func cmdLastSave(s *Server, c *client, argv [][]byte) { c.w.Int(s.persist.lastSave) }

// SHUTDOWN [NOSAVE|SAVE] [NOW] [FORCE] [ABORT]: saves first when SAVE is given or save points
// are set (unless NOSAVE); if that save fails the server stays up unless FORCE.
func cmdShutdown(s *Server, c *client, argv [][]byte) {
	var save, nosave, force, abort bool
	for _, a := range argv[1:] {
		switch {
		case resp.EqualFold(a, "nosave"):
			nosave = true
		case resp.EqualFold(a, "save"):
			save = true
		case resp.EqualFold(a, "now"):
		case resp.EqualFold(a, "force"):
			force = true
		case resp.EqualFold(a, "abort"):
			abort = true
		default:
			s.addError(c, errSyntax)
			return
		}
	}
	if (save && nosave) || (abort && len(argv) > 2) {
		s.addError(c, errSyntax)
		return
	}
	if abort {
		s.addError(c, "ERR No shutdown in progress.")
		return
	}
	if s.script.busy && !nosave {
		// As Redis: a busy script's writes are not to be saved; only NOSAVE ends it.
		s.addError(c, s.busyError())
		return
	}
	s.logf(logWarning, "User requested shutdown...")
	if !s.prepareShutdown(save, nosave, force) {
		s.addError(c, "ERR Errors trying to SHUTDOWN. Check logs.")
		return
	}
	if s.script.busy {
		s.shutdownBusy()
	}
	s.stopping.Store(true)
	// Like Redis, no reply: the connection closes.
	c.flags |= flagCloseASAP
}

// persistCommands registers this file's commands (see table.go).
var persistCommands = []commandSpec{
	{name: "shutdown", h: cmdShutdown},
	{name: "lastsave", h: cmdLastSave},
	{name: "save", h: cmdSave},
	{name: "bgsave", h: cmdBGSave},
	{name: "bgrewriteaof", h: cmdBGRewriteAOF},
}
