package rdb

import (
	"encoding/binary"
	"fmt"
	"io"
	"strconv"
)

// Entry is one key read from a file. Key is valid only during the Handler's Entry call.
type Entry struct {
	DB    int
	Key   []byte
	Value Value
	KeyMeta
}

// Handler receives what Load reads. Nil functions ignore their events.
type Handler struct {
	// Aux receives auxiliary fields (redis-ver, ctime, used-mem, aof-base, ...).
	Aux func(key, value []byte)
	// ResizeDB announces the next database's key count, for sizing.
	ResizeDB func(db int, keys, expires uint64)
	// Entry receives each key; an error stops the load.
	Entry func(*Entry) error
	// EmptyKey is told about each collection key skipped because it had no elements.
	EmptyKey func(key []byte)
	// Function receives each function library's code; an error stops the load. Without it, a
	// file with functions does not load.
	Function func(code []byte) error
}

// Stats describes a completed load.
type Stats struct {
	Version int
	Keys    int64
	Skipped int64 // empty collections
}

// Load reads a whole RDB file of version 1 to 10 and checks its checksum when it has one.
func Load(src io.Reader, h Handler) (Stats, error) {
	r := newStreamReader(src)
	return load(r, h)
}

func load(r *reader, h Handler) (Stats, error) {
	var st Stats
	magic, err := r.read(nil, 9)
	if err != nil {
		return st, fmt.Errorf("reading the RDB header: %w", err)
	}
	if string(magic[:5]) != "REDIS" {
		return st, fmt.Errorf("wrong signature trying to load DB from file: %w", ErrFormat)
	}
	st.Version, err = strconv.Atoi(string(magic[5:]))
	if err != nil || st.Version < 1 || st.Version > Version {
		return st, fmt.Errorf("can't handle RDB format version %s: %w", magic[5:], ErrFormat)
	}
	var e Entry
	var key []byte
	db := 0
	e.KeyMeta = NoMeta
	for {
		t, err := r.readByte()
		if err != nil {
			return st, err
		}
		switch t {
		case opExpireTime:
			a, err := r.fixed(4)
			if err != nil {
				return st, err
			}
			e.ExpireAt = int64(int32(binary.LittleEndian.Uint32(a[:4]))) * 1000
			continue
		case opExpireTimeMs:
			if e.ExpireAt, err = r.millis(); err != nil {
				return st, err
			}
			continue
		case opIdle:
			n, err := r.length()
			if err != nil {
				return st, err
			}
			e.Idle = int64(min(n, 1<<62))
			continue
		case opFreq:
			b, err := r.readByte()
			if err != nil {
				return st, err
			}
			e.Freq = int(b)
			continue
		case opEOF:
			if st.Version >= 5 {
				sum := r.checksum()
				a, err := r.fixed(8)
				if err != nil {
					return st, err
				}
				if stored := binary.LittleEndian.Uint64(a[:8]); stored != 0 && stored != sum {
					return st, ErrChecksum
				}
			}
			return st, nil
		case opSelectDB:
			n, err := r.length()
			if err != nil {
				return st, err
			}
			if n > 1<<20 {
				return st, ErrFormat
			}
			db = int(n)
			continue
		case opResizeDB:
			keys, err := r.length()
			if err != nil {
				return st, err
			}
			expires, err := r.length()
			if err != nil {
				return st, err
			}
			if h.ResizeDB != nil {
				h.ResizeDB(db, keys, expires)
			}
			continue
		case opAux:
			r.reset()
			k, err := r.string()
			if err != nil {
				return st, err
			}
			v, err := r.string()
			if err != nil {
				return st, err
			}
			if h.Aux != nil {
				h.Aux(k, v)
			}
			continue
		case opFunction2:
			if h.Function == nil {
				return st, fmt.Errorf("the file holds functions, which this reader does not take: %w", ErrFormat)
			}
			r.reset()
			code, err := r.string()
			if err != nil {
				return st, err
			}
			if err := h.Function(code); err != nil {
				return st, err
			}
			continue
		case opModuleAux, opFunctionPreGA:
			return st, fmt.Errorf("the file holds modules' data or pre-release functions, which iocache does not support: %w", ErrFormat)
		}
		r.reset()
		k, err := r.string()
		if err != nil {
			return st, err
		}
		key = append(key[:0], k...)
		v, err := decodeValue(r, t)
		if err == ErrEmptyKey {
			st.Skipped++
			if h.EmptyKey != nil {
				h.EmptyKey(key)
			}
		} else if err != nil {
			return st, fmt.Errorf("loading key %q at offset %d: %w", truncateKey(key), r.offset, err)
		} else {
			e.DB, e.Key, e.Value = db, key, v
			st.Keys++
			if h.Entry != nil {
				if err := h.Entry(&e); err != nil {
					return st, err
				}
			}
		}
		e.KeyMeta = NoMeta
	}
}

func truncateKey(k []byte) []byte {
	if len(k) > 64 {
		return k[:64]
	}
	return k
}
