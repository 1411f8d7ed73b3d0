package engine

import (
	"fmt"
	"io"
	"os"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"

	"github.com/iocache/iocache/server/aof"
	"github.com/iocache/iocache/server/cpuset"
	"github.com/iocache/iocache/server/keyspace"
	"github.com/iocache/iocache/server/rdb"
	"github.com/iocache/iocache/server/replication"
)

// Forkless BGSAVE. Go cannot fork, and fork's copy-on-write is where Redis's worst pauses come
// from anyway. Instead a snapshot is a cut in time kept by the keyspace (keyspace/snapshot.go):
// the main thread walks the records in short paced slices between batches of commands, copying
// each string (or handing over each collection) into chunks, and before any write changes a
// record the walk has not reached, the keyspace hands that record over first. A writer thread
// pinned to bgsave_cpulist does the expensive part: RDB encoding, LZF, CRC64, the file writes
// and fsync. Collections are not copied: the writer reads them in place, and a command that
// writes one the writer has not finished with works on a copy instead (WriteObject).

const (
	chunkBytes   = 256 << 10
	chunkEntries = 4096
	chunkPool    = 8
	// walkShare is the share of the main thread's time the walk may take while clients are
	// busy, in slices of walkSliceNs; once no command has run for walkIdleAfterNs (a quiet
	// server, not a pipeline between two batches) it runs in longer slices.
	walkShare       = 0.08
	walkSliceNs     = 100_000
	walkIdleNs      = 1_000_000
	walkIdleAfterNs = 5_000_000
	walkBatch       = 64
	writerNice      = 10
)

// snapEntry is one key as it was at the cut. Strings are copied into the chunk's data;
// collections travel as their object.
type snapEntry struct {
	db       int
	key, val [2]int // offsets into snapChunk.data
	typ      keyspace.Type
	obj      any
	meta     rdb.KeyMeta
}

// object is the entry's collection: the object handed over, or one reading an inline
// collection's bytes in the chunk.
func (en *snapEntry) object(data []byte) any {
	if en.obj == nil && en.typ != keyspace.TypeString {
		return keyspace.FromPayload(en.typ, data[en.val[0]:en.val[1]])
	}
	return en.obj
}

type snapChunk struct {
	seq     uint64
	entries []snapEntry
	data    []byte
}

func (c *snapChunk) full() bool { return len(c.data) >= chunkBytes || len(c.entries) >= chunkEntries }

// rdbSnapshot is one running BGSAVE.
type rdbSnapshot struct {
	s         *Server
	dbs       []*keyspace.DB // the databases at the cut, by number
	extra     []*keyspace.DB // databases FLUSHDB created since, which must report writes too
	counts    [][2]int       // keys and keys with TTL per database at the cut
	pos       []int
	cur       int
	path      string
	startNs   int64
	startUnix int64
	spentNs   int64
	lastCmds  int64
	activeNs  int64    // when a command last ran, as the walk saw it
	dirty     int64    // the dirty counter at the cut
	functions [][]byte // the function libraries' codes at the cut

	chunk   *snapChunk
	seq     uint64
	shared  map[any]uint64 // collections handed to the writer → the chunk that carries them
	encoded atomic.Uint64  // chunks the writer has finished with

	mu     sync.Mutex
	cond   *sync.Cond
	queue  []*snapChunk // filled chunks for the writer
	free   []*snapChunk
	closed bool // no more chunks
	// aborted stops the copying: the save failed or was cancelled.
	aborted   atomic.Bool
	cancelled bool // by abortBGSave, not a failure

	keysTotal   int64
	keysWritten atomic.Int64
	done        atomic.Bool
	err         error // set by the writer before done
	// writerBehind is set when the walk found no free chunk: the main loop then polls instead
	// of spinning.
	writerBehind bool
	// sink, for a full sync: the RDB goes to replicas (replication_primary.go), not to a file.
	sink *replication.Sink
	// aof, for an AOF rewrite: the file is the AOF's new base (aof_rewrite.go).
	aof *aofRewriteJob
}

