package engine

// A client whose command ran past busy-reply-threshold (DEBUG SLEEP, KEYS over millions of keys,
// a script) gives up the rest of its pipeline until the other clients have been served: each
// waited once for that command, and now goes first. Without it, three pipelined DEBUG SLEEPs
// held everyone else for all three. A script past the threshold serves the others while it runs
// (script_busy.go), which answer BUSY then, as in Redis; the primary's stream on a replica is
// parked here until the script ends.

// ranLong reports whether a command that started at began and ended at end (nanotime; 0 when
// not known) ran past busy-reply-threshold.
func (s *Server) ranLong(began, end int64) bool {
	limit := int64(s.cfg.BusyReplyThreshold) * 1e6
	return limit > 0 && began > 0 && end-began >= limit
}

// yieldClient parks c, which keeps the main thread's ownership and the rest of its pipeline,
// until the main loop has served the events that arrived meanwhile.
func (s *Server) yieldClient(c *client) {
	s.yielded = append(s.yielded, c)
}

// resumeYielded continues the pipelines of clients parked in an earlier loop iteration.
func (s *Server) resumeYielded(parked []*client) {
	for _, c := range parked {
		if _, linked := s.clients[c.id]; linked {
			s.resume(c)
		}
	}
}
