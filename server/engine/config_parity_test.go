package engine

import (
	"context"
	"sort"
	"strings"
	"testing"

	"github.com/iocache/iocache/server/config"
)

// CONFIG parity with redis-server 7.0: the same parameter names, the same values, and the same
// replies and error texts for CONFIG SET, compared with the Debian peer itself.

// iocacheOnlyDirectives are listed by iocache and not by redis-server 7.0.
var iocacheOnlyDirectives = map[string]string{
	"benchspace-maxmemory":     "iocache's bench space (BENCHSPACE)",
	"cpulist-mode":             "iocache's reading of the *_cpulist directives",
	"io-threads-activation":    "iocache's policy for when I/O threads serve sockets",
	"metrics-port":             "iocache's Prometheus endpoint",
	"requirepass-file":         "iocache's password from a mounted file",
	"start-as-replica":         "iocache's guard for restarted primaries of replicated instances",
	"set-max-listpack-entries": "Redis 7.2's name, taken so that 7.2 config files load",
	"set-max-listpack-value":   "Redis 7.2's name, taken so that 7.2 config files load",
}

// valuesThatDiffer are the common parameters whose default value is not Redis's, or that the two
// test servers are started with differently.
var valuesThatDiffer = map[string]string{
	"port":                "each test server has its own port",
	"bind":                "startServer and startRedisPeer bind differently",
	"dir":                 "each test server has its own directory",
	"save":                "startRedisPeer turns snapshots off; startServer keeps Redis's default save points",
	"loglevel":            "startServer logs warnings only",
	"io-threads-do-reads": "iocache's I/O threads always read and parse (noeffect.go): it reports yes",
	"maxclients":          "redis-server lowers maxclients to what the file descriptor limit allows",
}

