package engine

import (
	"math"

	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/glob"
	"github.com/iocache/iocache/server/keyspace"
	"github.com/iocache/iocache/server/resp"
)

func delGeneric(s *Server, c *client, argv [][]byte) {
	db := s.dbs[c.db]
	n := 0
	for _, k := range argv[1:] {
		if r, ok := s.lookupWrite(c, k); ok {
			s.deleteKey(db, r)
			s.wrote(c.db, k, nil, config.NotifyGeneric, "del")
			n++
		}
	}
	c.w.Int(int64(n))
}

// DEL and UNLINK behave the same: collections above largeObject elements are always released on
// the bio thread, so neither blocks the main thread on a big value.
func cmdDel(s *Server, c *client, argv [][]byte)    { delGeneric(s, c, argv) }
func cmdUnlink(s *Server, c *client, argv [][]byte) { delGeneric(s, c, argv) }

func cmdExists(s *Server, c *client, argv [][]byte) {
	n := 0
	for _, k := range argv[1:] {
		if _, ok := s.lookupReadNoTouch(c, k); ok {
			n++
		}
	}
	c.w.Int(int64(n))
}

func cmdType(s *Server, c *client, argv [][]byte) {
	r, ok := s.lookupReadNoTouch(c, argv[1])
	if !ok {
		c.w.Simple("none")
		return
	}
	c.w.Simple(s.dbs[c.db].Type(r).Name())
}

// copyValue stores key's value (and TTL) under dstKey in dst, replacing what is there. With
// move, the source key is removed and its collection moves instead of being copied.
func (s *Server) copyValue(src *keyspace.DB, r keyspace.Ref, dst *keyspace.DB, dstDBIndex int, dstKey []byte, move bool) {
	exp, hasExp := src.ExpireAt(r)
	if !hasExp {
		exp = 0
	}
	if old, ok := dst.Find(dstKey); ok {
		s.deleteKey(dst, old)
	}
	typ := src.Type(r)
	if typ == keyspace.TypeString {
		val := append([]byte(nil), src.Str(r)...)
		if move {
			src.Delete(r)
		}
		dst.SetString(dstKey, val, exp, false, s.initialClock())
	} else {
		var obj any
		if move {
			obj = src.Detach(r)
		} else {
			obj = cloneObject(src.Obj(r))
		}
		nr := dst.SetObject(dstKey, typ, obj, s.initialClock())
		if exp > 0 {
			dst.SetExpire(nr, exp)
		}
	}
	s.modified(dstDBIndex, dstKey)
}

func cloneObject(obj any) any {
	switch o := obj.(type) {
	case *keyspace.List:
		return o.Clone()
	case *keyspace.Hash:
		return o.Clone()
	case *keyspace.Set:
		return o.Clone()
	case *keyspace.ZSet:
		return o.Clone()
	case *keyspace.Stream:
		return o.Clone()
	}
	return obj
}

func renameGeneric(s *Server, c *client, argv [][]byte, nx bool) {
	db := s.dbs[c.db]
	if _, ok := s.lookupWrite(c, argv[1]); !ok {
		s.addError(c, errNoKey)
		return
	}
	if string(argv[1]) == string(argv[2]) {
		if nx {
			c.w.Int(0)
		} else {
			c.w.OK()
		}
		return
	}
	if _, exists := s.lookupWrite(c, argv[2]); exists && nx {
		c.w.Int(0)
		return
	}
	// Looked up again: the destination's lookup may have expired a key and moved records.
	r, _ := db.Find(argv[1])
	src := append([]byte(nil), argv[1]...)
	s.copyValue(db, r, db, c.db, argv[2], true)
	s.wrote(c.db, src, nil, config.NotifyGeneric, "rename_from")
	s.notify(config.NotifyGeneric, "rename_to", argv[2], c.db)
	if nx {
		c.w.Int(1)
	} else {
		c.w.OK()
	}
}

func cmdRename(s *Server, c *client, argv [][]byte)   { renameGeneric(s, c, argv, false) }
func cmdRenameNX(s *Server, c *client, argv [][]byte) { renameGeneric(s, c, argv, true) }

