package rdb

import (
	"encoding/binary"
	"testing"
)

// buildZiplist writes a ziplist from its documented layout (ziplist.c), for the loading tests:
// Redis 7.0 no longer writes ziplists but loads them from older files.
func buildZiplist(entries []any) []byte {
	b := make([]byte, 10)
	prev, tail := 0, 10
	for _, e := range entries {
		start := len(b)
		tail = start
		if prev < 254 {
			b = append(b, byte(prev))
		} else {
			b = append(b, 254)
			b = binary.LittleEndian.AppendUint32(b, uint32(prev))
		}
		switch v := e.(type) {
		case string:
			switch {
			case len(v) < 64:
				b = append(b, byte(len(v)))
			case len(v) < 16384:
				b = append(b, 0x40|byte(len(v)>>8), byte(len(v)))
			default:
				b = append(b, 0x80)
				b = binary.BigEndian.AppendUint32(b, uint32(len(v)))
			}
			b = append(b, v...)
		case int:
			switch {
			case v >= 0 && v <= 12:
				b = append(b, 0xf1+byte(v))
			case v >= -128 && v <= 127:
				b = append(b, 0xfe, byte(int8(v)))
			case v >= -32768 && v <= 32767:
				b = append(b, 0xc0)
				b = binary.LittleEndian.AppendUint16(b, uint16(v))
			case v >= -1<<23 && v < 1<<23:
				u := uint32(v)
				b = append(b, 0xf0, byte(u), byte(u>>8), byte(u>>16))
			case v >= -1<<31 && v < 1<<31:
				b = append(b, 0xd0)
				b = binary.LittleEndian.AppendUint32(b, uint32(v))
			default:
				b = append(b, 0xe0)
				b = binary.LittleEndian.AppendUint64(b, uint64(v))
			}
		}
		prev = len(b) - start
	}
	b = append(b, 0xff)
	binary.LittleEndian.PutUint32(b, uint32(len(b)))
	binary.LittleEndian.PutUint32(b[4:], uint32(tail))
	binary.LittleEndian.PutUint16(b[8:], uint16(len(entries)))
	return b
}

func TestParseZiplist(t *testing.T) {
	long := string(make([]byte, 300))
	entries := []any{"ab", 0, 12, 13, -5, 1000, -40000, 8000000, -2000000000, 1 << 40, long, "", string(make([]byte, 20000))}
	want := []string{"ab", "0", "12", "13", "-5", "1000", "-40000", "8000000", "-2000000000", "1099511627776", long, "", string(make([]byte, 20000))}
	zl := buildZiplist(entries)
	var got []string
	if err := parseZiplist(zl, func(b []byte) error { got = append(got, string(b)); return nil }); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("got %d entries", len(got))
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("entry %d: %q, want %q", i, got[i], want[i])
		}
	}
	for i := 0; i < len(zl); i++ {
		bad := append([]byte(nil), zl...)
		bad[i] ^= 0xff
		_ = parseZiplist(bad, func([]byte) error { return nil }) // must not panic
	}
	// A hash and a sorted set in ziplist encoding, as Redis 6 wrote them.
	r := newBytesReader(append([]byte{byte(len(buildZiplist([]any{"f", "v", "g", 7})))}, buildZiplist([]any{"f", "v", "g", 7})...))
	v, err := decodeValue(r, typeHashZiplist)
	if err != nil || canonical(v) != `hash "f"="v" "g"="7"` {
		t.Fatalf("hash ziplist: %v %s", err, canonical(v))
	}
	zz := buildZiplist([]any{"a", "1.5", "b", 2})
	r = newBytesReader(append([]byte{byte(len(zz))}, zz...))
	v, err = decodeValue(r, typeZSetZiplist)
	if err != nil || canonical(v) != `zset "a":1.5 "b":2` {
		t.Fatalf("zset ziplist: %v %s", err, canonical(v))
	}
}
