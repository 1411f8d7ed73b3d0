package aof

import (
	"bufio"
	"io"
	"math"
	"strconv"

	"github.com/iocache/iocache/server/keyspace"
	"github.com/iocache/iocache/server/resp"
)

// A base in AOF format (aof-use-rdb-preamble no, .base.aof): the commands that rebuild each
// key, as Redis's rewriteAppendOnlyFileRio writes them. Collections go in commands of at most
// RewriteItemsPerCmd elements; a stream is rebuilt with XADD, XSETID, XGROUP and XCLAIM;
// functions with FUNCTION LOAD; expiries with PEXPIREAT.

// RewriteItemsPerCmd is Redis's AOF_REWRITE_ITEMS_PER_CMD: the most elements of a collection
// one command of a base adds.
const RewriteItemsPerCmd = 64

// BaseWriter writes the commands of a base of commands. Its methods stop writing at the first
// error, which Err and Close return: a caller walking the keyspace checks Err to stop early.
type BaseWriter struct {
	w    *bufio.Writer
	db   int
	args [][]byte
	enc  []byte
	err  error
}

// NewBaseWriter writes a base to w, through a buffer of its own (Close flushes it).
func NewBaseWriter(w io.Writer) *BaseWriter {
	return &BaseWriter{w: bufio.NewWriterSize(w, 1<<20), db: -1}
}

// command writes args as one RESP command.
func (b *BaseWriter) command(args ...[]byte) {
	if b.err != nil {
		return
	}
	b.enc = resp.AppendCommand(b.enc[:0], args)
	_, b.err = b.w.Write(b.enc)
}

// batched writes head followed by items, in commands of at most RewriteItemsPerCmd items
// (of width arguments each).
func (b *BaseWriter) batched(head [][]byte, items [][]byte, width int) {
	per := RewriteItemsPerCmd * width
	for start := 0; start < len(items); start += per {
		end := min(start+per, len(items))
		b.args = append(append(b.args[:0], head...), items[start:end]...)
		b.command(b.args...)
	}
}

// Functions writes a FUNCTION LOAD for each library's code. A base starts with them, as
// Redis's does.
func (b *BaseWriter) Functions(codes [][]byte) {
	for _, code := range codes {
		b.command([]byte("FUNCTION"), []byte("LOAD"), code)
	}
}

// Key writes the commands that rebuild one key of database db: a string's value is str, a
// collection's obj (the keyspace's object of typ); expireAt is the absolute expiry in
// milliseconds, 0 for none. A SELECT goes first where the database changes.
func (b *BaseWriter) Key(db int, key []byte, typ keyspace.Type, str []byte, obj any, expireAt int64) {
	if db != b.db {
		b.db = db
		b.command([]byte("SELECT"), strconv.AppendInt(nil, int64(db), 10))
	}
	var items [][]byte
	switch typ {
	case keyspace.TypeString:
		b.command([]byte("SET"), key, str)
	case keyspace.TypeList:
		l := obj.(*keyspace.List)
		l.Each(func(v []byte) bool { items = append(items, v); return true })
		b.batched([][]byte{[]byte("RPUSH"), key}, items, 1)
	case keyspace.TypeSet:
		obj.(*keyspace.Set).Each(func(m []byte) bool {
			items = append(items, append([]byte(nil), m...)) // an intset's member is formatted in a scratch buffer
			return true
		})
		b.batched([][]byte{[]byte("SADD"), key}, items, 1)
	case keyspace.TypeZSet:
		obj.(*keyspace.ZSet).Each(func(en keyspace.Entry) bool {
			items = append(items, FormatScore(en.Score), en.Member)
			return true
		})
		b.batched([][]byte{[]byte("ZADD"), key}, items, 2)
	case keyspace.TypeHash:
		obj.(*keyspace.Hash).Each(func(f, v []byte) bool {
			items = append(items, f, v)
			return true
		})
		b.batched([][]byte{[]byte("HMSET"), key}, items, 2)
	case keyspace.TypeStream:
		b.stream(key, obj.(*keyspace.Stream))
	}
	if expireAt > 0 {
		b.command([]byte("PEXPIREAT"), key, strconv.AppendInt(nil, expireAt, 10))
	}
}

// FormatScore spells a score as Redis's "%.17g" does: what a base's ZADD reads back as the same
// double, and what DEBUG DIGEST mixes in (the two must agree for a digest to survive a rewrite).
func FormatScore(f float64) []byte {
	switch {
	case math.IsInf(f, 1):
		return []byte("inf")
	case math.IsInf(f, -1):
		return []byte("-inf")
	}
	return strconv.AppendFloat(nil, f, 'g', 17, 64)
}

// stream rebuilds a stream as Redis's rewriteStreamObject does: its entries, its last ID and
// counters, then each group with its consumers and pending entries.
func (b *BaseWriter) stream(key []byte, s *keyspace.Stream) {
	id := func(v keyspace.StreamID) []byte { return v.AppendTo(nil) }
	if s.Len() > 0 {
		s.Range(keyspace.StreamID{}, keyspace.MaxStreamID, false, func(e keyspace.StreamEntry) bool {
			b.args = append(append(b.args[:0], []byte("XADD"), key, id(e.ID)), e.Fields...)
			b.command(b.args...)
			return true
		})
	} else {
		// An empty stream comes from XADD of an entry trimmed away at once, under ID 0-1 as
		// Redis writes it (the last ID may be 0-0, which XADD refuses); XSETID then sets the
		// real one.
		b.command([]byte("XADD"), key, []byte("MAXLEN"), []byte("0"), []byte("0-1"), []byte("x"), []byte("y"))
	}
	b.command([]byte("XSETID"), key, id(s.LastID), []byte("ENTRIESADDED"), strconv.AppendUint(nil, s.EntriesAdded, 10),
		[]byte("MAXDELETEDID"), id(s.MaxDeletedID))
	for _, g := range s.SortedGroups() {
		name := []byte(g.Name)
		b.command([]byte("XGROUP"), []byte("CREATE"), key, name, id(g.LastID), []byte("ENTRIESREAD"), strconv.AppendInt(nil, g.EntriesRead, 10))
		for _, c := range g.SortedConsumers() {
			if len(c.Pending) == 0 {
				b.command([]byte("XGROUP"), []byte("CREATECONSUMER"), key, name, []byte(c.Name))
				continue
			}
			for _, pid := range keyspace.SortedIDs(c.Pending) {
				pe := c.Pending[pid]
				b.command([]byte("XCLAIM"), key, name, []byte(c.Name), []byte("0"), id(pid),
					[]byte("TIME"), strconv.AppendInt(nil, pe.DeliveryTime, 10),
					[]byte("RETRYCOUNT"), strconv.AppendInt(nil, pe.DeliveryCount, 10), []byte("JUSTID"), []byte("FORCE"))
			}
		}
	}
}

// Err is the first error writing, or nil.
func (b *BaseWriter) Err() error { return b.err }

// Close flushes what is buffered; it returns the first error of the whole base.
func (b *BaseWriter) Close() error {
	if b.err != nil {
		return b.err
	}
	return b.w.Flush()
}