// expireGeneric implements EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT with NX, XX, GT, LT.
func expireGeneric(s *Server, c *client, argv [][]byte, unitMs int64, absolute bool) {
	name := string(argv[0])
	v, ok := parseInt(argv[2])
	if !ok {
		s.addError(c, errNotInt)
		return
	}
	var nx, xx, gt, lt bool
	for _, a := range argv[3:] {
		switch {
		case resp.EqualFold(a, "nx"):
			nx = true
		case resp.EqualFold(a, "xx"):
			xx = true
		case resp.EqualFold(a, "gt"):
			gt = true
		case resp.EqualFold(a, "lt"):
			lt = true
		default:
			s.addError(c, "ERR Unsupported option "+string(a))
			return
		}
	}
	if nx && (xx || gt || lt) {
		s.addError(c, "ERR NX and XX, GT or LT options at the same time are not compatible")
		return
	}
	if gt && lt {
		s.addError(c, "ERR GT and LT options at the same time are not compatible")
		return
	}
	if v > math.MaxInt64/unitMs || v < math.MinInt64/unitMs {
		s.addError(c, "ERR invalid expire time in '"+lowerASCII(name)+"' command")
		return
	}
	when := v * unitMs
	if !absolute {
		if (when > 0 && s.nowMs > math.MaxInt64-when) || (when < 0 && s.nowMs < math.MinInt64-when) {
			s.addError(c, "ERR invalid expire time in '"+lowerASCII(name)+"' command")
			return
		}
		when += s.nowMs
	}
	db := s.dbs[c.db]
	r, exists := s.lookupWrite(c, argv[1])
	if !exists {
		c.w.Int(0)
		return
	}
	cur, has := db.ExpireAt(r)
	switch {
	case nx && has, xx && !has:
		c.w.Int(0)
		return
	case gt && (!has || when <= cur):
		// No TTL counts as infinite: GT can never beat it.
		c.w.Int(0)
		return
	case lt && has && when >= cur:
		c.w.Int(0)
		return
	}
	if when <= s.nowMs {
		s.deleteKey(db, r)
		s.wrote(c.db, argv[1], nil, config.NotifyGeneric, "del")
		c.w.Int(1)
		return
	}
	db.SetExpire(r, when)
	s.wrote(c.db, argv[1], nil, config.NotifyGeneric, "expire")
	c.w.Int(1)
}

func lowerASCII(s string) string {
	b := []byte(s)
	for i, ch := range b {
		if ch >= 'A' && ch <= 'Z' {
			b[i] = ch + 'a' - 'A'
		}
	}
	return string(b)
}

func cmdExpire(s *Server, c *client, argv [][]byte)    { expireGeneric(s, c, argv, 1000, false) }
func cmdPExpire(s *Server, c *client, argv [][]byte)   { expireGeneric(s, c, argv, 1, false) }
func cmdExpireAt(s *Server, c *client, argv [][]byte)  { expireGeneric(s, c, argv, 1000, true) }
func cmdPExpireAt(s *Server, c *client, argv [][]byte) { expireGeneric(s, c, argv, 1, true) }

// ttlGeneric replies -2 for a missing key, -1 without TTL, else the remaining time (or, with
// absolute, the expiry time).
func ttlGeneric(s *Server, c *client, key []byte, unitMs int64, absolute bool) {
	r, ok := s.lookupReadNoTouch(c, key)
	if !ok {
		c.w.Int(-2)
		return
	}
	exp, has := s.dbs[c.db].ExpireAt(r)
	if !has {
		c.w.Int(-1)
		return
	}
	if absolute {
		c.w.Int(exp / unitMs)
		return
	}
	left := exp - s.nowMs
	if left < 0 {
		left = 0
	}
	c.w.Int((left + unitMs/2) / unitMs)
}

func cmdTTL(s *Server, c *client, argv [][]byte)         { ttlGeneric(s, c, argv[1], 1000, false) }
func cmdPTTL(s *Server, c *client, argv [][]byte)        { ttlGeneric(s, c, argv[1], 1, false) }
func cmdExpireTime(s *Server, c *client, argv [][]byte)  { ttlGeneric(s, c, argv[1], 1000, true) }
func cmdPExpireTime(s *Server, c *client, argv [][]byte) { ttlGeneric(s, c, argv[1], 1, true) }

