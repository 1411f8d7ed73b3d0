package engine

import (
	"math/rand/v2"
	"sort"

	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/glob"
	"github.com/iocache/iocache/server/keyspace"
	"github.com/iocache/iocache/server/resp"
)

func cmdSAdd(s *Server, c *client, argv [][]byte) {
	st, ok := s.getSet(c, argv[1], forCreate)
	if !ok {
		return
	}
	n := st.AddAll(argv[2:])
	if n > 0 { // Redis signals an unchanged set to nobody (dirty, WATCH, tracking)
		s.wrote(c.db, argv[1], st, config.NotifySet, "sadd")
	}
	c.w.Int(int64(n))
}

func cmdSRem(s *Server, c *client, argv [][]byte) {
	st, ok := s.getSet(c, argv[1], forWrite)
	if !ok {
		return
	}
	if st == nil {
		c.w.Int(0)
		return
	}
	s.removeMembers(c, argv[1], st, argv[2:], st.Remove, config.NotifySet, "srem")
}

func writeMembers(c *client, members []string) {
	c.w.Set(len(members))
	for _, m := range members {
		c.w.BulkString(m)
	}
}

// writeSet replies with every member of st.
func writeSet(c *client, st *keyspace.Set) {
	c.w.Set(st.Len())
	st.Each(func(m []byte) bool { c.w.Bulk(m); return true })
}

func cmdSMembers(s *Server, c *client, argv [][]byte) {
	st, ok := s.getSet(c, argv[1], forRead)
	if !ok {
		return
	}
	if st == nil {
		c.w.Set(0)
		return
	}
	writeSet(c, st)
}

func cmdSIsMember(s *Server, c *client, argv [][]byte) {
	st, ok := s.getSet(c, argv[1], forRead)
	if !ok {
		return
	}
	if st != nil && st.Has(argv[2]) {
		c.w.Int(1)
		return
	}
	c.w.Int(0)
}

func cmdSMIsMember(s *Server, c *client, argv [][]byte) {
	st, ok := s.getSet(c, argv[1], forRead)
	if !ok {
		return
	}
	c.w.Array(len(argv) - 2)
	for _, m := range argv[2:] {
		if st != nil && st.Has(m) {
			c.w.Int(1)
		} else {
			c.w.Int(0)
		}
	}
}

func cmdSCard(s *Server, c *client, argv [][]byte) {
	cardinality(s, c, argv[1], keyspace.TypeSet, keyspace.NewSet)
}

var setRand = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))

func cmdSPop(s *Server, c *client, argv [][]byte) {
	if len(argv) > 3 {
		s.addError(c, errSyntax)
		return
	}
	hasCount := len(argv) == 3
	count := int64(1)
	if hasCount {
		v, ok := parseInt(argv[2])
		if !ok || v < 0 {
			s.addError(c, "ERR value is out of range, must be positive")
			return
		}
		count = v
	}
	st, ok := s.getSet(c, argv[1], forWrite)
	if !ok {
		return
	}
	if st == nil {
		if hasCount {
			c.w.Set(0)
		} else {
			c.w.Null()
		}
		return
	}
	// A replica must remove what was drawn here: SPOP propagates as SREMs of the members, or as
	// DEL when the count takes the whole set, as in Redis 7.0.
	feeding := s.propagating
	if feeding {
		s.replacePropagation()
	}
	if !hasCount {
		m := st.Pop(setRand)
		c.w.Bulk(m)
		if feeding {
			s.propagateStrings(c.db, "SREM", string(argv[1]), string(m))
		}
	} else {
		whole := count >= int64(st.Len())
		if whole {
			count = int64(st.Len())
			if feeding && count > 0 {
				s.alsoPropagate(c.db, bDEL, argv[1])
			}
		}
		c.w.Set(int(count))
		for i := int64(0); i < count; i++ {
			m := st.Pop(setRand)
			c.w.Bulk(m)
			if feeding && !whole {
				s.propagateStrings(c.db, "SREM", string(argv[1]), string(m))
			}
		}
		if count == 0 {
			return // SPOP key 0 changed nothing: Redis announces and signals nothing
		}
	}
	s.wrote(c.db, argv[1], st, config.NotifySet, "spop")
}

