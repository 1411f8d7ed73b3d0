package engine

import (
	"fmt"
	"os"
	"runtime"
	"sort"
	"strings"

	"github.com/iocache/iocache/server/cpuset"
	"github.com/iocache/iocache/server/version"
)

// INFO in Redis's format: "# Section" headers, "field:value" lines, CRLF line ends, so that
// redis-cli, redis_exporter and dashboards parse it unchanged.

var defaultSections = []string{"server", "clients", "memory", "persistence", "stats", "replication", "threads", "cpu", "modules", "errorstats", "cluster", "keyspace"}
var allSections = []string{"server", "clients", "memory", "persistence", "stats", "replication", "threads", "cpu", "modules", "commandstats", "errorstats", "latencystats", "cluster", "keyspace"}

func cmdInfo(s *Server, c *client, argv [][]byte) {
	c.w.Verbatim(s.infoString(argv[1:]))
}

func (s *Server) infoString(args [][]byte) string {
	want := map[string]bool{}
	if len(args) == 0 {
		for _, n := range defaultSections {
			want[n] = true
		}
	}
	for _, a := range args {
		n := strings.ToLower(string(a))
		switch n {
		case "all", "everything":
			for _, x := range allSections {
				want[x] = true
			}
		case "default":
			for _, x := range defaultSections {
				want[x] = true
			}
		default:
			want[n] = true
		}
	}
	var b strings.Builder
	section := func(name string, fn func(func(string, any))) {
		if !want[strings.ToLower(name)] {
			return
		}
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		b.WriteString("# " + name + "\r\n")
		fn(func(k string, v any) { fmt.Fprintf(&b, "%s:%v\r\n", k, v) })
	}
	section("Server", s.infoServer)
	section("Clients", s.infoClients)
	section("Memory", s.infoMemory)
	section("Persistence", s.infoPersistence)
	section("Stats", s.infoStats)
	section("Replication", s.infoReplication)
	section("Threads", s.infoThreads)
	section("CPU", s.infoCPU)
	section("Modules", func(func(string, any)) {})
	section("Commandstats", s.infoCommandstats)
	section("Errorstats", s.infoErrorstats)
	section("Latencystats", s.infoLatencystats)
	section("Cluster", func(f func(string, any)) { f("cluster_enabled", boolInt(s.cluster != nil)) })
	section("Keyspace", s.infoKeyspace)
	return b.String()
}

func (s *Server) infoServer(f func(string, any)) {
	f("redis_version", version.RedisVersion)
	// What a Redis built outside a git checkout reports: iocache is not built from Redis's tree.
	f("redis_git_sha1", "00000000")
	f("redis_git_dirty", 0)
	f("iocache_version", version.Version)
	f("redis_mode", "standalone")
	f("os", runtime.GOOS+" "+runtime.GOARCH)
	f("arch_bits", 64)
	f("multiplexing_api", "epoll")
	f("go_version", runtime.Version())
	f("process_id", os.Getpid())
	if s.cfg.Port != 0 || s.cfg.TLSPort == 0 {
		f("tcp_port", s.cfg.Port)
	} else {
		f("tcp_port", s.cfg.TLSPort) // Redis: port, or tls-port when port is 0
	}
	f("server_time_usec", s.nowMs*1000)
	up := int64(s.uptime().Seconds())
	f("uptime_in_seconds", up)
	f("uptime_in_days", up/86400)
	f("hz", s.cfg.HZ)
	f("configured_hz", s.cfg.HZ)
	f("lru_clock", s.lruClock)
	f("executable", os.Args[0])
	f("io_threads_active", s.io.Active())
	f("io_threads", s.plan.IOThreads)
	f("cpus_allowed", cpuset.Format(s.plan.Allowed))
	f("cpus_effective", s.plan.Cores)
	f("server_cpulist", cpuset.Format(s.plan.Server))
	f("bio_cpulist", cpuset.Format(s.plan.Bio))
	f("aof_rewrite_cpulist", cpuset.Format(s.plan.AOFRewrite))
	f("bgsave_cpulist", cpuset.Format(s.plan.BGSave))
	f("cpulist_mode", s.cfg.CPUListMode)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (s *Server) infoClients(f func(string, any)) {
	blocked, pubsub := 0, 0
	for _, c := range s.clients {
		// Clients held by CLIENT PAUSE count, as Redis's BLOCKED_POSTPONE clients do.
		if c.blocked != nil || c.flags&flagPaused != 0 {
			blocked++
		}
		if c.flags&flagPubSub != 0 {
			pubsub++
		}
	}
	f("connected_clients", len(s.clients))
	f("cluster_connections", 0)
	f("maxclients", s.cfg.MaxClients)
	f("client_recent_max_input_buffer", 0)
	f("client_recent_max_output_buffer", 0)
	f("blocked_clients", blocked)
	f("tracking_clients", 0)
	f("pubsub_clients", pubsub)
	f("clients_in_timeout_table", blocked)
}

func humanBytes(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2fG", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.2fM", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.2fK", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%dB", n)
}

