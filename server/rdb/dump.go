package rdb

import (
	"encoding/binary"
	"errors"
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
func Restore(payload []byte) (Value, error) {
	if len(payload) < dumpFooterSize {
		return Value{}, ErrDumpPayload
	}
	body := payload[:len(payload)-8]
	if binary.LittleEndian.Uint16(body[len(body)-2:]) > Version ||
		crc64Update(0, body) != binary.LittleEndian.Uint64(payload[len(body):]) {
		return Value{}, ErrDumpPayload
	}
	r := newBytesReader(body[:len(body)-2])
	t, err := r.readByte()
	if err != nil {
		return Value{}, ErrFormat
	}
	v, err := decodeValue(r, t)
	if err == ErrEmptyKey {
		err = ErrFormat
	}
	return v, err
}
