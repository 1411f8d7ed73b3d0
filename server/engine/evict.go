package engine

import (
	"math"
	"math/rand/v2"

	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/keyspace"
)

// Eviction under maxmemory, with Redis's approximated algorithms: each pass samples
// maxmemory-samples keys per DB into a pool of the best candidates (highest idle time, lowest
// LFU counter, nearest TTL) and evicts the best one, until memory is under the limit.

const evictionPoolSize = 16

// evictionBudgetNs bounds one eviction pass as Redis's evictionTimeLimitUs does with
// maxmemory-eviction-tenacity: 50µs per step up to 10 (500µs, the default), then 15% more per
// step, and no bound at 100. A backlog continues on the next main-loop iteration.
func (s *Server) evictionBudgetNs() int64 {
	tenacity := s.cfg.MaxMemoryEvictionTenacity
	switch {
	case tenacity <= 10:
		return 50_000 * int64(tenacity)
	case tenacity < 100:
		return int64(500_000 * math.Pow(1.15, float64(tenacity-10)))
	}
	return math.MaxInt64
}

type evictionCandidate struct {
	score uint64 // higher evicts first
	dbIdx int
	key   string
}

// freeMemoryIfNeeded evicts keys until used memory is at most maxmemory. It returns false when
// that is impossible (noeviction, or nothing left to evict under a volatile policy).
func (s *Server) freeMemoryIfNeeded() bool {
	s.evictionBacklog = false
	// A replica holds what its primary holds: it evicts nothing itself (Redis's default
	// replica-ignore-maxmemory yes), the primary's evictions arrive as DELs.
	if s.cfg.MaxMemory <= 0 || s.repl.master != nil || s.usedMemory() <= s.cfg.MaxMemory {
		return true
	}
	policy := s.cfg.MaxMemoryPolicy
	if policy == "noeviction" {
		return false
	}
	start, budget := nanotime(), s.evictionBudgetNs()
	s.cmdStart = 0 // eviction is not the next command's time
	defer func() {
		d := nanotime() - start
		if d > s.stats.evictionMaxNs {
			s.stats.evictionMaxNs = d
		}
		s.noteLatency("eviction-cycle", d)
	}()
	volatile := policy[:8] == "volatile"
	var pool []evictionCandidate
	for s.usedMemory() > s.cfg.MaxMemory {
		victimDB, victimKey := -1, ""
		switch policy {
		case "allkeys-random", "volatile-random":
			for i, db := range s.dbs {
				var r keyspace.Ref
				var ok bool
				if volatile {
					r, ok = db.RandomExpiring()
				} else {
					r, ok = db.RandomKey()
				}
				if ok {
					victimDB, victimKey = i, string(db.Key(r))
					break
				}
			}
		default:
			pool = s.fillEvictionPool(pool, policy, volatile)
			for len(pool) > 0 {
				best := pool[len(pool)-1]
				pool = pool[:len(pool)-1]
				if _, ok := s.dbs[best.dbIdx].Find([]byte(best.key)); ok {
					victimDB, victimKey = best.dbIdx, best.key
					break
				}
			}
		}
		if victimDB < 0 {
			return false
		}
		db := s.dbs[victimDB]
		r, ok := db.Find([]byte(victimKey))
		if !ok {
			continue
		}
		s.deleteKey(db, r)
		s.stats.evictedKeys++
		if s.propagating {
			s.propagateDeletion(victimDB, []byte(victimKey))
		}
		s.wrote(victimDB, []byte(victimKey), nil, config.NotifyEvicted, "evicted")
		if nanotime()-start > budget {
			// A large deficit (maxmemory lowered by CONFIG SET, a burst of big writes) is worked
			// off over several commands and main-loop iterations rather than in one long stall;
			// the command goes ahead, as in Redis.
			s.evictionBacklog = true
			return true
		}
	}
	return true
}

// fillEvictionPool samples keys from every DB and keeps the evictionPoolSize best, sorted so the
// best candidate is last.
func (s *Server) fillEvictionPool(pool []evictionCandidate, policy string, volatile bool) []evictionCandidate {
	for i, db := range s.dbs {
		n := db.Len()
		if volatile {
			n = db.ExpiresLen()
		}
		if n == 0 {
			continue
		}
		for j := 0; j < s.cfg.MaxMemorySamples; j++ {
			var r keyspace.Ref
			if volatile {
				r, _ = db.RandomExpiring()
			} else {
				r, _ = db.RandomKey()
			}
			var score uint64
			switch policy {
			case "allkeys-lru", "volatile-lru":
				score = uint64(s.idleMs(db.LRU(r)))
			case "allkeys-lfu", "volatile-lfu":
				score = 255 - uint64(s.lfuDecrAndReturn(db.LRU(r)))
			case "volatile-ttl":
				exp, _ := db.ExpireAt(r)
				score = math.MaxUint64 - uint64(exp)
			}
			pool = insertCandidate(pool, evictionCandidate{score: score, dbIdx: i, key: string(db.Key(r))})
		}
	}
	return pool
}