func cmdPersist(s *Server, c *client, argv [][]byte) {
	db := s.dbs[c.db]
	r, ok := s.lookupWrite(c, argv[1])
	if !ok {
		c.w.Int(0)
		return
	}
	if _, has := db.ExpireAt(r); !has {
		c.w.Int(0)
		return
	}
	db.Persist(r)
	s.wrote(c.db, argv[1], nil, config.NotifyGeneric, "persist")
	c.w.Int(1)
}

func cmdKeys(s *Server, c *client, argv [][]byte) {
	db := s.dbs[c.db]
	pattern := argv[1]
	all := len(pattern) == 1 && pattern[0] == '*'
	var keys [][]byte
	db.Each(func(r keyspace.Ref) bool {
		if exp, has := db.ExpireAt(r); has && exp <= s.nowMs {
			return true
		}
		k := db.Key(r)
		if all || glob.Match(pattern, k, false) {
			keys = append(keys, k)
		}
		return true
	})
	c.w.Array(len(keys))
	for _, k := range keys {
		c.w.Bulk(k)
	}
}

// scanArgs reads SCAN-family options: MATCH, COUNT, TYPE (TYPE only for SCAN).
type scanArgs struct {
	cursor  uint64
	match   []byte
	count   int
	typ     string
	noValue bool
}

func (s *Server) parseScan(c *client, argv [][]byte, cursorAt int, allowType bool) (scanArgs, bool) {
	a := scanArgs{count: 10}
	cur, ok := parseUint(argv[cursorAt])
	if !ok {
		s.addError(c, "ERR invalid cursor")
		return a, false
	}
	a.cursor = cur
	for i := cursorAt + 1; i < len(argv); i++ {
		more := i+1 < len(argv)
		switch {
		case resp.EqualFold(argv[i], "match") && more:
			if a.match = argv[i+1]; len(a.match) == 1 && a.match[0] == '*' {
				a.match = nil // as in Redis, "*" matches everything, the empty string included
			}
			i++
		case resp.EqualFold(argv[i], "count") && more:
			n, ok := parseInt(argv[i+1])
			if !ok {
				s.addError(c, errNotInt)
				return a, false
			}
			if n < 1 {
				s.addError(c, errSyntax)
				return a, false
			}
			a.count = int(n)
			i++
		case resp.EqualFold(argv[i], "type") && more && allowType:
			a.typ = lowerASCII(string(argv[i+1]))
			i++
		case resp.EqualFold(argv[i], "novalues") && !allowType:
			a.noValue = true
		default:
			s.addError(c, errSyntax)
			return a, false
		}
	}
	return a, true
}

func parseUint(b []byte) (uint64, bool) {
	if len(b) == 0 || len(b) > 20 {
		return 0, false
	}
	var v uint64
	for _, ch := range b {
		if ch < '0' || ch > '9' {
			return 0, false
		}
		nv := v*10 + uint64(ch-'0')
		if nv/10 != v {
			return 0, false
		}
		v = nv
	}
	return v, true
}

func cmdScan(s *Server, c *client, argv [][]byte) {
	a, ok := s.parseScan(c, argv, 1, true)
	if !ok {
		return
	}
	db := s.dbs[c.db]
	var keys [][]byte
	var expired []keyspace.Ref
	next := db.Scan(a.cursor, a.count, func(r keyspace.Ref) {
		if exp, has := db.ExpireAt(r); has && exp <= s.nowMs {
			expired = append(expired, r)
			return
		}
		k := db.Key(r)
		if a.match != nil && !glob.Match(a.match, k, false) {
			return
		}
		if a.typ != "" && db.Type(r).Name() != a.typ {
			return
		}
		keys = append(keys, append([]byte(nil), k...))
	})
	for _, r := range expired {
		if _, ok := db.Find(db.Key(r)); ok {
			s.expireKey(db, c.db, r, db.Key(r))
		}
	}
	c.w.Array(2)
	c.w.BulkInt(int64(next))
	c.w.Array(len(keys))
	for _, k := range keys {
		c.w.Bulk(k)
	}
}

