package replication

import (
	"errors"
	"sync"
)

// Sink carries a full sync's RDB from the snapshot writer's thread to the main thread in
// chunks, which the main thread hands to the replicas' connections. The writer waits when the
// main thread has not taken sinkQueueMax bytes yet, so a snapshot never sits in memory whole on
// its way to replicas.
type Sink struct {
	// Mark is the "$EOF:" mark of a disk-less payload, sent after the last chunk; the engine
	// sets it before the writer starts.
	Mark      string
	wake      func()
	mu        sync.Mutex
	cond      *sync.Cond
	chunks    [][]byte
	queued    int
	cancelled bool
	cur       []byte
}

const (
	sinkChunk    = 64 << 10
	sinkQueueMax = 4 << 20
)

// ErrCancelled is what the writer gets once the sync was cancelled (Cancel).
var ErrCancelled = errors.New("full sync cancelled")

// NewSink makes a sink whose writer calls wake (the main loop's wake-up) when a chunk is ready.
func NewSink(wake func()) *Sink {
	k := &Sink{wake: wake}
	k.cond = sync.NewCond(&k.mu)
	return k
}

// Write is the writer's side: it fills chunks and hands over each full one, waiting while the
// main thread is behind.
func (k *Sink) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		if k.cur == nil {
			k.cur = make([]byte, 0, sinkChunk)
		}
		m := min(len(p), sinkChunk-len(k.cur))
		k.cur = append(k.cur, p[:m]...)
		p = p[m:]
		if len(k.cur) == sinkChunk {
			if err := k.handOff(); err != nil {
				return 0, err
			}
		}
	}
	return n, nil
}

func (k *Sink) handOff() error {
	k.mu.Lock()
	for k.queued >= sinkQueueMax && !k.cancelled {
		k.cond.Wait()
	}
	if k.cancelled {
		k.mu.Unlock()
		return ErrCancelled
	}
	k.chunks = append(k.chunks, k.cur)
	k.queued += len(k.cur)
	k.mu.Unlock()
	k.cur = nil
	k.wake()
	return nil
}

// End is the writer's last call: it hands over the last partial chunk.
func (k *Sink) End() error {
	if len(k.cur) == 0 {
		return nil
	}
	return k.handOff()
}

// Take gives the main thread the chunks encoded so far, in order, and lets a waiting writer go
// on.
func (k *Sink) Take() [][]byte {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := k.chunks
	k.chunks = nil
	k.queued = 0
	k.cond.Broadcast()
	return out
}

// Cancel stops the writer: its next hand-over, or the one it waits in, fails with
// ErrCancelled.
func (k *Sink) Cancel() {
	k.mu.Lock()
	k.cancelled = true
	k.mu.Unlock()
	k.cond.Broadcast()
}
