package engine

import (
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/resp"
)

// Bounds on what one command may cost, checked before anything is allocated. Redis range-checks
// counts but lets a reply grow with a count that has nothing to do with the data: SRANDMEMBER
// with a count of -2^62 makes Redis 7.0 build a reply of 2^62 elements until the kernel kills
// it. Here a reply whose size a count argument chooses (rather than the data, as LRANGE's does)
// may be no larger than maxReplyBytes; a larger one is refused with errReplyTooBig.

// errRange is Redis's reply to a count outside [-LONG_MAX, LONG_MAX] (getRangeLongFromObject).
const errRange = "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"

const errReplyTooBig = "ERR reply too large: the count asks for more than proto-max-bulk-len or the client's output buffer hard limit allows"

// minBulkReply is the size of the smallest bulk string reply, "$0\r\n\r\n".
const minBulkReply = 6

// clientClass is the client's client-output-buffer-limit class. MONITOR clients count as normal
// clients, as in Redis.
func clientClass(c *client) int {
	if c.replLink != nil {
		return config.ClassReplica
	}
	if c.flags&flagPubSub != 0 {
		return config.ClassPubSub
	}
	return config.ClassNormal
}

// maxReplyBytes is the largest reply a count argument may ask for: proto-max-bulk-len, or the
// client's output buffer hard limit when that is smaller.
func (s *Server) maxReplyBytes(c *client) int64 {
	limit := s.cfg.ProtoMaxBulkLen
	if h := s.cfg.ClientOutputBufferLimit[clientClass(c)].Hard; h > 0 && h < limit {
		limit = h
	}
	return limit
}

// replyFits reports whether a reply of n elements of about elemBytes each (RESP framing
// included) stays within maxReplyBytes, and answers errReplyTooBig when it does not.
func (s *Server) replyFits(c *client, n, elemBytes int64) bool {
	limit := s.maxReplyBytes(c)
	elemBytes = max(elemBytes, 1)
	if n > limit/elemBytes {
		s.addError(c, errReplyTooBig)
		return false
	}
	return true
}

// bulkReplySize is the size of a bulk string reply of n bytes.
func bulkReplySize(n int64) int64 {
	return n + int64(len(strconv.FormatInt(n, 10))) + 5
}

// rangedCount reads a count argument limited to [-LONG_MAX, LONG_MAX], as Redis's
// getRangeLongFromObjectOrReply does for SRANDMEMBER and HRANDFIELD.
func (s *Server) rangedCount(c *client, b []byte) (int64, bool) {
	v, ok := parseInt(b)
	if !ok {
		s.addError(c, errNotInt)
		return 0, false
	}
	if v == -1<<63 {
		s.addError(c, errRange)
		return 0, false
	}
	return v, true
}

// sampleDistinct calls emit with k distinct indices drawn uniformly from [0, n), k <= n. It is a
// partial Fisher-Yates shuffle over a sparse permutation: O(k) time and memory, however large n
// is, so picking a few members of a big collection copies nothing.
func sampleDistinct(n, k int, r *rand.Rand, emit func(i int)) {
	moved := make(map[int]int, k)
	at := func(i int) int {
		if v, ok := moved[i]; ok {
			return v
		}
		return i
	}
	for i := 0; i < k; i++ {
		j := i + r.IntN(n-i)
		vi, vj := at(i), at(j)
		moved[j] = vi
		emit(vj)
	}
}

// debugAllowed applies enable-debug-command: DEBUG can stop the server (SLEEP) or read its
// internals, so Redis 7 refuses it unless configured, or allows it only from the local machine.
func (s *Server) debugAllowed(c *client) bool {
	switch s.cfg.EnableDebugCommand {
	case "yes":
		return true
	case "local":
		return c.unix || strings.HasPrefix(c.addr, "127.0.0.1:") || strings.HasPrefix(c.addr, "[::1]:")
	}
	return false
}

// randomPickArgs reads "key [count [WITH...]]" as HRANDFIELD and ZRANDMEMBER take it, with their
// checks in Redis's order: the count's range, the option word, then a count whose doubled reply
// length would overflow.
func (s *Server) randomPickArgs(c *client, argv [][]byte, withWord string) (count int64, hasCount, with, ok bool) {
	if len(argv) < 3 {
		return 0, false, false, true
	}
	if count, ok = s.rangedCount(c, argv[2]); !ok {
		return 0, false, false, false
	}
	if len(argv) > 4 || (len(argv) == 4 && !resp.EqualFold(argv[3], withWord)) {
		s.addError(c, errSyntax)
		return 0, false, false, false
	}
	with = len(argv) == 4
	if with && (count > (1<<63-1)/2 || count < -(1<<63-1)/2) {
		s.addError(c, "ERR value is out of range")
		return 0, false, false, false
	}
	return count, true, with, true
}

// randomPicks is what HRANDFIELD and ZRANDMEMBER pick from: size elements, element i written by
// emit (its pair too when with is set), and the reply bytes one repeated pick may take.
type randomPicks struct {
	size       int
	with       bool
	perPick    int64
	emit       func(i int)
	wholeOrder func(size int, emit func(i int)) // the order of the whole collection's reply
}

// replyRandomPicks answers a count of random picks as Redis does: repeats for a negative count,
// bounded by replyFits before anything is written; the whole collection for a count at least its
// size; distinct picks otherwise.
func (s *Server) replyRandomPicks(c *client, count int64, p randomPicks) {
	header := func(n int) {
		if p.with && !c.w.RESP3 {
			n *= 2
		}
		c.w.Array(n)
	}
	switch {
	case count < 0:
		// Repeats allowed: the reply grows with the count, not with the collection.
		n := -count
		if !s.replyFits(c, n, p.perPick) {
			return
		}
		header(int(n))
		for i := int64(0); i < n; i++ {
			p.emit(setRand.IntN(p.size))
		}
	case count >= int64(p.size):
		header(p.size)
		p.wholeOrder(p.size, p.emit)
	default:
		header(int(count))
		sampleDistinct(p.size, int(count), setRand, p.emit)
	}
}

// inOrder and inReverse are the two orders of a whole collection's reply.
func inOrder(size int, emit func(i int)) {
	for i := 0; i < size; i++ {
		emit(i)
	}
}

func inReverse(size int, emit func(i int)) {
	for i := size - 1; i >= 0; i-- {
		emit(i)
	}
}
