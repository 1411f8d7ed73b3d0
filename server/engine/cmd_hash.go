package engine

import (
	"math"
	"strconv"

	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/glob"
	"github.com/iocache/iocache/server/keyspace"
	"github.com/iocache/iocache/server/longdouble"
)

func hsetGeneric(s *Server, c *client, argv [][]byte, name string, replyOK bool) {
	if len(argv)%2 != 0 {
		s.wrongArgs(c, name)
		return
	}
	h, ok := s.getHash(c, argv[1], forCreate)
	if !ok {
		return
	}
	h.ConvertForLengths(argv[2:])
	h.Reserve(argv[2:])
	added := 0
	for i := 2; i < len(argv); i += 2 {
		if h.Set(argv[i], argv[i+1]) {
			added++
		}
	}
	s.wrote(c.db, argv[1], nil, config.NotifyHash, "hset")
	if replyOK {
		c.w.OK()
	} else {
		c.w.Int(int64(added))
	}
}

func cmdHSet(s *Server, c *client, argv [][]byte)  { hsetGeneric(s, c, argv, "hset", false) }
func cmdHMSet(s *Server, c *client, argv [][]byte) { hsetGeneric(s, c, argv, "hmset", true) }

func cmdHSetNX(s *Server, c *client, argv [][]byte) {
	h, ok := s.getHash(c, argv[1], forCreate)
	if !ok {
		return
	}
	if _, exists := h.Get(argv[2]); exists {
		c.w.Int(0)
		return
	}
	h.Set(argv[2], argv[3])
	s.wrote(c.db, argv[1], nil, config.NotifyHash, "hset")
	c.w.Int(1)
}

func cmdHGet(s *Server, c *client, argv [][]byte) {
	h, ok := s.getHash(c, argv[1], forRead)
	if !ok {
		return
	}
	if h == nil {
		c.w.Null()
		return
	}
	if v, found := h.Get(argv[2]); found {
		c.w.Bulk(v)
		return
	}
	c.w.Null()
}

func cmdHMGet(s *Server, c *client, argv [][]byte) {
	h, ok := s.getHash(c, argv[1], forRead)
	if !ok {
		return
	}
	c.w.Array(len(argv) - 2)
	for _, f := range argv[2:] {
		if h != nil {
			if v, found := h.Get(f); found {
				c.w.Bulk(v)
				continue
			}
		}
		c.w.Null()
	}
}

func hashDump(s *Server, c *client, argv [][]byte, fields, values bool) {
	h, ok := s.getHash(c, argv[1], forRead)
	if !ok {
		return
	}
	if h == nil {
		if fields && values {
			c.w.Map(0)
		} else {
			c.w.EmptyArray()
		}
		return
	}
	if fields && values {
		c.w.Map(h.Len())
	} else {
		c.w.Array(h.Len())
	}
	h.Each(func(f, v []byte) bool {
		if fields {
			c.w.Bulk(f)
		}
		if values {
			c.w.Bulk(v)
		}
		return true
	})
}

func cmdHGetAll(s *Server, c *client, argv [][]byte) { hashDump(s, c, argv, true, true) }
func cmdHKeys(s *Server, c *client, argv [][]byte)   { hashDump(s, c, argv, true, false) }
func cmdHVals(s *Server, c *client, argv [][]byte)   { hashDump(s, c, argv, false, true) }

func cmdHDel(s *Server, c *client, argv [][]byte) {
	h, ok := s.getHash(c, argv[1], forWrite)
	if !ok {
		return
	}
	if h == nil {
		c.w.Int(0)
		return
	}
	s.removeMembers(c, argv[1], h, argv[2:], h.Delete, config.NotifyHash, "hdel")
}

func cmdHLen(s *Server, c *client, argv [][]byte) {
	cardinality(s, c, argv[1], keyspace.TypeHash, keyspace.NewHash)
}

func cmdHExists(s *Server, c *client, argv [][]byte) {
	h, ok := s.getHash(c, argv[1], forRead)
	if !ok {
		return
	}
	if h != nil {
		if _, found := h.Get(argv[2]); found {
			c.w.Int(1)
			return
		}
	}
	c.w.Int(0)
}

func cmdHStrlen(s *Server, c *client, argv [][]byte) {
	h, ok := s.getHash(c, argv[1], forRead)
	if !ok {
		return
	}
	if h != nil {
		if v, found := h.Get(argv[2]); found {
			c.w.Int(int64(len(v)))
			return
		}
	}
	c.w.Int(0)
}

