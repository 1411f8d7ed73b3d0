package engine

import (
	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/keyspace"
	"github.com/iocache/iocache/server/resp"
)

// pushEvent and popEvent are the keyspace events of adding at and taking from each end.
func pushEvent(front bool) string {
	if front {
		return "lpush"
	}
	return "rpush"
}

func popEvent(front bool) string {
	if front {
		return "lpop"
	}
	return "rpop"
}

// listElemsFit says whether a list may hold every one of vals, replying with an error when not:
// a list element is at most keyspace.MaxListElem bytes (a node's boundaries hold 4-byte
// lengths), less than proto-max-bulk-len may be set to.
func (s *Server) listElemsFit(c *client, vals ...[]byte) bool {
	for _, v := range vals {
		if int64(len(v)) > keyspace.MaxListElem {
			s.addError(c, errListElemTooBig)
			return false
		}
	}
	return true
}

func pushGeneric(s *Server, c *client, argv [][]byte, front, onlyExisting bool) {
	if !s.listElemsFit(c, argv[2:]...) {
		return
	}
	mode := forCreate
	if onlyExisting {
		mode = forWrite
	}
	l, ok := s.getList(c, argv[1], mode)
	if !ok {
		return
	}
	if l == nil {
		c.w.Int(0)
		return
	}
	l.PushAll(argv[2:], front)
	s.wrote(c.db, argv[1], nil, config.NotifyList, pushEvent(front))
	c.w.Int(int64(l.Len()))
}

func cmdLPush(s *Server, c *client, argv [][]byte)  { pushGeneric(s, c, argv, true, false) }
func cmdRPush(s *Server, c *client, argv [][]byte)  { pushGeneric(s, c, argv, false, false) }
func cmdLPushX(s *Server, c *client, argv [][]byte) { pushGeneric(s, c, argv, true, true) }
func cmdRPushX(s *Server, c *client, argv [][]byte) { pushGeneric(s, c, argv, false, true) }

func popGeneric(s *Server, c *client, argv [][]byte, front bool) {
	if len(argv) > 3 {
		s.wrongArgs(c, lowerASCII(string(argv[0])))
		return
	}
	count, hasCount := int64(1), len(argv) == 3
	if hasCount {
		v, ok := parseInt(argv[2])
		if !ok || v < 0 {
			s.addError(c, "ERR value is out of range, must be positive")
			return
		}
		count = v
	}
	l, ok := s.getList(c, argv[1], forWrite)
	if !ok {
		return
	}
	if l == nil {
		if hasCount {
			c.w.NullArray()
		} else {
			c.w.Null()
		}
		return
	}
	if !hasCount {
		c.w.Bulk(popOne(l, front))
	} else {
		if count > int64(l.Len()) {
			count = int64(l.Len())
		}
		c.w.Array(int(count))
		for i := int64(0); i < count; i++ {
			c.w.Bulk(popOne(l, front))
		}
	}
	if !hasCount || count > 0 { // LPOP key 0 pops nothing and announces nothing
		s.wrote(c.db, argv[1], l, config.NotifyList, popEvent(front))
	}
}

func popOne(l *keyspace.List, front bool) []byte {
	if front {
		return l.PopFront()
	}
	return l.PopBack()
}

func cmdLPop(s *Server, c *client, argv [][]byte) { popGeneric(s, c, argv, true) }
func cmdRPop(s *Server, c *client, argv [][]byte) { popGeneric(s, c, argv, false) }

func cmdLLen(s *Server, c *client, argv [][]byte) {
	cardinality(s, c, argv[1], keyspace.TypeList, keyspace.NewList)
}

// clampRange converts Redis start/stop (negative from the end) into [start, stop] within n, or
// ok=false when empty.
func clampRange(start, stop int64, n int) (int, int, bool) {
	if start < 0 {
		start += int64(n)
	}
	if stop < 0 {
		stop += int64(n)
	}
	if start < 0 {
		start = 0
	}
	if start > stop || start >= int64(n) {
		return 0, 0, false
	}
	if stop >= int64(n) {
		stop = int64(n) - 1
	}
	return int(start), int(stop), true
}

