package config

import (
	"errors"
	"strings"
	"testing"
)

// honoured are the directives the server acts on (a test of its own exercises each one). A new
// directive must join this list or noEffect, so none is accepted and silently ignored again.
var honoured = []string{
	"acl-pubsub-default", "aclfile", "acllog-max-len", "active-expire-effort", "aof_rewrite_cpulist", "appendonly", "benchspace-maxmemory", "bgsave_cpulist",
	"bind", "bio_cpulist", "busy-reply-threshold", "client-output-buffer-limit", "client-query-buffer-limit",
	"cpulist-mode", "daemonize", "databases", "dbfilename", "dir", "enable-debug-command",
	"enable-protected-configs", "hash-max-listpack-entries", "hash-max-listpack-value", "hz", "io-threads", "io-threads-activation",
	"lfu-decay-time", "lfu-log-factor", "list-max-listpack-size", "logfile", "loglevel", "maxclients",
	"maxmemory", "maxmemory-clients", "maxmemory-policy", "maxmemory-samples", "metrics-port",
	"notify-keyspace-events", "oom-score-adj", "pidfile", "port", "protected-mode", "proto-max-bulk-len",
	"rdbchecksum", "rdbcompression", "rename-command", "requirepass", "requirepass-file", "save",
	"server_cpulist", "set-max-intset-entries", "slowlog-log-slower-than", "slowlog-max-len",
	"stop-writes-on-bgsave-error", "stream-node-max-bytes", "stream-node-max-entries", "supervised", "syslog-enabled", "tcp-backlog", "tcp-keepalive",
	"timeout", "unixsocket", "unixsocketperm", "user", "watchdog-period", "zset-max-listpack-entries", "zset-max-listpack-value",
	// Replication (server/engine/replication_*_test.go).
	"masterauth", "masteruser", "min-replicas-max-lag", "min-replicas-to-write", "repl-backlog-size",
	"repl-ping-replica-period", "repl-timeout", "replica-priority", "replica-read-only",
	"replica-serve-stale-data", "replicaof", "start-as-replica", "replica-announce-ip", "replica-announce-port", "bind-source-addr",
	// Redis 7.0 parity (server/engine/config_parity_test.go).
	"latency-tracking-info-percentiles", "maxmemory-eviction-tenacity", "shutdown-on-sigint", "shutdown-on-sigterm", "replica-announced", "latency-monitor-threshold", "tracking-table-max-keys",
	// AOF (server/engine/aof_test.go).
	"aof-disable-auto-gc", "aof-load-truncated", "aof-rewrite-incremental-fsync", "aof-timestamp-enabled", "aof-use-rdb-preamble",
	"appenddirname", "appendfilename", "appendfsync", "auto-aof-rewrite-min-size", "auto-aof-rewrite-percentage",
	"no-appendfsync-on-rewrite",
	// TLS (server/engine/tls_test.go).
	"tls-port", "tls-cert-file", "tls-key-file", "tls-key-file-pass", "tls-client-cert-file", "tls-client-key-file",
	"tls-client-key-file-pass", "tls-ca-cert-file", "tls-ca-cert-dir", "tls-auth-clients", "tls-protocols", "tls-ciphers",
	"tls-session-caching", "tls-session-cache-timeout", "tls-replication",
	// Cluster mode (server/engine/cluster_test.go).
	"cluster-enabled", "cluster-config-file", "cluster-announce-ip", "cluster-announce-hostname", "cluster-announce-port",
	"cluster-announce-tls-port", "cluster-preferred-endpoint-type", "cluster-require-full-coverage",
	"cluster-allow-reads-when-down", "cluster-allow-pubsubshard-when-down",
}

func TestEveryDirectiveIsHonouredOrListed(t *testing.T) {
	isHonoured := map[string]bool{}
	for _, n := range honoured {
		isHonoured[n] = true
	}
	for _, n := range Names() {
		switch {
		case isHonoured[n] && NoEffect(n) != "":
			t.Errorf("%s is both honoured and listed as having no effect", n)
		case !isHonoured[n] && NoEffect(n) == "":
			t.Errorf("%s is accepted but neither honoured nor listed in noEffect with a reason", n)
		}
	}
	for n := range noEffect {
		if _, ok := table[n]; !ok {
			t.Errorf("noEffect lists %s, which is not a directive", n)
		}
	}
}

// Settings iocache cannot honour are refused at start, with a reason, never accepted and ignored.
func TestUnhonourableSettingsAreRefused(t *testing.T) {
	for _, line := range []string{"daemonize yes", "syslog-enabled yes", "oom-score-adj yes", "oom-score-adj absolute"} {
		_, err := Load([]string{"--" + strings.Fields(line)[0], strings.Fields(line)[1]}, nil)
		var fe *FileError
		if !errors.As(err, &fe) || !strings.Contains(fe.Message, "not ") {
			t.Errorf("%s: %v, want a refusal that says why", line, err)
		}
		err = New().ReadConfig(strings.NewReader("port 7000\n" + line + "\n"))
		if !errors.As(err, &fe) || fe.Line != 2 {
			t.Errorf("%s in a file: %v", line, err)
		}
	}
	for _, line := range []string{"appendonly yes", "appendonly no", "daemonize no", "syslog-enabled no", "oom-score-adj no", "hash-max-ziplist-entries 7", "lazyfree-lazy-expire yes"} {
		if _, err := Load([]string{"--" + strings.Fields(line)[0], strings.Fields(line)[1]}, nil); err != nil {
			t.Errorf("%s: %v", line, err)
		}
	}
	c := New()
	if err := c.Set("hash-max-ziplist-entries", []string{"7"}, true); err != nil || c.HashMaxListpackEntries != 7 {
		t.Errorf("hash-max-ziplist-entries is not hash-max-listpack-entries: %v %d", err, c.HashMaxListpackEntries)
	}
	if err := c.Set("daemonize", []string{"yes"}, false); err == nil {
		t.Error("daemonize yes accepted")
	}
	for _, name := range []string{"appendfilename", "appenddirname"} {
		if err := New().Set(name, []string{"a/b"}, false); err == nil {
			t.Errorf("%s a/b accepted", name)
		}
	}
}
