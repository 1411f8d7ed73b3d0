package engine

// WAIT numreplicas timeout: iocache has no replicas, so no write is ever acknowledged by one. As
// Redis does on a primary without replicas, WAIT 0 answers 0 at once and WAIT n>0 blocks until
// its timeout (0: forever) and then answers 0, so a client that waits for durability learns that
// it did not get it. Inside MULTI or a script it answers at once.
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
	n, ok := s.intArg(c, argv[1])
	if !ok {
		return
	}
	if n <= 0 || c.flags&flagExecuting != 0 {
		c.w.Int(0)
		return
	}
	var deadline int64
	if timeout > 0 {
		deadline = s.nowMs + timeout
	}
	s.block(c, s.builtin["wait"], argv, nil, deadline, 0)
}

// waitCommands registers this file's commands (see table.go).
var waitCommands = []commandSpec{
	{"wait", cmdWait, 3, cmdBlocking, 0, 0, 0, "generic", "Blocks until the asynchronous replication of all preceding write commands sent by the connection is completed."},
}
