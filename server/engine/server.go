package engine

import (
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"os"
	"os/signal"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/cpuset"
	"github.com/iocache/iocache/server/keyspace"
	"github.com/iocache/iocache/server/netio"
	"github.com/iocache/iocache/server/replication"
	"github.com/iocache/iocache/server/scripting"
)

// The Server and its main loop: New, the listeners, Serve, mainLoop and beforeSleep, accepting
// and unlinking clients, Shutdown.

// ErrServerClosed is returned by Serve after Shutdown or the SHUTDOWN command.
var ErrServerClosed = errors.New("iocache: server closed")

// Server is one iocache-server instance.
type Server struct {
	// cmdStart, when not zero, is when the command about to execute started: the end of the
	// previous command of the same pipeline, so that a batch reads the clock once per command
	// rather than twice (it costs ~30 ns on a VM's kvm-clock). cmdEnd is when the last executed
	// command ended. process sets and clears both (commands.go).
	cmdStart, cmdEnd int64
	// topCmdStart is when the last top-level command started; yielded are the clients parked
	// after one ran past busy-reply-threshold, or during a busy script (yield.go).
	topCmdStart int64
	yielded     []*client
	lastYield   int64 // when the main loop last yielded to the Go scheduler (netio.YieldIfDue)

	cfg *config.Config
	// accepts sheds connections when accept runs out of descriptors (descriptors.go).
	accepts acceptShedder
	plan    cpuset.Plan
	lua     *scriptHost // created by the first script command
	// script is the script or function running, if any (script_busy.go).
	script runningScript
	// events are the main thread's events of this loop iteration, handled up to nextEvent
	// (a busy script handles the rest: script_busy.go); looping: the main loop runs.
	events    []netio.Event
	nextEvent int
	looping   bool
	// functions are the libraries FUNCTION LOAD installed (script_function.go).
	functions scripting.Registry

	tracking trackingState
	// writing are the keys whose collections the running command created (write.go).
	writing   []writingKey
	executing *client // the client whose command is running, for tracking's NOLOOP and ordering
	// executingCmd is the command running (nil between commands): lazy expiry under a pause
	// depends on whether it writes.
	executingCmd *command
	// unknownSubStats takes the statistics of containers' unknown subcommands, which Redis does
	// not count: they are never reported.
	unknownSubStats command

	nextConfine int64 // unix ms of the next check that runtime threads stay on bio_cpulist
	notifyFlags int   // notify-keyspace-events, parsed
	quietNew    bool  // a STORE command replaces its destination: no "new" event (storeObject)

	listeners []*netio.Listener
	tls       tlsState // tls-port listeners and certificates (tls.go)
	// io is the threads that serve the sockets: the main thread's own loop and the I/O threads.
	io         *netio.Group
	nextPolicy int64 // nanotime of the next activation policy tick
	wg         sync.WaitGroup
	mainTID    atomic.Int64
	watchdog   watchdog

	// Values the I/O threads read; the main thread updates them on CONFIG SET.
	queryBufLimit   atomic.Int64
	protoMaxBulkLen atomic.Int64
	outLimits       outputLimits
	authRequired    atomic.Bool

	// Main-thread state.
	dbs  []*keyspace.DB
	seed maphash.Seed
	// owed lists the DBs with writes to settle after the running command (evict.go).
	owed keyspace.Owed
	// cluster is the cluster node's state (cluster.go); nil unless cluster-enabled yes.
	cluster *clusterState
	// commands is the table clients call, after rename-command; builtin has every command under
	// its original name, for the server's own lookups (rename.go).
	commands     map[string]*command
	builtin      map[string]*command
	acl          aclState
	clients      map[int64]*client
	nextClientID int64
	nowMs        int64
	unixtime     int64
	lruClock     uint32
	startTime    time.Time
	stats        stats
	bench        benchSpace
	slowlog      slowlog
	pubsub       pubsubState
	watchedKeys  map[watchedKey][]watcher
	blocking     blockingState
	pause        pauseState
	bio          *bio
	nextCron     int64
	stopping     atomic.Bool
	logger       *logger
	cpuTicker    cpuSampler
	metrics      *metricsServer
	snaps        snapshots
	overLimit    []*client // clients past their output limit, closed in beforeSleep
	// Counted by any thread: clients closed for their output limit, all clients' buffers, large
	// buffers released since memory was last returned to the OS (see outbuf.go).
	outputLimitKills atomic.Int64
	clientMem        atomic.Int64
	clientMemLimit   int64 // maxmemory-clients in bytes, refreshed by cron and CONFIG SET
	releasedBytes    atomic.Int64
	releasing        atomic.Bool
	releasedSeen     int64 // releasedBytes at releasedSeenAt (ms), when cron last saw it change
	releasedSeenAt   int64
	snapWanted       atomic.Bool
	persist          persistState
	repl             replState
	aof              aofState
	// propagating: replicas or the AOF want the stream of writes (propagate.go); the one flag a
	// command tests before collecting what it changed.
	propagating bool
	// loading: the AOF is being replayed; keys do not expire meanwhile, as in Redis.
	loading bool
	// shutdownSignal is the SIGTERM or SIGINT that asked for a shutdown (0: none); the main
	// thread applies shutdown-on-sigterm or shutdown-on-sigint to it.
	shutdownSignal atomic.Int32
	latency        latencyMonitor // LATENCY's events (latency_monitor.go)
	bgsaveTID      atomic.Int64
	memOverhead    int64 // process memory beyond the keyspace's accounting, measured by cron
	memPeak        int64 // the largest used_memory seen by cron or INFO (used_memory_peak)
	goMemLimit     int64 // the runtime's soft memory limit, from the cgroup (0 = none)
	cgroupLimit    int64 // the cgroup's memory limit goMemLimit was derived from (0 = none)
	nextExpire     int64 // when the next active expire cycle runs (unix ms)
	// activeExpireOff: DEBUG SET-ACTIVE-EXPIRE 0 stopped the active expire cycle; expired keys
	// then go only when accessed, which tests of lazy expiry rely on.
	activeExpireOff bool
	scriptDenyOff   bool // DEBUG SET-DISABLE-DENY-SCRIPTS: scripts may call no-script commands
	cronPaused      bool // DEBUG PAUSE-CRON 1: cron does nothing, as Redis's serverCron then
	// evictionBacklog is set when an eviction pass ran out of time over maxmemory.
	evictionBacklog bool

	readyOnce sync.Once
	ready     chan struct{}
}

