package engine

import (
	"bufio"
	"crypto/tls"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"net"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iocache/iocache/server/acl"
	"github.com/iocache/iocache/server/keyspace"
	"github.com/iocache/iocache/server/netio"
	"github.com/iocache/iocache/server/rdb"
	"github.com/iocache/iocache/server/replication"
	"github.com/iocache/iocache/server/resp"
)

// The replica side: REPLICAOF host port (or replicaof in the config file) makes this server
// follow a primary. A goroutine does what blocks: connect, the handshake (PING, AUTH with
// masterauth/masteruser, REPLCONF listening-port and capa eof psync2, PSYNC), and for a full sync
// reading the RDB from the socket (either "$<len>" or "$EOF:<mark>") into fresh databases. The
// main thread then swaps those in and adopts the socket as a client on an I/O thread: from there
// the stream is read and parsed like any client's traffic and executed as the master client —
// no replies, except an acknowledgement for REPLCONF GETACK — and each command's bytes advance
// the replication offset. REPLCONF ACK <offset> goes to the primary every second. A dropped link
// reconnects with PSYNC <replid> <offset+1>, which a primary whose backlog still holds the
// offset answers with +CONTINUE.
//
// While it is a replica the server refuses writes from its clients (replica-read-only), keeps
// expired keys until the primary's DEL arrives (only reads see them as gone), and does not
// serve replicas of its own.

// masterLink is the replica's side of its link to the primary.
type masterLink struct {
	host string
	port int
	// gen numbers the links: a handshake that finishes after REPLICAOF moved on is discarded.
	gen        int
	connecting bool // the handshake goroutine runs
	nextTry    int64
	client     *client // the primary's connection once the stream flows
	replid     string  // the primary's replication ID and the offset applied so far
	offset     int64
	// db is the database the stream was in when the link dropped: a partial resync continues
	// there, since the primary sends no SELECT for what it already selected.
	db         int
	ackPending bool // a REPLCONF GETACK asked for an acknowledgement
	nextAck    int64
	lastIO     int64
	downSince  int64
}

// syncResult is what the handshake goroutine hands to the main thread.
type syncResult struct {
	gen     int
	fd      int
	err     error
	full    bool
	replid  string
	offset  int64
	dbs     []*keyspace.DB
	keys    int64
	elapsed time.Duration
	link    *netio.TLSLink // the TLS state of the link, under tls-replication
}

// REPLICAOF host port | NO ONE (and SLAVEOF).
func cmdReplicaof(s *Server, c *client, argv [][]byte) {
	if resp.EqualFold(argv[1], "no") && resp.EqualFold(argv[2], "one") {
		if s.repl.master != nil {
			s.becomePrimary()
			s.logf(logNotice, "MASTER MODE enabled (user request from '%s')", c.addr)
		}
		c.w.OK()
		return
	}
	port, ok := parseInt(argv[2])
	if !ok || port < 0 || port > 65535 {
		s.addError(c, "ERR Invalid master port")
		return
	}
	host := string(argv[1])
	if m := s.repl.master; m != nil && strings.EqualFold(m.host, host) && m.port == int(port) {
		c.w.Simple("OK Already connected to specified master")
		return
	}
	s.replicate(host, int(port))
	s.logf(logNotice, "REPLICAOF %s:%d enabled (user request from '%s')", host, port, c.addr)
	c.w.OK()
}

// replicate starts following host:port, dropping any replicas of this server and any earlier
// link. The offset and ID this server had are kept, so that a primary that knows them (its
// former replica's history) can continue with a partial resync.
func (s *Server) replicate(host string, port int) {
	r := &s.repl
	r.gen++
	gen := r.gen
	cachedID, cachedOff, cachedDB := r.replid, r.offset, 0
	if m := r.master; m != nil {
		s.dropMasterClient()
		cachedID, cachedOff, cachedDB = m.replid, m.offset, m.db
	}
	for _, rl := range append([]*replicaLink(nil), r.replicas...) {
		s.killClient(rl.c)
	}
	r.feeding = false
	s.updatePropagation()
	r.master = &masterLink{host: host, port: port, gen: gen, replid: cachedID, offset: cachedOff,
		db: cachedDB, downSince: s.unixtime}
	s.cfg.ReplicaOf = host + " " + strconv.Itoa(port)
	s.updateWriteGate()
	s.connectToMaster()
}

