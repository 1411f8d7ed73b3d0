package engine

import (
	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/keyspace"
)

// Expiry: keys are deleted when accessed after their time (lazy, in lookupLive) and by an active
// cycle that samples keys with a TTL, as Redis's activeExpireCycle does. Each cycle stops after
// expireCycleBudget so that a million keys expiring at once never stall clients for more than
// about a millisecond; while a backlog remains, cycles run on every main-loop iteration,
// interleaved with client traffic.

const (
	expireSamplesPerLoop  = 20
	expireCycleBudgetNs   = 1_000_000
	expireAcceptableStale = 10 // percent of sampled keys found expired that ends a DB's loop
)

// largeObject is the element count above which deleted collections are released on the bio
// thread, like Redis's LAZYFREE_THRESHOLD.
const largeObject = 64

// deleteKey removes a key and frees a large collection in the background.
func (s *Server) deleteKey(db *keyspace.DB, r keyspace.Ref) {
	obj := db.Delete(r)
	if obj != nil {
		s.freeObject(db, obj)
	}
}

// freeObject releases a collection that left the keyspace (the DB has already accounted for it),
// in the background when it is large, unless a BGSAVE's writer may still be reading it.
func (s *Server) freeObject(db *keyspace.DB, obj any) {
	if objectLen(obj) > largeObject && !s.sharedWithWriter(obj) {
		s.bio.lazyFree(obj)
	}
}

func (s *Server) expireKey(db *keyspace.DB, dbIndex int, r keyspace.Ref, key []byte) {
	k := append([]byte(nil), key...)
	s.deleteKey(db, r)
	s.stats.expiredKeys++
	if s.propagating {
		s.propagateDeletion(dbIndex, k)
	}
	s.wrote(dbIndex, k, nil, config.NotifyExpired, "expired")
}

// activeExpireCycle samples keys with a TTL in every DB and deletes the expired ones, within the
// time budget. It reports whether it stopped for lack of time (a backlog remains).
func (s *Server) activeExpireCycle() bool {
	start := nanotime()
	effort := s.cfg.ActiveExpireEffort - 1
	samples := expireSamplesPerLoop + expireSamplesPerLoop/4*effort
	stale := expireAcceptableStale - effort
	backlog := false
	for i, db := range s.dbs {
		for db.ExpiresLen() > 0 {
			expired, sampled := 0, 0
			for j := 0; j < samples && db.ExpiresLen() > 0; j++ {
				r, _ := db.RandomExpiring()
				sampled++
				if exp, _ := db.ExpireAt(r); exp <= s.nowMs {
					s.expireKey(db, i, r, db.Key(r))
					expired++
				}
			}
			if nanotime()-start > expireCycleBudgetNs {
				backlog = expired*100 > sampled*stale
				s.noteExpirePause(nanotime() - start)
				return backlog
			}
			if expired*100 <= sampled*stale {
				break
			}
		}
	}
	s.noteExpirePause(nanotime() - start)
	return false
}

func (s *Server) noteExpirePause(ns int64) {
	s.noteLatency("expire-cycle", ns)
	if ns > s.stats.expireCycleMaxNs {
		s.stats.expireCycleMaxNs = ns
	}
}