// New builds a server from a configuration: resolves io-threads and the cpulists against the CPUs
// the process may use, and opens the listening sockets. Serve runs it.
func New(cfg *config.Config) (*Server, error) {
	s := &Server{cfg: cfg, seed: maphash.MakeSeed(), clients: map[int64]*client{}, startTime: time.Now(), ready: make(chan struct{}),
		accepts: acceptShedder{spare: -1}}
	s.repl.replid = replication.NewID()
	var err error
	if s.logger, err = newLogger(cfg); err != nil {
		return nil, err
	}
	allowed, err := cpuset.Allowed()
	if err != nil {
		return nil, err
	}
	s.plan, err = cpuset.BuildPlan(cpuset.Request{
		IOThreads: cfg.IOThreads, Server: cfg.ServerCPUList, Bio: cfg.BioCPUList,
		AOFRewrite: cfg.AOFRewriteCPUList, BGSave: cfg.BGSaveCPUList, Mode: cpuset.Mode(cfg.CPUListMode),
	}, allowed, cpuset.EffectiveCores(allowed))
	if err != nil {
		return nil, err
	}
	if cfg.ClusterEnabled {
		if err := s.initCluster(); err != nil {
			return nil, err
		}
	}
	s.dbs = make([]*keyspace.DB, cfg.Databases)
	for i := range s.dbs {
		s.dbs[i] = s.newDB()
	}
	s.commands = buildCommandTable()
	s.builtin = make(map[string]*command, len(s.commands))
	for name, cmd := range s.commands {
		s.builtin[name] = cmd
	}
	if err := s.applyRenames(); err != nil {
		return nil, err
	}
	if s.cluster != nil {
		markKeyless(s.builtin)
	}
	s.acl = newACLState(s.builtin)
	s.cgroupLimit = cgroupMemoryLimit()
	s.goMemLimit = applyMemoryLimit()
	s.applyEffects(startEffects)
	if err := s.loadConfiguredUsers(); err != nil {
		return nil, err
	}
	s.updateClock(time.Now())
	s.persist = persistState{lastSave: s.unixtime, lastBgsaveOK: true, lastBgsaveSec: -1, lastSaveBytes: -1, lastSaveMs: -1}
	s.bio = newBio(s, s.plan.Bio)
	if err := s.loadAtStart(); err != nil {
		return nil, err
	}
	if s.io, err = netio.NewGroup(ioEngine{s}); err != nil {
		return nil, err
	}
	if err := s.setupTLS(); err != nil {
		return nil, err
	}
	if err := s.openListeners(); err != nil {
		s.closeListeners()
		return nil, err
	}
	s.io.SetActivation(cfg.IOThreadsActivation)
	if err := s.io.Resize(s.plan.IOThreads, s.threadCPUs, s.plan.Allowed); err != nil {
		s.closeListeners()
		return nil, err
	}
	return s, nil
}

