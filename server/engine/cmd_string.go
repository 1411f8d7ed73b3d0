package engine

import (
	"math"
	"strconv"

	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/keyspace"
	"github.com/iocache/iocache/server/longdouble"
	"github.com/iocache/iocache/server/resp"
)

func cmdGet(s *Server, c *client, argv [][]byte) {
	db := s.dbs[c.db]
	r, ok := s.lookupRead(c, argv[1])
	if !ok {
		c.w.Null()
		return
	}
	if db.Type(r) != keyspace.TypeString {
		s.wrongType(c)
		return
	}
	c.w.Bulk(db.Str(r))
}

// setOptions are SET's flags, shared with SETEX, SETNX and friends.
type setOptions struct {
	nx, xx, get, keepTTL bool
	expireAt             int64 // unix ms; 0 = none
}

// parseExpire turns an EX/PX/EXAT/PXAT value into a unix-ms deadline, with Redis's checks.
func (s *Server) parseExpire(c *client, b []byte, unitMs int64, absolute bool, cmd string) (int64, bool) {
	v, ok := parseInt(b)
	if !ok {
		s.addError(c, errNotInt)
		return 0, false
	}
	if v <= 0 || v > math.MaxInt64/unitMs {
		s.addError(c, "ERR invalid expire time in '"+cmd+"' command")
		return 0, false
	}
	ms := v * unitMs
	if !absolute {
		if ms > math.MaxInt64-s.nowMs {
			s.addError(c, "ERR invalid expire time in '"+cmd+"' command")
			return 0, false
		}
		ms += s.nowMs
	}
	return ms, true
}

func cmdSet(s *Server, c *client, argv [][]byte) {
	var o setOptions
	expSet := false
	for i := 3; i < len(argv); i++ {
		a := argv[i]
		hasNext := i+1 < len(argv)
		switch {
		case resp.EqualFold(a, "nx") && !o.xx:
			o.nx = true
		case resp.EqualFold(a, "xx") && !o.nx:
			o.xx = true
		case resp.EqualFold(a, "get"):
			o.get = true
		case resp.EqualFold(a, "keepttl") && !expSet:
			o.keepTTL = true
		case (resp.EqualFold(a, "ex") || resp.EqualFold(a, "px") || resp.EqualFold(a, "exat") || resp.EqualFold(a, "pxat")) && hasNext && !expSet && !o.keepTTL:
			unit := int64(1000)
			if a[0] == 'p' || a[0] == 'P' {
				unit = 1
			}
			abs := len(a) == 4
			at, ok := s.parseExpire(c, argv[i+1], unit, abs, "set")
			if !ok {
				return
			}
			o.expireAt, expSet = at, true
			i++
		default:
			s.addError(c, errSyntax)
			return
		}
	}
	s.setGeneric(c, argv[1], argv[2], o)
}

// setGeneric is SET's core. It replies as SET does (OK, null when NX/XX prevent it, or the old
// value with GET).
func (s *Server) setGeneric(c *client, key, val []byte, o setOptions) {
	db := s.dbs[c.db]
	lookup := s.lookupWrite
	if o.get {
		lookup = s.lookupRead // GET reads the old value as GET does: hits, misses, keymiss
	}
	r, exists := lookup(c, key)
	if o.get {
		if exists && db.Type(r) != keyspace.TypeString {
			s.wrongType(c)
			return
		}
		if exists {
			c.w.Bulk(db.Str(r))
		} else {
			c.w.Null()
		}
	}
	if (o.nx && exists) || (o.xx && !exists) {
		if !o.get {
			c.w.Null()
		}
		return
	}
	if int64(len(val)) > s.cfg.ProtoMaxBulkLen {
		s.addError(c, errStringTooBig)
		return
	}
	_, freed := db.SetString(key, val, o.expireAt, o.keepTTL, s.initialClock())
	if freed != nil {
		s.freeObject(db, freed)
	}
	s.wrote(c.db, key, nil, config.NotifyString, "set")
	if o.expireAt > 0 {
		s.notify(config.NotifyGeneric, "expire", key, c.db)
	}
	if o.expireAt > 0 && o.expireAt <= s.nowMs {
		// An absolute time in the past: the key is set and expires at once, as in Redis.
		if r, ok := db.Find(key); ok {
			s.expireKey(db, c.db, r, key)
		}
	}
	if !o.get {
		c.w.OK()
	}
}

