package engine

import (
	"net"
	"strconv"
	"strings"

	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/replication"
	"github.com/iocache/iocache/server/resp"
)

// The primary side of Redis's replication protocol. A replica connects as a client, announces
// itself (REPLCONF listening-port, capa eof psync2) and asks for the stream with PSYNC (or the
// older SYNC). If it names this server's replication ID and an offset the backlog still holds,
// it gets +CONTINUE and the missing bytes; otherwise +FULLRESYNC <replid> <offset>, a snapshot of
// the keyspace at that offset, then the stream from there. The snapshot is the forkless BGSAVE
// (bgsave.go) with its writer, pinned to bgsave_cpulist, encoding into a replSink instead of a
// file; the main thread hands the sink's chunks to the replicas' connections as out-of-band
// output, so the I/O threads write them like any reply. Replicas that announced "capa eof" get it
// as Redis's disk-less "$EOF:<mark>" payload, streamed while it is cut; others get "$<len>",
// which needs the whole payload first and so is built in memory.
//
// The stream (propagate.go) goes into the backlog and, once per event-loop iteration, to every
// online replica in one push. Replicas acknowledge with REPLCONF ACK <offset> every second, which
// WAIT counts; WAIT asks for fresh acknowledgements with REPLCONF GETACK in the stream.
//
// Files: this one (state, stream, REPLCONF, PSYNC), replication_fullsync.go,
// replication_wait.go, replication_info.go (ROLE, INFO), replication_metrics.go, and
// replication_replica.go for the other side. What needs no Server is package replication: the
// backlog ring, the full sync's sink, the replica's wire helpers and its sync budget.

// replicaState is where a replica is in its sync, named as INFO replication prints it.
type replicaState int

const (
	replicaWaitBgsave replicaState = iota // waits for a snapshot to start
	replicaSendBulk                       // the snapshot is on its way; the stream waits in pending
	replicaOnline
)

var replicaStateNames = [...]string{"wait_bgsave", "send_bulk", "online"}

// replicaLink is one attached replica, seen from the primary.
type replicaLink struct {
	c       *client
	state   replicaState
	capaEOF bool
	psync   bool // asked with PSYNC: answered +FULLRESYNC before the payload
	// rdbOnly (REPLCONF rdb-only 1, as redis-cli --rdb and iocache-server backup send): the
	// link wants the snapshot and nothing after it. It never joins the stream, so a replica
	// can serve it too: a backup taken there costs the primary nothing.
	rdbOnly       bool
	listeningPort int
	announcedIP   string
	ackOff        int64
	ackUnix       int64
	// awaitAck: the disk-less payload is sent and the stream waits for the replica's first
	// acknowledgement, as in Redis: a replica finds the end mark only at the end of a read, so
	// nothing may follow it until the replica has read it.
	awaitAck bool
	// pending holds the stream from the snapshot's cut while the payload is sent; bulk holds
	// the payload for a replica that needs its length first.
	pending []byte
	bulk    []byte
}

// replState is the main thread's replication state.
type replState struct {
	// failover is FAILOVER's progress (replication_failover.go).
	failover failover
	// feeding is set once a replica first attaches: from then on writes are propagated into the
	// backlog (and to the replicas), as Redis keeps its backlog after the last replica left.
	feeding  bool
	prop     propagation
	replid   string
	offset   int64 // master_repl_offset: bytes ever fed to the stream
	streamDB int   // the database the stream last SELECTed; -1 forces a SELECT
	backlog  replication.Backlog
	batch    []byte // fed since the online replicas were last written to
	replicas []*replicaLink
	nextPing int64
	getack   bool // a WAIT is blocked: ask the replicas for acknowledgements before sleeping
	waiters  []*client
	// master is set while this server is a replica (replication_replica.go); handshakes counts
	// the handshake goroutines whose result has not come back on done; gen numbers the links.
	master     *masterLink
	handshakes int
	done       chan syncResult
	gen        int
	applied    []byte // the primary's last command, encoded for the backlog
	// replid2 is the replication ID this server's history had before it was promoted, valid
	// for partial resyncs up to secondOffset (Redis's master_replid2, second_repl_offset).
	replid2      string
	secondOffset int64
	// gate: replication may refuse commands (a replica; min-replicas-to-write); call tests
	// this one flag before asking replicationRefuses.
	gate bool
}

// updateWriteGate recomputes gate after a role or configuration change.
func (s *Server) updateWriteGate() {
	s.repl.gate = s.repl.master != nil || s.cfg.MinReplicasToWrite > 0
}

