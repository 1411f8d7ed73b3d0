package engine

import (
	"math"

	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/glob"
	"github.com/iocache/iocache/server/keyspace"
	"github.com/iocache/iocache/server/resp"
)

func cmdZAdd(s *Server, c *client, argv [][]byte) {
	var nx, xx, gt, lt, ch, incr bool
	i := 2
	for ; i < len(argv); i++ {
		a := argv[i]
		switch {
		case resp.EqualFold(a, "nx"):
			nx = true
		case resp.EqualFold(a, "xx"):
			xx = true
		case resp.EqualFold(a, "gt"):
			gt = true
		case resp.EqualFold(a, "lt"):
			lt = true
		case resp.EqualFold(a, "ch"):
			ch = true
		case resp.EqualFold(a, "incr"):
			incr = true
		default:
			goto pairs
		}
	}
pairs:
	rest := argv[i:]
	if len(rest) == 0 || len(rest)%2 != 0 {
		s.addError(c, errSyntax)
		return
	}
	if nx && xx {
		s.addError(c, "ERR XX and NX options at the same time are not compatible")
		return
	}
	if (gt && nx) || (lt && nx) || (gt && lt) {
		s.addError(c, "ERR GT, LT, and/or NX options at the same time are not compatible")
		return
	}
	if incr && len(rest) != 2 {
		s.addError(c, "ERR INCR option supports a single increment-element pair")
		return
	}
	scores := make([]float64, len(rest)/2)
	for j := range scores {
		f, ok := parseFloat(rest[2*j])
		if !ok {
			s.addError(c, errNotFloat)
			return
		}
		scores[j] = f
	}
	mode := forCreate
	if xx {
		mode = forWrite // XX never creates
	}
	// A new set starts in its large form when its first member is already too long for the
	// compact one, as in Redis 7.0's ZADD.
	var create func() *keyspace.ZSet
	if !keyspace.ZSetStartsCompact(len(rest[1])) {
		create = func() *keyspace.ZSet { return keyspace.NewZSetFor(0, len(rest[1])) }
	}
	z, ok := getObject(s, c, argv[1], keyspace.TypeZSet, mode, create)
	if !ok {
		return
	}
	if z == nil {
		if incr {
			c.w.Null()
		} else {
			c.w.Int(0)
		}
		return
	}
	if !xx {
		z.Reserve(rest, scores)
	}
	added, changed := 0, 0
	var incrResult float64
	incrApplied := false
	for j, score := range scores {
		m := rest[2*j+1]
		cur, exists := z.Score(m)
		if (nx && exists) || (xx && !exists) {
			continue
		}
		newScore := score
		if incr && exists {
			newScore = cur + score
			if math.IsNaN(newScore) {
				s.addError(c, "ERR resulting score is not a number (NaN)")
				return
			}
		}
		if exists && ((gt && newScore <= cur) || (lt && newScore >= cur)) {
			continue
		}
		if !exists {
			z.Add(m, newScore)
			added++
		} else if newScore != cur {
			z.Add(m, newScore)
			changed++
		}
		incrResult, incrApplied = newScore, true
	}
	if added+changed > 0 {
		event := "zadd"
		if incr {
			event = "zincr"
		}
		s.wrote(c.db, argv[1], z, config.NotifyZSet, event)
	}
	if incr {
		if incrApplied {
			c.w.Double(incrResult)
		} else {
			c.w.Null()
		}
		return
	}
	if ch {
		c.w.Int(int64(added + changed))
	} else {
		c.w.Int(int64(added))
	}
}

func cmdZIncrBy(s *Server, c *client, argv [][]byte) {
	incr, ok := parseFloat(argv[2])
	if !ok {
		s.addError(c, errNotFloat)
		return
	}
	z, ok := s.getZSet(c, argv[1], forCreate)
	if !ok {
		return
	}
	cur, exists := z.Score(argv[3])
	nv := cur + incr
	if math.IsNaN(nv) {
		s.addError(c, "ERR resulting score is not a number (NaN)")
		return
	}
	// As ZADD INCR in Redis: a score that does not change (an infinite one) is no write.
	if !exists || nv != cur {
		z.Add(argv[3], nv)
		s.wrote(c.db, argv[1], nil, config.NotifyZSet, "zincr")
	}
	c.w.Double(nv)
}

