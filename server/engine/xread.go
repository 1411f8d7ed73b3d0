package engine

import (
	"github.com/iocache/iocache/server/keyspace"
	"github.com/iocache/iocache/server/resp"
)

// What XREAD and XREADGROUP share: their options and the shape of their replies.

// xreadArgs are XREAD's and XREADGROUP's options.
type xreadArgs struct {
	count           int64 // 0: no limit
	block           bool
	deadline        int64 // unix ms; 0 waits forever
	group, consumer []byte
	noAck           bool
	streamsAt       int // index of the first key in argv
	keys, ids       [][]byte
}

// parseXReadArgs reads [COUNT n] [BLOCK ms] [GROUP g c] [NOACK] STREAMS key... id..., with
// Redis's error for each misuse (GROUP and NOACK belong to XREADGROUP only).
func (s *Server) parseXReadArgs(c *client, argv [][]byte, group bool) (a xreadArgs, ok bool) {
	name, want := "XREAD", "$"
	if group {
		name, want = "XREADGROUP", ">"
	}
	for i := 1; i < len(argv) && a.streamsAt == 0; i++ {
		more := len(argv) - 1 - i
		switch {
		case resp.EqualFold(argv[i], "block") && more >= 1:
			ms, isInt := parseInt(argv[i+1])
			if !isInt {
				s.addError(c, "ERR timeout is not an integer or out of range")
				return a, false
			}
			if ms < 0 {
				s.addError(c, "ERR timeout is negative")
				return a, false
			}
			a.block = true
			if ms > 0 {
				a.deadline = s.nowMs + ms
			}
			i++
		case resp.EqualFold(argv[i], "count") && more >= 1:
			n, isInt := s.intArg(c, argv[i+1])
			if !isInt {
				return a, false
			}
			a.count = max(n, 0)
			i++
		case resp.EqualFold(argv[i], "group") && more >= 2:
			if !group {
				s.addError(c, "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.")
				return a, false
			}
			a.group, a.consumer = argv[i+1], argv[i+2]
			i += 2
		case resp.EqualFold(argv[i], "noack"):
			if !group {
				s.addError(c, "ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.")
				return a, false
			}
			a.noAck = true
		case resp.EqualFold(argv[i], "streams") && more >= 1:
			a.streamsAt = i + 1
		default:
			s.addError(c, errSyntax)
			return a, false
		}
	}
	if a.streamsAt == 0 {
		s.addError(c, errSyntax)
		return a, false
	}
	rest := argv[a.streamsAt:]
	if len(rest)%2 != 0 {
		s.addError(c, "ERR Unbalanced "+name+" list of streams: for each stream key an ID or '"+want+"' must be specified.")
		return a, false
	}
	if group && a.group == nil {
		s.addError(c, "ERR Missing GROUP option for XREADGROUP")
		return a, false
	}
	a.keys, a.ids = rest[:len(rest)/2], rest[len(rest)/2:]
	return a, true
}

// blockDeadline is the deadline to block with: the command's own, or, when a blocked command
// runs again after a wake-up that had nothing for it, the one it blocked with first.
func (c *client) blockDeadline(own int64) int64 {
	if c.rerunDeadline != 0 {
		return max(c.rerunDeadline, 0)
	}
	return own
}

// streamReply is one key's part of an XREAD or XREADGROUP reply. missing marks history entries
// deleted since their delivery, which XREADGROUP reports as [id, nil].
type streamReply struct {
	key     []byte
	entries []keyspace.StreamEntry
	missing []bool
}

// writeStreamReplies writes a map of key → entries (RESP3) or an array of [key, entries] pairs.
func (s *Server) writeStreamReplies(c *client, res []streamReply) {
	if c.w.RESP3 {
		c.w.Map(len(res))
	} else {
		c.w.Array(len(res))
	}
	for _, f := range res {
		if !c.w.RESP3 {
			c.w.Array(2)
		}
		c.w.Bulk(f.key)
		c.w.Array(len(f.entries))
		for i, e := range f.entries {
			if f.missing != nil && f.missing[i] {
				c.w.Array(2)
				s.writeStreamID(c, e.ID)
				c.w.NullArray()
				continue
			}
			s.writeStreamEntry(c, e)
		}
	}
}
