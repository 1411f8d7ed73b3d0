package engine

import (
	"github.com/iocache/iocache/server/keyspace"
	"github.com/iocache/iocache/server/resp"
)

// LCS: the longest common subsequence of two strings, by the same dynamic-programming table
// Redis builds, walked back the same way, so that the subsequence and the IDX ranges it reports
// are Redis's own (another longest subsequence would be as long but not the same bytes).
//
// The table has (len(a)+1)·(len(b)+1) cells of 4 bytes. Its size bounds the command's memory and
// its time (one step per cell), so it is checked before anything is allocated:
//   - no larger than proto-max-bulk-len, as Redis 7.0 checks, with Redis's error;
//   - with maxmemory set, no larger than maxmemory either: a transient table bigger than the whole
//     dataset's budget is refused with Redis's allocation-failure error rather than risking the
//     process (Redis would try the allocation and be OOM-killed in a small container).
//
// LEN alone needs only the last row, so it keeps two rows instead of the table.

const (
	errLCSTooBig   = "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len"
	errLCSNoMemory = "ERR Insufficient memory, failed allocating transient memory for LCS"
	errLCSNotStr   = "ERR The specified keys must contain string values"
	errLCSLenIdx   = "ERR If you want both the length and indexes, please just use IDX."
)

// lcsMatch is one IDX range: a[aStart..aEnd] equals b[bStart..bEnd].
type lcsMatch struct{ aStart, aEnd, bStart, bEnd int }

func cmdLCS(s *Server, c *client, argv [][]byte) {
	a, b, ok := s.lcsStrings(c, argv[1], argv[2])
	if !ok {
		return
	}
	var getLen, getIdx, withMatchLen bool
	var minMatchLen int64
	for j := 3; j < len(argv); j++ {
		switch {
		case resp.EqualFold(argv[j], "idx"):
			getIdx = true
		case resp.EqualFold(argv[j], "len"):
			getLen = true
		case resp.EqualFold(argv[j], "withmatchlen"):
			withMatchLen = true
		case resp.EqualFold(argv[j], "minmatchlen") && j+1 < len(argv):
			v, ok := s.intArg(c, argv[j+1])
			if !ok {
				return
			}
			minMatchLen = max(v, 0)
			j++
		default:
			s.addError(c, errSyntax)
			return
		}
	}
	if getLen && getIdx {
		s.addError(c, errLCSLenIdx)
		return
	}
	cells := (int64(len(a)) + 1) * (int64(len(b)) + 1)
	if cells*4 > s.cfg.ProtoMaxBulkLen {
		s.addError(c, errLCSTooBig)
		return
	}
	if s.cfg.MaxMemory > 0 && cells*4 > s.cfg.MaxMemory {
		s.addError(c, errLCSNoMemory)
		return
	}
	if getLen {
		c.w.Int(int64(lcsLength(a, b)))
		return
	}
	table := lcsTable(a, b)
	result, matches := lcsWalk(a, b, table, getIdx, minMatchLen)
	if !getIdx {
		c.w.Bulk(result)
		return
	}
	c.w.Map(2)
	c.w.BulkString("matches")
	c.w.Array(len(matches))
	for _, m := range matches {
		if withMatchLen {
			c.w.Array(3)
		} else {
			c.w.Array(2)
		}
		c.w.Array(2)
		c.w.Int(int64(m.aStart))
		c.w.Int(int64(m.aEnd))
		c.w.Array(2)
		c.w.Int(int64(m.bStart))
		c.w.Int(int64(m.bEnd))
		if withMatchLen {
			c.w.Int(int64(m.aEnd - m.aStart + 1))
		}
	}
	c.w.BulkString("len")
	c.w.Int(int64(len(result)))
}

// lcsStrings reads both keys as Redis does: a missing key is the empty string, a key of another
// type is an error (not WRONGTYPE).
func (s *Server) lcsStrings(c *client, k1, k2 []byte) ([]byte, []byte, bool) {
	db := s.dbs[c.db]
	r1, ok1 := s.lookupRead(c, k1)
	bad := ok1 && db.Type(r1) != keyspace.TypeString
	r2, ok2 := s.lookupRead(c, k2)
	if bad || (ok2 && db.Type(r2) != keyspace.TypeString) {
		s.addError(c, errLCSNotStr)
		return nil, nil, false
	}
	// Found again: the second lookup may have expired a key and moved records.
	var a, b []byte
	if r, ok := db.Find(k1); ok {
		a = db.Str(r)
	}
	if r, ok := db.Find(k2); ok {
		b = db.Str(r)
	}
	return a, b, true
}

// lcsTable fills the table: cell (i, j), at i*(len(b)+1)+j, is the LCS length of a[:i] and b[:j].
func lcsTable(a, b []byte) []uint32 {
	cols := len(b) + 1
	t := make([]uint32, (len(a)+1)*cols)
	for i := 1; i <= len(a); i++ {
		row, prev := t[i*cols:(i+1)*cols], t[(i-1)*cols:i*cols]
		for j := 1; j <= len(b); j++ {
			switch {
			case a[i-1] == b[j-1]:
				row[j] = prev[j-1] + 1
			case prev[j] > row[j-1]:
				row[j] = prev[j]
			default:
				row[j] = row[j-1]
			}
		}
	}
	return t
}

// lcsLength is the table's last cell, computed with two rows.
func lcsLength(a, b []byte) uint32 {
	prev, row := make([]uint32, len(b)+1), make([]uint32, len(b)+1)
	for i := 1; i <= len(a); i++ {
		for j := 1; j <= len(b); j++ {
			switch {
			case a[i-1] == b[j-1]:
				row[j] = prev[j-1] + 1
			case prev[j] > row[j-1]:
				row[j] = prev[j]
			default:
				row[j] = row[j-1]
			}
		}
		prev, row = row, prev
	}
	return prev[len(b)]
}

// lcsWalk walks the table back from its last cell, as Redis does: on equal bytes it takes the
// byte and extends the current range backwards; otherwise it steps towards the larger
// neighbour, up (in a) only when strictly larger. Ranges are reported from the end of the
// strings to their start, those shorter than minMatchLen left out.
func lcsWalk(a, b []byte, t []uint32, wantRanges bool, minMatchLen int64) ([]byte, []lcsMatch) {
	cols := len(b) + 1
	n := int(t[len(t)-1])
	result := make([]byte, n)
	var matches []lcsMatch
	inRange := false
	var cur lcsMatch
	i, j := len(a), len(b)
	for i > 0 && j > 0 {
		emit := false
		if a[i-1] == b[j-1] {
			result[n-1] = a[i-1]
			switch {
			case !inRange:
				cur = lcsMatch{i - 1, i - 1, j - 1, j - 1}
				inRange = true
			case cur.aStart == i && cur.bStart == j:
				cur.aStart--
				cur.bStart--
			default:
				emit = true
			}
			if cur.aStart == 0 || cur.bStart == 0 {
				emit = true
			}
			n--
			i--
			j--
		} else {
			if t[(i-1)*cols+j] > t[i*cols+j-1] {
				i--
			} else {
				j--
			}
			emit = inRange
		}
		if emit {
			if wantRanges && (minMatchLen == 0 || int64(cur.aEnd-cur.aStart+1) >= minMatchLen) {
				matches = append(matches, cur)
			}
			inRange = false
		}
	}
	return result, matches
}