// threadCPUs is the CPU of server thread i: one CPU each, in order, when server_cpulist has at
// least as many CPUs as threads (so threads do not compete); otherwise the whole list, as Redis
// pins every thread to the whole server_cpulist.
func (s *Server) threadCPUs(i int) []int {
	l := s.plan.Server
	if len(l) == 0 {
		return nil
	}
	if len(l) >= s.plan.IOThreads && i < len(l) {
		return []int{l[i]}
	}
	return l
}

func (s *Server) openListeners() error {
	// As in Redis, port 0 with a unixsocket or a tls-port means "no plaintext TCP". Port 0
	// without either binds an ephemeral port (Redis would refuse to start), which tests and
	// side-by-side benchmarks use.
	tport := s.cfg.TLSPort
	if s.cfg.Port != 0 || (s.cfg.UnixSocket == "" && tport == 0) {
		for _, b := range s.cfg.Bind {
			addr, optional := isIPv6Optional(b)
			l, err := netio.ListenTCP(addr, s.cfg.Port, s.cfg.TCPBacklog)
			if err != nil {
				if optional {
					continue
				}
				return fmt.Errorf("Warning: Could not create server TCP listening socket %s:%d: %w", addr, s.cfg.Port, err)
			}
			s.listeners = append(s.listeners, l)
		}
	}
	if tport != 0 {
		ls, err := s.listenTLS(tport)
		if err != nil {
			return err
		}
		s.tls.listeners, s.tls.port = ls, tport
		s.listeners = append(s.listeners, ls...)
	}
	if s.cfg.UnixSocket != "" {
		l, err := netio.ListenUnix(s.cfg.UnixSocket, s.cfg.UnixSocketPerm, s.cfg.TCPBacklog)
		if err != nil {
			return err
		}
		s.listeners = append(s.listeners, l)
	}
	if len(s.listeners) == 0 {
		return errors.New("Configured to not listen anywhere, exiting.")
	}
	for _, l := range s.listeners {
		if err := s.io.AddListener(l); err != nil {
			return err
		}
	}
	return nil
}

func (s *Server) closeListeners() {
	for _, l := range s.listeners {
		l.Close()
	}
	s.listeners = nil
}

// Addr returns the address of the first TCP listener (host:port), for tests that bind port 0.
func (s *Server) Addr() string {
	for _, l := range s.listeners {
		if !l.Unix {
			return l.Addr
		}
	}
	return ""
}

// listenKind names what Addr is, for the start-up line: tcp, or tls on a TLS-only server.
func (s *Server) listenKind() string {
	for _, l := range s.listeners {
		if !l.Unix && !l.TLS {
			return "tcp"
		}
	}
	if len(s.tls.listeners) > 0 {
		return "tls"
	}
	return "tcp"
}

// Ready is closed once Serve is accepting connections.
func (s *Server) Ready() <-chan struct{} { return s.ready }

