package engine

import (
	"context"
	"errors"
	"fmt"
	"math/bits"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/iocache/iocache/server/cpuset"
	"github.com/iocache/iocache/server/version"
)

// Prometheus metrics on metrics-port. Metric names and labels follow redis_exporter wherever it
// has one, so dashboards built for Redis work unchanged; iocache's own are under iocache_.
//
// Nothing here touches the hot path: counters live where the work happens (plain integers on the
// main thread, per-thread counters published once per loop iteration) and are read at scrape
// time. The main thread's state is copied by the main thread itself into a snapshot when a scrape
// asks for one, so the scrape never races with command execution.

// latencyBuckets are the upper bounds, in seconds, of the per-command latency histogram: powers
// of two of microseconds, 1 µs to ~1 s. execute records into them with one increment.
const latencyBuckets = 21

func latencyBucket(ns int64) int {
	us := uint64(ns / 1000)
	b := bits.Len64(us)
	if b >= latencyBuckets {
		b = latencyBuckets - 1
	}
	return b
}

type metricsServer struct {
	srv *http.Server
	lns []net.Listener
}

type commandSnap struct {
	name                    string
	calls, failed, rejected int64
	usecNs                  int64
	hist                    [latencyBuckets]int64
}

type threadSnap struct {
	id                     int
	reads, writes, clients int64
	inBytes, outBytes      int64
	batches, batched       int64
	cpus                   string
	cpuSeconds             float64
	busy                   float64
}

// snapshot is the state a scrape reports, copied on the main thread.
type snapshot struct {
	uptime                       float64
	clients, blocked, maxClients int
	commandsProcessed            int64
	connectionsReceived          int64
	rejectedConns                int64
	hits, misses                 int64
	expired, evicted             int64
	used, maxmemory, rss         int64
	dbKeys, dbExpiring           []int64
	opsPerSec                    int64
	errors                       map[string]int64
	channels, patterns           int
	dirty                        int64
	commands                     []commandSnap
	threads                      []threadSnap
	ioThreads                    int
	expirePause, evictPause      float64
	lazyFreed                    int64
	rdb                          rdbSnap
	aof                          aofSnap
	repl                         replSnap
}

// aofSnap is the AOF state a scrape reports.
type aofSnap struct {
	enabled, rewriting, lastRewriteOK, lastWriteOK bool
	currentSize, baseSize, rewrites                int64
}

// rdbSnap is the persistence state a scrape reports.
type rdbSnap struct {
	lastSave, saves          int64
	inProgress, lastOK       bool
	lastSeconds, currentSecs int64
	lastBytes                int64
}

type snapRequest struct {
	done chan struct{}
	snap *snapshot
}

type snapshots struct {
	mu      sync.Mutex
	pending []*snapRequest
}

// requestSnapshot asks the main thread for a snapshot and waits for it.
func (s *Server) requestSnapshot(timeout time.Duration) *snapshot {
	req := &snapRequest{done: make(chan struct{})}
	s.snaps.mu.Lock()
	s.snaps.pending = append(s.snaps.pending, req)
	s.snaps.mu.Unlock()
	s.snapWanted.Store(true)
	s.io.WakeMain()
	select {
	case <-req.done:
		return req.snap
	case <-time.After(timeout):
		return nil
	}
}

// serveSnapshots answers pending scrapes; the main loop calls it when snapWanted is set.
func (s *Server) serveSnapshots() {
	s.snapWanted.Store(false)
	s.snaps.mu.Lock()
	reqs := s.snaps.pending
	s.snaps.pending = nil
	s.snaps.mu.Unlock()
	if len(reqs) == 0 {
		return
	}
	snap := s.takeSnapshot()
	for _, r := range reqs {
		r.snap = snap
		close(r.done)
	}
}