// awaitPrimary is start-as-replica: a replica without a primary, read-only and serving no
// replicas, until REPLICAOF names a primary or makes this server one. Its link never connects.
func (s *Server) awaitPrimary() {
	r := &s.repl
	r.gen++
	r.feeding = false
	s.updatePropagation()
	r.master = &masterLink{gen: r.gen, replid: r.replid, offset: r.offset, downSince: s.unixtime}
	s.updateWriteGate()
	s.logf(logNotice, "Started as a replica without a primary (start-as-replica yes): waiting for REPLICAOF")
}

// becomePrimary is REPLICAOF NO ONE: a new replication ID, with the old primary's kept as
// replid2 up to the offset reached, so that its other replicas, repointed here, continue with
// a partial resync from the backlog (Redis's PSYNC2). The stream goes on in the database the old
// one was in.
func (s *Server) becomePrimary() {
	r := &s.repl
	m := r.master
	s.dropMasterClient()
	r.master = nil
	r.replid2, r.secondOffset = r.replid, r.offset+1
	r.replid = replication.NewID()
	if !r.backlog.Active() {
		r.backlog = replication.NewBacklog(s.cfg.ReplBacklogSize)
	}
	r.streamDB = m.db
	r.feeding = true
	s.updatePropagation()
	s.cfg.ReplicaOf = ""
	s.updateWriteGate()
}

// dropMasterClient closes the primary's connection, if any.
func (s *Server) dropMasterClient() {
	m := s.repl.master
	if m == nil || m.client == nil {
		return
	}
	c := m.client
	m.client = nil
	m.db = c.db
	c.isMaster = false
	s.killClient(c)
}

// connectToMaster starts the handshake in a goroutine. Its result comes back on repl.done,
// which outlives the link: a handshake that finishes after REPLICAOF moved on is still
// received, and its socket closed.
func (s *Server) connectToMaster() {
	r := &s.repl
	m := r.master
	m.connecting = true
	if r.done == nil {
		r.done = make(chan syncResult, 4)
	}
	r.handshakes++
	listeningPort := s.replicationListeningPort()
	// replica-announce-port and -ip tell the primary (and so INFO, ROLE and Sentinel) where this
	// replica is reached when that differs from what the primary sees (NAT, a Service).
	if p := s.cfg.ReplicaAnnouncePort; p > 0 {
		listeningPort = p
	}
	h := handshake{host: m.host, port: m.port, gen: m.gen, replid: m.replid, offset: m.offset,
		auth: s.cfg.MasterAuth, user: s.cfg.MasterUser, listeningPort: listeningPort,
		announceIP: s.cfg.ReplicaAnnounceIP, sourceAddr: s.cfg.BindSourceAddr,
		failover:  s.repl.failover.state == failoverInProgress,
		timeout:   time.Duration(s.cfg.ReplTimeout) * time.Second,
		databases: len(s.dbs), seed: s.seed, clock: s.initialClock(), wake: s.io.WakeMain, done: r.done,
		logf: s.logf, budget: s.syncBudget()}
	if s.cfg.TLSReplication && s.tls.mat != nil {
		h.tls = s.tls.mat.Client
	}
	s.logf(logNotice, "Connecting to MASTER %s:%d", m.host, m.port)
	go h.run()
}

// replicaBeforeSleep takes the handshakes' results, and sends the acknowledgement a GETACK
// asked for.
func (s *Server) replicaBeforeSleep() {
	for s.repl.handshakes > 0 {
		select {
		case res := <-s.repl.done:
			s.repl.handshakes--
			s.finishHandshake(res)
			continue
		default:
		}
		break
	}
	if m := s.repl.master; m != nil && m.ackPending {
		m.ackPending = false
		s.sendAck()
	}
}

// replicaCron acknowledges every second, and retries a link that is down.
func (s *Server) replicaCron() {
	m := s.repl.master
	if m.host == "" {
		return // start-as-replica: no primary named yet
	}
	if m.client == nil && !m.connecting && s.unixtime >= m.nextTry {
		s.connectToMaster()
	}
	if m.client != nil && s.unixtime-m.lastIO > int64(s.cfg.ReplTimeout) {
		s.logf(logWarning, "MASTER timeout: no data nor PING received...")
		s.killClient(m.client)
		return
	}
	if m.client != nil && s.unixtime >= m.nextAck {
		s.sendAck()
	}
}

func (s *Server) sendAck() {
	m := s.repl.master
	if m.client == nil {
		return
	}
	m.nextAck = s.unixtime + 1
	off := strconv.FormatInt(m.offset, 10)
	s.pushTo(m.client, resp.AppendCommand(nil, [][]byte{[]byte("REPLCONF"), []byte("ACK"), []byte(off)}))
}

