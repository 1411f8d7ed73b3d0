package rdb

import "encoding/binary"

// FUNCTION DUMP's payload: each library's code after the FUNCTION2 opcode, as an RDB file holds
// functions, then the footer a DUMP payload ends with (RDB version and CRC64).

// Function writes one function library's code to a file, after the aux fields and before the
// databases, as Redis does.
func (e *Encoder) Function(code []byte) {
	e.v.w.byte(opFunction2)
	e.v.w.string(code)
}

// DumpFunctions serializes library codes as FUNCTION DUMP does.
func DumpFunctions(codes [][]byte, o Options) []byte {
	e := newValueEncoder(o)
	for _, code := range codes {
		e.w.byte(opFunction2)
		e.w.string(code)
	}
	b := binary.LittleEndian.AppendUint16(e.w.buf, Version)
	return binary.LittleEndian.AppendUint64(b, crc64Update(0, b))
}

// RestoreFunctions reads the library codes of a FUNCTION DUMP payload: ErrDumpPayload for a
// wrong version or checksum, ErrFormat for anything but functions inside.
func RestoreFunctions(payload []byte) ([][]byte, error) {
	if len(payload) < dumpFooterSize {
		return nil, ErrDumpPayload
	}
	body := payload[:len(payload)-8]
	if binary.LittleEndian.Uint16(body[len(body)-2:]) > Version ||
		crc64Update(0, body) != binary.LittleEndian.Uint64(payload[len(body):]) {
		return nil, ErrDumpPayload
	}
	r := newBytesReader(body[:len(body)-2])
	var codes [][]byte
	for len(r.data) > 0 {
		t, err := r.readByte()
		if err != nil || t != opFunction2 {
			return nil, ErrFormat
		}
		r.reset()
		code, err := r.string()
		if err != nil {
			return nil, ErrFormat
		}
		codes = append(codes, append([]byte(nil), code...))
	}
	return codes, nil
}
