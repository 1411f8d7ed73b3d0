package engine

import (
	"strconv"
	"sync"
)

// A full sync on the primary: the forkless snapshot (bgsave.go) cut for the replicas that wait
// for one, its writer encoding into a replSink instead of a file, the main thread handing the
// sink's chunks to the replicas' connections as out-of-band output, then the end mark (or the
// whole "$<len>" payload) and the stream held back since the cut.

// startFullSync cuts a snapshot for every replica that waits for one.
func (s *Server) startFullSync() {
	r := &s.repl
	var eof, sized bool
	for _, rl := range r.replicas {
		if rl.state != replicaWaitBgsave {
			continue
		}
		rl.state = replicaSendBulk
		rl.pending = rl.pending[:0]
		if rl.psync {
			s.pushTo(rl.c, []byte("+FULLRESYNC "+r.replid+" "+strconv.FormatInt(r.offset, 10)+"\r\n"))
		}
		if rl.capaEOF {
			eof = true
		} else {
			sized = true
		}
	}
	if !eof && !sized {
		return
	}
	sink := newReplSink(s.io.WakeMain)
	if eof {
		sink.mark = newReplid() // 40 random characters
		for _, rl := range r.replicas {
			if rl.state == replicaSendBulk && rl.capaEOF {
				s.pushTo(rl.c, []byte("$EOF:"+sink.mark+"\r\n"))
			}
		}
	}
	// The stream after the cut starts with a SELECT, whatever the replica's database.
	r.streamDB = -1
	s.startSnapshot(sink, nil)
	s.logf(logNotice, "Starting BGSAVE for SYNC with target: replicas sockets")
}

// deliverSnapshot hands the chunks the writer has encoded to the replicas receiving them.
func (s *Server) deliverSnapshot(sink *replSink) {
	for _, chunk := range sink.take() {
		for _, rl := range s.repl.replicas {
			if rl.state != replicaSendBulk {
				continue
			}
			if rl.capaEOF {
				s.pushTo(rl.c, chunk)
			} else {
				rl.bulk = append(rl.bulk, chunk...)
			}
		}
	}
}

// finishFullSync ends a snapshot sent to replicas: the rest of the payload, then the stream
// held back since the cut, and the replicas are online. A snapshot that failed or was cancelled
// (FLUSHALL, SHUTDOWN) drops its replicas, which will ask again.
func (s *Server) finishFullSync(sn *rdbSnapshot) {
	s.deliverSnapshot(sn.sink)
	for _, rl := range append([]*replicaLink(nil), s.repl.replicas...) {
		if rl.state != replicaSendBulk {
			continue
		}
		if sn.cancelled || sn.err != nil {
			s.killClient(rl.c)
			continue
		}
		rl.state = replicaOnline
		if rl.capaEOF {
			s.pushTo(rl.c, []byte(sn.sink.mark))
			rl.awaitAck = true
		} else {
			s.pushTo(rl.c, append([]byte("$"+strconv.Itoa(len(rl.bulk))+"\r\n"), rl.bulk...))
			rl.bulk = nil
			if len(rl.pending) > 0 {
				s.pushTo(rl.c, rl.pending)
			}
			rl.pending = nil
		}
		rl.ackUnix = s.unixtime
		s.logf(logNotice, "Synchronization with replica %s succeeded", s.replicaName(rl))
	}
	if sn.err != nil && !sn.cancelled {
		s.logf(logWarning, "Background transfer error: %v", sn.err)
	}
	// Replicas that arrived during this snapshot get the next one, from replicationCron.
	s.io.Flush()
}

// replSink carries the RDB from the snapshot writer to the main thread in chunks. The writer
// waits when the main thread has not taken sinkQueueMax bytes yet, so a snapshot never sits in
// memory whole on its way to replicas.
type replSink struct {
	mark      string // the $EOF: mark
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

func newReplSink(wake func()) *replSink {
	k := &replSink{wake: wake}
	k.cond = sync.NewCond(&k.mu)
	return k
}

func (k *replSink) Write(p []byte) (int, error) {
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

func (k *replSink) handOff() error {
	k.mu.Lock()
	for k.queued >= sinkQueueMax && !k.cancelled {
		k.cond.Wait()
	}
	if k.cancelled {
		k.mu.Unlock()
		return errAborted
	}
	k.chunks = append(k.chunks, k.cur)
	k.queued += len(k.cur)
	k.mu.Unlock()
	k.cur = nil
	k.wake()
	return nil
}

// end hands over the last partial chunk.
func (k *replSink) end() error {
	if len(k.cur) == 0 {
		return nil
	}
	return k.handOff()
}

// take gives the main thread the chunks encoded so far.
func (k *replSink) take() [][]byte {
	k.mu.Lock()
	defer k.mu.Unlock()
	out := k.chunks
	k.chunks = nil
	k.queued = 0
	k.cond.Broadcast()
	return out
}

func (k *replSink) cancel() {
	k.mu.Lock()
	k.cancelled = true
	k.mu.Unlock()
	k.cond.Broadcast()
}
