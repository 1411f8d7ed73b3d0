package engine

import "strconv"

// ROLE and INFO replication, in Redis 7.0's layout, on a primary and on a replica.

// ROLE as a primary: master, the offset, and each replica's address and acknowledged offset.
// As a replica: slave, the primary's address, the link's state and the offset.
func cmdRole(s *Server, c *client, argv [][]byte) {
	r := &s.repl
	if m := r.master; m != nil {
		c.w.Array(5)
		c.w.BulkString("slave")
		c.w.BulkString(m.host)
		c.w.Int(int64(m.port))
		c.w.BulkString(m.stateName())
		c.w.Int(m.offset)
		return
	}
	c.w.Array(3)
	c.w.BulkString("master")
	c.w.Int(r.offset)
	n := 0
	for _, rl := range r.replicas {
		if rl.state == replicaOnline {
			n++
		}
	}
	c.w.Array(n)
	for _, rl := range r.replicas {
		if rl.state != replicaOnline {
			continue
		}
		c.w.Array(3)
		c.w.BulkString(s.replicaIP(rl))
		c.w.BulkString(strconv.Itoa(rl.listeningPort))
		c.w.BulkString(strconv.FormatInt(rl.ackOff, 10))
	}
}

// infoReplication is INFO's replication section in Redis 7.0's layout.
func (s *Server) infoReplication(f func(string, any)) {
	r := &s.repl
	offset := r.offset
	if m := r.master; m != nil {
		offset = m.offset
		f("role", "slave")
		f("master_host", m.host)
		f("master_port", m.port)
		up := m.client != nil
		f("master_link_status", map[bool]string{true: "up", false: "down"}[up])
		lastIO := int64(-1)
		if up {
			lastIO = s.unixtime - m.lastIO
		}
		f("master_last_io_seconds_ago", lastIO)
		f("master_sync_in_progress", boolInt(m.connecting))
		f("slave_read_repl_offset", m.offset)
		f("slave_repl_offset", m.offset)
		if !up {
			f("master_link_down_since_seconds", s.unixtime-m.downSince)
		}
		f("slave_priority", s.cfg.ReplicaPriority)
		f("slave_read_only", boolInt(s.cfg.ReplicaReadOnly))
		f("replica_announced", boolInt(s.cfg.ReplicaAnnounced)) // Sentinel skips a replica with 0
	} else {
		f("role", "master")
	}
	f("connected_slaves", len(r.replicas))
	for i, rl := range r.replicas {
		f("slave"+strconv.Itoa(i), "ip="+s.replicaIP(rl)+",port="+strconv.Itoa(rl.listeningPort)+
			",state="+replicaStateNames[rl.state]+",offset="+strconv.FormatInt(rl.ackOff, 10)+
			",lag="+strconv.FormatInt(s.unixtime-rl.ackUnix, 10))
	}
	f("master_failover_state", s.repl.failover.stateName())
	f("master_replid", r.replid)
	replid2, second := "0000000000000000000000000000000000000000", int64(-1)
	if r.replid2 != "" {
		replid2, second = r.replid2, r.secondOffset
	}
	f("master_replid2", replid2)
	f("master_repl_offset", offset)
	f("second_repl_offset", second)
	active := r.backlog.Active()
	first := int64(0)
	if active {
		first = r.offset - r.backlog.Len() + 1
	}
	f("repl_backlog_active", boolInt(active))
	f("repl_backlog_size", s.cfg.ReplBacklogSize)
	f("repl_backlog_first_byte_offset", first)
	f("repl_backlog_histlen", r.backlog.Len())
}