func cmdLRange(s *Server, c *client, argv [][]byte) {
	start, ok1 := parseInt(argv[2])
	stop, ok2 := parseInt(argv[3])
	if !ok1 || !ok2 {
		s.addError(c, errNotInt)
		return
	}
	l, ok := s.getList(c, argv[1], forRead)
	if !ok {
		return
	}
	if l == nil {
		c.w.EmptyArray()
		return
	}
	a, b, ok := clampRange(start, stop, l.Len())
	if !ok {
		c.w.EmptyArray()
		return
	}
	c.w.Array(b - a + 1)
	l.Range(a, b, func(v []byte) bool { c.w.Bulk(v); return true })
}

func cmdLIndex(s *Server, c *client, argv [][]byte) {
	// As Redis: the key (missing: nil, wrong type) before the index.
	l, ok := s.getList(c, argv[1], forRead)
	if !ok {
		return
	}
	if l == nil {
		c.w.Null()
		return
	}
	idx, ok := parseInt(argv[2])
	if !ok {
		s.addError(c, errNotInt)
		return
	}
	if idx < 0 {
		idx += int64(l.Len())
	}
	if idx < 0 || idx >= int64(l.Len()) {
		c.w.Null()
		return
	}
	c.w.Bulk(l.Index(int(idx)))
}

func cmdLSet(s *Server, c *client, argv [][]byte) {
	// As Redis: the key (missing, wrong type) before the index.
	l, ok := s.getList(c, argv[1], forWrite)
	if !ok {
		return
	}
	if l == nil {
		s.addError(c, errNoKey)
		return
	}
	idx, ok := parseInt(argv[2])
	if !ok {
		s.addError(c, errNotInt)
		return
	}
	if idx < 0 {
		idx += int64(l.Len())
	}
	if idx < 0 || idx >= int64(l.Len()) {
		s.addError(c, errIndexRange)
		return
	}
	if !s.listElemsFit(c, argv[3]) {
		return
	}
	l.Set(int(idx), argv[3])
	s.wrote(c.db, argv[1], nil, config.NotifyList, "lset")
	c.w.OK()
}

func cmdLInsert(s *Server, c *client, argv [][]byte) {
	var after bool
	switch {
	case resp.EqualFold(argv[2], "after"):
		after = true
	case resp.EqualFold(argv[2], "before"):
	default:
		s.addError(c, errSyntax)
		return
	}
	l, ok := s.getList(c, argv[1], forWrite)
	if !ok {
		return
	}
	if l == nil {
		c.w.Int(0)
		return
	}
	at := -1
	l.Walk(false, func(i int, v []byte) bool {
		if string(v) == string(argv[3]) {
			at = i
			return false
		}
		return true
	})
	if at < 0 {
		c.w.Int(-1)
		return
	}
	if after {
		at++
	}
	if !s.listElemsFit(c, argv[4]) {
		return
	}
	l.Insert(at, argv[4])
	s.wrote(c.db, argv[1], nil, config.NotifyList, "linsert")
	c.w.Int(int64(l.Len()))
}

func cmdLRem(s *Server, c *client, argv [][]byte) {
	count, ok := parseInt(argv[2])
	if !ok {
		s.addError(c, errNotInt)
		return
	}
	l, ok := s.getList(c, argv[1], forWrite)
	if !ok {
		return
	}
	if l == nil {
		c.w.Int(0)
		return
	}
	target := string(argv[3])
	limit := count
	if limit < 0 {
		limit = -limit // a count of -2^63 means "all" like 0, as in Redis
	}
	removed := int64(l.RemoveMatching(func(v []byte) bool { return string(v) == target }, int(min(uint64(limit), uint64(l.Len()))), count < 0))
	if removed > 0 {
		s.wrote(c.db, argv[1], l, config.NotifyList, "lrem")
	}
	c.w.Int(removed)
}