func cmdSRandMember(s *Server, c *client, argv [][]byte) {
	if len(argv) > 3 {
		s.addError(c, errSyntax)
		return
	}
	hasCount := len(argv) == 3
	var count int64
	if hasCount {
		var ok bool
		if count, ok = s.rangedCount(c, argv[2]); !ok {
			return
		}
	}
	st, ok := s.getSet(c, argv[1], forRead)
	if !ok {
		return
	}
	if st == nil {
		if hasCount {
			c.w.EmptyArray()
		} else {
			c.w.Null()
		}
		return
	}
	var buf [20]byte // an intset's member is formatted here
	if !hasCount {
		c.w.Bulk(st.Random(setRand, buf[:0]))
		return
	}
	size := st.Len()
	if count < 0 {
		// Repeats allowed: the reply grows with the count, not with the set.
		n := -count
		avg := max(st.Bytes()/int64(size)-48, 0)
		if !s.replyFits(c, n, bulkReplySize(avg)) {
			return
		}
		c.w.Array(int(n))
		for i := int64(0); i < n; i++ {
			c.w.Bulk(st.Random(setRand, buf[:0]))
		}
		return
	}
	if count >= int64(size) {
		c.w.Array(size)
		st.Each(func(m []byte) bool { c.w.Bulk(m); return true })
		return
	}
	c.w.Array(int(count))
	sampleDistinct(size, int(count), setRand, func(i int) { c.w.Bulk(st.AppendAt(buf[:0], i)) })
}

func cmdSMove(s *Server, c *client, argv [][]byte) {
	src, ok := s.getSet(c, argv[1], forWrite)
	if !ok {
		return
	}
	if src == nil {
		c.w.Int(0) // Redis answers a missing source before looking at the destination's type
		return
	}
	db := s.dbs[c.db]
	if r, exists := s.lookupWrite(c, argv[2]); exists && db.Type(r) != keyspace.TypeSet {
		s.wrongType(c)
		return
	}
	if src == nil || !src.Has(argv[3]) {
		c.w.Int(0)
		return
	}
	if string(argv[1]) == string(argv[2]) {
		c.w.Int(1)
		return
	}
	src.Remove(argv[3])
	s.wrote(c.db, argv[1], src, config.NotifySet, "srem")
	dst, _ := s.getSet(c, argv[2], forCreate)
	// The destination changed only if it did not hold the member yet: Redis signals it (WATCH,
	// tracking) only then.
	if dst.Add(argv[3]) {
		s.wrote(c.db, argv[2], dst, config.NotifySet, "sadd")
	}
	c.w.Int(1)
}

// setOp computes SINTER/SUNION/SDIFF over keys; ok is false after a WRONGTYPE reply.
func (s *Server) setOp(c *client, keys [][]byte, op string) ([]string, bool) {
	sets := make([]*keyspace.Set, len(keys))
	for i, k := range keys {
		st, ok := s.getSet(c, k, forRead)
		if !ok {
			return nil, false
		}
		sets[i] = st
	}
	var out []string
	switch op {
	case "inter":
		for _, st := range sets {
			if st == nil {
				return nil, true
			}
		}
		sort.Slice(sets, func(i, j int) bool { return sets[i].Len() < sets[j].Len() })
		sets[0].Each(func(m []byte) bool {
			for _, st := range sets[1:] {
				if !st.Has(m) {
					return true
				}
			}
			out = append(out, string(m))
			return true
		})
	case "union":
		seen := map[string]bool{}
		for _, st := range sets {
			if st == nil {
				continue
			}
			st.Each(func(m []byte) bool {
				if !seen[string(m)] {
					seen[string(m)] = true
					out = append(out, string(m))
				}
				return true
			})
		}
	case "diff":
		if sets[0] == nil {
			return nil, true
		}
		sets[0].Each(func(m []byte) bool {
			for _, st := range sets[1:] {
				if st != nil && st.Has(m) {
					return true
				}
			}
			out = append(out, string(m))
			return true
		})
	}
	return out, true
}

func setOpReply(s *Server, c *client, argv [][]byte, op string) {
	out, ok := s.setOp(c, argv[1:], op)
	if ok {
		writeMembers(c, out)
	}
}

func setOpStore(s *Server, c *client, argv [][]byte, op string) {
	out, ok := s.setOp(c, argv[2:], op)
	if !ok {
		return
	}
	db := s.dbs[c.db]
	r, existed := s.lookupWrite(c, argv[1])
	if existed {
		s.deleteKey(db, r)
	}
	if len(out) > 0 {
		st := keyspace.NewSet()
		for _, m := range out {
			st.Add([]byte(m))
		}
		s.storeObject(db, argv[1], keyspace.TypeSet, st, existed)
	}
	s.stored(c, config.NotifySet, "s"+op+"store", argv[1], len(out) > 0, existed)
	c.w.Int(int64(len(out)))
}