func cmdZRem(s *Server, c *client, argv [][]byte) {
	z, ok := s.getZSet(c, argv[1], forWrite)
	if !ok {
		return
	}
	if z == nil {
		c.w.Int(0)
		return
	}
	s.removeMembers(c, argv[1], z, argv[2:], z.Remove, config.NotifyZSet, "zrem")
}

func cmdZCard(s *Server, c *client, argv [][]byte) {
	cardinality(s, c, argv[1], keyspace.TypeZSet, keyspace.NewZSet)
}

func cmdZScore(s *Server, c *client, argv [][]byte) {
	z, ok := s.getZSet(c, argv[1], forRead)
	if !ok {
		return
	}
	if z != nil {
		if sc, found := z.Score(argv[2]); found {
			c.w.Double(sc)
			return
		}
	}
	c.w.Null()
}

func cmdZMScore(s *Server, c *client, argv [][]byte) {
	z, ok := s.getZSet(c, argv[1], forRead)
	if !ok {
		return
	}
	c.w.Array(len(argv) - 2)
	for _, m := range argv[2:] {
		if z != nil {
			if sc, found := z.Score(m); found {
				c.w.Double(sc)
				continue
			}
		}
		c.w.Null()
	}
}

func rankGeneric(s *Server, c *client, argv [][]byte, rev bool) {
	withScore := false
	if len(argv) == 4 {
		if !resp.EqualFold(argv[3], "withscore") {
			s.addError(c, errSyntax)
			return
		}
		withScore = true
	} else if len(argv) > 4 {
		s.addError(c, errSyntax)
		return
	}
	z, ok := s.getZSet(c, argv[1], forRead)
	if !ok {
		return
	}
	var rank int
	found := false
	if z != nil {
		rank, found = z.Rank(argv[2])
	}
	if !found {
		if withScore {
			c.w.NullArray()
		} else {
			c.w.Null()
		}
		return
	}
	if rev {
		rank = z.Len() - 1 - rank
	}
	if withScore {
		sc, _ := z.Score(argv[2])
		c.w.Array(2)
		c.w.Int(int64(rank))
		c.w.Double(sc)
		return
	}
	c.w.Int(int64(rank))
}

func cmdZRank(s *Server, c *client, argv [][]byte)    { rankGeneric(s, c, argv, false) }
func cmdZRevRank(s *Server, c *client, argv [][]byte) { rankGeneric(s, c, argv, true) }

// parseScoreRange reads "1.5", "(1.5", "-inf", "+inf".
func parseScoreBound(b []byte) (float64, bool, bool) {
	open := false
	if len(b) > 0 && b[0] == '(' {
		open = true
		b = b[1:]
	}
	f, ok := parseFloat(b)
	return f, open, ok
}

func (s *Server) scoreRange(c *client, min, max []byte) (keyspace.ScoreRange, bool) {
	var r keyspace.ScoreRange
	var ok1, ok2 bool
	r.Min, r.MinOpen, ok1 = parseScoreBound(min)
	r.Max, r.MaxOpen, ok2 = parseScoreBound(max)
	if !ok1 || !ok2 {
		s.addError(c, "ERR min or max is not a float")
		return r, false
	}
	return r, true
}

func parseLexBound(b []byte) (val string, open, inf, ok bool) {
	if len(b) == 0 {
		return "", false, false, false
	}
	switch b[0] {
	case '+', '-':
		if len(b) != 1 {
			return "", false, false, false
		}
		return string(b), false, true, true
	case '(':
		return string(b[1:]), true, false, true
	case '[':
		return string(b[1:]), false, false, true
	}
	return "", false, false, false
}

