package engine

import (
	"runtime/metrics"
	"time"
)

// cron runs hz times a second on the main thread, as Redis's serverCron: idle-client timeouts,
// blocked clients whose peer left, maxmemory-clients, the ops/sec sample, memory measurement and
// the active expire cycle.
func (s *Server) cron() {
	hz := s.cfg.HZ
	if hz <= 0 {
		hz = 10
	}
	s.nextCron = s.nowMs + int64(1000/hz)
	if s.cronPaused {
		return
	}
	s.stats.sampleOps(s.nowMs)
	for _, db := range s.dbs {
		db.ShrinkLists()
	}
	s.measureMemory()
	s.clientsCron()
	s.evictClients()
	s.releaseMemory()
	s.cpuTicker.sample(s)
	if s.nowMs >= s.nextConfine {
		// A thread the runtime creates from one that was not yet confined (a race at start, or
		// a future runtime's choice) would run on the server's CPUs: check once a second.
		s.nextConfine = s.nowMs + 1000
		s.bio.confineRuntimeThreads()
		s.followMemoryLimit(cgroupMemoryLimit)
	}
	if s.cfg.MaxMemory > 0 && !s.writesHeld() {
		s.freeMemoryIfNeeded()
	}
	s.persistCron()
	s.aofCron()
	if s.repl.feeding {
		s.replicationCron()
	}
	if s.repl.master != nil {
		s.replicaCron()
	}
}

// expireTick runs the active expire cycle when due; a backlog makes it run again on the next
// loop iteration instead of waiting for the next cron tick.
func (s *Server) expireTick() {
	// A replica's keys expire when its primary's DEL arrives (see replication_replica.go).
	if s.nowMs < s.nextExpire || s.repl.master != nil || s.activeExpireOff {
		return
	}
	if s.activeExpireCycle() {
		s.nextExpire = s.nowMs
	} else {
		s.nextExpire = s.nowMs + int64(1000/max(s.cfg.HZ, 1))
	}
}

var memSamples = []metrics.Sample{{Name: "/gc/heap/live:bytes"}}

// measureMemory reads the live heap at the last collection and records how much of it lies
// beyond the keyspace's own accounting (client buffers, parsed requests, runtime structures), so
// that used_memory, which maxmemory is compared against, follows the process's real memory.
// Garbage is left out: the soft memory limit (memlimit.go) keeps it from growing unbounded.
func (s *Server) measureMemory() {
	if s.benchSpaceSettling() {
		return // a benchmark's memory is not the user's (benchspace.go)
	}
	metrics.Read(memSamples)
	live := int64(memSamples[0].Value.Uint64())
	var accounted int64
	for _, db := range s.dbs {
		accounted += db.UsedMemory() + db.Fragmentation()
	}
	if over := live - accounted; over > 0 {
		s.memOverhead = over
	} else {
		s.memOverhead = 0
	}
	s.notePeak(s.usedMemory())
}

// notePeak keeps the largest used_memory seen, as Redis's cron and INFO do.
func (s *Server) notePeak(used int64) {
	s.memPeak = max(s.memPeak, used)
}

// clientsCron closes idle clients past timeout, applies soft output limits, and drops blocked
// clients whose connection is gone.
func (s *Server) clientsCron() {
	now := s.unixtime
	for _, c := range s.clients {
		if (c.blocked != nil || c.flags&flagPaused != 0) && c.conn.PeerGone.Load() {
			s.killClient(c)
			continue
		}
		if s.cfg.Timeout > 0 && c.flags&(flagPubSub|flagBlocked|flagMonitor) == 0 && !c.mainOwned &&
			now-c.lastInteraction.Load() > int64(s.cfg.Timeout) {
			s.logf(logVerbose, "Closing idle client id=%d addr=%s", c.id, c.addr)
			s.killClient(c)
		}
	}
}

// uptime is the server's uptime.
func (s *Server) uptime() time.Duration { return time.Since(s.startTime) }