func (s *Server) takeSnapshot() *snapshot {
	sn := &snapshot{
		uptime: s.uptime().Seconds(), clients: len(s.clients), maxClients: s.cfg.MaxClients,
		commandsProcessed: s.stats.commandsProcessed, connectionsReceived: s.stats.connectionsReceived,
		rejectedConns: s.stats.rejectedConns, hits: s.stats.keyspaceHits, misses: s.stats.keyspaceMisses,
		expired: s.stats.expiredKeys, evicted: s.stats.evictedKeys, used: s.usedMemory(), maxmemory: s.cfg.MaxMemory,
		rss: rss(), opsPerSec: s.stats.instantaneousOps(), errors: map[string]int64{},
		channels: len(s.pubsub.channels), patterns: len(s.pubsub.patterns),
		dirty: s.stats.dirty, ioThreads: s.plan.IOThreads,
		expirePause: float64(s.stats.expireCycleMaxNs) / 1e9, evictPause: float64(s.stats.evictionMaxNs) / 1e9,
		lazyFreed: s.bio.freedCount(),
		rdb: rdbSnap{lastSave: s.persist.lastSave, saves: s.persist.saves, inProgress: s.persist.running != nil && !s.aofRewriteRunning(),
			lastOK: s.persist.lastBgsaveOK, lastSeconds: s.persist.lastBgsaveSec, currentSecs: -1,
			lastBytes: s.persist.lastSaveBytes},
		aof: aofSnap{enabled: s.aof.on || s.aof.waitRewrite, rewriting: s.aofRewriteRunning(), lastRewriteOK: s.aof.lastRewriteOK,
			lastWriteOK: s.aofWriteError() == nil, currentSize: s.aof.currentSize, baseSize: s.aof.baseSize, rewrites: s.aof.rewrites},
	}
	if job := s.persist.running; job != nil && job.aof == nil {
		sn.rdb.currentSecs = s.unixtime - job.startUnix
	}
	sn.repl = s.replicationSnapshot()
	for _, c := range s.clients {
		if c.blocked != nil {
			sn.blocked++
		}
	}
	for k, v := range s.stats.errorCodes {
		sn.errors[k] = v
	}
	for _, db := range s.dbs {
		sn.dbKeys = append(sn.dbKeys, int64(db.Len()))
		sn.dbExpiring = append(sn.dbExpiring, int64(db.ExpiresLen()))
	}
	for _, cmd := range s.statCommands() {
		if cmd.calls == 0 && cmd.failed == 0 && cmd.rejected == 0 {
			continue
		}
		sn.commands = append(sn.commands, commandSnap{name: cmd.name, calls: cmd.calls, failed: cmd.failed, rejected: cmd.rejected, usecNs: cmd.usecNs, hist: cmd.hist})
	}
	for i, t := range s.io.Threads() {
		ts := threadSnap{id: i, reads: t.Reads, writes: t.Writes, clients: int64(t.Clients),
			inBytes: t.InBytes, outBytes: t.OutBytes, batches: t.Batches, batched: t.BatchedCommands, cpus: cpuset.Format(t.CPUs)}
		if ts.cpus == "" {
			ts.cpus = cpuset.Format(s.plan.Allowed)
		}
		if u, sy, ok := threadTimes(t.TID); ok {
			ts.cpuSeconds = u + sy
		}
		if i < len(s.cpuTicker.threads) {
			ts.busy = s.cpuTicker.threads[i].busyRatio
		}
		sn.threads = append(sn.threads, ts)
	}
	return sn
}

// collector turns snapshots into Prometheus metrics.
type collector struct{ s *Server }