// snapHook receives one database's writes for the snapshot.
type snapHook struct {
	sn *rdbSnapshot
	db int
}

func (h snapHook) Preserve(db *keyspace.DB, r keyspace.Ref) { h.sn.emit(h.db, db, r, true) }

func (h snapHook) WriteObject(db *keyspace.DB, r keyspace.Ref) {
	sn := h.sn
	obj := db.Obj(r)
	seq, ok := sn.shared[obj]
	if !ok {
		return
	}
	delete(sn.shared, obj)
	if seq > sn.encoded.Load() {
		// The writer may still be reading it: the keyspace continues with a copy.
		db.ReplaceObj(r, cloneObject(obj))
	}
}

// startBGSave cuts a snapshot and starts its writer. It returns an error when one is running.
func (s *Server) startBGSave() error {
	if s.persist.running != nil {
		return errBGSaveRunning
	}
	s.persist.lastBgsaveTry = s.unixtime
	s.startSnapshot(nil, nil)
	s.logf(logNotice, "Background saving started")
	return nil
}

// startSnapshot cuts a snapshot and starts its writer, which writes the RDB file, into sink for
// replicas, or the AOF's new base for job.
func (s *Server) startSnapshot(sink *replication.Sink, job *aofRewriteJob) {
	p := &s.persist
	sn := &rdbSnapshot{s: s, path: s.rdbPath(), startNs: nanotime(), startUnix: s.unixtime, dirty: s.stats.dirty,
		shared: map[any]uint64{}, lastCmds: s.stats.commandsProcessed, activeNs: nanotime(), sink: sink, functions: s.functionCodes(),
		aof: job}
	cpus := s.plan.BGSave
	if job != nil {
		sn.path, cpus = s.aofPath(job.baseName), s.plan.AOFRewrite
	}
	sn.cond = sync.NewCond(&sn.mu)
	for i := 0; i < chunkPool; i++ {
		sn.free = append(sn.free, &snapChunk{data: make([]byte, 0, chunkBytes+4096)})
	}
	for i, db := range s.dbs {
		sn.dbs = append(sn.dbs, db)
		sn.counts = append(sn.counts, [2]int{db.Len(), db.ExpiresLen()})
		sn.keysTotal += int64(db.Len())
		sn.pos = append(sn.pos, db.BeginSnapshot(snapHook{sn, i}))
	}
	p.running = sn
	go sn.write(cpus, s.rdbOptions(), s.usedMemory(), s.cfg.AOFRewriteIncrementalFsync)
}

var errBGSaveRunning = fmt.Errorf("Background save already in progress")

// chunkFor returns the chunk entries go into, handing a full one to the writer. A walk step
// (!force) gets nothing when the writer is behind; a write that must preserve a record (force)
// gets a fresh chunk rather than waiting.
func (sn *rdbSnapshot) chunkFor(force bool) *snapChunk {
	if sn.chunk != nil && !sn.chunk.full() {
		return sn.chunk
	}
	sn.flush()
	sn.mu.Lock()
	if n := len(sn.free); n > 0 {
		sn.chunk = sn.free[n-1]
		sn.free = sn.free[:n-1]
	}
	sn.mu.Unlock()
	if sn.chunk == nil {
		if !force {
			return nil
		}
		sn.chunk = &snapChunk{data: make([]byte, 0, chunkBytes+4096)}
	}
	sn.seq++
	sn.chunk.seq = sn.seq
	return sn.chunk
}

// flush hands the chunk being filled to the writer.
func (sn *rdbSnapshot) flush() {
	if sn.chunk == nil {
		return
	}
	sn.mu.Lock()
	sn.queue = append(sn.queue, sn.chunk)
	sn.mu.Unlock()
	sn.cond.Signal()
	sn.chunk = nil
}