// finishHandshake applies a handshake's result on the main thread.
func (s *Server) finishHandshake(res syncResult) {
	m := s.repl.master
	if m == nil || res.gen != m.gen {
		if res.fd >= 0 {
			netio.Close(res.fd)
		}
		return
	}
	m.connecting = false
	if res.err != nil {
		s.logf(logWarning, "%v", res.err)
		m.nextTry = s.unixtime + 1
		s.failoverHandshakeDone(false)
		return
	}
	defer s.failoverHandshakeDone(true)
	if res.full {
		s.abortBGSave()
		for i := range s.dbs {
			old := s.dbs[i]
			s.dbs[i] = res.dbs[i]
			s.dbs[i].Settle() // loaded off the main thread, without the server's Owed
			s.dbs[i].ShareOwed(&s.owed)
			if s.cluster != nil {
				s.dbs[i].IndexSlots()
			}
			s.touchReplacedDB(i, old, s.dbs[i])
		}
		if s.tracking.clients > 0 {
			s.trackingInvalidateAll()
		}
		m.replid, m.offset, m.db = res.replid, res.offset, 0
		// The backlog starts again at the primary's offset.
		r := &s.repl
		r.offset, r.replid2, r.secondOffset = res.offset, "", -1
		r.backlog = replication.NewBacklog(s.cfg.ReplBacklogSize)
		if s.aof.on || s.aof.waitRewrite {
			// The AOF describes the data set this sync replaced: it starts again from a base
			// of the new one, as Redis's restartAOFAfterSYNC does.
			s.stopAppendOnly()
			if err := s.startAppendOnly(); err != nil {
				s.logf(logWarning, "Failed to restart the AOF after a full sync: %v", err)
			}
		}
		s.logf(logNotice, "MASTER <-> REPLICA sync: Finished with success (%d keys loaded in %.3f seconds)", res.keys, res.elapsed.Seconds())
	} else {
		if res.replid != "" && res.replid != m.replid {
			// The primary's history goes on under a new ID (it was promoted): ours follows,
			// with the old one kept for those who knew it.
			r := &s.repl
			r.replid2, r.secondOffset = m.replid, m.offset+1
			m.replid = res.replid
		}
		s.logf(logNotice, "MASTER <-> REPLICA sync: Master accepted a Partial Resynchronization.")
	}
	s.repl.replid = m.replid
	netio.ConfigureConn(res.fd, s.cfg.TCPKeepAlive)
	s.nextClientID++
	c := newClient(s.nextClientID, res.fd, s.unixtime)
	if res.link != nil {
		res.link.Attach(c.conn, res.fd)
	}
	c.addr = net.JoinHostPort(m.host, strconv.Itoa(m.port))
	c.laddr = netio.LocalAddr(res.fd)
	// The primary's stream is obeyed whatever the ACL rules, as Redis runs its master client
	// with no user: an unrestricted user that no ACL command can reach.
	c.user, c.authed = acl.Unrestricted("default"), true
	c.db = m.db
	c.isMaster = true
	c.replyOff = true
	c.flags |= flagNoEvict
	s.clients[c.id] = c
	m.client = c
	m.lastIO = s.unixtime
	s.io.Assign(c.conn)
	s.sendAck() // a disk-less primary starts the stream at the first acknowledgement
}

// masterApplied advances the replication offset by the commands from the primary that process
// just ran (commands from..to of the batch), in the bytes the primary counted for them (their
// canonical RESP form). Once per batch: an acknowledgement goes out only between batches.
func (s *Server) masterApplied(c *client, from, to int) {
	r := &s.repl
	m := r.master
	if m == nil || m.client != c {
		return
	}
	start := 0
	if from > 0 {
		start = c.conn.CmdEnds[from-1]
	}
	for i := from; i < to; i++ {
		end := c.conn.CmdEnds[i]
		// The backlog keeps the primary's stream as it came, so that after a failover this
		// server, promoted, can continue its fellow replicas from it (see becomePrimary).
		r.applied = resp.AppendCommand(r.applied[:0], c.conn.Argv[start:end])
		s.feed(r.applied)
		start = end
	}
	m.offset = r.offset
	m.lastIO = s.unixtime
}

