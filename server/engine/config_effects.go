package engine

import (
	"math"

	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/keyspace"
)

// The side effects of configuration changes. Each directive declares its effects where the
// config package defines it (config.Effect); here is what each effect does, in the order they
// run. CONFIG SET runs those of the directives it names, once each, after the effects that may
// fail (the thread layout, maxclients, TLS, appendonly: cmd_server.go's configSet) have passed;
// the server runs startEffects once at start. A directive without an effect is read where it is
// used.

// liveEffects are the effects that cannot fail.
var liveEffects = []struct {
	effect config.Effect
	apply  func(*Server)
}{
	{config.EffectClientLimits, (*Server).publishClientLimits},
	{config.EffectDefaultUser, (*Server).syncDefaultUser},
	{config.EffectACLPubsub, func(s *Server) { s.acl.users.SetChannelsDefault(s.cfg.ACLPubsubDefault == "allchannels") }},
	{config.EffectWatchdog, (*Server).applyWatchdogPeriod},
	{config.EffectNotify, (*Server).applyNotifyConfig},
	{config.EffectLatencyMonitor, func(s *Server) { s.latency.thresholdMs = s.cfg.LatencyMonitorThreshold }},
	{config.EffectTrackingTable, func(s *Server) { s.tracking.maxKeys = int(min(s.cfg.TrackingTableMaxKeys, math.MaxInt)) }},
	{config.EffectBacklog, (*Server).resizeBacklog},
	{config.EffectWriteGate, (*Server).updateWriteGate},
	{config.EffectEncodings, (*Server).applyEncodings},
	{config.EffectLogLevel, func(s *Server) {
		if s.logger != nil {
			s.logger.setLevel(s.cfg.LogLevel)
		}
	}},
	{config.EffectAOFHistory, (*Server).deleteHistory},
	{config.EffectIOActivation, func(s *Server) { s.io.SetActivation(s.cfg.IOThreadsActivation) }},
	{config.EffectClusterAnnounce, (*Server).applyClusterAnnounce},
	{config.EffectEvict, func(s *Server) {
		if s.cfg.MaxMemory > 0 {
			s.freeMemoryIfNeeded()
		}
	}},
}

// startEffects are the effects a server applies to its configuration before it serves: the
// state each one derives from the directives starts consistent with them. (The thread layout,
// TLS and the AOF are set up by New and Serve themselves.)
const startEffects = config.EffectClientLimits | config.EffectDefaultUser | config.EffectACLPubsub |
	config.EffectWatchdog | config.EffectNotify | config.EffectLatencyMonitor | config.EffectTrackingTable |
	config.EffectBacklog | config.EffectWriteGate | config.EffectEncodings | config.EffectLogLevel

// applyEffects runs the effects in e that cannot fail, in liveEffects' order.
func (s *Server) applyEffects(e config.Effect) {
	for _, le := range liveEffects {
		if e&le.effect != 0 {
			le.apply(s)
		}
	}
}

// publishClientLimits copies the limits the I/O threads read into atomics.
func (s *Server) publishClientLimits() {
	s.queryBufLimit.Store(s.cfg.ClientQueryBufferLimit)
	s.protoMaxBulkLen.Store(s.cfg.ProtoMaxBulkLen)
	s.outLimits.store(s.cfg)
	s.clientMemLimit = s.cfg.ClientMemoryLimit()
}

// applyEncodings sets the compact encodings' thresholds. One server per process in production:
// they are the process's, as they are Redis's server-wide settings.
func (s *Server) applyEncodings() {
	keyspace.SetLimits(keyspace.Limits{
		HashMaxListpackEntries: s.cfg.HashMaxListpackEntries,
		HashMaxListpackValue:   int(min(s.cfg.HashMaxListpackValue, math.MaxInt32)),
		SetMaxIntsetEntries:    s.cfg.SetMaxIntsetEntries,
		ZSetMaxListpackEntries: s.cfg.ZSetMaxListpackEntries,
		ZSetMaxListpackValue:   int(min(s.cfg.ZSetMaxListpackValue, math.MaxInt32)),
		ListMaxListpackSize:    s.cfg.ListMaxListpackSize,
	})
}