func cmdSetNX(s *Server, c *client, argv [][]byte) {
	db := s.dbs[c.db]
	if _, ok := s.lookupWrite(c, argv[1]); ok {
		c.w.Int(0)
		return
	}
	db.SetString(argv[1], argv[2], 0, false, s.initialClock())
	s.wrote(c.db, argv[1], nil, config.NotifyString, "set")
	c.w.Int(1)
}

func setWithExpire(s *Server, c *client, argv [][]byte, unitMs int64, name string) {
	at, ok := s.parseExpire(c, argv[2], unitMs, false, name)
	if !ok {
		return
	}
	s.setGeneric(c, argv[1], argv[3], setOptions{expireAt: at})
}

func cmdSetEX(s *Server, c *client, argv [][]byte)  { setWithExpire(s, c, argv, 1000, "setex") }
func cmdPSetEX(s *Server, c *client, argv [][]byte) { setWithExpire(s, c, argv, 1, "psetex") }

func cmdGetSet(s *Server, c *client, argv [][]byte) {
	s.setGeneric(c, argv[1], argv[2], setOptions{get: true})
}

func cmdGetDel(s *Server, c *client, argv [][]byte) {
	db := s.dbs[c.db]
	r, ok := s.lookupRead(c, argv[1])
	if !ok {
		c.w.Null()
		return
	}
	if db.Type(r) != keyspace.TypeString {
		s.wrongType(c)
		return
	}
	c.w.Bulk(db.Str(r))
	db.Delete(r)
	s.wrote(c.db, argv[1], nil, config.NotifyGeneric, "del")
}

func cmdGetEx(s *Server, c *client, argv [][]byte) {
	// As Redis's getexCommand: the options' syntax first, then the key (missing: nil, wrong
	// type: WRONGTYPE), and only then the expire time's value.
	var at int64
	var expireArg, expireOpt []byte
	persist, set := false, false
	for i := 2; i < len(argv); i++ {
		a := argv[i]
		switch {
		case resp.EqualFold(a, "persist") && !set:
			persist, set = true, true
		case (resp.EqualFold(a, "ex") || resp.EqualFold(a, "px") || resp.EqualFold(a, "exat") || resp.EqualFold(a, "pxat")) && i+1 < len(argv) && !set:
			expireOpt, expireArg, set = a, argv[i+1], true
			i++
		default:
			s.addError(c, errSyntax)
			return
		}
	}
	db := s.dbs[c.db]
	r, ok := s.lookupRead(c, argv[1])
	if !ok {
		c.w.Null()
		return
	}
	if db.Type(r) != keyspace.TypeString {
		s.wrongType(c)
		return
	}
	if expireOpt != nil {
		unit := int64(1000)
		if expireOpt[0] == 'p' || expireOpt[0] == 'P' {
			unit = 1
		}
		if at, ok = s.parseExpire(c, expireArg, unit, len(expireOpt) == 4, "getex"); !ok {
			return
		}
	}
	c.w.Bulk(db.Str(r))
	switch {
	case at > 0 && at <= s.nowMs:
		s.deleteKey(db, r) // a time already past deletes the key, as Redis's GETEX does
		s.wrote(c.db, argv[1], nil, config.NotifyGeneric, "del")
	case at > 0:
		db.SetExpire(r, at)
		s.wrote(c.db, argv[1], nil, config.NotifyGeneric, "expire")
	case persist:
		if _, has := db.ExpireAt(r); has {
			db.Persist(r)
			s.wrote(c.db, argv[1], nil, config.NotifyGeneric, "persist")
		}
	}
}

func cmdMGet(s *Server, c *client, argv [][]byte) {
	db := s.dbs[c.db]
	c.w.Array(len(argv) - 1)
	for _, k := range argv[1:] {
		r, ok := s.lookupRead(c, k)
		if !ok || db.Type(r) != keyspace.TypeString {
			c.w.Null()
			continue
		}
		c.w.Bulk(db.Str(r))
	}
}

func cmdMSet(s *Server, c *client, argv [][]byte) {
	if len(argv)%2 != 1 {
		s.wrongArgs(c, "mset")
		return
	}
	db := s.dbs[c.db]
	for i := 1; i < len(argv); i += 2 {
		s.lookupWrite(c, argv[i]) // an expired key is deleted first, as Redis does
		if _, freed := db.SetString(argv[i], argv[i+1], 0, false, s.initialClock()); freed != nil {
			s.freeObject(db, freed)
		}
		s.wrote(c.db, argv[i], nil, config.NotifyString, "set")
	}
	c.w.OK()
}