// replicationRefuses gives the error for a command replication forbids now, or "": a
// read-only replica takes writes from its primary only; with replica-serve-stale-data no, a
// replica whose link is down answers only commands flagged stale; a primary with
// min-replicas-to-write needs that many replicas that acknowledged within
// min-replicas-max-lag seconds for a write.
func (s *Server) replicationRefuses(c *client, cmd *command) string {
	if c.isMaster {
		return ""
	}
	flags := s.flagsOf(c, cmd) // EXEC's are its transaction's
	if m := s.repl.master; m != nil {
		switch {
		case flags&cmdWrite != 0 && s.cfg.ReplicaReadOnly:
			return errReadOnly
		case m.client == nil && !s.cfg.ReplicaServeStaleData && flags&cmdStale == 0:
			return "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."
		}
		return ""
	}
	if flags&cmdWrite == 0 {
		return ""
	}
	good := 0
	for _, rl := range s.repl.replicas {
		if rl.state == replicaOnline && s.unixtime-rl.ackUnix <= int64(s.cfg.MinReplicasMaxLag) {
			good++
		}
	}
	if good < s.cfg.MinReplicasToWrite {
		return "NOREPLICAS Not enough good replicas to write."
	}
	return ""
}

// createBacklog starts propagation: from now on every write is fed to the stream.
func (s *Server) createBacklog() {
	r := &s.repl
	r.backlog = replication.NewBacklog(s.cfg.ReplBacklogSize)
	r.streamDB = -1
	r.feeding = true
	s.updatePropagation()
}

// resizeBacklog applies CONFIG SET repl-backlog-size, keeping what fits.
func (s *Server) resizeBacklog() {
	r := &s.repl
	if !r.backlog.Active() || r.backlog.Limit() == s.cfg.ReplBacklogSize {
		return
	}
	r.backlog.Resize(s.cfg.ReplBacklogSize)
}

// feed appends bytes to the stream: the backlog, the next batch for online replicas, and the
// pending stream of replicas whose payload is on its way.
func (s *Server) feed(b []byte) {
	r := &s.repl
	r.offset += int64(len(b))
	r.backlog.Write(b)
	if len(r.replicas) == 0 {
		return
	}
	r.batch = append(r.batch, b...)
	for _, rl := range r.replicas {
		if (rl.state == replicaSendBulk || rl.awaitAck) && !rl.rdbOnly {
			rl.pending = append(rl.pending, b...)
		}
	}
}

// replicationBeforeSleep writes the stream batch to the online replicas, hands the snapshot's
// chunks to the replicas receiving it, and asks for acknowledgements a WAIT needs.
func (s *Server) replicationBeforeSleep() {
	r := &s.repl
	if r.getack && s.streamReplicas() > 0 {
		r.getack = false
		s.propagateStrings(-1, "REPLCONF", "GETACK", "*")
	}
	if len(r.batch) > 0 {
		data := append([]byte(nil), r.batch...) // shared by every replica's push, never changed
		r.batch = r.batch[:0]
		for _, rl := range r.replicas {
			if rl.state == replicaOnline && !rl.awaitAck {
				s.pushTo(rl.c, data)
			}
		}
	}
	if sn := s.persist.running; sn != nil && sn.sink != nil {
		s.deliverSnapshot(sn.sink)
	}
	s.checkReplicaBuffers()
}

// checkReplicaBuffers drops a replica whose pending stream outgrew its output buffer limit, as
// Redis does when a full sync takes longer than the writes it has to hold back.
func (s *Server) checkReplicaBuffers() {
	hard := s.cfg.ClientOutputBufferLimit[config.ClassReplica].Hard
	if hard <= 0 {
		return
	}
	for _, rl := range s.repl.replicas {
		if int64(len(rl.pending)+len(rl.bulk)) > hard {
			s.logf(logWarning, "Client %s scheduled to be closed ASAP for overcoming of output buffer limits.", rl.c.addr)
			rl.pending, rl.bulk = nil, nil
			s.killClient(rl.c)
		}
	}
}

// replicationCron starts the full sync that replicas wait for once no snapshot runs (one that
// arrived during a BGSAVE, or during another replica's sync), and pings the replicas in the
// stream, as Redis does every repl-ping-replica-period seconds, so that their link does not time
// out while no one writes.
func (s *Server) replicationCron() {
	r := &s.repl
	if s.persist.running == nil && !s.stopping.Load() {
		for _, rl := range r.replicas {
			if rl.state == replicaWaitBgsave {
				s.startFullSync()
				break
			}
		}
	}
	for _, rl := range r.replicas {
		if rl.state == replicaOnline && s.unixtime-rl.ackUnix > int64(s.cfg.ReplTimeout) {
			s.logf(logWarning, "Disconnecting timedout replica (streaming sync): %s", s.replicaName(rl))
			s.killClient(rl.c)
		}
	}
	s.updateFailover()
	// No PING while a failover waits: it would move the offset the replicas must reach.
	if s.streamReplicas() == 0 || s.unixtime < r.nextPing || r.failover.state != failoverNone {
		return
	}
	r.nextPing = s.unixtime + int64(s.cfg.ReplPingReplicaPeriod)
	s.propagateStrings(-1, "PING")
}