func (s *Server) lexRange(c *client, min, max []byte) (keyspace.LexRange, bool) {
	var r keyspace.LexRange
	mn, mo, minInf, ok1 := parseLexBound(min)
	mx, xo, maxInf, ok2 := parseLexBound(max)
	if !ok1 || !ok2 {
		s.addError(c, "ERR min or max not valid string range item")
		return r, false
	}
	r.Min, r.MinOpen, r.Max, r.MaxOpen = mn, mo, mx, xo
	if minInf {
		if mn == "+" {
			r.MinPosInf = true
		} else {
			r.MinInf = true
		}
	}
	if maxInf {
		if mx == "-" {
			r.MaxNegInf = true
		} else {
			r.MaxInf = true
		}
	}
	return r, true
}

func cmdZCount(s *Server, c *client, argv [][]byte) {
	r, ok := s.scoreRange(c, argv[2], argv[3])
	if !ok {
		return
	}
	z, ok := s.getZSet(c, argv[1], forRead)
	if !ok {
		return
	}
	if z == nil {
		c.w.Int(0)
		return
	}
	c.w.Int(int64(z.CountInRange(r)))
}

func cmdZLexCount(s *Server, c *client, argv [][]byte) {
	r, ok := s.lexRange(c, argv[2], argv[3])
	if !ok {
		return
	}
	z, ok := s.getZSet(c, argv[1], forRead)
	if !ok {
		return
	}
	n := 0
	if z != nil {
		z.RangeByLex(r, false, func(keyspace.Entry) bool { n++; return true })
	}
	c.w.Int(int64(n))
}

// zrangeSpec is a parsed ZRANGE-family request.
type zrangeSpec struct {
	by          string // "rank", "score", "lex"
	rev         bool
	withScores  bool
	hasLimit    bool
	offset      int64
	count       int64
	start, stop []byte
}

// zrangeRun replies with a ZRANGE-family range.
func (s *Server) zrangeRun(c *client, key []byte, sp zrangeSpec) {
	if entries, ok := s.zrangeCollect(c, key, sp); ok {
		writeEntries(c, entries, sp.withScores)
	}
}

// zrangeCollect parses the range first, then looks the key up (Redis reports a bad range before
// a wrong type), and returns the entries in range.
func (s *Server) zrangeCollect(c *client, key []byte, sp zrangeSpec) ([]keyspace.Entry, bool) {
	var rankLo, rankHi int64
	var scores keyspace.ScoreRange
	var lexes keyspace.LexRange
	lo, hi := sp.start, sp.stop
	if sp.rev && sp.by != "rank" {
		lo, hi = hi, lo
	}
	var ok bool
	switch sp.by {
	case "rank":
		a, ok1 := parseInt(sp.start)
		b, ok2 := parseInt(sp.stop)
		if !ok1 || !ok2 {
			s.addError(c, errNotInt)
			return nil, false
		}
		rankLo, rankHi = a, b
	case "score":
		if scores, ok = s.scoreRange(c, lo, hi); !ok {
			return nil, false
		}
	case "lex":
		if lexes, ok = s.lexRange(c, lo, hi); !ok {
			return nil, false
		}
	}
	z, ok := s.getZSet(c, key, forRead)
	if !ok {
		return nil, false
	}
	var entries []keyspace.Entry
	collect := func(e keyspace.Entry) bool {
		if sp.hasLimit {
			if sp.offset > 0 {
				sp.offset--
				return true
			}
			if sp.count == 0 {
				return false
			}
			if sp.count > 0 {
				sp.count--
			}
		}
		entries = append(entries, e)
		return true
	}
	if z != nil {
		switch sp.by {
		case "rank":
			if lo, hi, ok := clampRange(rankLo, rankHi, z.Len()); ok {
				z.RangeByRank(lo, hi, sp.rev, collect)
			}
		case "score":
			z.RangeByScore(scores, sp.rev, collect)
		case "lex":
			z.RangeByLex(lexes, sp.rev, collect)
		}
	}
	return entries, true
}

func writeEntries(c *client, entries []keyspace.Entry, withScores bool) {
	if withScores && c.w.RESP3 {
		c.w.Array(len(entries))
		for _, e := range entries {
			c.w.Array(2)
			c.w.Bulk(e.Member)
			c.w.Double(e.Score)
		}
		return
	}
	n := len(entries)
	if withScores {
		n *= 2
	}
	c.w.Array(n)
	for _, e := range entries {
		c.w.Bulk(e.Member)
		if withScores {
			c.w.Double(e.Score)
		}
	}
}