// rss reads the process's resident set size.
func rss() int64 {
	b, err := os.ReadFile("/proc/self/statm")
	if err != nil {
		return 0
	}
	var size, res int64
	if _, err := fmt.Sscan(string(b), &size, &res); err != nil {
		return 0
	}
	return res * int64(os.Getpagesize())
}

func (s *Server) infoMemory(f func(string, any)) {
	used := s.usedMemory()
	r := rss()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	f("used_memory", used)
	f("used_memory_human", humanBytes(used))
	f("used_memory_rss", r)
	f("used_memory_rss_human", humanBytes(r))
	s.notePeak(used)
	f("used_memory_peak", s.memPeak)
	f("used_memory_peak_human", humanBytes(s.memPeak))
	f("used_memory_dataset", used-s.memOverhead)
	f("used_memory_overhead", s.memOverhead)
	var frag int64
	for _, db := range s.dbs {
		frag += db.Fragmentation()
	}
	f("keyspace_free_slot_bytes", frag)
	// Redis leaves replica buffers and the AOF buffer out when it compares used_memory with
	// maxmemory, and says how much that is here; iocache's used_memory counts all of it when it
	// evicts, so nothing is left out.
	f("mem_not_counted_for_evict", 0)
	f("mem_clients_slaves", 0)
	f("mem_clients_normal", s.clientMem.Load()) // query and output buffers of all clients
	s.infoScriptMemory(f)
	f("maxmemory", s.cfg.MaxMemory)
	f("maxmemory_human", humanBytes(s.cfg.MaxMemory))
	f("maxmemory_policy", s.cfg.MaxMemoryPolicy)
	f("maxmemory_clients", s.clientMemLimit)
	ratio := 0.0
	if used > 0 {
		ratio = float64(r) / float64(used)
	}
	f("mem_fragmentation_ratio", fmt.Sprintf("%.2f", ratio))
	f("mem_allocator", "go-"+runtime.Version())
	f("go_memory_limit", s.goMemLimit)
	f("go_heap_alloc", ms.HeapAlloc)
	f("go_heap_sys", ms.HeapSys)
	// Free heap the runtime still holds (returned to the OS by its scavenger, or at once after
	// large client buffers are released: see releaseMemory), and what it has returned.
	f("go_heap_free_unreturned", ms.HeapIdle-ms.HeapReleased)
	f("go_heap_released", ms.HeapReleased)
	f("go_gc_cycles", ms.NumGC)
	f("go_gc_pause_total_ns", ms.PauseTotalNs)
	f("lazyfree_pending_objects", 0)
	f("lazyfreed_objects", s.bio.freedCount())
}

// infoScriptMemory prints Redis 7.0's script and function memory lines, in its order. The
// "vm" lines are the compiled code the interpreter holds; the others the script cache's entries
// and bodies, and the libraries' code (counted from what was compiled: see
// scripting.State.CacheStats).
func (s *Server) infoScriptMemory(f func(string, any)) {
	var scripts int
	var evalVM, evalCache int64
	if s.lua != nil {
		scripts, evalVM, evalCache = s.lua.state.CacheStats()
	}
	libs, funcs := s.functions.Len()
	funcCode, funcVM := s.functions.Bytes()
	f("used_memory_lua", evalVM) // Redis 7.0 keeps it as used_memory_vm_eval's old name
	f("used_memory_vm_eval", evalVM)
	f("used_memory_lua_human", humanBytes(evalVM))
	f("used_memory_scripts_eval", evalCache)
	f("number_of_cached_scripts", scripts)
	f("number_of_functions", funcs)
	f("number_of_libraries", libs)
	f("used_memory_vm_functions", funcVM)
	f("used_memory_vm_total", evalVM+funcVM)
	f("used_memory_vm_total_human", humanBytes(evalVM+funcVM))
	f("used_memory_functions", funcCode)
	f("used_memory_scripts", evalCache+funcCode)
	f("used_memory_scripts_human", humanBytes(evalCache+funcCode))
}