func cmdMSetNX(s *Server, c *client, argv [][]byte) {
	if len(argv)%2 != 1 {
		s.wrongArgs(c, "msetnx")
		return
	}
	for i := 1; i < len(argv); i += 2 {
		if _, ok := s.lookupWrite(c, argv[i]); ok {
			c.w.Int(0)
			return
		}
	}
	db := s.dbs[c.db]
	for i := 1; i < len(argv); i += 2 {
		db.SetString(argv[i], argv[i+1], 0, false, s.initialClock())
		s.wrote(c.db, argv[i], nil, config.NotifyString, "set")
	}
	c.w.Int(1)
}

func cmdAppend(s *Server, c *client, argv [][]byte) {
	db := s.dbs[c.db]
	r, ok := s.lookupWrite(c, argv[1])
	if !ok {
		db.SetString(argv[1], argv[2], 0, false, s.initialClock())
		s.wrote(c.db, argv[1], nil, config.NotifyString, "append")
		c.w.Int(int64(len(argv[2])))
		return
	}
	if db.Type(r) != keyspace.TypeString {
		s.wrongType(c)
		return
	}
	old := len(db.Str(r))
	if int64(old+len(argv[2])) > s.cfg.ProtoMaxBulkLen {
		s.addError(c, errStringTooBig)
		return
	}
	_, v := db.ResizeString(r, old+len(argv[2]))
	copy(v[old:], argv[2])
	s.wrote(c.db, argv[1], nil, config.NotifyString, "append")
	c.w.Int(int64(len(v)))
}

func cmdStrlen(s *Server, c *client, argv [][]byte) {
	db := s.dbs[c.db]
	r, ok := s.lookupRead(c, argv[1])
	if !ok {
		c.w.Int(0)
		return
	}
	if db.Type(r) != keyspace.TypeString {
		s.wrongType(c)
		return
	}
	c.w.Int(int64(len(db.Str(r))))
}

// incrDecr adds delta to the integer stored at key, keeping its TTL.
func (s *Server) incrDecr(c *client, key []byte, delta int64) {
	db := s.dbs[c.db]
	r, ok := s.lookupWrite(c, key)
	var cur int64
	if ok {
		if db.Type(r) != keyspace.TypeString {
			s.wrongType(c)
			return
		}
		v, ok := parseInt(db.Str(r))
		if !ok {
			s.addError(c, errNotInt)
			return
		}
		cur = v
	}
	if (delta < 0 && cur < 0 && delta < math.MinInt64-cur) || (delta > 0 && cur > 0 && delta > math.MaxInt64-cur) {
		s.addError(c, errOverflow)
		return
	}
	cur += delta
	var buf [20]byte
	out := strconv.AppendInt(buf[:0], cur, 10)
	if ok {
		_, v := db.ResizeString(r, len(out))
		copy(v, out)
	} else {
		db.SetString(key, out, 0, false, s.initialClock())
	}
	s.wrote(c.db, key, nil, config.NotifyString, "incrby")
	c.w.Int(cur)
}

func cmdIncr(s *Server, c *client, argv [][]byte) { s.incrDecr(c, argv[1], 1) }
func cmdDecr(s *Server, c *client, argv [][]byte) { s.incrDecr(c, argv[1], -1) }

func cmdIncrBy(s *Server, c *client, argv [][]byte) {
	if d, ok := s.intArg(c, argv[2]); ok {
		s.incrDecr(c, argv[1], d)
	}
}

func cmdDecrBy(s *Server, c *client, argv [][]byte) {
	d, ok := s.intArg(c, argv[2])
	if !ok {
		return
	}
	if d == math.MinInt64 {
		s.addError(c, "ERR decrement would overflow")
		return
	}
	s.incrDecr(c, argv[1], -d)
}

// parseFloat reads a float argument as Redis's strtold-based parsing does.
func parseFloat(b []byte) (float64, bool) { return longdouble.Parse(b) }