// parseZRangeOptions reads REV, BYSCORE, BYLEX, LIMIT, WITHSCORES after the range.
func (s *Server) parseZRangeOptions(c *client, opts [][]byte, sp *zrangeSpec, allowBy bool) bool {
	for i := 0; i < len(opts); i++ {
		a := opts[i]
		switch {
		case resp.EqualFold(a, "withscores"):
			sp.withScores = true
		case resp.EqualFold(a, "rev") && allowBy:
			sp.rev = true
		case resp.EqualFold(a, "byscore") && allowBy:
			sp.by = "score"
		case resp.EqualFold(a, "bylex") && allowBy:
			sp.by = "lex"
		case resp.EqualFold(a, "limit") && i+2 < len(opts):
			off, ok1 := parseInt(opts[i+1])
			cnt, ok2 := parseInt(opts[i+2])
			if !ok1 || !ok2 {
				s.addError(c, errNotInt)
				return false
			}
			sp.hasLimit, sp.offset, sp.count = true, off, cnt
			i += 2
		default:
			s.addError(c, errSyntax)
			return false
		}
	}
	if sp.hasLimit && sp.by == "rank" {
		s.addError(c, "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX")
		return false
	}
	if sp.withScores && sp.by == "lex" {
		s.addError(c, "ERR syntax error, WITHSCORES not supported in combination with BYLEX")
		return false
	}
	if sp.hasLimit && sp.offset < 0 {
		sp.count = 0
	}
	return true
}

func cmdZRange(s *Server, c *client, argv [][]byte) {
	sp := zrangeSpec{by: "rank", start: argv[2], stop: argv[3]}
	if !s.parseZRangeOptions(c, argv[4:], &sp, true) {
		return
	}
	s.zrangeRun(c, argv[1], sp)
}

func zrangeLegacy(s *Server, c *client, argv [][]byte, by string, rev bool) {
	sp := zrangeSpec{by: by, rev: rev, start: argv[2], stop: argv[3]}
	if !s.parseZRangeOptions(c, argv[4:], &sp, false) {
		return
	}
	if rev && by != "rank" {
		// ZREVRANGEBYSCORE key max min: zrangeRun swaps for rev, so pass them as written.
		sp.start, sp.stop = argv[2], argv[3]
	}
	s.zrangeRun(c, argv[1], sp)
}

func cmdZRevRange(s *Server, c *client, argv [][]byte)     { zrangeLegacy(s, c, argv, "rank", true) }
func cmdZRangeByScore(s *Server, c *client, argv [][]byte) { zrangeLegacy(s, c, argv, "score", false) }
func cmdZRevRangeByScore(s *Server, c *client, argv [][]byte) {
	zrangeLegacy(s, c, argv, "score", true)
}
func cmdZRangeByLex(s *Server, c *client, argv [][]byte)    { zrangeLegacy(s, c, argv, "lex", false) }
func cmdZRevRangeByLex(s *Server, c *client, argv [][]byte) { zrangeLegacy(s, c, argv, "lex", true) }

func zpopGeneric(s *Server, c *client, argv [][]byte, max bool) {
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
	z, ok := s.getZSet(c, argv[1], forWrite)
	if !ok {
		return
	}
	var entries []keyspace.Entry
	if z != nil {
		for i := int64(0); i < count && z.Len() > 0; i++ {
			e, _ := z.First(max)
			e.Member = append([]byte(nil), e.Member...) // the removal may move the bytes it views
			z.Remove(e.Member)
			entries = append(entries, e)
		}
		if len(entries) > 0 {
			s.wrote(c.db, argv[1], z, config.NotifyZSet, zpopEvent(max))
		}
	}
	if !hasCount {
		c.w.Array(2 * len(entries))
		for _, e := range entries {
			c.w.Bulk(e.Member)
			c.w.Double(e.Score)
		}
		return
	}
	writeEntries(c, entries, true)
}

func zpopEvent(max bool) string {
	if max {
		return "zpopmax"
	}
	return "zpopmin"
}