func desc(name, help string, labels ...string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

var (
	dUp            = desc("redis_up", "Whether the server answered the scrape.")
	dUptime        = desc("redis_uptime_in_seconds", "Seconds since the server started.")
	dClients       = desc("redis_connected_clients", "Connected clients.")
	dBlocked       = desc("redis_blocked_clients", "Clients blocked in BLPOP and kin.")
	dMaxClients    = desc("redis_config_maxclients", "The maxclients setting.")
	dCmdsProcessed = desc("redis_commands_processed_total", "Commands processed.")
	dConnsReceived = desc("redis_connections_received_total", "Connections accepted.")
	dRejectedConns = desc("redis_rejected_connections_total", "Connections refused at maxclients.")
	dHits          = desc("redis_keyspace_hits_total", "Successful key lookups.")
	dMisses        = desc("redis_keyspace_misses_total", "Failed key lookups.")
	dExpired       = desc("redis_expired_keys_total", "Keys removed because their TTL passed.")
	dEvicted       = desc("redis_evicted_keys_total", "Keys evicted under maxmemory.")
	dMemUsed       = desc("redis_memory_used_bytes", "used_memory: the bytes maxmemory is compared against.")
	dMemMax        = desc("redis_memory_max_bytes", "The maxmemory setting (0 = unlimited).")
	dMemRSS        = desc("redis_memory_used_rss_bytes", "Resident set size of the process.")
	dDBKeys        = desc("redis_db_keys", "Keys per database.", "db")
	dDBExpiring    = desc("redis_db_keys_expiring", "Keys with a TTL per database.", "db")
	dOps           = desc("redis_instantaneous_ops_per_sec", "Commands per second, sampled.")
	dErrors        = desc("redis_errors_total", "Error replies by error code.", "err")
	dChannels      = desc("redis_pubsub_channels", "Pub/sub channels with subscribers.")
	dPatterns      = desc("redis_pubsub_patterns", "Pub/sub patterns with subscribers.")
	dLastSave      = desc("redis_rdb_last_save_timestamp_seconds", "Time of the last successful save.")
	dChanges       = desc("redis_rdb_changes_since_last_save", "Writes since the last save.")
	dBgsaveRunning = desc("redis_rdb_bgsave_in_progress", "1 while a BGSAVE runs.")
	dBgsaveStatus  = desc("redis_rdb_last_bgsave_status", "1 if the last save succeeded, 0 if it failed.")
	// redis_exporter spells these two with _sec; promtool's lint wants the unit in full.
	dBgsaveLast     = desc("redis_rdb_last_bgsave_duration_seconds", "Duration of the last BGSAVE (-1 before any).")
	dBgsaveCurrent  = desc("redis_rdb_current_bgsave_duration_seconds", "Duration of the running BGSAVE so far (-1 when none runs).")
	dRDBSaves       = desc("redis_rdb_saves_total", "Snapshots saved since start.")
	dAOFEnabled     = desc("redis_aof_enabled", "1 while the append-only file is on.")
	dAOFRewriting   = desc("redis_aof_rewrite_in_progress", "1 while an AOF rewrite runs.")
	dAOFRewriteOK   = desc("redis_aof_last_bgrewrite_status", "1 if the last AOF rewrite succeeded, 0 if it failed.")
	dAOFWriteOK     = desc("redis_aof_last_write_status", "1 if the last AOF write and fsync succeeded, 0 if writes are refused.")
	dAOFSize        = desc("redis_aof_current_size_bytes", "Size of the AOF: its base and incremental files.")
	dAOFBaseSize    = desc("redis_aof_base_size_bytes", "Size of the AOF at its last rewrite.")
	dAOFRewrites    = desc("redis_aof_rewrites_total", "AOF rewrites started since start.")
	dCmdCalls       = desc("redis_commands_total", "Calls per command.", "cmd")
	dCmdDuration    = desc("redis_commands_duration_seconds_total", "Time spent executing each command.", "cmd")
	dCmdFailed      = desc("redis_commands_failed_calls_total", "Calls that replied with an error, per command.", "cmd")
	dCmdRejected    = desc("redis_commands_rejected_calls_total", "Calls refused before execution, per command.", "cmd")
	dNetIn          = desc("redis_net_input_bytes_total", "Bytes read from clients.")
	dNetOut         = desc("redis_net_output_bytes_total", "Bytes written to clients.")
	dCPU            = desc("redis_cpu_sys_seconds_total", "System CPU time of the process.")
	dCPUUser        = desc("redis_cpu_user_seconds_total", "User CPU time of the process.")
	dLastSaveBytes  = desc("iocache_rdb_last_save_size_bytes", "Size of the snapshot the last successful save wrote (-1 before any).")
	dInfo           = desc("iocache_info", "Build and thread layout of the server.", "version", "redis_version", "io_threads")
	dCmdLatency     = desc("iocache_command_duration_seconds", "Execution time per command on the main thread.", "cmd")
	dThreadReads    = desc("iocache_io_thread_reads_total", "Socket reads per server thread (thread 0 is the main thread).", "thread")
	dThreadWrites   = desc("iocache_io_thread_writes_total", "Socket writes per server thread.", "thread")
	dThreadClients  = desc("iocache_io_thread_clients", "Connections owned by each server thread.", "thread")
	dThreadInBytes  = desc("iocache_io_thread_read_bytes_total", "Bytes read per server thread.", "thread")
	dThreadOutBytes = desc("iocache_io_thread_written_bytes_total", "Bytes written per server thread.", "thread")
	dThreadCPU      = desc("iocache_io_thread_cpu_seconds_total", "CPU time of each server thread.", "thread")
	dThreadBusy     = desc("iocache_io_thread_busy_ratio", "Share of one CPU each server thread used over the last second.", "thread")
	dThreadPinned   = desc("iocache_io_thread_pinned_cpus", "CPUs each server thread is pinned to (value 1; the cpus label lists them).", "thread", "cpus")
	dThreadBatches  = desc("iocache_io_thread_batches_total", "Batches of parsed commands an I/O thread handed to the main thread.", "thread")
	dThreadBatched  = desc("iocache_io_thread_batched_commands_total", "Commands handed over in those batches; divided by batches it is the mean batch size.", "thread")
	dMainBusy       = desc("iocache_main_thread_busy_ratio", "Share of one CPU the main thread used over the last second; near 1 it is saturated.")
	dExpirePause    = desc("iocache_expire_cycle_max_pause_seconds", "Longest single active-expire cycle.")
	dEvictPause     = desc("iocache_eviction_max_pause_seconds", "Longest single eviction pass.")
	dLazyFreed      = desc("iocache_lazyfreed_objects_total", "Large values released on the bio thread.")
)

// allDescs lists every metric, so Describe does not need a snapshot (the main loop may not run
// yet when the collector is registered).
var allDescs = []*prometheus.Desc{dUp, dUptime, dClients, dBlocked, dMaxClients, dCmdsProcessed, dConnsReceived, dRejectedConns, dHits, dMisses, dExpired, dEvicted, dMemUsed, dMemMax, dMemRSS, dDBKeys, dDBExpiring, dOps, dErrors, dChannels, dPatterns, dLastSave, dChanges, dBgsaveRunning, dBgsaveStatus, dBgsaveLast, dBgsaveCurrent, dRDBSaves, dCmdCalls, dCmdDuration, dCmdFailed, dCmdRejected, dNetIn, dNetOut, dCPU, dCPUUser, dInfo, dCmdLatency, dThreadReads, dThreadWrites, dThreadClients, dThreadInBytes, dThreadOutBytes, dThreadCPU, dThreadBusy, dThreadPinned, dThreadBatches, dThreadBatched, dMainBusy, dExpirePause, dEvictPause, dLazyFreed}

func (col collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range allDescs {
		ch <- d
	}
}

func (col collector) Collect(ch chan<- prometheus.Metric) {
	sn := col.s.requestSnapshot(5 * time.Second)
	if sn == nil {
		ch <- prometheus.MustNewConstMetric(dUp, prometheus.GaugeValue, 0)
		return
	}
	gauge := func(d *prometheus.Desc, v float64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, l...)
	}
	counter := func(d *prometheus.Desc, v float64, l ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, l...)
	}
	gauge(dUp, 1)
	gauge(dUptime, sn.uptime)
	gauge(dClients, float64(sn.clients))
	gauge(dBlocked, float64(sn.blocked))
	gauge(dMaxClients, float64(sn.maxClients))
	counter(dCmdsProcessed, float64(sn.commandsProcessed))
	counter(dConnsReceived, float64(sn.connectionsReceived))
	counter(dRejectedConns, float64(sn.rejectedConns))
	counter(dHits, float64(sn.hits))
	counter(dMisses, float64(sn.misses))
	counter(dExpired, float64(sn.expired))
	counter(dEvicted, float64(sn.evicted))
	gauge(dMemUsed, float64(sn.used))
	gauge(dMemMax, float64(sn.maxmemory))
	gauge(dMemRSS, float64(sn.rss))
	for i := range sn.dbKeys {
		if sn.dbKeys[i] > 0 {
			gauge(dDBKeys, float64(sn.dbKeys[i]), "db"+strconv.Itoa(i))
			gauge(dDBExpiring, float64(sn.dbExpiring[i]), "db"+strconv.Itoa(i))
		}
	}
	for code, n := range sn.errors {
		counter(dErrors, float64(n), code)
	}
	gauge(dChannels, float64(sn.channels))
	gauge(dPatterns, float64(sn.patterns))
	gauge(dLastSave, float64(sn.rdb.lastSave))
	gauge(dChanges, float64(sn.dirty))
	gauge(dBgsaveRunning, float64(boolInt(sn.rdb.inProgress)))
	gauge(dBgsaveStatus, float64(boolInt(sn.rdb.lastOK)))
	gauge(dBgsaveLast, float64(sn.rdb.lastSeconds))
	gauge(dBgsaveCurrent, float64(sn.rdb.currentSecs))
	counter(dRDBSaves, float64(sn.rdb.saves))
	gauge(dLastSaveBytes, float64(sn.rdb.lastBytes))
	gauge(dAOFEnabled, float64(boolInt(sn.aof.enabled)))
	gauge(dAOFRewriting, float64(boolInt(sn.aof.rewriting)))
	gauge(dAOFRewriteOK, float64(boolInt(sn.aof.lastRewriteOK)))
	gauge(dAOFWriteOK, float64(boolInt(sn.aof.lastWriteOK)))
	gauge(dAOFSize, float64(sn.aof.currentSize))
	gauge(dAOFBaseSize, float64(sn.aof.baseSize))
	counter(dAOFRewrites, float64(sn.aof.rewrites))
	u, sy := processCPU()
	counter(dCPU, sy.Seconds())
	counter(dCPUUser, u.Seconds())
	gauge(dInfo, 1, version.Version, version.RedisVersion, strconv.Itoa(sn.ioThreads))
	for _, c := range sn.commands {
		counter(dCmdCalls, float64(c.calls), c.name)
		counter(dCmdDuration, float64(c.usecNs)/1e9, c.name)
		counter(dCmdFailed, float64(c.failed), c.name)
		counter(dCmdRejected, float64(c.rejected), c.name)
		buckets := make(map[float64]uint64, latencyBuckets)
		var cum uint64
		for b := 0; b < latencyBuckets; b++ {
			cum += uint64(c.hist[b])
			buckets[float64(uint64(1)<<b)/1e6] = cum
		}
		ch <- prometheus.MustNewConstHistogram(dCmdLatency, cum, float64(c.usecNs)/1e9, buckets, c.name)
	}
	var in, out int64
	for _, t := range sn.threads {
		id := strconv.Itoa(t.id)
		counter(dThreadReads, float64(t.reads), id)
		counter(dThreadWrites, float64(t.writes), id)
		gauge(dThreadClients, float64(t.clients), id)
		counter(dThreadInBytes, float64(t.inBytes), id)
		counter(dThreadOutBytes, float64(t.outBytes), id)
		counter(dThreadCPU, t.cpuSeconds, id)
		gauge(dThreadBusy, t.busy, id)
		gauge(dThreadPinned, 1, id, t.cpus)
		counter(dThreadBatches, float64(t.batches), id)
		counter(dThreadBatched, float64(t.batched), id)
		in += t.inBytes
		out += t.outBytes
	}
	counter(dNetIn, float64(in))
	counter(dNetOut, float64(out))
	if len(sn.threads) > 0 {
		gauge(dMainBusy, sn.threads[0].busy)
	}
	gauge(dExpirePause, sn.expirePause)
	gauge(dEvictPause, sn.evictPause)
	counter(dLazyFreed, float64(sn.lazyFreed))
	collectReplication(sn.repl, gauge)
}