func cmdRandomKey(s *Server, c *client, argv [][]byte) {
	db := s.dbs[c.db]
	for tries := 0; tries < 100; tries++ {
		r, ok := db.RandomKey()
		if !ok {
			c.w.Null()
			return
		}
		if exp, has := db.ExpireAt(r); has && exp <= s.nowMs {
			s.expireKey(db, c.db, r, db.Key(r))
			continue
		}
		c.w.Bulk(db.Key(r))
		return
	}
	c.w.Null()
}

func cmdTouch(s *Server, c *client, argv [][]byte) {
	n := 0
	for _, k := range argv[1:] {
		if _, ok := s.lookupRead(c, k); ok {
			n++
		}
	}
	c.w.Int(int64(n))
}

func cmdCopy(s *Server, c *client, argv [][]byte) {
	dstIdx := c.db
	replace := false
	for i := 3; i < len(argv); i++ {
		switch {
		case resp.EqualFold(argv[i], "replace"):
			replace = true
		case resp.EqualFold(argv[i], "db") && i+1 < len(argv):
			v, ok := s.intArg(c, argv[i+1])
			if !ok {
				return
			}
			if v < 0 || v >= int64(len(s.dbs)) {
				s.addError(c, errInvalidDB)
				return
			}
			dstIdx = int(v)
			i++
		default:
			s.addError(c, errSyntax)
			return
		}
	}
	if s.cluster != nil && (c.db != 0 || dstIdx != 0) {
		s.addError(c, "ERR Copying to another database is not allowed in cluster mode")
		return
	}
	if dstIdx == c.db && string(argv[1]) == string(argv[2]) {
		s.addError(c, errSelfMove)
		return
	}
	src := s.dbs[c.db]
	if _, ok := s.lookupRead(c, argv[1]); !ok { // a read of the source, as Redis does
		c.w.Int(0)
		return
	}
	dst := s.dbs[dstIdx]
	if _, exists := s.lookupLive(dst, dstIdx, argv[2]); exists && !replace {
		c.w.Int(0)
		return
	}
	r, _ := src.Find(argv[1]) // again: the destination's lookup may have moved records
	s.copyValue(src, r, dst, dstIdx, argv[2], false)
	s.notify(config.NotifyGeneric, "copy_to", argv[2], dstIdx)
	c.w.Int(1)
}

func cmdMove(s *Server, c *client, argv [][]byte) {
	if s.cluster != nil {
		s.addError(c, "ERR MOVE is not allowed in cluster mode")
		return
	}
	v, ok := s.intArg(c, argv[2])
	if !ok {
		return
	}
	if v < 0 || v >= int64(len(s.dbs)) {
		s.addError(c, errInvalidDB)
		return
	}
	if int(v) == c.db {
		s.addError(c, errSelfMove)
		return
	}
	src, dst := s.dbs[c.db], s.dbs[v]
	if _, ok := s.lookupWrite(c, argv[1]); !ok {
		c.w.Int(0)
		return
	}
	if _, exists := s.lookupLive(dst, int(v), argv[1]); exists {
		c.w.Int(0)
		return
	}
	r, _ := src.Find(argv[1]) // again: the destination's lookup may have moved records
	key := append([]byte(nil), argv[1]...)
	s.copyValue(src, r, dst, int(v), key, true)
	s.wrote(c.db, key, nil, config.NotifyGeneric, "move_from")
	s.notify(config.NotifyGeneric, "move_to", key, int(v))
	c.w.Int(1)
}

// encodingOf names a value's encoding with Redis 7.0's names. A collection's is the one it is
// stored in; a string's is the one Redis would give it (iocache keeps every string's bytes in
// its record: "int" and "embstr" say what Redis would do with the value, which is what Redis's
// own tests check).
func (s *Server) encodingOf(db *keyspace.DB, r keyspace.Ref) string {
	switch db.Type(r) {
	case keyspace.TypeString:
		v := db.Str(r)
		if _, ok := parseInt(v); ok && len(v) <= 20 {
			return "int"
		}
		if len(v) <= 44 {
			return "embstr"
		}
		return "raw"
	case keyspace.TypeList, keyspace.TypeSet, keyspace.TypeZSet, keyspace.TypeHash:
		return db.Obj(r).(interface{ Encoding() string }).Encoding()
	case keyspace.TypeStream:
		return "stream"
	}
	return "raw"
}

