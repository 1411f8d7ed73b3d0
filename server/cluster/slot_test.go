package cluster

import (
	"math/rand/v2"
	"testing"
)

// The values are Redis's: CLUSTER KEYSLOT on redis-server 7.0 (the engine's differential tests
// compare more keys with a live redis-server in cluster mode).
func TestKeySlot(t *testing.T) {
	if got := crc16([]byte("123456789")); got != 0x31C3 {
		t.Fatalf("crc16(123456789) = %#x, want 0x31c3 (XMODEM)", got)
	}
	for key, want := range map[string]int{
		"foo":                  12182,
		"bar":                  5061,
		"{user1000}.following": KeySlot([]byte("user1000")),
		"foo{}{bar}":           KeySlot([]byte("foo{}{bar}")),
		"foo{{bar}}zap":        KeySlot([]byte("{bar")),
		"foo{bar}{zap}":        KeySlot([]byte("bar")),
		"":                     0,
	} {
		if got := KeySlot([]byte(key)); got != want {
			t.Errorf("KeySlot(%q) = %d, want %d", key, got, want)
		}
	}
	if KeySlot([]byte("foo{}{bar}")) == KeySlot([]byte("bar")) {
		t.Error("an empty tag {} must hash the whole key")
	}
}

// crc16Bytewise is the textbook definition the sliced crc16 must equal.
func crc16Bytewise(b []byte) uint16 {
	var crc uint16
	for _, c := range b {
		crc ^= uint16(c) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

func TestCRC16SlicedEqualsBytewise(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for n := range 200 {
		b := make([]byte, n)
		for i := range b {
			b[i] = byte(rng.Uint32())
		}
		if got, want := crc16(b), crc16Bytewise(b); got != want {
			t.Fatalf("crc16 of %d bytes = %#x, want %#x", n, got, want)
		}
	}
}

func BenchmarkKeySlot(b *testing.B) {
	key := []byte("key:000000001234")
	for b.Loop() {
		_ = KeySlot(key)
	}
}