// startMetrics serves /metrics on metrics-port (0 turns it off), on each address the server's
// TCP listeners bind: a server told `bind 127.0.0.1 -::1` (the stock redis.conf line) keeps its
// metrics on loopback too, instead of every interface.
func (s *Server) startMetrics() error {
	if s.cfg.MetricsPort == 0 {
		return nil
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(collector{s})
	mux := http.NewServeMux()
	mux.Handle("/metrics", promhttp.HandlerFor(reg, promhttp.HandlerOpts{Registry: reg}))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = w.Write([]byte("ok")) })
	binds := s.cfg.Bind
	if len(binds) == 0 {
		binds = []string{"*"}
	}
	var lns []net.Listener
	for _, b := range binds {
		host, optional := isIPv6Optional(b)
		switch host {
		case "*":
			host = "0.0.0.0"
		case "::*":
			host = "::"
		}
		ln, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(s.cfg.MetricsPort)))
		if err != nil {
			if optional {
				continue
			}
			for _, l := range lns {
				l.Close()
			}
			return err
		}
		lns = append(lns, ln)
	}
	if len(lns) == 0 {
		return fmt.Errorf("no address of bind %v could be bound", s.cfg.Bind)
	}
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	s.metrics = &metricsServer{srv: srv, lns: lns}
	for _, ln := range lns {
		go func() {
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				s.logf(logWarning, "metrics endpoint: %v", err)
			}
		}()
		s.logf(logNotice, "Serving Prometheus metrics on http://%s/metrics", ln.Addr())
	}
	return nil
}

// MetricsAddr is the metrics endpoint's address, or "" when it is off.
func (s *Server) MetricsAddr() string {
	if s.metrics == nil {
		return ""
	}
	return s.metrics.lns[0].Addr().String()
}

func (s *Server) stopMetrics() {
	if s.metrics == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_ = s.metrics.srv.Shutdown(ctx)
	// Scrapes waiting for a snapshot get nothing more from a stopped main loop.
	s.serveSnapshots()
}