// TestConfigGetListsWhatRedisLists: CONFIG GET * lists exactly the parameters redis-server 7.0.15
// lists (aliases included), and iocache's own besides, with the same values.
func TestConfigGetListsWhatRedisLists(t *testing.T) {
	_, addr := startServer(t, nil)
	redisAddr := startRedisPeer(t)
	ctx := context.Background()
	want, err := redisClient(t, redisAddr, 2).ConfigGet(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	got, err := redisClient(t, addr, 2).ConfigGet(ctx, "*").Result()
	if err != nil {
		t.Fatal(err)
	}
	var missing, extra, differ []string
	for name, v := range want {
		g, ok := got[name]
		switch {
		case !ok:
			missing = append(missing, name)
		case g != v && valuesThatDiffer[name] == "":
			differ = append(differ, name+": redis "+v+", iocache "+g)
		}
	}
	for name := range got {
		if _, ok := want[name]; !ok && iocacheOnlyDirectives[name] == "" {
			extra = append(extra, name)
		}
	}
	sort.Strings(missing)
	sort.Strings(extra)
	sort.Strings(differ)
	if len(missing) > 0 {
		t.Errorf("redis-server lists %d parameters iocache does not: %v", len(missing), missing)
	}
	if len(extra) > 0 {
		t.Errorf("iocache lists %d parameters redis-server does not: %v", len(extra), extra)
	}
	for _, d := range differ {
		t.Errorf("value differs: %s", d)
	}
	for name := range iocacheOnlyDirectives {
		if _, ok := want[name]; ok {
			t.Errorf("%s is listed as iocache's own, but redis-server lists it too", name)
		}
	}
}

// CONFIG SET answers that differ from redis-server 7.0's on purpose, and are therefore not in
// TestConfigSetMatchesRedis:
//   - port and bind are immutable: the listeners are opened once, at start.
//   - io-threads changes live (Redis: immutable): iocache starts and stops I/O threads.
//   - loglevel also takes "nothing", Redis 7.2's level.
//   - maxmemory-samples is at most 64, the eviction pool's sample buffer.
//   - list-max-listpack-size is at least -5, the largest node size Redis defines.
//   - maxclients is at most 2^24.
//   - tls-cluster yes is refused with iocache's reason (no cluster mode).

func configCmd(args ...string) []string { return append([]string{"CONFIG"}, args...) }

// TestConfigSetMatchesRedis: CONFIG SET takes and refuses what Redis takes and refuses, with its
// texts, and CONFIG GET then shows the value in Redis's form. Each type of parameter is covered:
// bool, enum, int with bounds, memory, percent, the multi-argument and special ones, and aliases.
func TestConfigSetMatchesRedis(t *testing.T) {
	_, addr := startServer(t, nil)
	set := func(name, value string) []string { return configCmd("SET", name, value) }
	get := func(name string) []string { return configCmd("GET", name) }
	differential(t, addr, [][]string{
		// bool
		set("activedefrag", "yes"), set("activedefrag", "maybe"), set("activedefrag", "no"),
		set("rdb-del-sync-files", "maybe"), set("replica-ignore-maxmemory", "x"), set("protected-mode", "x"),
		set("crash-memcheck-enabled", "NO"), get("crash-memcheck-enabled"), set("crash-memcheck-enabled", "yes"),
		set("cluster-require-full-coverage", "1"), set("cluster-enabled", "yes"), set("rdbchecksum", "no"),
		// enum
		set("repl-diskless-load", "foo"), set("repl-diskless-load", "SWAPDB"), get("repl-diskless-load"),
		set("repl-diskless-load", "disabled"), set("sanitize-dump-payload", "foo"),
		set("cluster-preferred-endpoint-type", "foo"), set("tls-auth-clients", "foo"),
		// TLS without certificates: Redis's refusal (tls_test.go covers it with them)
		set("tls-port", "6380"), get("tls-port"), set("tls-replication", "yes"), get("tls-replication"),
		set("tls-cert-file", "/nonexistent"), get("tls-cert-file"), set("tls-port", "70000"),
		set("propagation-error-behavior", "foo"), set("syslog-facility", "local1"),
		set("enable-protected-configs", "yes"), set("enable-module-command", "yes"),
		set("maxmemory-policy", "foo"), set("acl-pubsub-default", "foo"),
		// special enums: shutdown-on-sigint/sigterm take several flags
		set("shutdown-on-sigint", "foo"), set("shutdown-on-sigint", "save nosave"),
		set("shutdown-on-sigint", "force now"), get("shutdown-on-sigint"),
		set("shutdown-on-sigint", "default save"), get("shutdown-on-sigint"), set("shutdown-on-sigint", "default"),
		// int with bounds
		set("active-defrag-cycle-min", "0"), set("active-defrag-cycle-max", "100"), set("active-defrag-cycle-min", "x"),
		set("active-defrag-threshold-upper", "1001"), set("maxmemory-eviction-tenacity", "101"),
		set("maxmemory-eviction-tenacity", "20"), get("maxmemory-eviction-tenacity"), set("maxmemory-eviction-tenacity", "10"),
		set("replica-announce-port", "70000"), set("slave-announce-port", "-1"), set("cluster-port", "5"),
		set("cluster-announce-bus-port", "65536"), set("shutdown-timeout", "-1"), set("repl-diskless-sync-delay", "-1"),
		set("socket-mark-id", "1"), set("cluster-node-timeout", "-1"), set("latency-monitor-threshold", "-1"),
		set("tracking-table-max-keys", "-1"), set("repl-backlog-ttl", "x"), set("active-defrag-max-scan-fields", "0"),
		set("lua-time-limit", "-1"), set("lua-time-limit", "6000"), get("busy-reply-threshold"), get("lua-time-limit"),
		set("busy-reply-threshold", "5000"), set("list-max-ziplist-size", "x"),
		set("hz", "0"), get("hz"), set("hz", "100000"), get("hz"), set("hz", "10"),
		set("slowlog-log-slower-than", "-2"), set("slowlog-max-len", "-1"), set("hash-max-listpack-entries", "-1"),
		set("acllog-max-len", "-1"), set("tcp-keepalive", "x"), set("timeout", "-1"), set("repl-timeout", "0"),
		set("active-expire-effort", "11"), set("replica-priority", "-1"), set("min-replicas-to-write", "x"),
		set("min-slaves-max-lag", "-1"), set("lfu-log-factor", "-1"),
		// immutable and protected
		set("databases", "5"), set("unixsocketperm", "7"), set("enable-debug-command", "yes"),
		set("cluster-config-file", "x"), set("syslog-ident", "x"), set("dir", "/nonexistent"), set("dbfilename", "a/b"),
		// memory
		set("active-defrag-ignore-bytes", "0"), set("active-defrag-ignore-bytes", "1zz"),
		set("active-defrag-ignore-bytes", "200mb"), get("active-defrag-ignore-bytes"),
		set("hll-sparse-max-bytes", "-1"), set("cluster-link-sendbuf-limit", "1gb"), get("cluster-link-sendbuf-limit"),
		set("hash-max-ziplist-value", "1k"), get("hash-max-listpack-value"), set("hash-max-listpack-value", "64"),
		set("proto-max-bulk-len", "5"), set("client-query-buffer-limit", "5"), set("stream-node-max-bytes", "-1"),
		set("maxmemory", "-1"), set("maxmemory", "1xb"),
		set("repl-backlog-size", "0"), set("repl-backlog-size", "1"), get("repl-backlog-size"), set("repl-backlog-size", "1mb"),
		// percent
		set("maxmemory-clients", "101%"), set("maxmemory-clients", "x"), set("maxmemory-clients", "5%"),
		get("maxmemory-clients"), set("maxmemory-clients", "0"),
		// save, client-output-buffer-limit, notify-keyspace-events
		set("save", "a b"), set("save", "1"), set("save", "100 10 200"),
		set("client-output-buffer-limit", "foo 1 2 3"), set("client-output-buffer-limit", "normal 1 2"),
		set("client-output-buffer-limit", "normal x 2 3"), set("client-output-buffer-limit", "replica 300mb 70mb 90"),
		get("client-output-buffer-limit"), set("client-output-buffer-limit", "slave 256mb 64mb 60"),
		set("notify-keyspace-events", "Q"), set("notify-keyspace-events", "KEA"), get("notify-keyspace-events"),
		set("notify-keyspace-events", ""),
		// oom-score-adj-values and oom-score-adj
		set("oom-score-adj-values", "1"), set("oom-score-adj-values", "1 2 3000"), set("oom-score-adj-values", "a b c"),
		set("oom-score-adj-values", "-10 20 300"), get("oom-score-adj-values"), set("oom-score-adj-values", "0 200 800"),
		set("oom-score-adj", "foo"),
		// latency-tracking-info-percentiles
		set("latency-tracking-info-percentiles", "50 101"), set("latency-tracking-info-percentiles", "a"),
		set("latency-tracking-info-percentiles", "99.99 50 0.5"), get("latency-tracking-info-percentiles"),
		set("latency-tracking-info-percentiles", ""), get("latency-tracking-info-percentiles"),
		set("latency-tracking-info-percentiles", "50 99 99.9"),
		// strings with validation
		set("proc-title-template", "{foo}"), set("proc-title-template", ""), set("proc-title-template", "{title}"),
		set("proc-title-template", "{title"), set("proc-title-template", "x } {port}"), get("proc-title-template"),
		set("cluster-announce-hostname", "a_b"), set("cluster-announce-hostname", "ok-host.x"),
		get("cluster-announce-hostname"), set("replica-announce-ip", "10.0.0.1"), get("slave-announce-ip"),
		set("replica-announce-ip", ""), set("ignore-warnings", "ARM64-COW-BUG"), get("ignore-warnings"),
		// names: an alias answers under its own name, as asked
		get("slave-read-only"), get("SLAVE-READ-ONLY"), get("repl-ping-slave-period"), get("nosuchparameter"),
		set("nosuchparameter", "1"),
	})
}

// Patterns match aliases too, and each parameter is listed once per name it matched by.
func TestConfigGetPatternsMatchRedis(t *testing.T) {
	_, addr := startServer(t, nil)
	redisAddr := startRedisPeer(t)
	ctx := context.Background()
	for _, pattern := range []string{"*-ziplist-*", "lua-*", "tls-p*", "cluster-slave-*", "slave*", "*max*"} {
		want := redisClient(t, redisAddr, 2).ConfigGet(ctx, pattern).Val()
		got := redisClient(t, addr, 2).ConfigGet(ctx, pattern).Val()
		for name := range want {
			if _, ok := got[name]; !ok {
				t.Errorf("CONFIG GET %s: iocache lacks %s", pattern, name)
			}
		}
		for name := range got {
			if _, ok := want[name]; !ok && iocacheOnlyDirectives[name] == "" {
				t.Errorf("CONFIG GET %s: iocache adds %s", pattern, name)
			}
		}
	}
}

// Settings that would turn on what iocache does not have are refused, on CONFIG SET and at start,
// with a reason; Redis's own texts where it refuses the same (activedefrag yes).
func TestConfigRefusesFeaturesIocacheLacks(t *testing.T) {
	_, addr := startServer(t, nil)
	c := dialPeer(t, addr)
	for _, kv := range [][2]string{
		{"tls-cluster", "yes"},
		{"propagation-error-behavior", "panic"}, {"propagation-error-behavior", "panic-on-replicas"},
		{"replica-ignore-maxmemory", "no"},
	} {
		got := c.do("CONFIG", "SET", kv[0], kv[1])
		if !strings.HasPrefix(got, "-ERR CONFIG SET failed (possibly related to argument '"+kv[0]+"') - ") || !strings.Contains(got, "not supported") {
			t.Errorf("CONFIG SET %s %s: %q", kv[0], kv[1], got)
		}
	}
	if got := c.do("CONFIG", "GET", "tls-cluster"); !strings.Contains(got, "\r\n$2\r\nno\r\n") {
		t.Errorf("a refused tls-cluster changed the value: %q", got)
	}
	for _, line := range []string{"tls-cluster yes", "socket-mark-id 1", "activedefrag yes",
		"enable-protected-configs local"} {
		f := strings.Fields(line)
		if _, err := config.Load([]string{"--" + f[0], f[1]}, nil); err == nil {
			t.Errorf("--%s is accepted at start", line)
		}
	}
}