func cmdHIncrBy(s *Server, c *client, argv [][]byte) {
	delta, ok := s.intArg(c, argv[3])
	if !ok {
		return
	}
	h, ok := s.getHash(c, argv[1], forCreate)
	if !ok {
		return
	}
	var cur int64
	if v, found := h.Get(argv[2]); found {
		n, ok := parseInt(v)
		if !ok {
			s.addError(c, "ERR hash value is not an integer")
			return
		}
		cur = n
	}
	if (delta < 0 && cur < 0 && delta < math.MinInt64-cur) || (delta > 0 && cur > 0 && delta > math.MaxInt64-cur) {
		s.addError(c, errOverflow)
		return
	}
	cur += delta
	h.Set(argv[2], strconv.AppendInt(nil, cur, 10))
	s.wrote(c.db, argv[1], nil, config.NotifyHash, "hincrby")
	c.w.Int(cur)
}

func cmdHIncrByFloat(s *Server, c *client, argv [][]byte) {
	incr, ok := parseFloat(argv[3])
	if !ok {
		s.addError(c, errNotFloat)
		return
	}
	if math.IsNaN(incr) || math.IsInf(incr, 0) {
		s.addError(c, "ERR value is NaN or Infinity")
		return
	}
	h, ok := s.getHash(c, argv[1], forCreate)
	if !ok {
		return
	}
	cur := []byte("0")
	if v, found := h.Get(argv[2]); found {
		if _, ok := parseFloat(v); !ok {
			s.addError(c, "ERR hash value is not a float")
			return
		}
		cur = v
	}
	out, ok := longdouble.Add(cur, argv[3])
	if !ok {
		s.addError(c, "ERR increment would produce NaN or Infinity")
		return
	}
	h.Set(argv[2], out)
	s.wrote(c.db, argv[1], nil, config.NotifyHash, "hincrbyfloat")
	c.w.Bulk(out)
}

func cmdHScan(s *Server, c *client, argv [][]byte) {
	a, ok := s.parseScan(c, argv, 2, false)
	if !ok {
		return
	}
	h, ok := s.getHash(c, argv[1], forRead)
	if !ok {
		return
	}
	c.w.Array(2)
	if h == nil {
		c.w.BulkString("0")
		c.w.EmptyArray()
		return
	}
	// A compact hash is returned whole, a large one in pages of COUNT fields, as in Redis.
	var items [][]byte
	add := func(f, v []byte) {
		if a.match == nil || glob.Match(a.match, f, false) {
			items = append(items, f)
			if !a.noValue {
				items = append(items, v)
			}
		}
	}
	if h.Compact() {
		c.w.BulkString("0")
		h.Each(func(f, v []byte) bool { add(f, v); return true })
	} else {
		c.w.BulkInt(scanPositions(h.Len(), a, false, func(pos int) { add(h.At(pos)) }))
	}
	c.w.Array(len(items))
	for _, it := range items {
		c.w.Bulk(it)
	}
}

func cmdHRandField(s *Server, c *client, argv [][]byte) {
	count, hasCount, withValues, ok := s.randomPickArgs(c, argv, "withvalues")
	if !ok {
		return
	}
	h, ok := s.getHash(c, argv[1], forRead)
	if !ok {
		return
	}
	if h == nil {
		if hasCount {
			c.w.EmptyArray()
		} else {
			c.w.Null()
		}
		return
	}
	size := h.Len()
	if !hasCount {
		f, _ := h.At(setRand.IntN(size))
		c.w.Bulk(f)
		return
	}
	per := bulkReplySize(h.PayloadBytes() / int64(size))
	if withValues {
		per += 4 + minBulkReply // the value's bulk, and RESP3's pair header
	}
	at := h.At
	if h.Compact() {
		pairs := h.Pairs() // O(n) once, not per pick
		at = func(i int) ([]byte, []byte) { return pairs[i][0], pairs[i][1] }
	}
	s.replyRandomPicks(c, count, randomPicks{size: size, with: withValues, perPick: per,
		emit: func(i int) {
			f, v := at(i)
			if withValues && c.w.RESP3 {
				c.w.Array(2)
			}
			c.w.Bulk(f)
			if withValues {
				c.w.Bulk(v)
			}
		},
		wholeOrder: inOrder,
	})
}

// hashCommands registers this file's commands (see table.go).
var hashCommands = []commandSpec{
	{name: "hset", h: cmdHSet},
	{name: "hmset", h: cmdHMSet},
	{name: "hsetnx", h: cmdHSetNX},
	{name: "hget", h: cmdHGet},
	{name: "hmget", h: cmdHMGet},
	{name: "hgetall", h: cmdHGetAll},
	{name: "hdel", h: cmdHDel},
	{name: "hlen", h: cmdHLen},
	{name: "hexists", h: cmdHExists},
	{name: "hkeys", h: cmdHKeys},
	{name: "hvals", h: cmdHVals},
	{name: "hincrby", h: cmdHIncrBy},
	{name: "hincrbyfloat", h: cmdHIncrByFloat},
	{name: "hstrlen", h: cmdHStrlen},
	{name: "hscan", h: cmdHScan},
	{name: "hrandfield", h: cmdHRandField},
}