func cmdObject(s *Server, c *client, argv [][]byte) {
	sub := argv[1]
	if resp.EqualFold(sub, "help") && len(argv) == 2 {
		writeHelp(c, "OBJECT", []string{
			"ENCODING <key>", "    Return the kind of internal representation used in order to store the value",
			"    associated with a <key>.",
			"FREQ <key>", "    Return the access frequency index of the <key>. The returned integer is",
			"    proportional to the logarithm of the recent access frequency of the key.",
			"IDLETIME <key>", "    Return the idle time of the <key>, that is the approximated number of",
			"    seconds elapsed since the last access to the key.",
			"REFCOUNT <key>", "    Return the number of references of the value associated with the specified",
			"    <key>.",
		})
		return
	}
	if len(argv) != 3 {
		s.subcommandError(c, argv)
		return
	}
	db := s.dbs[c.db]
	r, ok := s.lookupLive(db, c.db, argv[2])
	switch {
	case resp.EqualFold(sub, "encoding"), resp.EqualFold(sub, "freq"), resp.EqualFold(sub, "idletime"), resp.EqualFold(sub, "refcount"):
	default:
		s.subcommandError(c, argv)
		return
	}
	if !ok {
		c.w.Null()
		return
	}
	switch {
	case resp.EqualFold(sub, "encoding"):
		c.w.BulkString(s.encodingOf(db, r))
	case resp.EqualFold(sub, "freq"):
		p := s.cfg.MaxMemoryPolicy
		if len(p) < 3 || p[len(p)-3:] != "lfu" {
			s.addError(c, "ERR An LFU maxmemory policy is not selected, access frequency not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.")
			return
		}
		c.w.Int(int64(s.lfuDecrAndReturn(db.LRU(r))))
	case resp.EqualFold(sub, "idletime"):
		p := s.cfg.MaxMemoryPolicy
		if len(p) >= 3 && p[len(p)-3:] == "lfu" {
			s.addError(c, "ERR An LFU maxmemory policy is selected, idle time not tracked. Please note that when switching between policies at runtime LRU and LFU data will take some time to adjust.")
			return
		}
		c.w.Int(s.idleMs(db.LRU(r)) / 1000)
	case resp.EqualFold(sub, "refcount"):
		c.w.Int(1)
	}
}

// keysCommands registers this file's commands (see table.go).
var keysCommands = []commandSpec{
	{name: "del", h: cmdDel},
	{name: "unlink", h: cmdUnlink},
	{name: "exists", h: cmdExists},
	{name: "type", h: cmdType},
	{name: "rename", h: cmdRename},
	{name: "renamenx", h: cmdRenameNX},
	{name: "expire", h: cmdExpire},
	{name: "pexpire", h: cmdPExpire},
	{name: "expireat", h: cmdExpireAt},
	{name: "pexpireat", h: cmdPExpireAt},
	{name: "ttl", h: cmdTTL},
	{name: "pttl", h: cmdPTTL},
	{name: "expiretime", h: cmdExpireTime},
	{name: "pexpiretime", h: cmdPExpireTime},
	{name: "persist", h: cmdPersist},
	{name: "keys", h: cmdKeys},
	{name: "scan", h: cmdScan, own: cmdTouchesArbitraryKeys},           // Redis's, hidden by COMMAND INFO: its lazy expiries propagate one by one
	{name: "randomkey", h: cmdRandomKey, own: cmdTouchesArbitraryKeys}, // Redis's, hidden by COMMAND INFO: its lazy expiries propagate one by one
	{name: "touch", h: cmdTouch},
	{name: "copy", h: cmdCopy},
	{name: "move", h: cmdMove},
	{name: "object", h: cmdObject, meta: &commandMeta{-2, cmdReadonly, 2, 2, 1, "generic", "A container for object introspection commands."}}, // a container: iocache takes its key (OBJECT ENCODING key) from the container
}
