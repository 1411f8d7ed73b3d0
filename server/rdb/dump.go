package rdb

import (
	"encoding/binary"
	"errors"

	"github.com/iocache/iocache/server/keyspace"
)

// A DUMP payload is one value as an RDB file would hold it (type byte and encoding), followed
// by the RDB version (2 bytes little endian) and a CRC64 of everything before it (8 bytes).

// ErrDumpPayload means the payload's version is newer than Version or its checksum is wrong.
var ErrDumpPayload = errors.New("rdb: DUMP payload version or checksum are wrong")

const dumpFooterSize = 10

// Dump serializes v as a DUMP payload.
func Dump(v Value, o Options) []byte {
	e := newValueEncoder(o)
	e.value(v)
	b := binary.LittleEndian.AppendUint16(e.w.buf, Version)
	return binary.LittleEndian.AppendUint64(b, crc64Update(0, b))
}

// Restore decodes a DUMP payload after checking its version and checksum.
func Restore(payload []byte) (Value, error) { return RestoreWith(payload, RestoreOptions{}) }

// RestoreOptions shape how RestoreWith decodes a payload.
type RestoreOptions struct {
	// MaxString, when positive, refuses any string longer than it with ErrStringTooLarge before
	// allocating for it: a payload of a few megabytes can claim a gigabyte of LZF output.
	MaxString uint64
	// Headroom, when positive, decodes a string value into Value.Buf with this many free bytes
	// before it (keyspace.StringHeadroom), for keyspace.DB.AdoptString.
	Headroom int
}

// RestoreWith is Restore with options.
func RestoreWith(payload []byte, o RestoreOptions) (Value, error) {
	if len(payload) < dumpFooterSize {
		return Value{}, ErrDumpPayload
	}
	body := payload[:len(payload)-8]
	if binary.LittleEndian.Uint16(body[len(body)-2:]) > Version ||
		crc64Update(0, body) != binary.LittleEndian.Uint64(payload[len(body):]) {
		return Value{}, ErrDumpPayload
	}
	r := newBytesReader(body[:len(body)-2])
	r.maxString = o.MaxString
	t, err := r.readByte()
	if err != nil {
		return Value{}, ErrFormat
	}
	if t == typeString && o.Headroom > 0 {
		buf, err := r.headroomString(o.Headroom)
		if err != nil {
			return Value{}, err
		}
		return Value{Type: keyspace.TypeString, Str: buf[o.Headroom:], Buf: buf}, nil
	}
	v, err := decodeValue(r, t)
	if err == ErrEmptyKey {
		err = ErrFormat
	}
	return v, err
}
