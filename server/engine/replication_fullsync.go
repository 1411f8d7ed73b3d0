package engine

import (
	"slices"
	"strconv"

	"github.com/iocache/iocache/server/replication"
)

// A full sync on the primary: the forkless snapshot (bgsave.go) cut for the replicas that wait
// for one, its writer encoding into a replication.Sink instead of a file, the main thread
// handing the sink's chunks to the replicas' connections as out-of-band output, then the end
// mark (or the whole "$<len>" payload) and the stream held back since the cut.

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
	sink := replication.NewSink(s.io.WakeMain)
	if eof {
		sink.Mark = replication.NewID() // 40 random characters
		for _, rl := range r.replicas {
			if rl.state == replicaSendBulk && rl.capaEOF {
				s.pushTo(rl.c, []byte("$EOF:"+sink.Mark+"\r\n"))
			}
		}
	}
	// The stream after the cut starts with a SELECT, whatever the replica's database.
	r.streamDB = -1
	s.startSnapshot(sink, nil)
	s.logf(logNotice, "Starting BGSAVE for SYNC with target: replicas sockets")
}

// deliverSnapshot hands the chunks the writer has encoded to the replicas receiving them.
func (s *Server) deliverSnapshot(sink *replication.Sink) {
	for _, chunk := range sink.Take() {
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
		if rl.rdbOnly {
			s.endRDBOnly(rl, sn.sink.Mark)
			continue
		}
		rl.state = replicaOnline
		s.endPayload(rl, sn.sink.Mark)
		if rl.capaEOF {
			rl.awaitAck = true
		} else {
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

// endRDBOnly sends an rdb-only link the end of its payload and takes it off the replica list at
// once: it asked for the snapshot alone, so nothing of the stream is kept for it. The client
// closes the connection once it has read the payload (redis-cli --rdb and iocache-server
// backup do); until then it is an idle connection with no output.
func (s *Server) endRDBOnly(rl *replicaLink, mark string) {
	s.endPayload(rl, mark)
	s.logf(logNotice, "Snapshot sent to rdb-only replica %s", s.replicaName(rl))
	s.repl.replicas = slices.DeleteFunc(s.repl.replicas, func(x *replicaLink) bool { return x == rl })
}

// endPayload sends what ends a replica's payload: the disk-less form's mark, or the whole
// "$<len>" payload, which had to be complete before its length could go first.
func (s *Server) endPayload(rl *replicaLink, mark string) {
	if rl.capaEOF {
		s.pushTo(rl.c, []byte(mark))
		return
	}
	s.pushTo(rl.c, append([]byte("$"+strconv.Itoa(len(rl.bulk))+"\r\n"), rl.bulk...))
	rl.bulk = nil
}
