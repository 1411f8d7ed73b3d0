package replication

import (
	"bytes"
	"math/rand/v2"
	"testing"
)

// TestBacklogAgainstModel: whatever the chunks and the limit, Since(n) is the last n bytes
// written, and the buffer never holds more than the limit or much more than was written.
func TestBacklogAgainstModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	for round := 0; round < 200; round++ {
		limit := int64(1 + rng.IntN(20000))
		b := NewBacklog(limit)
		var all []byte
		for w := 0; w < 50; w++ {
			chunk := make([]byte, rng.IntN(3000))
			for i := range chunk {
				chunk[i] = byte(rng.Uint32())
			}
			b.Write(chunk)
			all = append(all, chunk...)
			want := int64(len(all))
			if want > limit {
				want = limit
			}
			if b.histlen != want {
				t.Fatalf("round %d: histlen %d, want %d", round, b.histlen, want)
			}
			n := rng.Int64N(b.histlen + 1)
			if got := b.Since(n); !bytes.Equal(got, all[int64(len(all))-n:]) {
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
	b := NewBacklog(100 << 30)
	b.Write(bytes.Repeat([]byte("x"), 1<<20))
	if cap(b.buf) > 4<<20 {
		t.Fatalf("a 100 GB backlog holding 1 MiB takes %d bytes", cap(b.buf))
	}
}

// TestBacklogResize: a new limit keeps the last bytes that fit, and the stream goes on from
// them.
func TestBacklogResize(t *testing.T) {
	b := NewBacklog(10)
	b.Write([]byte("0123456789abc"))
	b.Resize(4)
	if b.Limit() != 4 || b.Len() != 4 || string(b.Since(4)) != "9abc" {
		t.Fatalf("shrunk: limit %d, %q", b.Limit(), b.Since(b.Len()))
	}
	b.Resize(8)
	b.Write([]byte("de"))
	if b.Len() != 6 || string(b.Since(6)) != "9abcde" {
		t.Fatalf("grown: %q", b.Since(b.Len()))
	}
}

// TestBacklogWriteAllocatesNothing: the backlog is on the write path of every propagated
// command; once it has its size (a ring), a write allocates nothing. The zero value, no
// backlog, takes nothing.
func TestBacklogWriteAllocatesNothing(t *testing.T) {
	b := NewBacklog(1 << 16)
	chunk := bytes.Repeat([]byte("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n"), 10)
	for b.Len() < b.Limit() {
		b.Write(chunk)
	}
	if n := testing.AllocsPerRun(1000, func() { b.Write(chunk) }); n != 0 {
		t.Fatalf("%.2f allocations per write", n)
	}
	var none Backlog
	none.Write(chunk)
	if none.Active() || none.Len() != 0 {
		t.Fatal("the zero backlog kept a write")
	}
}
