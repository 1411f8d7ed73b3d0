package rdb

import (
	"bytes"
	"testing"
)

// FuzzRestore feeds arbitrary payloads to the decoder: it must refuse or decode, never panic or
// allocate beyond the input's size, and what it decodes must survive a round trip.
func FuzzRestore(f *testing.F) {
	for _, v := range sampleValues() {
		if p := Dump(v, DefaultOptions()); len(p) < 4096 {
			f.Add(p)
		}
	}
	f.Fuzz(func(t *testing.T, payload []byte) {
		v, err := Restore(payload)
		if err != nil {
			return
		}
		back, err := Restore(Dump(v, DefaultOptions()))
		if err != nil {
			t.Fatalf("a decoded value does not round-trip: %v", err)
		}
		if canonical(back) != canonical(v) {
			t.Fatal("a decoded value changed in a round trip")
		}
	})
}

// FuzzDecodeValue skips the checksum, so that mutations reach the decoders of every encoding.
func FuzzDecodeValue(f *testing.F) {
	for _, v := range sampleValues() {
		if p := Dump(v, DefaultOptions()); len(p) < 4096 {
			f.Add(p[:len(p)-dumpFooterSize])
		}
	}
	f.Fuzz(func(t *testing.T, body []byte) {
		if len(body) == 0 {
			return
		}
		r := newBytesReader(body[1:])
		if v, err := decodeValue(r, body[0]); err == nil {
			_ = canonical(v)
		}
	})
}

// FuzzLoad feeds arbitrary files to Load.
func FuzzLoad(f *testing.F) {
	var buf bytes.Buffer
	e := NewEncoder(&buf, DefaultOptions())
	e.Header()
	e.Aux("redis-ver", "7.0.15")
	e.SelectDB(0, 2, 1)
	for name, v := range sampleValues() {
		if len(Dump(v, DefaultOptions())) < 512 {
			e.Key([]byte(name), v, KeyMeta{ExpireAt: 1, Idle: 5, Freq: -1})
		}
	}
	if err := e.Close(); err != nil {
		f.Fatal(err)
	}
	f.Add(buf.Bytes())
	f.Fuzz(func(t *testing.T, file []byte) {
		_, _ = Load(bytes.NewReader(file), Handler{})
	})
}
