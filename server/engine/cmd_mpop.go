package engine

import (
	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/keyspace"
	"github.com/iocache/iocache/server/resp"
)

// LMPOP, BLMPOP, ZMPOP and BZMPOP (Redis 7.0): pop up to COUNT elements from the first non-empty
// list or sorted set among several keys, replying with the key and what was popped.

// mpopArgs reads numkeys at argv[at], the keys, the direction word and an optional COUNT.
func (s *Server) mpopArgs(c *client, argv [][]byte, at int, dirA, dirB string) (keys [][]byte, first bool, count int64, ok bool) {
	n, isInt := parseInt(argv[at])
	if !isInt || n < 1 {
		s.addError(c, "ERR numkeys should be greater than 0")
		return nil, false, 0, false
	}
	if n >= int64(len(argv)) { // also keeps at+n+1 from overflowing
		s.addError(c, errSyntax)
		return nil, false, 0, false
	}
	dirAt := int64(at) + n + 1
	if dirAt >= int64(len(argv)) {
		s.addError(c, errSyntax)
		return nil, false, 0, false
	}
	switch d := argv[dirAt]; {
	case resp.EqualFold(d, dirA):
		first = true
	case resp.EqualFold(d, dirB):
	default:
		s.addError(c, errSyntax)
		return nil, false, 0, false
	}
	count = -1
	for j := int(dirAt) + 1; j < len(argv); j++ {
		if count == -1 && resp.EqualFold(argv[j], "count") && j+1 < len(argv) {
			v, isInt := parseInt(argv[j+1])
			if !isInt || v < 1 {
				s.addError(c, "ERR count should be greater than 0")
				return nil, false, 0, false
			}
			count = v
			j++
			continue
		}
		s.addError(c, errSyntax)
		return nil, false, 0, false
	}
	if count == -1 {
		count = 1
	}
	return argv[at+1 : dirAt], first, count, true
}

// lmpop pops from the first non-empty list; it reports whether it replied (with data or an
// error).
func (s *Server) lmpop(c *client, keys [][]byte, left bool, count int64) bool {
	k, l, found, ok := firstExisting[*keyspace.List](s, c, keys, keyspace.TypeList)
	if !ok || !found {
		return !ok
	}
	n := min(count, int64(l.Len()))
	s.repl.prop.popped = n
	c.w.Array(2)
	c.w.Bulk(k)
	c.w.Array(int(n))
	for i := int64(0); i < n; i++ {
		c.w.Bulk(popOne(l, left))
	}
	s.wrote(c.db, k, l, config.NotifyList, popEvent(left))
	return true
}

// zmpop pops from the first non-empty sorted set.
func (s *Server) zmpop(c *client, keys [][]byte, lowest bool, count int64) bool {
	k, z, found, ok := firstExisting[*keyspace.ZSet](s, c, keys, keyspace.TypeZSet)
	if !ok || !found {
		return !ok
	}
	n := min(count, int64(z.Len()))
	s.repl.prop.popped = n
	c.w.Array(2)
	c.w.Bulk(k)
	c.w.Array(int(n))
	for i := int64(0); i < n; i++ {
		e, _ := z.First(!lowest)
		c.w.Array(2)
		c.w.Bulk(e.Member) // before the removal, which may move the bytes e.Member views
		c.w.Double(e.Score)
		z.Remove(e.Member)
	}
	s.wrote(c.db, k, z, config.NotifyZSet, zpopEvent(!lowest))
	return true
}

func cmdLMPop(s *Server, c *client, argv [][]byte) {
	keys, left, count, ok := s.mpopArgs(c, argv, 1, "left", "right")
	if ok && !s.lmpop(c, keys, left, count) {
		c.w.NullArray()
	}
}

func cmdZMPop(s *Server, c *client, argv [][]byte) {
	keys, lowest, count, ok := s.mpopArgs(c, argv, 1, "min", "max")
	if ok && !s.zmpop(c, keys, lowest, count) {
		c.w.NullArray()
	}
}

// bmpop is BLMPOP and BZMPOP: the same, blocking until one of the keys gets data.
func bmpop(s *Server, c *client, argv [][]byte, t keyspace.Type) {
	deadline, ok := s.timeoutArg(c, argv[1])
	if !ok {
		return
	}
	dirA, dirB := "left", "right"
	if t == keyspace.TypeZSet {
		dirA, dirB = "min", "max"
	}
	keys, first, count, ok := s.mpopArgs(c, argv, 2, dirA, dirB)
	if !ok {
		return
	}
	served := false
	if t == keyspace.TypeList {
		served = s.lmpop(c, keys, first, count)
	} else {
		served = s.zmpop(c, keys, first, count)
	}
	if served {
		return
	}
	if c.flags&flagExecuting != 0 {
		c.w.NullArray()
		return
	}
	s.block(c, s.commands[lowerASCII(string(argv[0]))], argv, keys, c.blockDeadline(deadline), t)
}

func cmdBLMPop(s *Server, c *client, argv [][]byte) { bmpop(s, c, argv, keyspace.TypeList) }
func cmdBZMPop(s *Server, c *client, argv [][]byte) { bmpop(s, c, argv, keyspace.TypeZSet) }

// mpopCommands registers this file's commands (see table.go).
var mpopCommands = []commandSpec{
	{name: "lmpop", h: cmdLMPop},
	{name: "blmpop", h: cmdBLMPop},
	{name: "zmpop", h: cmdZMPop},
	{name: "bzmpop", h: cmdBZMPop},
}