// Serve runs the server until Shutdown or SHUTDOWN. It locks the calling goroutine to its OS
// thread, which becomes the main thread.
func (s *Server) Serve() error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	s.mainTID.Store(int64(cpuset.Gettid()))
	s.fitMaxClientsAtStart()
	s.accepts.open()
	defer s.accepts.close()
	s.startWatchdog()
	// Every server thread has pinned itself before bio moves the remaining threads away.
	s.io.Start()
	s.bio.start(&s.wg)
	if err := s.startMetrics(); err != nil {
		s.logf(logWarning, "metrics endpoint disabled: %v", err)
	}
	s.bio.confineRuntimeThreads() // again: starting the metrics server may have added threads
	s.logf(logNotice, "Ready to accept connections %s %s (io-threads %d, server CPUs %s, bio CPUs %s)", s.listenKind(), s.Addr(), s.plan.IOThreads, cpuset.Format(s.plan.Server), cpuset.Format(s.plan.Bio))
	s.writePidFile()
	s.notifySupervisorReady()
	if host, port, ok := strings.Cut(s.cfg.ReplicaOf, " "); ok {
		p, _ := strconv.Atoi(port) // checked by the config parser
		s.replicate(host, p)
	} else if s.cfg.StartAsReplica {
		s.awaitPrimary()
	}
	s.readyOnce.Do(func() { close(s.ready) })
	s.looping = true
	s.mainLoop()
	s.looping = false
	s.notifySupervisorStopping()
	s.stopAll()
	return ErrServerClosed
}

// Shutdown stops the server from any goroutine; Serve returns once every thread has stopped.
func (s *Server) Shutdown() {
	s.stopping.Store(true)
	s.io.WakeMain()
}

// HandleSignals makes SIGTERM and SIGINT shut the server down, as redis-server does: the main
// thread saves first as shutdown-on-sigterm or shutdown-on-sigint says (see persistTick).
func (s *Server) HandleSignals() {
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
	go func() {
		for sig := range ch {
			s.logf(logWarning, "Received %s scheduling shutdown...", sig)
			s.shutdownSignal.Store(int32(sig.(syscall.Signal)))
			s.io.WakeMain()
		}
	}()
}

func (s *Server) mainLoop() {
	for !s.stopping.Load() {
		// Clients parked in the last iteration go after the events that arrived meanwhile.
		parked := s.yielded
		s.yielded = nil
		timeout := s.pollTimeout()
		if len(parked) > 0 {
			timeout = 0 // look for what arrived, then serve them at once
		}
		s.events, s.nextEvent = s.io.Wait(timeout), 0
		start := nanotime()
		s.watchdog.busySince.Store(start)
		s.updateClock(time.Now())
		s.handleEvents()
		s.io.Serve()
		if len(parked) > 0 {
			s.resumeYielded(parked)
		}
		s.beforeSleep()
		s.persistTick()
		if s.snapWanted.Load() {
			s.serveSnapshots()
		}
		if s.nowMs >= s.nextCron {
			s.cron()
		}
		now := nanotime()
		if now >= s.nextPolicy {
			s.nextPolicy = now + int64(netio.PolicyWindow)
			s.io.Tick(now, s.nowMs, s.stats.commandsProcessed, s.plan.Cores)
		}
		s.io.MainBusy(now - start)
		netio.YieldIfDue(now, &s.lastYield)
		s.watchdog.busySince.Store(0)
	}
}

// handleEvents handles the main thread's events from nextEvent on: connections to accept, and
// its own conns' readiness, which may execute commands (a busy script handles the rest of
// them, then new ones, from inside one: script_busy.go).
func (s *Server) handleEvents() {
	for s.nextEvent < len(s.events) {
		ev := s.events[s.nextEvent]
		s.nextEvent++
		if l := s.listenerFor(int(ev.Fd)); l != nil {
			s.acceptAll(l)
			continue
		}
		s.io.OnMainEvent(ev)
	}
}

// isIPv6Optional reads a bind address: a leading '-' (as in Redis's default "-::*") makes it
// optional, skipped when it cannot be bound.
func isIPv6Optional(bind string) (string, bool) {
	if strings.HasPrefix(bind, "-") {
		return bind[1:], true
	}
	return bind, false
}

func (s *Server) listenerFor(fd int) *netio.Listener {
	for _, l := range s.listeners {
		if l.FD == fd {
			return l
		}
	}
	return nil
}

// pollTimeout is how long the main loop may sleep: until the next cron tick or blocked-client
// deadline.
func (s *Server) pollTimeout() int {
	next := min(s.nextCron, s.nextExpire)
	if d := s.blocking.nextDeadline(); d > 0 && d < next {
		next = d
	}
	if len(s.pause.waiting) > 0 && s.pause.until < next {
		next = s.pause.until
	}
	if s.evictionBacklog || s.walking() {
		return 0
	}
	ms := next - time.Now().UnixMilli()
	if ms < 0 {
		return 0
	}
	return int(ms) + 1
}