func cmdLTrim(s *Server, c *client, argv [][]byte) {
	start, ok1 := parseInt(argv[2])
	stop, ok2 := parseInt(argv[3])
	if !ok1 || !ok2 {
		s.addError(c, errNotInt)
		return
	}
	l, ok := s.getList(c, argv[1], forWrite)
	if !ok {
		return
	}
	if l == nil {
		c.w.OK()
		return
	}
	before := l.Len()
	a, b, ok := clampRange(start, stop, l.Len())
	if !ok {
		l.Trim(0, -1)
		for l.Len() > 0 {
			l.PopBack()
		}
	} else {
		l.Trim(a, b)
	}
	if l.Len() == before {
		// Redis announces and signals an LTRIM that kept everything, but counts no change.
		s.notify(config.NotifyList, "ltrim", argv[1], c.db)
		s.signalModified(c.db, argv[1])
	} else {
		s.wrote(c.db, argv[1], l, config.NotifyList, "ltrim")
	}
	c.w.OK()
}

func cmdLPos(s *Server, c *client, argv [][]byte) {
	rank, count, maxlen := int64(1), int64(-1), int64(0)
	for i := 3; i < len(argv); i += 2 {
		if i+1 >= len(argv) {
			s.addError(c, errSyntax)
			return
		}
		v, ok := parseInt(argv[i+1])
		if !ok {
			// Redis reads COUNT and MAXLEN with getPositiveLongFromObjectOrReply, whose one
			// message covers both a non-integer and a negative value.
			switch {
			case resp.EqualFold(argv[i], "count"):
				s.addError(c, "ERR COUNT can't be negative")
			case resp.EqualFold(argv[i], "maxlen"):
				s.addError(c, "ERR MAXLEN can't be negative")
			default:
				s.addError(c, errNotInt)
			}
			return
		}
		switch {
		case resp.EqualFold(argv[i], "rank"):
			if v == -1<<63 { // its negation overflows: refused as Redis 7.2 refuses it
				s.addError(c, errRange)
				return
			}
			if v == 0 {
				s.addError(c, "ERR RANK can't be zero: use 1 to start from the first match, 2 from the second ... or use negative to start from the end of the list")
				return
			}
			rank = v
		case resp.EqualFold(argv[i], "count"):
			if v < 0 {
				s.addError(c, "ERR COUNT can't be negative")
				return
			}
			count = v
		case resp.EqualFold(argv[i], "maxlen"):
			if v < 0 {
				s.addError(c, "ERR MAXLEN can't be negative")
				return
			}
			maxlen = v
		default:
			s.addError(c, errSyntax)
			return
		}
	}
	l, ok := s.getList(c, argv[1], forRead)
	if !ok {
		return
	}
	var matches []int64
	if l != nil {
		n := l.Len()
		skip := rank
		if skip < 0 {
			skip = -skip
		}
		want := count
		if want == 0 {
			want = int64(n)
		}
		if want < 0 {
			want = 1
		}
		j := 0
		l.Walk(rank < 0, func(i int, v []byte) bool {
			if int64(len(matches)) >= want || (maxlen > 0 && int64(j) >= maxlen) {
				return false
			}
			j++
			if string(v) == string(argv[2]) {
				if skip > 1 {
					skip--
					return true
				}
				matches = append(matches, int64(i))
			}
			return true
		})
	}
	if count < 0 {
		if len(matches) == 0 {
			c.w.Null()
		} else {
			c.w.Int(matches[0])
		}
		return
	}
	c.w.Array(len(matches))
	for _, m := range matches {
		c.w.Int(m)
	}
}

// whereArg reads LEFT|RIGHT.
func (s *Server) whereArg(c *client, b []byte) (front bool, ok bool) {
	switch {
	case resp.EqualFold(b, "left"):
		return true, true
	case resp.EqualFold(b, "right"):
		return false, true
	}
	s.addError(c, errSyntax)
	return false, false
}

// lmove pops from src and pushes to dst; it returns false (and replies nothing) when src is
// missing.
func (s *Server) lmove(c *client, src, dst []byte, fromFront, toFront bool) (done bool) {
	db := s.dbs[c.db]
	sl, ok := s.getList(c, src, forWrite)
	if !ok {
		return true
	}
	if sl == nil {
		return false
	}
	// Check the destination's type before popping, so a WRONGTYPE loses nothing.
	if r, exists := s.lookupWrite(c, dst); exists && db.Type(r) != keyspace.TypeList {
		s.wrongType(c)
		return true
	}
	v := popOne(sl, fromFront)
	dl, _ := s.getList(c, dst, forCreate)
	if toFront {
		dl.PushFront(v)
	} else {
		dl.PushBack(v)
	}
	// Redis announces the push, then the pop, then the source's deletion.
	s.wrote(c.db, dst, dl, config.NotifyList, pushEvent(toFront))
	s.wrote(c.db, src, sl, config.NotifyList, popEvent(fromFront))
	c.w.Bulk(v)
	return true
}

