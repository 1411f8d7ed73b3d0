package config

// The directives iocache accepts so that redis.conf files written for Redis 7.0 load, but that
// change nothing here, each with the reason. Every one tunes an internal of Redis that iocache
// does not have (an encoding, jemalloc, a replica), or names behaviour iocache always has; none
// of them is a promise a user relies on for safety or durability. A directive that is such a
// promise and cannot be kept (daemonize yes, syslog-enabled yes, oom-score-adj) is refused
// instead, at start and on CONFIG SET. The README lists these;
// TestEveryDirectiveIsHonouredOrListed keeps the lists complete.
var noEffect = map[string]string{
	// Encodings: iocache has Redis 7.0's (keyspace.Limits), not 7.2's listpack sets.
	"set-max-listpack-entries": "Redis 7.2's set listpack encoding, not in 7.0",
	"set-max-listpack-value":   "Redis 7.2's set listpack encoding, not in 7.0",
	"list-compress-depth":      "quicklist node compression: lists are not compressed",
	"activerehashing":          "incremental rehashing of Redis's dict: the keyspace tables grow differently",
	"jemalloc-bg-thread":       "jemalloc: iocache's memory is Go's",
	"disable-thp":              "transparent huge pages matter to fork's copy-on-write; iocache does not fork",
	"dynamic-hz":               "the cron runs at hz; per-client work is bounded per call instead",
	// Freeing: large values leave the keyspace at once and are released on the bio thread.
	"lazyfree-lazy-eviction":     "large values are always released on the bio thread",
	"lazyfree-lazy-expire":       "large values are always released on the bio thread",
	"lazyfree-lazy-server-del":   "large values are always released on the bio thread",
	"lazyfree-lazy-user-del":     "large values are always released on the bio thread",
	"lazyfree-lazy-user-flush":   "large values are always released on the bio thread",
	"replica-lazy-flush":         "a full sync swaps in fresh databases; the old ones are released by Go's collector",
	"repl-diskless-sync":         "a primary always streams a full sync's snapshot straight to the socket",
	"io-threads-do-reads":        "I/O threads always read and parse, as in Redis 8, where this directive has no effect either",
	"latency-tracking":           "per-command latency is always counted (one increment per call, for /metrics too); LATENCY HISTOGRAM and INFO latencystats report it whatever this says",
	"rdb-save-incremental-fsync": "a snapshot is fsynced once, before its rename",
	// Cosmetics and features that do not exist.
	"always-show-logo":       "no ASCII-art logo is printed",
	"set-proc-title":         "the process title is not rewritten",
	"proc-title-template":    "the process title is not rewritten",
	"crash-log-enabled":      "a crash prints Go's stack trace to the log",
	"crash-memcheck-enabled": "a crash prints Go's stack trace to the log; no memory test is run",
	"enable-module-command":  "no modules: MODULE LOAD is refused either way (with this directive's error while it is no)",
	"ignore-warnings":        "Redis's warnings about the kernel (ARM64-COW-BUG) concern fork; iocache does not fork",
	"syslog-facility":        "syslog-enabled yes is refused",
	"syslog-ident":           "syslog-enabled yes is refused",
	"oom-score-adj-values":   "oom-score-adj other than no is refused; the values are checked and reported only",
	"hll-sparse-max-bytes":   "HyperLogLogs turn dense past 3000 bytes, Redis's default: a memory/CPU trade, not a limit",
	// Active defragmentation needs Redis's jemalloc: activedefrag yes is refused, with Redis's
	// own error for a build without it, so its tuning describes a defragmenter that is off.
	"activedefrag":                  "activedefrag yes is refused",
	"active-defrag-cycle-min":       "activedefrag yes is refused",
	"active-defrag-cycle-max":       "activedefrag yes is refused",
	"active-defrag-threshold-lower": "activedefrag yes is refused",
	"active-defrag-threshold-upper": "activedefrag yes is refused",
	"active-defrag-ignore-bytes":    "activedefrag yes is refused",
	"active-defrag-max-scan-fields": "activedefrag yes is refused",
	// Cluster: there is no cluster bus; the operator pushes the whole map to every node
	// (CLUSTERMAP SET), detects failures and promotes replicas, so what tunes the bus, its
	// failure detection and its elections has nothing to tune.
	"cluster-port":                    "there is no cluster bus: the operator pushes the slot map (CLUSTERMAP SET)",
	"cluster-node-timeout":            "failure detection is the operator's (Kubernetes probes), not a bus timeout",
	"cluster-announce-bus-port":       "there is no cluster bus: the operator pushes the slot map (CLUSTERMAP SET)",
	"cluster-replica-no-failover":     "failover is the operator's: it promotes a replica and pushes the new map",
	"cluster-replica-validity-factor": "failover is the operator's: it promotes a replica and pushes the new map",
	"cluster-migration-barrier":       "replicas are placed by the operator (spec.replicas per shard); none migrate by themselves",
	"cluster-allow-replica-migration": "replicas are placed by the operator (spec.replicas per shard); none migrate by themselves",
	"cluster-link-sendbuf-limit":      "there is no cluster bus: the operator pushes the slot map (CLUSTERMAP SET)",
	// TLS: what Go's crypto/tls, which serves TLS here, has no knob for.
	"tls-cluster":               "there is no cluster bus to encrypt: the operator pushes the slot map over the client port",
	"tls-prefer-server-ciphers": "Go's crypto/tls orders cipher suites itself (AES-GCM first where the CPU has AES instructions) and takes no server preference",
	"tls-session-cache-size":    "Go's crypto/tls resumes sessions with stateless tickets, so there is no server-side cache to size (tls-session-caching no turns tickets off; tls-session-cache-timeout bounds their age)",
	"tls-ciphersuites":          "Go's crypto/tls always enables its three TLS 1.3 suites; the names are checked as OpenSSL would, then unused",
	"tls-dh-params-file":        "Go's crypto/tls has no finite-field Diffie-Hellman (key exchange is ECDHE, X25519 and its ML-KEM hybrid): the file must be readable, as in Redis, then is unused",
	// Replication internals: how Redis moves a full sync, which iocache does one way.
	"repl-diskless-load":               "a replica always loads a full sync from the socket into fresh databases and swaps them in, serving the old data meanwhile (as swapdb)",
	"repl-diskless-sync-delay":         "a full sync starts at once, or when the running snapshot ends, for every replica waiting",
	"repl-diskless-sync-max-replicas":  "a full sync starts at once, or when the running snapshot ends, for every replica waiting",
	"repl-disable-tcp-nodelay":         "replication links always have TCP_NODELAY, as client connections do",
	"repl-backlog-ttl":                 "the backlog is kept while the server runs: memory bounded by repl-backlog-size",
	"rdb-del-sync-files":               "a full sync never writes an RDB file, on either side",
	"replica-ignore-maxmemory":         "a replica never evicts (yes); no is refused",
	"propagation-error-behavior":       "a replica ignores errors of replicated commands (ignore); the panic values are refused",
	"replica-ignore-disk-write-errors": "a replica keeps applying its primary's stream while its AOF cannot be written, as Redis does with yes (Redis's default no stops the replica with a panic); no changes nothing",
	"shutdown-timeout":                 "a shutdown does not wait for replicas to catch up, as with shutdown-timeout 0",
	"sanitize-dump-payload":            "RESTORE and full syncs always decode a payload completely before using it, as with yes",
	"socket-mark-id":                   "values other than 0 are refused",
}

// NoEffect says why an accepted directive changes nothing in iocache, or "" when it is honoured.
func NoEffect(name string) string {
	if d, ok := table[canonicalName(name)]; ok {
		return noEffect[d.name]
	}
	return ""
}