func (s *Server) infoStats(f func(string, any)) {
	in, out := s.io.TotalReadsWrites()
	main := s.io.Threads()[0]
	f("total_connections_received", s.stats.connectionsReceived)
	f("total_commands_processed", s.stats.commandsProcessed)
	f("instantaneous_ops_per_sec", s.stats.instantaneousOps())
	f("rejected_connections", s.stats.rejectedConns)
	f("expired_keys", s.stats.expiredKeys)
	f("expired_stale_perc", "0.00")
	f("expire_cycle_max_pause_usec", s.stats.expireCycleMaxNs/1000)
	f("evicted_keys", s.stats.evictedKeys)
	f("eviction_max_pause_usec", s.stats.evictionMaxNs/1000)
	f("evicted_clients", s.stats.evictedClients)
	f("evicted_scripts", s.stats.evictedScripts)
	f("keyspace_hits", s.stats.keyspaceHits)
	f("keyspace_misses", s.stats.keyspaceMisses)
	f("pubsub_channels", len(s.pubsub.channels))
	f("pubsub_patterns", len(s.pubsub.patterns))
	f("pubsubshard_channels", len(s.pubsub.shardChannels))
	f("pubsub_messages_published", s.stats.pubsubMessages)
	f("sync_full", s.stats.syncFull)
	f("sync_partial_ok", s.stats.syncPartialOK)
	f("sync_partial_err", s.stats.syncPartialErr)
	f("latest_fork_usec", 0)
	f("total_forks", 0)
	f("client_output_buffer_limit_disconnections", s.outputLimitKills.Load())
	f("watchdog_stalls", s.watchdog.stalls.Load())
	items := 0
	for _, ids := range s.tracking.table {
		items += len(ids)
	}
	f("tracking_total_keys", len(s.tracking.table))
	f("tracking_total_items", items) // client entries over all keys, as Redis counts them
	f("tracking_total_prefixes", len(s.tracking.bcast))
	f("total_error_replies", s.stats.errorReplies)
	f("unexpected_error_replies", 0)
	f("total_reads_processed", in)
	f("total_writes_processed", out)
	f("io_threaded_reads_processed", in-main.Reads)
	f("io_threaded_writes_processed", out-main.Writes)
	// Redis 7.2's counts of ACL denials, failed AUTH and HELLO AUTH included.
	f("acl_access_denied_auth", s.acl.deniedAuth)
	f("acl_access_denied_cmd", s.acl.deniedCmd)
	f("acl_access_denied_key", s.acl.deniedKey)
	f("acl_access_denied_channel", s.acl.deniedChannel)
}

// infoThreads prints Redis 8's per-thread lines with iocache's additions after them: the CPUs the
// thread is pinned to, its OS thread id, its CPU use over the last second, and the batches it
// exchanged with the main thread.
func (s *Server) infoThreads(f func(string, any)) {
	// io_threads_active counts the I/O threads serving sockets now (0: the main thread serves
	// them all); the activation policy says why.
	f("io_threads_active", s.io.Active())
	f("io_threads_activation", s.cfg.IOThreadsActivation)
	f("io_threads_activation_reason", s.io.ActivationReason())
	for i, t := range s.io.Threads() {
		busy := 0.0
		if i < len(s.cpuTicker.threads) {
			busy = s.cpuTicker.threads[i].busyRatio
		}
		cpus := cpuset.Format(t.CPUs)
		if cpus == "" {
			cpus = cpuset.Format(s.plan.Allowed)
		}
		// clients counts the sockets the thread holds now, those it is handing over included.
		f(fmt.Sprintf("io_thread_%d", i), fmt.Sprintf("clients=%d,reads=%d,writes=%d,cpus=%s,tid=%d,cpu_busy=%.2f,batches=%d,batched_commands=%d,state=%s",
			t.Clients, t.Reads, t.Writes, cpus, t.TID, busy, t.Batches, t.BatchedCommands, t.State))
	}
	bioCPUs := cpuset.Format(s.bio.cpus)
	if bioCPUs == "" {
		bioCPUs = cpuset.Format(s.plan.Allowed)
	}
	f("bio_thread", fmt.Sprintf("cpus=%s,tid=%d", bioCPUs, s.bio.tid))
}

func (s *Server) infoCPU(f func(string, any)) {
	u, sy := processCPU()
	mu, msy := mainThreadCPU()
	f("used_cpu_sys", fmt.Sprintf("%.6f", sy.Seconds()))
	f("used_cpu_user", fmt.Sprintf("%.6f", u.Seconds()))
	f("used_cpu_sys_children", "0.000000")
	f("used_cpu_user_children", "0.000000")
	f("used_cpu_sys_main_thread", fmt.Sprintf("%.6f", msy.Seconds()))
	f("used_cpu_user_main_thread", fmt.Sprintf("%.6f", mu.Seconds()))
}

func (s *Server) infoCommandstats(f func(string, any)) {
	for _, cmd := range s.statCommands() {
		if cmd.calls == 0 && cmd.rejected == 0 && cmd.failed == 0 {
			continue
		}
		usec := cmd.usecNs / 1000
		per := 0.0
		if cmd.calls > 0 {
			per = float64(cmd.usecNs) / 1000 / float64(cmd.calls)
		}
		f("cmdstat_"+cmd.name, fmt.Sprintf("calls=%d,usec=%d,usec_per_call=%.2f,rejected_calls=%d,failed_calls=%d", cmd.calls, usec, per, cmd.rejected, cmd.failed))
	}
}

func (s *Server) infoErrorstats(f func(string, any)) {
	codes := make([]string, 0, len(s.stats.errorCodes))
	for k := range s.stats.errorCodes {
		codes = append(codes, k)
	}
	sort.Strings(codes)
	for _, k := range codes {
		f("errorstat_"+k, fmt.Sprintf("count=%d", s.stats.errorCodes[k]))
	}
}

func (s *Server) infoKeyspace(f func(string, any)) {
	for i, db := range s.dbs {
		if db.Len() == 0 {
			continue
		}
		f(fmt.Sprintf("db%d", i), fmt.Sprintf("keys=%d,expires=%d,avg_ttl=0", db.Len(), db.ExpiresLen()))
	}
}

// infoCommands registers this file's commands (see table.go).
var infoCommands = []commandSpec{
	{name: "info", h: cmdInfo},
}
