package engine

import (
	"math"
	"sort"

	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/keyspace"
	"github.com/iocache/iocache/server/resp"
)

// Sorted-set algebra: ZUNION, ZINTER, ZDIFF (and their STORE forms), ZINTERCARD and ZRANGESTORE.
// Inputs may be plain sets (every member scored 1). As in Redis 7.0 the input keys are looked up
// before the options are read, and sums run over the inputs from the smallest to the largest, so
// that floating-point results match Redis's to the last bit.

type zsetOp int

const (
	zopUnion zsetOp = iota
	zopInter
	zopDiff
)

type zsetInput struct {
	members map[string]float64
	weight  float64
}

// zsetAlgebra serves the six commands. numkeysAt is the index of numkeys; dest is the STORE
// destination (nil otherwise); cardOnly is ZINTERCARD.
func zsetAlgebra(s *Server, c *client, argv [][]byte, op zsetOp, numkeysAt int, dest []byte, cardOnly bool) {
	n, ok := s.intArg(c, argv[numkeysAt])
	if !ok {
		return
	}
	if n < 1 {
		s.addError(c, "ERR at least 1 input key is needed for '"+lowerASCII(string(argv[0]))+"' command")
		return
	}
	if n > int64(len(argv)-numkeysAt-1) {
		s.addError(c, errSyntax)
		return
	}
	db := s.dbs[c.db]
	inputs := make([]zsetInput, n)
	j := numkeysAt + 1
	for i := range inputs {
		in := zsetInput{members: map[string]float64{}, weight: 1}
		r, exists := s.lookupRead(c, argv[j]) // a read lookup even for STORE, as Redis 7.0 does
		if exists {
			switch db.Type(r) {
			case keyspace.TypeZSet:
				db.Obj(r).(*keyspace.ZSet).Each(func(e keyspace.Entry) bool { in.members[string(e.Member)] = e.Score; return true })
			case keyspace.TypeSet:
				db.Obj(r).(*keyspace.Set).Each(func(m []byte) bool { in.members[string(m)] = 1; return true })
			default:
				s.wrongType(c)
				return
			}
		}
		inputs[i] = in
		j++
	}
	agg := "sum"
	withScores := false
	limit := int64(0)
	for rem := len(argv) - j; rem > 0; rem = len(argv) - j {
		a := argv[j]
		switch {
		case op != zopDiff && !cardOnly && rem >= int(n)+1 && resp.EqualFold(a, "weights"):
			j++
			for i := range inputs {
				w, ok := parseFloat(argv[j])
				if !ok {
					s.addError(c, "ERR weight value is not a float")
					return
				}
				inputs[i].weight = w
				j++
			}
		case op != zopDiff && !cardOnly && rem >= 2 && resp.EqualFold(a, "aggregate"):
			switch v := argv[j+1]; {
			case resp.EqualFold(v, "sum"):
				agg = "sum"
			case resp.EqualFold(v, "min"):
				agg = "min"
			case resp.EqualFold(v, "max"):
				agg = "max"
			default:
				s.addError(c, errSyntax)
				return
			}
			j += 2
		case dest == nil && !cardOnly && resp.EqualFold(a, "withscores"):
			withScores = true
			j++
		case cardOnly && rem >= 2 && resp.EqualFold(a, "limit"):
			v, ok := parseInt(argv[j+1])
			if !ok || v < 0 { // one message for both, as Redis's getPositiveLongFromObjectOrReply
				s.addError(c, "ERR LIMIT can't be negative")
				return
			}
			limit = v
			j += 2
		default:
			s.addError(c, errSyntax)
			return
		}
	}
	result := combineZSets(inputs, op, agg, cardOnly, limit)
	switch {
	case cardOnly:
		c.w.Int(int64(len(result)))
	case dest != nil:
		r, existed := s.lookupWrite(c, dest)
		if existed {
			s.deleteKey(db, r)
		}
		if len(result) > 0 {
			z := keyspace.NewZSet()
			for m, sc := range result {
				z.Add([]byte(m), sc)
			}
			s.storeObject(db, dest, keyspace.TypeZSet, z, existed)
		}
		s.stored(c, config.NotifyZSet, lowerASCII(string(argv[0])), dest, len(result) > 0, existed)
		c.w.Int(int64(len(result)))
	default:
		z := keyspace.NewZSet()
		for m, sc := range result {
			z.Add([]byte(m), sc)
		}
		entries := make([]keyspace.Entry, 0, len(result))
		z.Each(func(e keyspace.Entry) bool { entries = append(entries, e); return true })
		writeEntries(c, entries, withScores)
	}
}

