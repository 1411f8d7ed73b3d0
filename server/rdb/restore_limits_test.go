package rdb

import (
	"bytes"
	"runtime"
	"testing"

	"github.com/iocache/iocache/server/keyspace"
)

// lzfBomb is a DUMP payload of n zero bytes, LZF-compressed to about n/132 bytes: a few megabytes
// that claim a gigabyte once decompressed.
func lzfBomb(n int) []byte {
	return Dump(Value{Type: keyspace.TypeString, Str: make([]byte, n)}, Options{Compression: true})
}

// A string longer than MaxString is refused from its header, before its bytes are read or
// decompressed: the LZF case used to allocate the claimed length first (a 12 MB payload made a
// gigabyte), and a raw one past the payload's end is refused as truncated without allocating.
func TestRestoreRefusesLongStringsBeforeAllocating(t *testing.T) {
	const n = 64 << 20
	bomb := lzfBomb(n)
	raw := Dump(Value{Type: keyspace.TypeString, Str: bytes.Repeat([]byte("x"), 1<<20)}, Options{})
	for _, c := range []struct {
		name    string
		payload []byte
		o       RestoreOptions
	}{
		{"lzf", bomb, RestoreOptions{MaxString: 1 << 20}},
		{"lzf, headroom", bomb, RestoreOptions{MaxString: 1 << 20, Headroom: 64}},
		{"raw", raw, RestoreOptions{MaxString: 1 << 10}},
		{"raw, headroom", raw, RestoreOptions{MaxString: 1 << 10, Headroom: 64}},
	} {
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		_, err := RestoreWith(c.payload, c.o)
		runtime.ReadMemStats(&after)
		if err != ErrStringTooLarge {
			t.Errorf("%s: %v, want ErrStringTooLarge", c.name, err)
		}
		if got := after.TotalAlloc - before.TotalAlloc; got > 64<<10 {
			t.Errorf("%s: allocated %d bytes to refuse the string", c.name, got)
		}
	}
	if v, err := RestoreWith(bomb, RestoreOptions{MaxString: n}); err != nil || len(v.Str) != n {
		t.Fatalf("a string of exactly MaxString: %v, %d bytes", err, len(v.Str))
	}
}

// With Headroom, a string value is decoded once, into Value.Buf, after that many free bytes:
// every encoding (raw, LZF, integers) gives the same bytes as Restore, and other types ignore it.
func TestRestoreHeadroom(t *testing.T) {
	values := []Value{
		{Type: keyspace.TypeString, Str: []byte("12345")},
		{Type: keyspace.TypeString, Str: []byte("-7")},
		{Type: keyspace.TypeString, Str: []byte("short")},
		{Type: keyspace.TypeString, Str: bytes.Repeat([]byte("abc"), 100000)},
		{Type: keyspace.TypeString, Str: make([]byte, 1<<20)},
	}
	for i, v := range values {
		for _, compress := range []bool{false, true} {
			p := Dump(v, Options{Compression: compress})
			got, err := RestoreWith(p, RestoreOptions{Headroom: 40})
			if err != nil {
				t.Fatalf("value %d: %v", i, err)
			}
			if len(got.Buf) != 40+len(v.Str) || !bytes.Equal(got.Str, v.Str) || !bytes.Equal(got.Buf[40:], v.Str) {
				t.Fatalf("value %d (compressed %v): %d bytes in a buffer of %d, want %q", i, compress, len(got.Str), len(got.Buf), v.Str[:min(len(v.Str), 8)])
			}
			if &got.Buf[40] != &got.Str[0] && len(got.Str) > 0 {
				t.Fatalf("value %d: Str is not the end of Buf", i)
			}
		}
	}
	for name, v := range sampleValues() {
		if v.Type == keyspace.TypeString {
			continue
		}
		got, err := RestoreWith(Dump(v, DefaultOptions()), RestoreOptions{Headroom: 40})
		if err != nil || got.Buf != nil || canonical(got) != canonical(v) {
			t.Fatalf("%s: %v, Buf %d bytes", name, err, len(got.Buf))
		}
	}
}