// returnClient gives a client the main thread executed or held (blocked, paused) back to its
// thread, which writes the replies.
func (s *Server) returnClient(c *client) {
	// Redis writes replies only after beforeSleep has queued the BCAST invalidations, so a client
	// whose write changed a broadcast prefix cannot read its reply, tell a BCAST client, and have
	// that client's next reply arrive before the invalidation. Here replies go out as clients are
	// returned: queue the invalidations first (one nil check when no BCAST client exists).
	if s.tracking.bcastPending != nil {
		s.trackingBroadcast()
	}
	if s.aof.holdReplies && len(s.aof.buf) > 0 {
		s.holdForAOF(c)
		return
	}
	s.io.Return(c.conn)
}

// beforeSleep does what must happen before the main thread waits again: wake clients blocked on
// keys that received data, flush direct-mode out-of-band output, return resumed clients.
func (s *Server) beforeSleep() {
	if s.tracking.bcastPending != nil {
		s.trackingBroadcast()
	}
	if t := &s.tracking; t.maxKeys > 0 && len(t.table) > t.maxKeys {
		// As Redis's beforeSleep: a lowered tracking-table-max-keys takes effect while idle too.
		s.trackingLimitKeys(100)
	}
	s.blocking.serveReadyKeys(s)
	s.blocking.expireTimeouts(s)
	s.releasePaused()
	if len(s.overLimit) > 0 {
		s.closeOverLimit()
	}
	if !s.writesHeld() {
		s.expireTick()
		if s.evictionBacklog {
			s.freeMemoryIfNeeded()
		}
	}
	// rdb-only links (backups) take a snapshot without starting the stream: they are served
	// here too, or a payload past the sink's queue would wait forever.
	if s.repl.feeding || len(s.repl.replicas) > 0 {
		s.replicationBeforeSleep()
	}
	if s.repl.master != nil || s.repl.handshakes > 0 {
		s.replicaBeforeSleep()
	}
	if s.aof.file != nil || len(s.aof.held) > 0 {
		s.aofBeforeSleep() // last: the replies it holds go out after it
	}
	s.io.Flush()
}

// acceptOutOfDescriptors handles an accept that failed for want of descriptors: the pending
// connection is taken and closed with the spare descriptor, and the failure logged once a second
// at most with how many were shed (a log line per failure was 35 MB/s under a flood).
func (s *Server) acceptOutOfDescriptors(l *netio.Listener, err error) {
	s.stats.rejectedConns++
	s.accepts.shedOne(l)
	if s.unixtime != s.accepts.loggedAt {
		s.accepts.loggedAt = s.unixtime
		s.logf(logWarning, "Accepting client connection: %v (%d connections closed for want of descriptors so far)", err, s.accepts.shed)
	}
}

// acceptAll accepts every pending connection on l and assigns each to the I/O thread with the
// fewest clients; it stays there until the thread layout changes.
func (s *Server) acceptAll(l *netio.Listener) {
	for i := 0; i < 1000; i++ {
		nfd, remote, err := l.Accept()
		if err != nil && outOfDescriptors(err) {
			s.acceptOutOfDescriptors(l, err)
			if s.accepts.spare >= 0 {
				continue // shed, and the next one may be accepted or shed in turn
			}
			return
		}
		if err != nil {
			s.logf(logWarning, "Accepting client connection: %v", err)
		}
		if nfd < 0 {
			return
		}
		if len(s.clients)+s.tls.handshaking >= s.cfg.MaxClients {
			if !l.TLS { // a TLS client would read the text as a broken handshake
				_, _, _ = netio.Write(nfd, []byte("-ERR max number of clients reached\r\n"))
			}
			netio.Close(nfd)
			s.stats.rejectedConns++
			continue
		}
		if protectedModeDenies(s.cfg.ProtectedMode, s.defaultUserNoPass(), l.Unix, remote) {
			_, _, _ = netio.Write(nfd, []byte(errProtectedMode))
			netio.Close(nfd)
			s.stats.rejectedConns++
			continue
		}
		if !l.Unix {
			netio.ConfigureConn(nfd, s.cfg.TCPKeepAlive)
		}
		s.nextClientID++
		c := newClient(s.nextClientID, nfd, s.unixtime)
		c.unix = l.Unix
		if l.Unix {
			c.addr, c.laddr = "/unixsocket:0", l.Addr
		} else {
			c.addr, c.laddr = remote, netio.LocalAddr(nfd)
		}
		c.user, c.authed = s.acl.users.Default(), s.defaultAuthenticated()
		s.stats.connectionsReceived++
		if l.TLS {
			s.startHandshake(c) // a client once its handshake succeeds
			continue
		}
		s.clients[c.id] = c
		s.io.Assign(c.conn)
	}
}