// combineZSets computes the union, intersection or difference. Union and intersection visit the
// inputs from the smallest as Redis does (it sorts them by cardinality first).
func combineZSets(inputs []zsetInput, op zsetOp, agg string, cardOnly bool, limit int64) map[string]float64 {
	weighted := func(in zsetInput, sc float64) float64 {
		v := sc * in.weight
		if math.IsNaN(v) {
			return 0
		}
		return v
	}
	// combine is Redis's zunionInterAggregate: C comparisons (a NaN b never replaces a) and a
	// SUM that turns NaN (inf + -inf) into 0.
	combine := func(a, b float64) float64 {
		switch agg {
		case "min":
			if b < a {
				return b
			}
			return a
		case "max":
			if b > a {
				return b
			}
			return a
		}
		v := a + b
		if math.IsNaN(v) {
			return 0
		}
		return v
	}
	result := map[string]float64{}
	if op == zopDiff {
		for m, sc := range inputs[0].members {
			found := false
			for _, in := range inputs[1:] {
				if _, ok := in.members[m]; ok {
					found = true
					break
				}
			}
			if !found {
				result[m] = sc
			}
		}
		return result
	}
	sorted := append([]zsetInput(nil), inputs...)
	sort.SliceStable(sorted, func(a, b int) bool { return len(sorted[a].members) < len(sorted[b].members) })
	if op == zopUnion {
		for _, in := range sorted {
			for m, sc := range in.members {
				v := weighted(in, sc)
				if cur, ok := result[m]; ok {
					result[m] = combine(cur, v)
				} else {
					result[m] = v
				}
			}
		}
		return result
	}
	for m, sc := range sorted[0].members {
		v := weighted(sorted[0], sc)
		in := true
		for _, other := range sorted[1:] {
			o, ok := other.members[m]
			if !ok {
				in = false
				break
			}
			v = combine(v, o*other.weight) // unlike the first input's, not NaN-checked: as Redis
		}
		if in {
			result[m] = v
			if cardOnly && limit > 0 && int64(len(result)) >= limit {
				break
			}
		}
	}
	return result
}

func cmdZUnionStore(s *Server, c *client, argv [][]byte) {
	zsetAlgebra(s, c, argv, zopUnion, 2, argv[1], false)
}
func cmdZInterStore(s *Server, c *client, argv [][]byte) {
	zsetAlgebra(s, c, argv, zopInter, 2, argv[1], false)
}
func cmdZDiffStore(s *Server, c *client, argv [][]byte) {
	zsetAlgebra(s, c, argv, zopDiff, 2, argv[1], false)
}
func cmdZUnion(s *Server, c *client, argv [][]byte) { zsetAlgebra(s, c, argv, zopUnion, 1, nil, false) }
func cmdZInter(s *Server, c *client, argv [][]byte) { zsetAlgebra(s, c, argv, zopInter, 1, nil, false) }
func cmdZDiff(s *Server, c *client, argv [][]byte)  { zsetAlgebra(s, c, argv, zopDiff, 1, nil, false) }
func cmdZInterCard(s *Server, c *client, argv [][]byte) {
	zsetAlgebra(s, c, argv, zopInter, 1, nil, true)
}

// ZRANGESTORE dst src min max [BYSCORE|BYLEX] [REV] [LIMIT offset count]
func cmdZRangeStore(s *Server, c *client, argv [][]byte) {
	sp := zrangeSpec{by: "rank", start: argv[3], stop: argv[4]}
	if !s.parseZRangeOptions(c, argv[5:], &sp, true) {
		return
	}
	if sp.withScores {
		s.addError(c, errSyntax)
		return
	}
	entries, ok := s.zrangeCollect(c, argv[2], sp)
	if !ok {
		return
	}
	db := s.dbs[c.db]
	r, existed := s.lookupWrite(c, argv[1])
	if existed {
		s.deleteKey(db, r)
	}
	if len(entries) > 0 {
		z := keyspace.NewZSet()
		for _, e := range entries {
			z.Add(e.Member, e.Score)
		}
		s.storeObject(db, argv[1], keyspace.TypeZSet, z, existed)
	}
	s.stored(c, config.NotifyZSet, "zrangestore", argv[1], len(entries) > 0, existed)
	c.w.Int(int64(len(entries)))
}

// zsetAlgebraCommands registers this file's commands (see table.go).
var zsetAlgebraCommands = []commandSpec{
	{name: "zunionstore", h: cmdZUnionStore},
	{name: "zinterstore", h: cmdZInterStore},
	{name: "zdiffstore", h: cmdZDiffStore},
	{name: "zunion", h: cmdZUnion},
	{name: "zinter", h: cmdZInter},
	{name: "zdiff", h: cmdZDiff},
	{name: "zintercard", h: cmdZInterCard},
	{name: "zrangestore", h: cmdZRangeStore},
}