// masterClientGone notes that the link to the primary dropped: reconnect and try to continue.
func (s *Server) masterClientGone(c *client) {
	m := s.repl.master
	if m == nil || m.client != c {
		return
	}
	m.client = nil
	m.db = c.db
	m.downSince = s.unixtime
	m.nextTry = s.unixtime + 1
	s.logf(logNotice, "Connection with master lost. Caching the disconnected master state.")
}

const errReadOnly = "READONLY You can't write against a read only replica."

// handshake is what the goroutine needs; it touches no server state.
type handshake struct {
	host          string
	port          int
	gen           int
	replid        string
	offset        int64
	auth, user    string
	listeningPort int
	announceIP    string
	// failover: this server runs FAILOVER and asks its replica to take over.
	failover bool
	// sourceAddr is bind-source-addr: the local address the link to the primary leaves from.
	sourceAddr string
	timeout    time.Duration
	databases  int
	// budget bounds what a full sync may load (replication_budget.go); 0: no bound.
	budget int64
	seed   maphash.Seed
	clock  uint32
	wake   func()
	done   chan syncResult
	logf   func(level int, format string, args ...any)
	// tls: tls-replication yes, the link is TLS with this client configuration.
	tls *tls.Config
}

func (h handshake) run() {
	res := h.sync()
	res.gen = h.gen
	h.done <- res
	h.wake()
}

