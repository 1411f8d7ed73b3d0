package replication

import (
	"bytes"
	"errors"
	"sync/atomic"
	"testing"
	"time"
)

// TestSink: what the writer writes, the main thread takes in order, in chunks; the writer waits
// while sinkQueueMax bytes are not taken, and wakes the main thread for each chunk.
func TestSink(t *testing.T) {
	var wakes atomic.Int64
	k := NewSink(func() { wakes.Add(1) })
	data := make([]byte, 3*sinkQueueMax+12345)
	for i := range data {
		data[i] = byte(i * 7)
	}
	done := make(chan error, 1)
	go func() {
		for p := data; len(p) > 0; {
			n := min(len(p), 10000)
			if _, err := k.Write(p[:n]); err != nil {
				done <- err
				return
			}
			p = p[n:]
		}
		done <- k.End()
	}()
	var got []byte
	for {
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
			for _, c := range k.Take() {
				got = append(got, c...)
			}
			if !bytes.Equal(got, data) {
				t.Fatalf("took %d bytes, not the %d written", len(got), len(data))
			}
			if wakes.Load() == 0 {
				t.Fatal("the main thread was never woken")
			}
			return
		default:
		}
		k.mu.Lock()
		queued := k.queued
		k.mu.Unlock()
		if queued > sinkQueueMax+sinkChunk {
			t.Fatalf("%d bytes queued, past the most of %d", queued, sinkQueueMax)
		}
		for _, c := range k.Take() {
			got = append(got, c...)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestSinkCancel: a writer waiting for the main thread stops with ErrCancelled.
func TestSinkCancel(t *testing.T) {
	k := NewSink(func() {})
	done := make(chan error, 1)
	go func() {
		_, err := k.Write(make([]byte, 2*sinkQueueMax))
		done <- err
	}()
	time.Sleep(10 * time.Millisecond)
	k.Cancel()
	select {
	case err := <-done:
		if !errors.Is(err, ErrCancelled) {
			t.Fatalf("cancelled writer: %v", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the writer still waits after Cancel")
	}
}
