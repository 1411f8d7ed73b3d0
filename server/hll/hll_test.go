package hll

import (
	"strconv"
	"testing"
)

// The engine's differential test checks values and counts against redis-server byte for byte;
// this one checks the package on its own: estimates within HyperLogLog's error, the sparse to
// dense promotion, and that encoding round-trips.
func TestCountEncodeDecode(t *testing.T) {
	h := New()
	for i := 0; i < 100000; i++ {
		h.Add([]byte("element:" + strconv.Itoa(i)))
	}
	if n := h.Count(); n < 98000 || n > 102000 {
		t.Fatalf("Count of 100000 distinct elements = %d, beyond 2%%", n)
	}
	sparse, dense := h.Encode(false), h.Encode(true)
	if !Valid(dense) || !IsDense(dense) || len(dense) != DenseSize {
		t.Fatalf("dense encoding: valid %v dense %v len %d", Valid(dense), IsDense(dense), len(dense))
	}
	if IsDense(sparse) == false && len(sparse) > HeaderSize+sparseMax {
		t.Fatalf("sparse encoding of %d bytes", len(sparse))
	}
	for _, enc := range [][]byte{sparse, dense} {
		d, ok := Decode(enc)
		if !ok || d.regs != h.regs {
			t.Fatalf("Decode(Encode) changed the registers (ok %v)", ok)
		}
	}
	small := New()
	small.Add([]byte("a"))
	if b := small.Encode(false); IsDense(b) || len(b) > 32 {
		t.Fatalf("one element: %d bytes, dense %v", len(b), IsDense(b))
	}
	if AddDense(dense, []byte("element:1")) {
		t.Fatal("AddDense of an element already counted changed a register")
	}
	if _, fresh := CachedCount(dense); fresh {
		t.Fatal("a value encoded after Add has a fresh cached count")
	}
}
