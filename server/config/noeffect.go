package config

// The directives iocache accepts so that redis.conf files written for Redis 7.0 load, but that
// change nothing here, each with the reason. Every one tunes an internal of Redis that iocache
// does not have (an encoding, jemalloc, a replica), or names behaviour iocache always has; none
// of them is a promise a user relies on for safety or durability. A directive that is such a
// promise and cannot be kept (daemonize yes, syslog-enabled yes, oom-score-adj) is refused
// instead, at start and on CONFIG SET. The README lists these;
// TestEveryDirectiveIsHonouredOrListed keeps the lists complete.
var noEffect = map[string]string{
	// Encodings: iocache has one representation per type; OBJECT ENCODING reports Redis's
	// encoding from the element counts (the *-entries directives), not from value sizes.
	"hash-max-listpack-value":  "encoding by value size: OBJECT ENCODING looks at entry counts only",
	"hash-max-ziplist-value":   "encoding by value size: OBJECT ENCODING looks at entry counts only",
	"zset-max-listpack-value":  "encoding by value size: OBJECT ENCODING looks at entry counts only",
	"zset-max-ziplist-value":   "encoding by value size: OBJECT ENCODING looks at entry counts only",
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
	"replica-lazy-flush":         "no replication",
	"repl-diskless-sync":         "no replication",
	"io-threads-do-reads":        "I/O threads always read and parse, as in Redis 8, where this directive has no effect either",
	"latency-tracking":           "per-command latency is always counted (one increment per call, for /metrics too); LATENCY HISTOGRAM and INFO latencystats report it whatever this says",
	"rdb-save-incremental-fsync": "a snapshot is fsynced once, before its rename",
	// Cosmetics and features that do not exist.
	"always-show-logo":      "no ASCII-art logo is printed",
	"set-proc-title":        "the process title is not rewritten",
	"crash-log-enabled":     "a crash prints Go's stack trace to the log",
	"enable-module-command": "no modules: MODULE LOAD is refused either way (with this directive's error while it is no)",
}

// NoEffect says why an accepted directive changes nothing in iocache, or "" when it is honoured.
func NoEffect(name string) string { return noEffect[canonicalName(name)] }