func insertCandidate(pool []evictionCandidate, c evictionCandidate) []evictionCandidate {
	for _, p := range pool {
		if p.dbIdx == c.dbIdx && p.key == c.key {
			return pool
		}
	}
	i := 0
	for i < len(pool) && pool[i].score < c.score {
		i++
	}
	if len(pool) >= evictionPoolSize {
		if i == 0 {
			return pool
		}
		copy(pool, pool[1:i])
		pool[i-1] = c
		return pool
	}
	pool = append(pool, evictionCandidate{})
	copy(pool[i+1:], pool[i:])
	pool[i] = c
	return pool
}

// idleMs is how long ago (ms) a key with LRU clock lru was last accessed.
func (s *Server) idleMs(lru uint32) int64 {
	now := s.lruClock
	if now >= lru {
		return int64(now-lru) * lruResolutionMs
	}
	return int64(now+(lruClockMax-lru)) * lruResolutionMs
}

// LFU: the 24 bits hold 16 bits of minutes since epoch and an 8-bit logarithmic counter, as in
// Redis.
const lfuInitVal = 5

func (s *Server) lfuNow() uint32 { return uint32(s.unixtime/60) & 0xffff }

func (s *Server) lfuDecrAndReturn(v uint32) uint32 {
	ldt := v >> 8
	counter := v & 0xff
	now := s.lfuNow()
	var elapsed uint32
	if now >= ldt {
		elapsed = now - ldt
	} else {
		elapsed = 65535 - ldt + now
	}
	if s.cfg.LFUDecayTime > 0 {
		periods := elapsed / uint32(s.cfg.LFUDecayTime)
		if periods > counter {
			return 0
		}
		return counter - periods
	}
	return counter
}

func (s *Server) lfuLogIncr(counter uint32) uint32 {
	if counter == 255 {
		return 255
	}
	baseval := float64(counter) - lfuInitVal
	if baseval < 0 {
		baseval = 0
	}
	p := 1.0 / (baseval*float64(s.cfg.LFULogFactor) + 1)
	if rand.Float64() < p {
		counter++
	}
	return counter
}

// touch updates a key's LRU clock or LFU counter on access.
func (s *Server) touch(db *keyspace.DB, r keyspace.Ref) {
	p := s.cfg.MaxMemoryPolicy
	if len(p) > 3 && p[len(p)-3:] == "lfu" {
		counter := s.lfuDecrAndReturn(db.LRU(r))
		counter = s.lfuLogIncr(counter)
		db.Touch(r, s.lfuNow()<<8|counter)
		return
	}
	db.Touch(r, s.lruClock)
}

// initialClock is the LRU/LFU value of a new key.
func (s *Server) initialClock() uint32 {
	p := s.cfg.MaxMemoryPolicy
	if len(p) > 3 && p[len(p)-3:] == "lfu" {
		return s.lfuNow()<<8 | lfuInitVal
	}
	return s.lruClock
}

// settleMemory brings every DB's accounting up to date with the collections the last command
// wrote (keyspace/accounting.go).
func (s *Server) settleMemory() { s.owed.Settle() }

// newDB is an empty DB that lists itself in the server's Owed when it has something to settle
// (every DB the main thread uses must: settleMemory settles only those listed).
func (s *Server) newDB() *keyspace.DB {
	db := keyspace.NewDB(s.seed)
	db.ShareOwed(&s.owed)
	if s.cluster != nil {
		db.IndexSlots() // CLUSTER COUNTKEYSINSLOT and GETKEYSINSLOT (cluster.go)
	}
	return db
}

// usedMemory is what maxmemory is compared against: the keyspace's accounted bytes plus what the
// process holds beyond them (client buffers, allocator slack), as last measured by cron.
func (s *Server) usedMemory() int64 {
	var n int64
	for _, db := range s.dbs {
		n += db.UsedMemory()
	}
	return n + s.memOverhead
}
