package engine

import (
	"slices"
	"testing"

	"github.com/iocache/iocache/server/config"
)

// Every directive CONFIG SET may change is decided: it declares the effects a running server
// must apply (config.Effect, run by config_effects.go), or it is read where it is used and listed
// here, or it is one of the directives accepted for parity that change nothing
// (config.NoEffect). A new live directive fails this test until its author says which.
func TestEveryLiveDirectiveIsDecided(t *testing.T) {
	readAtUse := []string{
		// The cron, expiry and eviction read these on each pass.
		"active-expire-effort", "save", "stop-writes-on-bgsave-error", "maxmemory-samples", "maxmemory-eviction-tenacity",
		"lfu-decay-time", "lfu-log-factor", "timeout", "busy-reply-threshold", "benchspace-maxmemory",
		// Persistence: read when a file is written, loaded or rewritten.
		"appendfsync", "aof-load-truncated", "aof-rewrite-incremental-fsync", "aof-timestamp-enabled",
		"aof-use-rdb-preamble", "auto-aof-rewrite-min-size", "auto-aof-rewrite-percentage",
		"no-appendfsync-on-rewrite", "rdbcompression", "shutdown-on-sigint", "shutdown-on-sigterm",
		// Replication: read by the link, the handshake and the write checks.
		"masterauth", "masteruser", "min-replicas-max-lag", "repl-ping-replica-period", "repl-timeout",
		"replica-announce-ip", "replica-announce-port", "replica-announced", "replica-priority",
		"replica-read-only", "replica-serve-stale-data", "start-as-replica", "bind-source-addr",
		// Commands and connections read them as they run or are accepted.
		"acllog-max-len", "slowlog-log-slower-than", "slowlog-max-len", "latency-tracking-info-percentiles",
		"stream-node-max-bytes", "stream-node-max-entries", "tcp-keepalive", "protected-mode", "oom-score-adj",
		// Cluster routing and CLUSTER SLOTS/SHARDS read these on each use.
		"cluster-allow-pubsubshard-when-down", "cluster-allow-reads-when-down", "cluster-preferred-endpoint-type",
		"cluster-require-full-coverage",
	}
	for name, e := range config.DirectiveEffects() {
		listed := slices.Contains(readAtUse, name)
		switch {
		case !config.Live(name):
			if listed {
				t.Errorf("%s is listed as read at use but CONFIG SET cannot change it", name)
			}
		case e != 0 && listed:
			t.Errorf("%s declares effects and is also listed as read at use", name)
		case e == 0 && !listed && config.NoEffect(name) == "":
			t.Errorf("live directive %s has no effect declared, is not listed as read at use and is not one that changes nothing: decide", name)
		}
	}
	// Every effect is some directive's, and each one applies: an effect no directive declares
	// is dead code, and one that is not in liveEffects (or configSet's fallible steps) is lost.
	var declared config.Effect
	for _, e := range config.DirectiveEffects() {
		declared |= e
	}
	if declared != config.AllEffects {
		t.Errorf("effects %b are declared by no directive", config.AllEffects&^declared)
	}
	handled := config.EffectLayout | config.EffectMaxClients | config.EffectTLS | config.EffectAppendOnly
	for _, le := range liveEffects {
		handled |= le.effect
	}
	if handled != config.AllEffects {
		t.Errorf("effects %b are applied nowhere", config.AllEffects&^handled)
	}
}