func cmdZPopMin(s *Server, c *client, argv [][]byte) { zpopGeneric(s, c, argv, false) }
func cmdZPopMax(s *Server, c *client, argv [][]byte) { zpopGeneric(s, c, argv, true) }

func bzpopGeneric(s *Server, c *client, argv [][]byte, max bool) {
	deadline, ok := s.timeoutArg(c, argv[len(argv)-1])
	if !ok {
		return
	}
	keys := argv[1 : len(argv)-1]
	k, z, found, ok := firstExisting[*keyspace.ZSet](s, c, keys, keyspace.TypeZSet)
	if !ok {
		return
	}
	if found {
		e, _ := z.First(max)
		c.w.Array(3)
		c.w.Bulk(k)
		c.w.Bulk(e.Member) // before the removal, which may move the bytes e.Member views
		c.w.Double(e.Score)
		z.Remove(e.Member)
		s.wrote(c.db, k, z, config.NotifyZSet, zpopEvent(max))
		return
	}
	if c.flags&flagExecuting != 0 {
		c.w.NullArray()
		return
	}
	s.block(c, s.commands[lowerASCII(string(argv[0]))], argv, keys, deadline, keyspace.TypeZSet)
}

func cmdBZPopMin(s *Server, c *client, argv [][]byte) { bzpopGeneric(s, c, argv, false) }
func cmdBZPopMax(s *Server, c *client, argv [][]byte) { bzpopGeneric(s, c, argv, true) }

func cmdZRemRangeByRank(s *Server, c *client, argv [][]byte) {
	a, ok1 := parseInt(argv[2])
	b, ok2 := parseInt(argv[3])
	if !ok1 || !ok2 {
		s.addError(c, errNotInt)
		return
	}
	z, ok := s.getZSet(c, argv[1], forWrite)
	if !ok {
		return
	}
	if z == nil {
		c.w.Int(0)
		return
	}
	var victims []string
	if lo, hi, ok := clampRange(a, b, z.Len()); ok {
		z.RangeByRank(lo, hi, false, func(e keyspace.Entry) bool { victims = append(victims, string(e.Member)); return true })
	}
	s.zremMembers(c, argv[1], z, victims, "zremrangebyrank")
}

func (s *Server) zremMembers(c *client, key []byte, z *keyspace.ZSet, victims []string, event string) {
	for _, m := range victims {
		z.Remove([]byte(m))
	}
	if len(victims) > 0 {
		s.wrote(c.db, key, z, config.NotifyZSet, event)
	}
	c.w.Int(int64(len(victims)))
}

func cmdZRemRangeByScore(s *Server, c *client, argv [][]byte) {
	r, ok := s.scoreRange(c, argv[2], argv[3])
	if !ok {
		return
	}
	z, ok := s.getZSet(c, argv[1], forWrite)
	if !ok {
		return
	}
	if z == nil {
		c.w.Int(0)
		return
	}
	var victims []string
	z.RangeByScore(r, false, func(e keyspace.Entry) bool { victims = append(victims, string(e.Member)); return true })
	s.zremMembers(c, argv[1], z, victims, "zremrangebyscore")
}

func cmdZRemRangeByLex(s *Server, c *client, argv [][]byte) {
	r, ok := s.lexRange(c, argv[2], argv[3])
	if !ok {
		return
	}
	z, ok := s.getZSet(c, argv[1], forWrite)
	if !ok {
		return
	}
	if z == nil {
		c.w.Int(0)
		return
	}
	var victims []string
	z.RangeByLex(r, false, func(e keyspace.Entry) bool { victims = append(victims, string(e.Member)); return true })
	s.zremMembers(c, argv[1], z, victims, "zremrangebylex")
}