// unlinkClient forgets a closed client: registry, subscriptions, watches, blocking.
func (s *Server) unlinkClient(c *client) {
	if _, ok := s.clients[c.id]; !ok {
		return
	}
	delete(s.clients, c.id)
	s.forgetClientMemory(c)
	s.unwatchAll(c)
	s.pubsubUnsubscribeAll(c, false)
	s.pubsub.removeMonitor(c)
	if c.blocked != nil {
		s.blocking.remove(c)
	}
	s.dropPaused(c)
	s.disableTracking(c)
	s.leaveBenchSpace(c)
	if c.replLink != nil {
		s.dropReplica(c)
	}
	if c.isMaster {
		s.masterClientGone(c)
	}
	c.mainOwned = false
}

// killClient closes a client from the main thread: at once if the main thread owns its socket
// work, else through its I/O thread.
func (s *Server) killClient(c *client) {
	if c.blocked != nil || c.flags&flagPaused != 0 {
		// Held by the main thread with no end in sight: release it so its thread closes it.
		if c.blocked != nil {
			s.blocking.remove(c)
		}
		s.dropPaused(c)
		c.flags |= flagCloseASAP
		s.resume(c)
		return
	}
	if c.mainOwned {
		c.flags |= flagCloseASAP
		return
	}
	s.io.Kill(c.conn)
}

// pushTo delivers out-of-band output (pub/sub messages, MONITOR lines) to a client.
func (s *Server) pushTo(c *client, data []byte) {
	if c.flags&flagCloseASAP != 0 {
		return // closing for its output limit: nothing more for it
	}
	switch {
	case c.mainOwned:
		c.w.Buf = append(c.w.Buf, data...)
		s.enforceOutputLimit(c)
	case s.io.OnMainThread(c.conn):
		// The main thread serves its socket: append now, check the limit as after a command,
		// write before the loop sleeps.
		if !c.conn.Closed() {
			c.w.Buf = append(c.w.Buf, data...)
			if !s.enforceOutputLimit(c) {
				s.io.WriteLater(c.conn)
			}
		}
	default:
		s.io.Push(c.conn, data, uint8(clientClass(c)))
	}
}

func (s *Server) stopAll() {
	// A snapshot still running (BGSAVE, BGREWRITEAOF) is abandoned and waited for, as Redis kills
	// its child at shutdown: nothing writes into dir once Serve has returned.
	s.abortBGSave()
	s.closeAOF()
	s.closeListeners()
	s.io.Stop()
	s.bio.stop()
	s.stopWatchdog()
	s.wg.Wait()
	s.stopMetrics()
	s.removePidFile()
	s.logf(logNotice, "iocache is now ready to exit, bye bye...")
}

func (s *Server) updateClock(now time.Time) {
	s.nowMs = now.UnixMilli()
	s.unixtime = now.Unix()
	s.lruClock = uint32(s.nowMs/lruResolutionMs) & lruClockMax
}

// LRU clock as Redis keeps it: 24 bits of seconds.
const (
	lruResolutionMs = 1000
	lruClockMax     = 1<<24 - 1
)

// run is the body of Main once the configuration is loaded.
func run(cfg *config.Config, stderr io.Writer) int {
	defer startCPUProfile(stderr)()
	s, err := New(cfg)
	if err != nil {
		fmt.Fprintln(stderr, err)
		return 1
	}
	s.HandleSignals()
	if err := s.Serve(); err != nil && !errors.Is(err, ErrServerClosed) {
		fmt.Fprintln(stderr, err)
		return 1
	}
	return 0
}