// emit records one key as it is now: the walk's next key, or one a write is about to change.
func (sn *rdbSnapshot) emit(dbIndex int, db *keyspace.DB, r keyspace.Ref, force bool) {
	if sn.aborted.Load() {
		return
	}
	ch := sn.chunkFor(force)
	e := snapEntry{db: dbIndex, typ: db.Type(r), meta: sn.s.keyMeta(db, r)}
	k := db.Key(r)
	e.key = [2]int{len(ch.data), len(ch.data) + len(k)}
	ch.data = append(ch.data, k...)
	if e.typ == keyspace.TypeString {
		v := db.Str(r)
		e.val = [2]int{len(ch.data), len(ch.data) + len(v)}
		ch.data = append(ch.data, v...)
	} else if data, inline := db.AppendPayload(ch.data, r); inline {
		// An inline collection is copied like a string: its bytes are the record's.
		e.val = [2]int{len(ch.data), len(data)}
		ch.data = data
	} else {
		e.obj = db.Obj(r)
		sn.shared[e.obj] = ch.seq
	}
	ch.entries = append(ch.entries, e)
}

// bgsaveStep advances the running BGSAVE on the main thread: a paced slice of the walk, or the
// end of the save once the writer is done.
func (s *Server) bgsaveStep() {
	sn := s.persist.running
	if sn == nil {
		return
	}
	if sn.done.Load() && sn.cur >= len(sn.dbs) {
		s.finishBGSave(sn)
		return
	}
	if sn.cur >= len(sn.dbs) {
		return
	}
	start := nanotime()
	if sn.aborted.Load() {
		// The save failed: finish the walk without copying, so that no record stays marked.
		for sn.cur < len(sn.dbs) && nanotime()-start < walkSliceNs {
			if sn.pos[sn.cur] = sn.dbs[sn.cur].Walk(sn.pos[sn.cur], 4096, nil); sn.pos[sn.cur] < 0 {
				sn.cur++
			}
		}
		if sn.cur >= len(sn.dbs) {
			sn.close()
		}
		return
	}
	budget := int64(walkSliceNs)
	if s.stats.commandsProcessed != sn.lastCmds {
		sn.lastCmds, sn.activeNs = s.stats.commandsProcessed, start
	}
	if start-sn.activeNs > walkIdleAfterNs {
		budget = walkIdleNs
	} else if int64(float64(start-sn.startNs)*walkShare)-sn.spentNs <= 0 {
		return
	}
	sn.writerBehind = false
	for sn.cur < len(sn.dbs) && nanotime()-start < budget {
		if sn.chunkFor(false) == nil {
			sn.writerBehind = true
			break
		}
		i := sn.cur
		db := sn.dbs[i]
		sn.pos[i] = db.Walk(sn.pos[i], walkBatch, func(r keyspace.Ref) { sn.emit(i, db, r, true) })
		if sn.pos[i] < 0 {
			sn.cur++
		}
	}
	if sn.cur >= len(sn.dbs) {
		sn.flush()
		sn.close()
	}
	sn.spentNs += nanotime() - start
}

// walking reports that the main loop should not sleep: the server is quiet and the walk has
// work it can do now. While clients are busy their requests wake the loop often enough.
func (s *Server) walking() bool {
	sn := s.persist.running
	return sn != nil && sn.cur < len(sn.dbs) && !sn.writerBehind && nanotime()-sn.activeNs > walkIdleAfterNs
}

// close tells the writer that no more chunks come.
func (sn *rdbSnapshot) close() {
	sn.mu.Lock()
	sn.closed = true
	sn.mu.Unlock()
	sn.cond.Signal()
}

// finishBGSave ends the snapshot on the main thread once the writer has finished.
func (s *Server) finishBGSave(sn *rdbSnapshot) {
	p := &s.persist
	sn.release()
	p.running = nil
	if sn.sink != nil {
		s.finishFullSync(sn)
		return
	}
	if sn.aof != nil {
		s.finishAOFRewrite(sn)
		return
	}
	p.lastBgsaveSec = s.unixtime - sn.startUnix
	if sn.cancelled {
		return
	}
	if sn.err != nil {
		p.lastBgsaveOK = false
		s.logf(logWarning, "Background saving error: %v", sn.err)
		return
	}
	p.lastBgsaveOK = true
	p.lastSave = sn.startUnix
	p.saves++
	s.recordSave(sn.path, sn.startNs)
	s.stats.dirty = max(s.stats.dirty-sn.dirty, 0)
	s.logf(logNotice, "Background saving terminated with success")
}