// firstPingAfterAttach schedules the first PING a period after the first replica attaches, not
// at once: Redis pings when its cron count is a multiple of repl-ping-replica-period, which a
// just-attached replica waits for, and Redis's tests read the stream of a SYNC made just after
// setting the period to an hour, expecting no PING in it.
func (s *Server) firstPingAfterAttach() {
	if len(s.repl.replicas) == 0 {
		s.repl.nextPing = s.unixtime + int64(s.cfg.ReplPingReplicaPeriod)
	}
}

// streamReplicas counts the replicas that get the stream: not the rdb-only links, which take a
// snapshot and leave. A replica serving a backup must not PING into its own stream.
func (s *Server) streamReplicas() int {
	n := 0
	for _, rl := range s.repl.replicas {
		if !rl.rdbOnly {
			n++
		}
	}
	return n
}

// replicaOf is the link of a client that is an attached replica, or nil.
func (s *Server) replicaOf(c *client) *replicaLink { return c.replLink }

// dropReplica forgets a replica whose connection closed.
func (s *Server) dropReplica(c *client) {
	r := &s.repl
	for i, rl := range r.replicas {
		if rl.c == c {
			r.replicas = append(r.replicas[:i], r.replicas[i+1:]...)
			c.replLink = nil
			s.logf(logNotice, "Connection with replica %s lost.", s.replicaName(rl))
			return
		}
	}
}

func (s *Server) replicaName(rl *replicaLink) string {
	return net.JoinHostPort(s.replicaIP(rl), strconv.Itoa(rl.listeningPort))
}

func (s *Server) replicaIP(rl *replicaLink) string {
	if rl.announcedIP != "" {
		return rl.announcedIP
	}
	host, _, err := net.SplitHostPort(rl.c.addr)
	if err != nil {
		return rl.c.addr
	}
	return host
}

// REPLCONF <option> <value> ...: what a replica tells its primary. ACK carries no reply.
func cmdReplconf(s *Server, c *client, argv [][]byte) {
	if len(argv)%2 == 0 {
		s.addError(c, errSyntax)
		return
	}
	rl := s.replicaOf(c)
	if rl == nil {
		rl = c.replconf
		if rl == nil {
			rl = &replicaLink{c: c}
			c.replconf = rl
		}
	}
	for i := 1; i < len(argv); i += 2 {
		opt, val := argv[i], argv[i+1]
		switch {
		case resp.EqualFold(opt, "listening-port"):
			port, ok := parseInt(val)
			if !ok || port < 0 || port > 65535 {
				s.addError(c, errNotInt)
				return
			}
			rl.listeningPort = int(port)
		case resp.EqualFold(opt, "ip-address"):
			rl.announcedIP = string(val)
		case resp.EqualFold(opt, "capa"):
			if resp.EqualFold(val, "eof") {
				rl.capaEOF = true
			}
		case resp.EqualFold(opt, "ack"):
			off, ok := parseInt(val)
			if !ok || s.replicaOf(c) == nil {
				return // only an attached replica acknowledges; no reply either way
			}
			if off > rl.ackOff {
				rl.ackOff = off
			}
			rl.ackUnix = s.unixtime
			if rl.awaitAck {
				s.replicationBeforeSleep() // to the others: this one has the batch in pending
				rl.awaitAck = false
				if len(rl.pending) > 0 {
					s.pushTo(c, rl.pending)
				}
				rl.pending = nil
			}
			s.serveWaiters()
			return
		case resp.EqualFold(opt, "getack"):
			if c.isMaster {
				s.repl.master.ackPending = true
			}
			return
		case resp.EqualFold(opt, "rdb-only"):
			v, ok := parseInt(val)
			if !ok {
				s.addError(c, errNotInt)
				return
			}
			if v < 0 || v > 1 {
				s.addError(c, "ERR value is out of range, value must between 0 and 1")
				return
			}
			rl.rdbOnly = v == 1
		case resp.EqualFold(opt, "rdb-filter-only"):
		default:
			s.addError(c, "ERR Unrecognized REPLCONF option: "+string(opt))
			return
		}
	}
	c.w.OK()
}