func cmdSInter(s *Server, c *client, argv [][]byte)      { setOpReply(s, c, argv, "inter") }
func cmdSUnion(s *Server, c *client, argv [][]byte)      { setOpReply(s, c, argv, "union") }
func cmdSDiff(s *Server, c *client, argv [][]byte)       { setOpReply(s, c, argv, "diff") }
func cmdSInterStore(s *Server, c *client, argv [][]byte) { setOpStore(s, c, argv, "inter") }
func cmdSUnionStore(s *Server, c *client, argv [][]byte) { setOpStore(s, c, argv, "union") }
func cmdSDiffStore(s *Server, c *client, argv [][]byte)  { setOpStore(s, c, argv, "diff") }

func cmdSInterCard(s *Server, c *client, argv [][]byte) {
	n, ok := parseInt(argv[1])
	if !ok || n <= 0 {
		s.addError(c, "ERR numkeys should be greater than 0")
		return
	}
	if int64(len(argv)-2) < n {
		s.addError(c, "ERR Number of keys can't be greater than number of args")
		return
	}
	limit := int64(0)
	rest := argv[2+n:]
	if len(rest) > 0 {
		if len(rest) != 2 || !resp.EqualFold(rest[0], "limit") {
			s.addError(c, errSyntax)
			return
		}
		v, ok := parseInt(rest[1])
		if !ok || v < 0 {
			s.addError(c, "ERR LIMIT can't be negative")
			return
		}
		limit = v
	}
	out, ok := s.setOp(c, argv[2:2+n], "inter")
	if !ok {
		return
	}
	count := int64(len(out))
	if limit > 0 && count > limit {
		count = limit
	}
	c.w.Int(count)
}

func cmdSScan(s *Server, c *client, argv [][]byte) {
	a, ok := s.parseScan(c, argv, 2, false)
	if !ok {
		return
	}
	st, ok := s.getSet(c, argv[1], forRead)
	if !ok {
		return
	}
	c.w.Array(2)
	if st == nil {
		c.w.BulkString("0")
		c.w.EmptyArray()
		return
	}
	// An intset is returned whole in one call, as Redis returns its compact encodings.
	var out [][]byte
	next := scanPositions(st.Len(), a, st.Encoding() == "intset", func(pos int) {
		m := st.AppendAt(nil, pos)
		if a.match == nil || glob.Match(a.match, m, false) {
			out = append(out, m)
		}
	})
	c.w.BulkInt(next)
	c.w.Array(len(out))
	for _, m := range out {
		c.w.Bulk(m)
	}
}

// scanPositions walks a collection's positions for SSCAN, HSCAN and ZSCAN from the cursor, up
// to COUNT of them, and returns the next cursor (0 when done). A compact collection (whole) is
// walked entirely in one call, as Redis returns its listpacks and intsets. A large one is walked
// from the end, like DB.Scan: removals swap the last element into the hole, so every element
// present for the whole scan is returned at least once.
func scanPositions(size int, a scanArgs, whole bool, visit func(pos int)) int64 {
	pos, count := size-1, a.count
	if whole {
		count = size
	} else if a.cursor != 0 && int(a.cursor)-1 < pos {
		pos = int(a.cursor) - 1
	}
	for n := 0; pos >= 0 && n < count; pos, n = pos-1, n+1 {
		visit(pos)
	}
	if pos >= 0 {
		return int64(pos) + 1
	}
	return 0
}

// setCommands registers this file's commands (see table.go).
var setCommands = []commandSpec{
	{name: "sadd", h: cmdSAdd},
	{name: "srem", h: cmdSRem},
	{name: "smembers", h: cmdSMembers},
	{name: "sismember", h: cmdSIsMember},
	{name: "smismember", h: cmdSMIsMember},
	{name: "scard", h: cmdSCard},
	{name: "spop", h: cmdSPop},
	{name: "srandmember", h: cmdSRandMember},
	{name: "smove", h: cmdSMove},
	{name: "sinter", h: cmdSInter},
	{name: "sunion", h: cmdSUnion},
	{name: "sdiff", h: cmdSDiff},
	{name: "sinterstore", h: cmdSInterStore},
	{name: "sunionstore", h: cmdSUnionStore},
	{name: "sdiffstore", h: cmdSDiffStore},
	{name: "sintercard", h: cmdSInterCard},
	{name: "sscan", h: cmdSScan},
}