func (h handshake) sync() syncResult {
	fail := func(format string, args ...any) syncResult {
		return syncResult{fd: -1, err: fmt.Errorf(format, args...)}
	}
	addr := net.JoinHostPort(h.host, strconv.Itoa(h.port))
	dialer := net.Dialer{Timeout: h.timeout}
	if h.sourceAddr != "" {
		ip := net.ParseIP(h.sourceAddr)
		if ip == nil {
			return fail("Error condition on socket for SYNC: invalid bind-source-addr %q", h.sourceAddr)
		}
		dialer.LocalAddr = &net.TCPAddr{IP: ip}
	}
	conn, err := dialer.Dial("tcp", addr)
	if err != nil {
		return fail("Error condition on socket for SYNC: %v", err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(h.timeout))
	// Under tls-replication everything below goes through one crypto/tls conn, which the I/O
	// thread goes on with (netio.TLSLink): records it read past the payload are not lost.
	var link *netio.TLSLink
	rw := conn
	if h.tls != nil {
		link = netio.NewTLSClient(conn, h.tls)
		if err := link.TLS().Handshake(); err != nil {
			return fail("Error condition on socket for SYNC: TLS handshake with MASTER: %v", err)
		}
		rw = link.TLS()
	}
	lr := replication.LineReader{R: rw}
	ask := func(args ...string) (string, error) {
		b := make([][]byte, len(args))
		for i, a := range args {
			b[i] = []byte(a)
		}
		if _, err := rw.Write(resp.AppendCommand(nil, b)); err != nil {
			return "", err
		}
		return lr.Line()
	}
	reply, err := ask("PING")
	if err != nil {
		return fail("Error reading PING reply from master: %v", err)
	}
	if strings.HasPrefix(reply, "-") && !strings.HasPrefix(reply, "-NOAUTH") && !strings.HasPrefix(reply, "-NOPERM") && !strings.HasPrefix(reply, "-ERR operation not permitted") {
		return fail("Error reply to PING from master: '%s'", reply)
	}
	if h.auth != "" {
		args := []string{"AUTH", h.auth}
		if h.user != "" {
			args = []string{"AUTH", h.user, h.auth}
		}
		if reply, err = ask(args...); err != nil || reply != "+OK" {
			return fail("Unable to AUTH to MASTER: %s %v", reply, err)
		}
	}
	// Redis goes on whatever these two answer (an old primary may not know them).
	if _, err = ask("REPLCONF", "listening-port", strconv.Itoa(h.listeningPort)); err != nil {
		return fail("Error reading REPLCONF reply from master: %v", err)
	}
	if h.announceIP != "" {
		if _, err = ask("REPLCONF", "ip-address", h.announceIP); err != nil {
			return fail("Error reading REPLCONF reply from master: %v", err)
		}
	}
	if _, err = ask("REPLCONF", "capa", "eof", "capa", "psync2"); err != nil {
		return fail("Error reading REPLCONF reply from master: %v", err)
	}
	replid, off := "?", "-1"
	if h.replid != "" {
		replid, off = h.replid, strconv.FormatInt(h.offset+1, 10)
	}
	psync := []string{"PSYNC", replid, off}
	if h.failover {
		psync = append(psync, "FAILOVER") // we are handing over to this replica
	}
	reply, err = ask(psync...)
	for err == nil && reply == "" {
		// Newlines keep the link alive while a disk-less primary waits
		// (repl-diskless-sync-delay) for more replicas before it answers.
		reply, err = lr.Line()
	}
	if err != nil {
		return fail("Error reading PSYNC reply from master: %v", err)
	}
	res := syncResult{fd: -1}
	switch {
	case strings.HasPrefix(reply, "+CONTINUE"):
		res.replid = strings.TrimSpace(strings.TrimPrefix(reply, "+CONTINUE"))
	case strings.HasPrefix(reply, "+FULLRESYNC "):
		f := strings.Fields(reply)
		if len(f) != 3 {
			return fail("Bad FULLRESYNC reply from master: '%s'", reply)
		}
		res.full, res.replid = true, f[1]
		if res.offset, err = strconv.ParseInt(f[2], 10, 64); err != nil {
			return fail("Bad FULLRESYNC reply from master: '%s'", reply)
		}
		h.logf(logNotice, "Full resync from master: %s:%d", res.replid, res.offset)
		_ = conn.SetDeadline(time.Time{})
		if err := h.loadPayload(replication.DeadlineConn{Conn: rw, Timeout: h.timeout}, &res); err != nil {
			return fail("MASTER <-> REPLICA sync: %v", err)
		}
	default:
		return fail("Unexpected reply to PSYNC from master: '%s'", reply)
	}
	_ = conn.SetDeadline(time.Time{})
	fd, err := dupConn(conn)
	if err != nil {
		return fail("Taking over the link to the master: %v", err)
	}
	res.fd, res.link = fd, link
	return res
}

// loadPayload reads the RDB that follows +FULLRESYNC into fresh databases. Nothing is read past
// its end (replication.OpenPayload), nor past the budget.
func (h handshake) loadPayload(conn net.Conn, res *syncResult) error {
	src, err := replication.OpenPayload(conn)
	if err != nil {
		return err
	}
	br := bufio.NewReaderSize(replication.NewBudgetReader(src, h.budget), 1<<20)
	start := time.Now()
	dbs := make([]*keyspace.DB, h.databases)
	for i := range dbs {
		dbs[i] = keyspace.NewDB(h.seed)
	}
	// Keys whose TTL has passed are loaded too: on a replica they live until the primary's DEL.
	_, err = rdb.Load(br, rdb.Handler{Entry: func(e *rdb.Entry) error {
		if e.DB >= len(dbs) {
			return fmt.Errorf("the master's data has database %d, this server has %d databases", e.DB, len(dbs))
		}
		if _, exists := dbs[e.DB].Find(e.Key); exists {
			return fmt.Errorf("RDB has duplicated key '%s' in DB %d", e.Key, e.DB)
		}
		storeRecord(dbs[e.DB], e.Key, e.Value, e.ExpireAt, h.clock)
		res.keys++
		if res.keys%256 == 0 || len(e.Value.Str) > 1<<20 {
			return replication.CheckLoaded(dbs, h.budget)
		}
		return nil
	}})
	if err != nil {
		return fmt.Errorf("Failed trying to load the MASTER synchronization DB from socket: %v", err)
	}
	if n, err := io.Copy(io.Discard, br); n != 0 || err != nil {
		return fmt.Errorf("%d bytes after the RDB in the payload (%v)", n, err)
	}
	res.dbs, res.elapsed = dbs, time.Since(start)
	return nil
}

// dupConn takes the socket out of Go's runtime poller: a duplicate descriptor, non-blocking,
// for the I/O threads' own epoll.
func dupConn(conn net.Conn) (int, error) {
	sc, ok := conn.(syscall.Conn)
	if !ok {
		return -1, errors.New("not a socket")
	}
	raw, err := sc.SyscallConn()
	if err != nil {
		return -1, err
	}
	fd := -1
	var derr error
	if err := raw.Control(func(f uintptr) { fd, derr = unix.Dup(int(f)) }); err != nil {
		return -1, err
	}
	if derr != nil {
		return -1, derr
	}
	if err := unix.SetNonblock(fd, true); err != nil {
		unix.Close(fd)
		return -1, err
	}
	return fd, nil
}

// stateName is the link's state as ROLE names it.
func (m *masterLink) stateName() string {
	switch {
	case m.client != nil:
		return "connected"
	case m.connecting:
		return "sync"
	case m.host == "":
		return "none" // start-as-replica, before REPLICAOF
	}
	return "connect"
}