// PSYNC <replid> <offset>: continue from the backlog, or start over with a full sync.
func cmdPsync(s *Server, c *client, argv [][]byte) {
	// PSYNC <replid> <offset> FAILOVER: our primary, running FAILOVER, hands over to us. We take
	// over only if its history is ours, then answer it as any replica asking to continue.
	if len(argv) > 3 && resp.EqualFold(argv[3], "failover") {
		if !strings.EqualFold(string(argv[1]), s.repl.replid) {
			s.addError(c, "ERR PSYNC FAILOVER replid must match my replid.")
			return
		}
		if s.repl.master != nil {
			s.becomePrimary()
			s.logf(logNotice, "MASTER MODE enabled (failover request from '%s')", c.addr)
		}
	}
	s.syncReplica(c, string(argv[1]), string(argv[2]), true)
}

// SYNC: the pre-PSYNC form, a full sync with no +FULLRESYNC line.
func cmdSync(s *Server, c *client, argv [][]byte) {
	s.syncReplica(c, "", "", false)
}

func (s *Server) syncReplica(c *client, replid, offset string, psync bool) {
	if s.replicaOf(c) != nil {
		return // a second PSYNC on a replica link: ignored, as Redis does
	}
	rl := c.replconf
	if rl == nil {
		rl = &replicaLink{c: c}
	}
	// A replica serves only snapshots (rdb-only): chained replication, a replica of a replica
	// in the stream, is not supported. It serves them while its own stream flows, so that the
	// snapshot is of the primary's data at a known offset.
	if m := s.repl.master; m != nil && (!rl.rdbOnly || m.client == nil) {
		s.addError(c, "NOMASTERLINK Can't SYNC while not connected with my master")
		return
	}
	c.replconf = nil
	rl.c = c
	r := &s.repl
	if psync && !rl.rdbOnly && s.tryPartialResync(c, rl, replid, offset) {
		return
	}
	if !r.feeding && !rl.rdbOnly {
		s.createBacklog()
	}
	rl.state = replicaWaitBgsave
	rl.ackUnix = s.unixtime
	s.firstPingAfterAttach()
	r.replicas = append(r.replicas, rl)
	c.replLink = rl
	s.stats.syncFull++
	rl.psync = psync
	s.logf(logNotice, "Replica %s asks for synchronization", s.replicaName(rl))
	if s.persist.running == nil {
		s.startFullSync()
	}
}

// tryPartialResync answers +CONTINUE and sends the missing stream when the backlog holds it.
func (s *Server) tryPartialResync(c *client, rl *replicaLink, replid, offset string) bool {
	r := &s.repl
	off, err := strconv.ParseInt(offset, 10, 64)
	known := strings.EqualFold(replid, r.replid) ||
		(r.replid2 != "" && strings.EqualFold(replid, r.replid2) && err == nil && off <= r.secondOffset)
	if err != nil || !r.backlog.Active() || !known {
		if replid != "?" {
			s.stats.syncPartialErr++
		}
		return false
	}
	first := r.offset - r.backlog.Len() + 1
	if off < first || off > r.offset+1 {
		s.stats.syncPartialErr++
		return false
	}
	// Write out what the online replicas have not been sent yet first: it is in the backlog,
	// and the new replica must not get it twice.
	s.replicationBeforeSleep()
	rl.state = replicaOnline
	rl.ackUnix = s.unixtime
	rl.ackOff = off - 1
	s.firstPingAfterAttach()
	r.replicas = append(r.replicas, rl)
	c.replLink = rl
	c.w.Simple("CONTINUE " + r.replid)
	if n := r.offset - off + 1; n > 0 {
		s.pushTo(c, r.backlog.Since(n))
	}
	s.stats.syncPartialOK++
	s.logf(logNotice, "Partial resynchronization request from %s accepted. Sending %d bytes of backlog starting from offset %d.", s.replicaName(rl), r.offset-off+1, off)
	return true
}

// replicationCommands registers the replication commands, whose handlers are in the
// replication_*.go files (see table.go).
var replicationCommands = []commandSpec{
	{name: "wait", h: cmdWait, own: cmdBlocking}, // iocache's: WAIT blocks its client until replicas acknowledge
	{name: "replconf", h: cmdReplconf},
	{name: "psync", h: cmdPsync},
	{name: "sync", h: cmdSync},
	{name: "replicaof", h: cmdReplicaof},
	{name: "slaveof", h: cmdReplicaof},
	{name: "role", h: cmdRole},
}
