package engine

// WAIT on a primary: it counts the replicas whose REPLCONF ACK reached the offset of the
// client's last write, blocks until enough did or the timeout passes, and has the replicas asked
// for fresh acknowledgements (REPLCONF GETACK) before the event loop sleeps.

// WAIT numreplicas timeout: blocks until numreplicas replicas acknowledged the client's last
// write, or the timeout passes, and answers how many did.
func cmdWait(s *Server, c *client, argv [][]byte) {
	timeout, ok := parseInt(argv[2])
	if !ok {
		s.addError(c, "ERR timeout is not an integer or out of range")
		return
	}
	if timeout < 0 {
		s.addError(c, "ERR timeout is negative")
		return
	}
	if s.repl.master != nil {
		s.addError(c, "ERR WAIT cannot be used with replica instances. Please also note that since Redis 4.0 if a replica is configured to be writable (which is not the default) writes to replicas are just local and are not propagated.")
		return
	}
	n, ok := s.intArg(c, argv[1])
	if !ok {
		return
	}
	acked := s.replicasAcked(c.woff)
	if acked >= n || c.flags&flagExecuting != 0 {
		c.w.Int(acked)
		return
	}
	var deadline int64
	if timeout > 0 {
		deadline = s.nowMs + timeout
	}
	c.waitReplicas = n
	s.block(c, s.builtin["wait"], argv, nil, deadline, 0)
	s.repl.waiters = append(s.repl.waiters, c)
	s.repl.getack = true
}

// replicasAcked counts the replicas that acknowledged offset off.
func (s *Server) replicasAcked(off int64) int64 {
	var n int64
	for _, rl := range s.repl.replicas {
		if rl.state == replicaOnline && rl.ackOff >= off {
			n++
		}
	}
	return n
}

// serveWaiters answers the WAITs that enough acknowledgements now satisfy.
func (s *Server) serveWaiters() {
	r := &s.repl
	kept := r.waiters[:0]
	for _, c := range r.waiters {
		if c.blocked == nil || c.blocked.cmd.name != "wait" {
			continue // timed out or gone
		}
		if acked := s.replicasAcked(c.woff); acked >= c.waitReplicas {
			s.blocking.remove(c)
			c.w.Int(acked)
			s.resume(c)
			continue
		}
		kept = append(kept, c)
	}
	clear(r.waiters[len(kept):])
	r.waiters = kept
}
