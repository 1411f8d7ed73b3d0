package engine

import (
	"math"

	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/keyspace"
	"github.com/iocache/iocache/server/rdb"
	"github.com/iocache/iocache/server/resp"
)

// DUMP and RESTORE: one value in Redis's RDB serialization, so payloads move between iocache
// and Redis 7.0 in both directions.

func cmdDump(s *Server, c *client, argv [][]byte) {
	r, ok := s.lookupRead(c, argv[1])
	if !ok {
		c.w.Null()
		return
	}
	c.w.Bulk(rdb.Dump(recordValue(s.dbs[c.db], r), s.rdbOptions()))
}

// recordValue is a record's value as the rdb package takes it.
func recordValue(db *keyspace.DB, r keyspace.Ref) rdb.Value {
	t := db.Type(r)
	if t == keyspace.TypeString {
		return rdb.Value{Type: t, Str: db.Str(r)}
	}
	return rdb.Value{Type: t, Obj: db.Obj(r)}
}

// rdbOptions are the encoding settings of the current configuration.
func (s *Server) rdbOptions() rdb.Options {
	o := rdb.DefaultOptions()
	o.Compression = s.cfg.RDBCompression
	o.Checksum = s.cfg.RDBChecksum
	o.ListMaxListpackSize = s.cfg.ListMaxListpackSize
	o.HashMaxListpackEntries = s.cfg.HashMaxListpackEntries
	o.SetMaxIntsetEntries = s.cfg.SetMaxIntsetEntries
	o.ZSetMaxListpackEntries = s.cfg.ZSetMaxListpackEntries
	o.StreamNodeMaxBytes = int(s.cfg.StreamNodeMaxBytes)
	o.StreamNodeMaxEntries = int(min(s.cfg.StreamNodeMaxEntries, 1<<31-1))
	o.HashMaxListpackValue = int(min(s.cfg.HashMaxListpackValue, math.MaxInt32))
	o.ZSetMaxListpackValue = int(min(s.cfg.ZSetMaxListpackValue, math.MaxInt32))
	return o
}

// restoreOptions are RESTORE's modifiers.
type restoreOptions struct {
	replace, absTTL bool
	idle, freq      int64 // -1 when absent
}

func parseRestoreOptions(s *Server, c *client, args [][]byte) (restoreOptions, bool) {
	o := restoreOptions{idle: -1, freq: -1}
	for i := 0; i < len(args); i++ {
		more := len(args) - i - 1
		switch {
		case resp.EqualFold(args[i], "replace"):
			o.replace = true
		case resp.EqualFold(args[i], "absttl"):
			o.absTTL = true
		case resp.EqualFold(args[i], "idletime") && more >= 1 && o.freq == -1:
			v, ok := s.intArg(c, args[i+1])
			if !ok {
				return o, false
			}
			if v < 0 {
				s.addError(c, "ERR Invalid IDLETIME value, must be >= 0")
				return o, false
			}
			o.idle = v
			i++
		case resp.EqualFold(args[i], "freq") && more >= 1 && o.idle == -1:
			v, ok := s.intArg(c, args[i+1])
			if !ok {
				return o, false
			}
			if v < 0 || v > 255 {
				s.addError(c, "ERR Invalid FREQ value, must be >= 0 and <= 255")
				return o, false
			}
			o.freq = v
			i++
		default:
			s.addError(c, errSyntax)
			return o, false
		}
	}
	return o, true
}

// RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME seconds] [FREQ frequency], checked in
// Redis's order: options, existing key, TTL, payload.
func cmdRestore(s *Server, c *client, argv [][]byte) {
	o, ok := parseRestoreOptions(s, c, argv[4:])
	if !ok {
		return
	}
	key := argv[1]
	db := s.dbs[c.db]
	if _, exists := s.lookupWrite(c, key); exists && !o.replace {
		s.addError(c, "BUSYKEY Target key name already exists.")
		return
	}
	ttl, ok := s.intArg(c, argv[2])
	if !ok {
		return
	}
	if ttl < 0 {
		s.addError(c, "ERR Invalid TTL value, must be >= 0")
		return
	}
	// No string may be longer than this server may hold at all (a few megabytes of LZF can claim a
	// gigabyte), and a large one is decoded straight into the allocation its record adopts.
	v, err := rdb.RestoreWith(argv[3], rdb.RestoreOptions{
		MaxString: uint64(max(s.syncBudget(), 0)), Headroom: keyspace.StringHeadroom(len(key))})
	switch {
	case err == rdb.ErrDumpPayload:
		s.addError(c, "ERR DUMP payload version or checksum are wrong")
		return
	case err == rdb.ErrStringTooLarge:
		s.addError(c, "OOM command not allowed when used memory > 'maxmemory'.")
		return
	case err != nil:
		s.addError(c, "ERR Bad data format")
		return
	}
	deleted := false
	if r, exists := db.Find(key); exists {
		s.deleteKey(db, r)
		deleted = true
	}
	if ttl > 0 && !o.absTTL {
		ttl += s.nowMs
	}
	if ttl > 0 && ttl <= s.nowMs {
		// Already expired: the key is not created, but a replaced one is gone.
		if deleted {
			s.wrote(c.db, key, nil, config.NotifyGeneric, "del")
		}
		c.w.OK()
		return
	}
	s.storeValue(db, key, v, ttl, s.restoredClock(o))
	s.wrote(c.db, key, nil, config.NotifyGeneric, "restore")
	c.w.OK()
}

// storeValue adds a decoded value under key, which must not exist.
func (s *Server) storeValue(db *keyspace.DB, key []byte, v rdb.Value, expireAt int64, clock uint32) {
	storeRecord(db, key, v, expireAt, clock)
}

// storeRecord is storeValue for a database no other thread uses (a replica's full sync loads
// one off the main thread).
func storeRecord(db *keyspace.DB, key []byte, v rdb.Value, expireAt int64, clock uint32) {
	if v.Buf != nil {
		db.AdoptString(key, v.Buf, len(v.Buf)-len(v.Str), expireAt, clock)
		return
	}
	if v.Type == keyspace.TypeString {
		db.SetString(key, v.Str, expireAt, false, clock)
		return
	}
	r := db.SetObject(key, v.Type, v.Obj, clock)
	if expireAt > 0 {
		db.SetExpire(r, expireAt)
	}
}

// restoredClock is a restored key's LRU/LFU value: FREQ under an LFU policy, IDLETIME otherwise
// (Redis's objectSetLRUOrLFU), else that of a new key.
func (s *Server) restoredClock(o restoreOptions) uint32 {
	if s.lfuPolicy() {
		if o.freq >= 0 {
			return s.lfuNow()<<8 | uint32(o.freq)
		}
	} else if o.idle >= 0 {
		idle := o.idle * 1000 / lruResolutionMs
		return uint32((int64(s.lruClock) - idle%(lruClockMax+1) + lruClockMax + 1) % (lruClockMax + 1))
	}
	return s.initialClock()
}

// lfuPolicy reports an LFU maxmemory-policy.
func (s *Server) lfuPolicy() bool {
	p := s.cfg.MaxMemoryPolicy
	return len(p) > 3 && p[len(p)-3:] == "lfu"
}

// dumpCommands registers this file's commands (see table.go).
var dumpCommands = []commandSpec{
	{name: "dump", h: cmdDump},
	{name: "restore", h: cmdRestore},
}