// release stops the databases reporting writes. Databases whose walk did not finish (an
// aborted save) are walked to the end without copying, so no record stays marked for the next
// snapshot.
func (sn *rdbSnapshot) release() {
	for i, db := range sn.dbs {
		for sn.pos[i] >= 0 {
			sn.pos[i] = db.Walk(sn.pos[i], 1<<20, nil)
		}
		db.EndSnapshot()
	}
	for _, db := range sn.extra {
		db.EndSnapshot()
	}
	sn.shared = nil
}

// abortBGSave stops a running BGSAVE (SHUTDOWN, FLUSHALL) and waits for its writer to remove
// the temporary file.
func (s *Server) abortBGSave() {
	sn := s.persist.running
	if sn == nil {
		return
	}
	sn.cancelled = true
	sn.aborted.Store(true)
	if sn.sink != nil {
		sn.sink.Cancel()
	}
	sn.close()
	for !sn.done.Load() {
		time.Sleep(100 * time.Microsecond)
	}
	s.finishBGSave(sn)
}

// adoptDB makes a database created during the snapshot (FLUSHDB) report writes as well:
// collections moved into it may still be read by the writer.
func (s *Server) adoptDB(db *keyspace.DB, index int) {
	if sn := s.persist.running; sn != nil {
		db.BeginSnapshot(snapHook{sn, index})
		sn.extra = append(sn.extra, db)
	}
}

// sharedWithWriter reports that the writer may still read obj, so it must not be released.
func (s *Server) sharedWithWriter(obj any) bool {
	sn := s.persist.running
	if sn == nil {
		return false
	}
	seq, ok := sn.shared[obj]
	return ok && seq > sn.encoded.Load()
}

// write is the writer thread: it encodes the chunks into a temporary file, then fsyncs and
// renames it.
func (sn *rdbSnapshot) write(cpus []int, opts rdb.Options, usedMem int64, incrementalFsync bool) {
	// Locked and never unlocked: the thread exits with this goroutine, taking its CPU mask along.
	runtime.LockOSThread()
	sn.s.bgsaveTID.Store(int64(cpuset.Gettid()))
	defer sn.s.bgsaveTID.Store(0)
	if len(cpus) > 0 {
		if err := cpuset.PinThread(cpus); err != nil {
			sn.s.logf(logWarning, "%s thread: pinning to %s failed: %v", sn.kind(), cpuset.Format(cpus), err)
		}
	}
	// Where bgsave_cpulist shares CPUs with the server's threads, those win: the save is
	// background work and may take longer, clients should not wait for it.
	_ = unix.Setpriority(unix.PRIO_PROCESS, cpuset.Gettid(), writerNice)
	encode := func(w io.Writer) error {
		if sn.aof != nil && sn.aof.commands {
			return sn.encodeCommands(w)
		}
		e := rdb.NewEncoder(w, opts)
		sn.s.writeRDBHeader(e, sn.startUnix, usedMem, sn.functions, sn.aof != nil)
		selected, resized := -1, map[int]bool{}
		for {
			ch, ok := sn.next()
			if !ok {
				break
			}
			if sn.aborted.Load() {
				sn.recycle(ch)
				continue
			}
			for i := range ch.entries {
				en := &ch.entries[i]
				if en.db != selected {
					selected = en.db
					if !resized[en.db] {
						resized[en.db] = true
						e.SelectDB(en.db, sn.counts[en.db][0], sn.counts[en.db][1])
					} else {
						e.SelectDBOnly(en.db)
					}
				}
				v := rdb.Value{Type: en.typ, Obj: en.object(ch.data)}
				if en.typ == keyspace.TypeString {
					v.Str = ch.data[en.val[0]:en.val[1]]
				}
				e.Key(ch.data[en.key[0]:en.key[1]], v, en.meta)
			}
			sn.keysWritten.Add(int64(len(ch.entries)))
			sn.recycle(ch)
			if e.Err() != nil {
				sn.aborted.Store(true)
			}
		}
		if sn.aborted.Load() {
			if err := e.Err(); err != nil {
				return err
			}
			return errAborted
		}
		return e.Close()
	}
	var err error
	if sn.sink != nil {
		if err = encode(sn.sink); err == nil {
			err = sn.sink.End()
		}
	} else if sn.aof != nil {
		// An AOF base can be large: with aof-rewrite-incremental-fsync it reaches the disk in
		// steps, so the final fsync does not stall the disk for long.
		err = writeFileAtomically(sn.path, func(f *os.File) error {
			if incrementalFsync {
				return encode(&syncingWriter{f: f})
			}
			return encode(f)
		})
		if err == nil {
			sn.s.logf(logNotice, "Successfully created the AOF base file %s", sn.aof.baseName)
		}
	} else if err = writeFileAtomically(sn.path, func(f *os.File) error { return encode(f) }); err == nil {
		sn.s.logf(logNotice, "DB saved on disk")
	}
	if err != nil {
		sn.aborted.Store(true)
	}
	sn.err = err
	sn.done.Store(true)
	sn.s.io.WakeMain()
}

