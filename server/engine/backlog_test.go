package engine

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestBacklogAgainstModel: whatever the chunks and the limit, since(n) is the last n bytes
// written, and the buffer never holds more than the limit or much more than was written.
func TestBacklogAgainstModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for round := 0; round < 200; round++ {
		limit := int64(1 + rng.IntN(20000))
		b := newBacklog(limit)
		var all []byte
		for w := 0; w < 50; w++ {
			chunk := make([]byte, rng.IntN(3000))
			for i := range chunk {
				chunk[i] = byte(rng.Uint32())
			}
			b.write(chunk)
			all = append(all, chunk...)
			want := int64(len(all))
			if want > limit {
				want = limit
			}
			if b.histlen != want {
				t.Fatalf("round %d: histlen %d, want %d", round, b.histlen, want)
			}
			n := rng.Int64N(b.histlen + 1)
			if got := b.since(n); !bytes.Equal(got, all[int64(len(all))-n:]) {
				t.Fatalf("round %d: since(%d) is not the last %d bytes written", round, n, n)
			}
			if int64(cap(b.buf)) > limit || cap(b.buf) > 2*len(all)+4096 {
				t.Fatalf("round %d: %d bytes held for %d written under a limit of %d", round, cap(b.buf), len(all), limit)
			}
		}
	}
}

// TestHugeBacklogCostsWhatIsWritten: repl-backlog-size 100gb used to allocate 100 GB at the
// first PSYNC (fatal error: out of memory); it now costs the stream written so far.
func TestHugeBacklogCostsWhatIsWritten(t *testing.T) {
	b := newBacklog(100 << 30)
	b.write(bytes.Repeat([]byte("x"), 1<<20))
	if cap(b.buf) > 4<<20 {
		t.Fatalf("a 100 GB backlog holding 1 MiB takes %d bytes", cap(b.buf))
	}
}