func cmdLMove(s *Server, c *client, argv [][]byte) {
	from, ok1 := s.whereArg(c, argv[3])
	if !ok1 {
		return
	}
	to, ok2 := s.whereArg(c, argv[4])
	if !ok2 {
		return
	}
	if !s.lmove(c, argv[1], argv[2], from, to) {
		c.w.Null()
	}
}

func cmdRPopLPush(s *Server, c *client, argv [][]byte) {
	if !s.lmove(c, argv[1], argv[2], false, true) {
		c.w.Null()
	}
}

// bpopGeneric is BLPOP/BRPOP: pop from the first non-empty list, or block.
func bpopGeneric(s *Server, c *client, argv [][]byte, front bool) {
	deadline, ok := s.timeoutArg(c, argv[len(argv)-1])
	if !ok {
		return
	}
	keys := argv[1 : len(argv)-1]
	k, l, found, ok := firstExisting[*keyspace.List](s, c, keys, keyspace.TypeList)
	if !ok {
		return
	}
	if found {
		v := popOne(l, front)
		c.w.Array(2)
		c.w.Bulk(k)
		c.w.Bulk(v)
		s.wrote(c.db, k, l, config.NotifyList, popEvent(front))
		return
	}
	if c.flags&flagExecuting != 0 {
		c.w.NullArray()
		return
	}
	s.block(c, s.commands[lowerASCII(string(argv[0]))], argv, keys, deadline, keyspace.TypeList)
}

func cmdBLPop(s *Server, c *client, argv [][]byte) { bpopGeneric(s, c, argv, true) }
func cmdBRPop(s *Server, c *client, argv [][]byte) { bpopGeneric(s, c, argv, false) }

func blmoveGeneric(s *Server, c *client, argv [][]byte, src, dst []byte, from, to bool, timeout []byte) {
	deadline, ok := s.timeoutArg(c, timeout)
	if !ok {
		return
	}
	if s.lmove(c, src, dst, from, to) {
		return
	}
	if c.flags&flagExecuting != 0 {
		c.w.Null()
		return
	}
	s.block(c, s.commands[lowerASCII(string(argv[0]))], argv, [][]byte{src}, deadline, keyspace.TypeList)
}

func cmdBLMove(s *Server, c *client, argv [][]byte) {
	from, ok1 := s.whereArg(c, argv[3])
	if !ok1 {
		return
	}
	to, ok2 := s.whereArg(c, argv[4])
	if !ok2 {
		return
	}
	blmoveGeneric(s, c, argv, argv[1], argv[2], from, to, argv[5])
}

func cmdBRPopLPush(s *Server, c *client, argv [][]byte) {
	blmoveGeneric(s, c, argv, argv[1], argv[2], false, true, argv[3])
}

// listCommands registers this file's commands (see table.go).
var listCommands = []commandSpec{
	{name: "lpush", h: cmdLPush},
	{name: "rpush", h: cmdRPush},
	{name: "lpushx", h: cmdLPushX},
	{name: "rpushx", h: cmdRPushX},
	{name: "lpop", h: cmdLPop},
	{name: "rpop", h: cmdRPop},
	{name: "llen", h: cmdLLen},
	{name: "lrange", h: cmdLRange},
	{name: "lindex", h: cmdLIndex},
	{name: "lset", h: cmdLSet},
	{name: "linsert", h: cmdLInsert},
	{name: "lrem", h: cmdLRem},
	{name: "ltrim", h: cmdLTrim},
	{name: "lpos", h: cmdLPos},
	{name: "lmove", h: cmdLMove},
	{name: "rpoplpush", h: cmdRPopLPush},
	{name: "blpop", h: cmdBLPop},
	{name: "brpop", h: cmdBRPop},
	{name: "blmove", h: cmdBLMove},
	{name: "brpoplpush", h: cmdBRPopLPush},
}