var errAborted = fmt.Errorf("background save aborted")

// encodeCommands writes the snapshot as an AOF base of commands (aof.BaseWriter).
func (sn *rdbSnapshot) encodeCommands(w io.Writer) error {
	b := aof.NewBaseWriter(w)
	b.Functions(sn.functions)
	for {
		ch, ok := sn.next()
		if !ok {
			break
		}
		if sn.aborted.Load() {
			sn.recycle(ch)
			continue
		}
		for i := range ch.entries {
			en := &ch.entries[i]
			var str []byte
			if en.typ == keyspace.TypeString {
				str = ch.data[en.val[0]:en.val[1]]
			}
			b.Key(en.db, ch.data[en.key[0]:en.key[1]], en.typ, str, en.object(ch.data), en.meta.ExpireAt)
		}
		sn.keysWritten.Add(int64(len(ch.entries)))
		sn.recycle(ch)
		if b.Err() != nil {
			sn.aborted.Store(true)
		}
	}
	if sn.aborted.Load() {
		if b.Err() != nil {
			return b.Err()
		}
		return errAborted
	}
	return b.Close()
}

// next waits for a filled chunk; false once the walk is over and every chunk was written.
func (sn *rdbSnapshot) next() (*snapChunk, bool) {
	sn.mu.Lock()
	defer sn.mu.Unlock()
	for len(sn.queue) == 0 && !sn.closed {
		sn.cond.Wait()
	}
	if len(sn.queue) == 0 {
		return nil, false
	}
	ch := sn.queue[0]
	sn.queue = sn.queue[1:]
	return ch, true
}

// recycle returns a written chunk to the pool and publishes that its collections are done.
func (sn *rdbSnapshot) recycle(ch *snapChunk) {
	sn.encoded.Store(ch.seq)
	clear(ch.entries)
	ch.entries, ch.data = ch.entries[:0], ch.data[:0]
	sn.mu.Lock()
	if len(sn.free) < chunkPool {
		sn.free = append(sn.free, ch)
	}
	sn.mu.Unlock()
}

func (sn *rdbSnapshot) kind() string {
	if sn.aof != nil {
		return "aof rewrite"
	}
	return "bgsave"
}

// syncingWriter fsyncs its file every aofAutosyncBytes (Redis's REDIS_AUTOSYNC_BYTES).
type syncingWriter struct {
	f       *os.File
	pending int
}

const aofAutosyncBytes = 4 << 20

func (w *syncingWriter) Write(p []byte) (int, error) {
	n, err := w.f.Write(p)
	w.pending += n
	if err == nil && w.pending >= aofAutosyncBytes {
		w.pending = 0
		err = unix.Fdatasync(int(w.f.Fd()))
	}
	return n, err
}
