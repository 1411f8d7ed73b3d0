package config

// What a running server must do when a directive changes, beyond storing its value. Each
// directive that needs more than that declares its effect where it is defined (live(...) in
// the directive tables); the engine keeps one function per effect and runs those of the
// directives a CONFIG SET names, once each, in its own fixed order. A directive without an effect
// is read where it is used (hz by the cron, slowlog-max-len by SLOWLOG, ...).

// Effect is a set of side effects of changing directives.
type Effect uint32

const (
	// EffectLayout re-plans the thread layout: I/O threads and cpulists (may fail).
	EffectLayout Effect = 1 << iota
	// EffectMaxClients checks that more clients fit the descriptor limit (may fail).
	EffectMaxClients
	// EffectTLS rebuilds the TLS material from its files and follows tls-port (may fail). A
	// tls-* directive named with its current value reloads its files too: that is how a
	// certificate rotated in place takes effect, as in Redis.
	EffectTLS
	// EffectAppendOnly starts or stops the AOF (starting may fail).
	EffectAppendOnly
	// EffectAOFHistory deletes AOF history files once aof-disable-auto-gc allows it.
	EffectAOFHistory
	// EffectIOActivation switches how I/O threads are activated.
	EffectIOActivation
	// EffectClientLimits publishes the limits the I/O threads read (query buffer, bulk
	// length, output buffers, the clients' memory) to them.
	EffectClientLimits
	// EffectDefaultUser gives the default user requirepass's password.
	EffectDefaultUser
	// EffectACLPubsub changes the channels new users get.
	EffectACLPubsub
	// EffectWatchdog re-arms the software watchdog (its period depends on hz).
	EffectWatchdog
	// EffectNotify switches keyspace notifications.
	EffectNotify
	// EffectLatencyMonitor sets the latency monitor's threshold.
	EffectLatencyMonitor
	// EffectTrackingTable bounds client-side caching's table of keys.
	EffectTrackingTable
	// EffectBacklog resizes the replication backlog, keeping what fits.
	EffectBacklog
	// EffectWriteGate recomputes whether replication may refuse writes.
	EffectWriteGate
	// EffectEncodings sets the compact encodings' thresholds.
	EffectEncodings
	// EffectLogLevel sets the log's verbosity.
	EffectLogLevel
	// EffectEvict makes room at once under a lower maxmemory.
	EffectEvict
	// EffectClusterAnnounce sets the address a cluster node announces for itself (until the
	// operator's next map, which names it).
	EffectClusterAnnounce

	// AllEffects is every effect: what a server does once at start.
	AllEffects = EffectClusterAnnounce<<1 - 1
)

// live declares the effects of changing d on a running server.
func live(e Effect, d directive) directive {
	d.effect |= e
	return d
}

// EffectsOf is the union of the effects of the directives named (any spelling).
func EffectsOf(names ...string) Effect {
	var e Effect
	for _, n := range names {
		if d, ok := table[canonicalName(n)]; ok {
			e |= d.effect
		}
	}
	return e
}

// DirectiveEffects is the effect each directive declares, by canonical name, for tests.
func DirectiveEffects() map[string]Effect {
	out := map[string]Effect{}
	for name, d := range table {
		if name == d.name {
			out[name] = d.effect
		}
	}
	return out
}