// cmdIncrByFloat checks in Redis's order: the key's type, its value, then the increment; it adds
// in long double precision as Redis does (package longdouble).
func cmdIncrByFloat(s *Server, c *client, argv [][]byte) {
	db := s.dbs[c.db]
	r, exists := s.lookupWrite(c, argv[1])
	cur := []byte("0")
	if exists {
		if db.Type(r) != keyspace.TypeString {
			s.wrongType(c)
			return
		}
		cur = db.Str(r)
		if _, ok := parseFloat(cur); !ok {
			s.addError(c, errNotFloat)
			return
		}
	}
	if _, ok := parseFloat(argv[2]); !ok {
		s.addError(c, errNotFloat)
		return
	}
	out, ok := longdouble.Add(cur, argv[2])
	if !ok {
		s.addError(c, "ERR increment would produce NaN or Infinity")
		return
	}
	if exists {
		_, v := db.ResizeString(r, len(out))
		copy(v, out)
	} else {
		db.SetString(argv[1], out, 0, false, s.initialClock())
	}
	s.wrote(c.db, argv[1], nil, config.NotifyString, "incrbyfloat")
	c.w.Bulk(out)
}

func cmdGetRange(s *Server, c *client, argv [][]byte) {
	start, ok1 := parseInt(argv[2])
	end, ok2 := parseInt(argv[3])
	if !ok1 || !ok2 {
		s.addError(c, errNotInt)
		return
	}
	db := s.dbs[c.db]
	r, ok := s.lookupRead(c, argv[1])
	if !ok {
		c.w.BulkString("")
		return
	}
	if db.Type(r) != keyspace.TypeString {
		s.wrongType(c)
		return
	}
	v := db.Str(r)
	n := int64(len(v))
	if start < 0 && end < 0 && start > end {
		c.w.BulkString("")
		return
	}
	if start < 0 {
		start += n
	}
	if end < 0 {
		end += n
	}
	if start < 0 {
		start = 0
	}
	if end < 0 {
		end = 0
	}
	if end >= n {
		end = n - 1
	}
	if n == 0 || start > end {
		c.w.BulkString("")
		return
	}
	c.w.Bulk(v[start : end+1])
}

func cmdSetRange(s *Server, c *client, argv [][]byte) {
	off, ok := parseInt(argv[2])
	if !ok {
		s.addError(c, errNotInt)
		return
	}
	if off < 0 {
		s.addError(c, "ERR offset is out of range")
		return
	}
	val := argv[3]
	db := s.dbs[c.db]
	r, exists := s.lookupWrite(c, argv[1])
	if exists && db.Type(r) != keyspace.TypeString {
		s.wrongType(c)
		return
	}
	if len(val) == 0 {
		if exists {
			c.w.Int(int64(len(db.Str(r))))
		} else {
			c.w.Int(0)
		}
		return
	}
	if off > s.cfg.ProtoMaxBulkLen-int64(len(val)) { // written so that a huge offset cannot overflow
		s.addError(c, errStringTooBig)
		return
	}
	if !exists {
		db.SetString(argv[1], nil, 0, false, s.initialClock())
		r, _ = db.Find(argv[1])
	}
	old := len(db.Str(r))
	need := int(off) + len(val)
	if need < old {
		need = old
	}
	_, v := db.ResizeString(r, need)
	for i := old; i < int(off); i++ {
		v[i] = 0
	}
	copy(v[off:], val)
	s.wrote(c.db, argv[1], nil, config.NotifyString, "setrange")
	c.w.Int(int64(len(v)))
}

// stringCommands registers this file's commands (see table.go).
var stringCommands = []commandSpec{
	{name: "lcs", h: cmdLCS},
	{name: "get", h: cmdGet},
	{name: "set", h: cmdSet},
	{name: "setnx", h: cmdSetNX},
	{name: "setex", h: cmdSetEX},
	{name: "psetex", h: cmdPSetEX},
	{name: "getset", h: cmdGetSet},
	{name: "getdel", h: cmdGetDel},
	{name: "getex", h: cmdGetEx},
	{name: "mget", h: cmdMGet},
	{name: "mset", h: cmdMSet},
	{name: "msetnx", h: cmdMSetNX},
	{name: "append", h: cmdAppend},
	{name: "strlen", h: cmdStrlen},
	{name: "incr", h: cmdIncr},
	{name: "decr", h: cmdDecr},
	{name: "incrby", h: cmdIncrBy},
	{name: "decrby", h: cmdDecrBy},
	{name: "incrbyfloat", h: cmdIncrByFloat},
	{name: "getrange", h: cmdGetRange},
	{name: "substr", h: cmdGetRange},
	{name: "setrange", h: cmdSetRange},
}
