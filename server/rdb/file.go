package rdb

import (
	"encoding/binary"
	"fmt"
	"io"
)

// Encoder writes an RDB file: Header, then Aux fields, then for each non-empty database SelectDB
// and its keys, then Close.
type Encoder struct {
	v *valueEncoder
}

// NewEncoder writes to dst, buffering; Close flushes.
func NewEncoder(dst io.Writer, o Options) *Encoder {
	e := &Encoder{v: newValueEncoder(o)}
	e.v.w.dst = dst
	return e
}

// Header writes the magic string and version.
func (e *Encoder) Header() {
	e.v.w.rawString("REDIS" + fmt.Sprintf("%04d", Version))
}

// Aux writes an auxiliary field (redis-ver, ctime, ...); values that are integers take the
// integer encoding, as Redis writes them.
func (e *Encoder) Aux(key, value string) {
	w := &e.v.w
	w.byte(opAux)
	w.string([]byte(key))
	w.string([]byte(value))
}

// SelectDB starts database db, announcing its key count and how many keys have a TTL.
func (e *Encoder) SelectDB(db, keys, expires int) {
	w := &e.v.w
	w.byte(opSelectDB)
	w.length(uint64(db))
	w.byte(opResizeDB)
	w.length(uint64(keys))
	w.length(uint64(expires))
}

// SelectDBOnly switches to database db again, without sizes (a snapshot's keys of one database
// need not be contiguous).
func (e *Encoder) SelectDBOnly(db int) {
	e.v.w.byte(opSelectDB)
	e.v.w.length(uint64(db))
}

// Err is the first write error, if any.
func (e *Encoder) Err() error { return e.v.w.err }

// KeyMeta is what a file records about a key besides its value.
type KeyMeta struct {
	ExpireAt int64 // unix ms; 0 for none
	Idle     int64 // LRU idle seconds; -1 for none (written under LRU eviction policies)
	Freq     int   // LFU counter; -1 for none (written under LFU eviction policies)
}

// NoMeta is a key without TTL or eviction data.
var NoMeta = KeyMeta{Idle: -1, Freq: -1}

// Key writes one key with its value.
func (e *Encoder) Key(key []byte, v Value, m KeyMeta) {
	w := &e.v.w
	if m.ExpireAt > 0 {
		w.byte(opExpireTimeMs)
		w.millis(m.ExpireAt)
	}
	if m.Idle >= 0 {
		w.byte(opIdle)
		w.length(uint64(m.Idle))
	}
	if m.Freq >= 0 {
		w.byte(opFreq)
		w.byte(byte(m.Freq))
	}
	t := e.v.typeOf(v)
	w.byte(t)
	w.string(key)
	e.v.body(t, v)
	w.maybeFlush()
}

// Close writes the end marker and the checksum (zero when checksums are off) and flushes.
func (e *Encoder) Close() error {
	w := &e.v.w
	w.byte(opEOF)
	w.flush()
	sum := uint64(0)
	if e.v.opts.Checksum {
		sum = w.crc
	}
	w.buf = binary.LittleEndian.AppendUint64(w.buf, sum)
	w.flush()
	return w.err
}

// Written is the bytes written so far (flushed).
func (e *Encoder) Written() int64 { return e.v.w.written }