func cmdZScan(s *Server, c *client, argv [][]byte) {
	a, ok := s.parseScan(c, argv, 2, false)
	if !ok {
		return
	}
	z, ok := s.getZSet(c, argv[1], forRead)
	if !ok {
		return
	}
	c.w.Array(2)
	var entries []keyspace.Entry
	add := func(e keyspace.Entry) {
		if a.match == nil || glob.Match(a.match, e.Member, false) {
			entries = append(entries, e)
		}
	}
	switch {
	case z == nil:
		c.w.BulkString("0")
	case z.Encoding() == "listpack":
		// A compact set is returned whole, a large one in pages of COUNT members, as in Redis.
		c.w.BulkString("0")
		z.Each(func(e keyspace.Entry) bool { add(e); return true })
	default:
		c.w.BulkInt(scanPositions(z.Len(), a, false, func(pos int) { add(z.ScanAt(pos)) }))
	}
	c.w.Array(len(entries) * 2)
	for _, e := range entries {
		c.w.Bulk(e.Member)
		c.w.Bulk(resp.AppendDouble(nil, e.Score))
	}
}

// cmdZRandMember picks random members as HRANDFIELD picks fields: one without a count, distinct
// ones for a positive count, repeats for a negative one, whose reply is bounded by replyFits.
func cmdZRandMember(s *Server, c *client, argv [][]byte) {
	count, hasCount, withScores, ok := s.randomPickArgs(c, argv, "withscores")
	if !ok {
		return
	}
	z, ok := s.getZSet(c, argv[1], forRead)
	if !ok {
		return
	}
	if z == nil {
		if hasCount {
			c.w.EmptyArray()
		} else {
			c.w.Null()
		}
		return
	}
	size := z.Len()
	if !hasCount {
		c.w.Bulk(z.At(setRand.IntN(size)).Member)
		return
	}
	per := bulkReplySize(z.PayloadBytes() / int64(size))
	if withScores {
		per += 4 + minBulkReply // the score, and RESP3's pair header
	}
	at := z.At
	if z.Encoding() == "listpack" {
		entries := z.Entries() // O(n) once, not per pick
		at = func(i int) keyspace.Entry { return entries[i] }
	}
	s.replyRandomPicks(c, count, randomPicks{size: size, with: withScores, perPick: per,
		emit: func(i int) {
			e := at(i)
			if withScores && c.w.RESP3 {
				c.w.Array(2)
			}
			c.w.Bulk(e.Member)
			if withScores {
				c.w.Double(e.Score)
			}
		},
		// The whole set highest score first, as Redis answers for a listpack-encoded one.
		wholeOrder: inReverse,
	})
}

// zsetCommands registers this file's commands (see table.go).
var zsetCommands = []commandSpec{
	{name: "zadd", h: cmdZAdd},
	{name: "zincrby", h: cmdZIncrBy},
	{name: "zrem", h: cmdZRem},
	{name: "zcard", h: cmdZCard},
	{name: "zscore", h: cmdZScore},
	{name: "zmscore", h: cmdZMScore},
	{name: "zrank", h: cmdZRank, meta: &commandMeta{-3, cmdReadonly | cmdFast, 1, 1, 1, "sorted-set", "Returns the index of a member in a sorted set ordered by ascending scores."}},        // Redis 7.2's WITHSCORE is accepted
	{name: "zrevrank", h: cmdZRevRank, meta: &commandMeta{-3, cmdReadonly | cmdFast, 1, 1, 1, "sorted-set", "Returns the index of a member in a sorted set ordered by descending scores."}}, // Redis 7.2's WITHSCORE is accepted
	{name: "zcount", h: cmdZCount},
	{name: "zlexcount", h: cmdZLexCount},
	{name: "zrange", h: cmdZRange},
	{name: "zrangebyscore", h: cmdZRangeByScore},
	{name: "zrevrangebyscore", h: cmdZRevRangeByScore},
	{name: "zrevrange", h: cmdZRevRange},
	{name: "zrangebylex", h: cmdZRangeByLex},
	{name: "zrevrangebylex", h: cmdZRevRangeByLex},
	{name: "zpopmin", h: cmdZPopMin},
	{name: "zpopmax", h: cmdZPopMax},
	{name: "bzpopmin", h: cmdBZPopMin},
	{name: "bzpopmax", h: cmdBZPopMax},
	{name: "zremrangebyrank", h: cmdZRemRangeByRank},
	{name: "zremrangebyscore", h: cmdZRemRangeByScore},
	{name: "zremrangebylex", h: cmdZRemRangeByLex},
	{name: "zrandmember", h: cmdZRandMember},
	{name: "zscan", h: cmdZScan},
}
