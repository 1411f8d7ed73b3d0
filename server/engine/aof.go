package engine

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/iocache/iocache/server/aof"
	"github.com/iocache/iocache/server/resp"
)

// The append-only file, as Redis 7.0 keeps it: a base (a snapshot in RDB format, written by a
// rewrite) and incremental files of the commands that changed the data set since, listed by a
// manifest (aof_manifest.go). The commands are the propagation stream replicas get
// (propagate.go): every unit of writes goes, in its deterministic form, into an in-memory buffer
// on the main thread, and the buffer is written to the current incremental file once per
// event-loop iteration, in beforeSleep, with one write, and the replies of the iteration are held
// back until then, as Redis writes the AOF before it writes replies: a process that crashes
// loses no acknowledged write. appendfsync says when the write reaches the disk: always, with an
// fdatasync on the main thread right after it, before the replies go (group commit: one write and
// one fsync cover every client of the iteration); everysec, by an fdatasync on the bio thread at
// most once a second (while one is slow, writes wait up to two seconds and replies do not); no,
// whenever the kernel writes it. Loading is aof_load.go, BGREWRITEAOF aof_rewrite.go.

// aofState is the main thread's AOF state (Redis's aof_* server fields).
type aofState struct {
	// on: appendonly yes and the AOF exists (Redis's AOF_ON). waitRewrite: turned on live, the
	// first base is being written (AOF_WAIT_REWRITE); commands go to a temporary incremental
	// file meanwhile. feeding: commands go into buf (on, or waitRewrite with its rewrite running).
	on          bool
	waitRewrite bool
	feeding     bool
	// holdReplies: while feeding, replies of an iteration that wrote wait for its write (and
	// fsync, with always).
	holdReplies bool
	buf         []byte
	held        []*client
	selectedDB  int
	// curTS is the time of the last "#TS:" annotation (aof-timestamp-enabled).
	curTS    int64
	file     *os.File
	fileName string
	manifest *aof.Manifest
	// Sizes as INFO reports them: the base and incremental files together, the base at the last
	// rewrite (what auto-aof-rewrite-percentage compares with), and the current incremental file.
	currentSize int64
	baseSize    int64
	incrSize    int64
	// unsynced: written since the last fsync; everysec fsyncs on the bio thread (syncing), not
	// more than once a second, and writes wait up to two seconds for a slow one
	// (postponedSince) before they go ahead anyway (delayedFsync counts those).
	unsynced       bool
	syncing        atomic.Bool
	syncErr        atomic.Pointer[error]
	lastFsync      int64
	postponedSince int64
	delayedFsync   int64
	// writeErr is the last failed write, until a write succeeds: writes are refused meanwhile.
	writeErr   error
	lastErrLog int64
	// Rewrites (aof_rewrite.go).
	rewriteScheduled    bool
	rewrites            int64
	lastRewriteSec      int64
	lastRewriteOK       bool
	consecutiveFailures int64
	nextRetry           int64
}

// aofWriteErrorLogRate is how often a failing write is logged, in seconds (Redis's
// AOF_WRITE_LOG_ERROR_RATE).
const aofWriteErrorLogRate = 30

// updatePropagation recomputes the one flag commands test before they collect what they change:
// replicas or the AOF want the stream.
func (s *Server) updatePropagation() {
	a := &s.aof
	a.feeding = a.on || (a.waitRewrite && s.aofRewriteRunning())
	a.holdReplies = a.feeding
	s.propagating = s.repl.feeding || a.feeding
}

// aofFeedUnit appends a unit's operations to the AOF buffer: several wrapped in MULTI/EXEC, a
// SELECT where the database changes. Operations of no database (PING, REPLCONF GETACK) and
// PUBLISH are for replicas only, as in Redis.
func (s *Server) aofFeedUnit(p *propagation) {
	a := &s.aof
	n := 0
	for _, op := range p.ops {
		if aofWants(p, op) {
			n++
		}
	}
	if n == 0 {
		return
	}
	wrap := n > 1 && !p.unwrapped
	if s.cfg.AOFTimestampEnabled && a.curTS < s.unixtime {
		// Redis's annotation, once a second at most: redis-check-aof --truncate-to-timestamp
		// cuts an AOF back to a point in time by it.
		a.curTS = s.unixtime
		a.buf = append(a.buf, "#TS:"...)
		a.buf = strconv.AppendInt(a.buf, s.unixtime, 10)
		a.buf = append(a.buf, '\r', '\n')
	}
	first := true
	for _, op := range p.ops {
		if !aofWants(p, op) {
			continue
		}
		if first && wrap {
			s.aofSelect(op.db)
			a.buf = append(a.buf, respMULTI...)
		}
		first = false
		s.aofSelect(op.db)
		a.buf = append(a.buf, p.unit[op.start:op.end]...)
	}
	if wrap {
		a.buf = append(a.buf, respEXEC...)
	}
}

func aofWants(p *propagation, op replOp) bool {
	if op.db < 0 {
		return false
	}
	enc := p.unit[op.start:op.end]
	const pub = "*3\r\n$7\r\npublish"
	return len(enc) < len(pub) || !resp.EqualFold(enc[:len(pub)], pub)
}

func (s *Server) aofSelect(db int) {
	a := &s.aof
	if db == a.selectedDB {
		return
	}
	a.selectedDB = db
	a.buf = resp.AppendCommand(a.buf, [][]byte{[]byte("SELECT"), strconv.AppendInt(nil, int64(db), 10)})
}

// holdForAOF keeps a client's replies until the AOF buffer is written.
func (s *Server) holdForAOF(c *client) {
	c.mainOwned = true
	s.aof.held = append(s.aof.held, c)
}

// releaseHeld returns the clients whose replies waited for the fsync.
func (s *Server) releaseHeld() {
	a := &s.aof
	for i, c := range a.held {
		a.held[i] = nil
		c.mainOwned = false
		if c.conn.Closed() {
			s.unlinkClient(c)
			continue
		}
		s.io.Return(c.conn)
	}
	a.held = a.held[:0]
}

// aofBeforeSleep writes the iteration's commands and fsyncs as appendfsync says, then lets the
// held replies go. With always the buffer is empty by then (a failed write ends the process);
// with everysec a write that waits for a slow fsync, or failed, does not hold replies, as in
// Redis.
func (s *Server) aofBeforeSleep() {
	s.flushAOF(false)
	s.releaseHeld()
}

// flushAOF writes the buffer to the incremental file (Redis's flushAppendOnlyFile). force
// writes even while an everysec fsync is slow (a rewrite's cut, shutdown).
func (s *Server) flushAOF(force bool) {
	a := &s.aof
	if a.file == nil {
		return
	}
	always := s.cfg.AppendFsync == "always"
	if len(a.buf) > 0 {
		if s.cfg.AppendFsync == "everysec" && a.syncing.Load() && !force {
			// The disk is busy with the last fsync: a write now would wait for it.
			if a.postponedSince == 0 {
				a.postponedSince = s.unixtime
				return
			}
			if s.unixtime-a.postponedSince < 2 {
				return
			}
			a.delayedFsync++
			s.logf(logNotice, "Asynchronous AOF fsync is taking too long (disk is busy?). Writing the AOF buffer without waiting for fsync to complete, this may slow down Redis.")
		}
		a.postponedSince = 0
		n, err := a.file.Write(a.buf)
		if err != nil {
			s.aofWriteFailed(n, err, always)
			return
		}
		if a.writeErr != nil {
			s.logf(logWarning, "AOF write error looks solved, Redis can write again.")
			a.writeErr = nil
		}
		a.currentSize += int64(n)
		a.incrSize += int64(n)
		a.unsynced = true
		if cap(a.buf) > 4<<20 {
			a.buf = nil
		} else {
			a.buf = a.buf[:0]
		}
	}
	if !a.unsynced || (s.cfg.NoAppendFsyncOnRewrite && s.persist.running != nil) {
		return
	}
	switch {
	case always:
		if err := unix.Fdatasync(int(a.file.Fd())); err != nil {
			s.logf(logWarning, "Can't persist AOF for fsync error when the AOF fsync policy is 'always': %v. Exiting...", err)
			os.Exit(1)
		}
		a.unsynced = false
		a.lastFsync = s.unixtime
	case s.cfg.AppendFsync == "everysec" && s.unixtime > a.lastFsync:
		if !a.syncing.Load() {
			s.fsyncInBackground(a.file)
			a.unsynced = false
		}
		a.lastFsync = s.unixtime
	}
}

// fsyncInBackground has the bio thread fdatasync f; a failure refuses writes until the next one
// succeeds, as Redis's aof_bio_fsync_status does.
func (s *Server) fsyncInBackground(f *os.File) {
	a := &s.aof
	a.syncing.Store(true)
	s.bio.submit(func() {
		if err := unix.Fdatasync(int(f.Fd())); err != nil && !errors.Is(err, os.ErrClosed) {
			a.syncErr.Store(&err)
		} else {
			a.syncErr.Store(nil)
		}
		a.syncing.Store(false)
	})
}

// closeInBackground fsyncs and closes a file the AOF no longer appends to, on the bio thread,
// after any fsync queued before.
func (s *Server) closeInBackground(f *os.File) {
	s.bio.submit(func() {
		_ = unix.Fdatasync(int(f.Fd()))
		_ = f.Close()
	})
}

// aofWriteFailed handles a failed or short write: what was written in part is cut off again
// where possible, and writes are refused until a write succeeds. With appendfsync always
// acknowledged writes would no longer be on disk, so the server exits, as Redis does.
func (s *Server) aofWriteFailed(n int, err error, always bool) {
	a := &s.aof
	if s.unixtime-a.lastErrLog > aofWriteErrorLogRate {
		a.lastErrLog = s.unixtime
		if n > 0 {
			s.logf(logWarning, "Short write while writing to the AOF file: (nwritten=%d, expected=%d)", n, len(a.buf))
		} else {
			s.logf(logWarning, "Error writing to the AOF file: %s", strerror(err))
		}
	}
	if n > 0 {
		if terr := a.file.Truncate(a.incrSize); terr == nil {
			_, _ = a.file.Seek(a.incrSize, 0)
			n = 0
		} else {
			s.logf(logWarning, "Could not remove short write from the append-only file.  Redis may refuse to load the AOF the next time it starts.  ftruncate: %v", terr)
		}
	}
	if always {
		s.logf(logWarning, "Can't recover from AOF write error when the AOF fsync policy is 'always'. Exiting...")
		os.Exit(1)
	}
	a.writeErr = err
	if n > 0 {
		a.currentSize += int64(n)
		a.incrSize += int64(n)
		a.buf = a.buf[n:]
	}
}

// aofWriteError is the error that refuses writes, or nil: a failed write, or a failed fsync on
// the bio thread.
func (s *Server) aofWriteError() error {
	a := &s.aof
	if !a.on && !a.waitRewrite {
		return nil
	}
	if a.writeErr != nil {
		return a.writeErr
	}
	if p := a.syncErr.Load(); p != nil {
		return *p
	}
	return nil
}

// strerror spells an errno as C's strerror does ("No space left on device"), the text Redis's
// errors carry.
func strerror(err error) string {
	var errno syscall.Errno
	if errors.As(err, &errno) {
		m := errno.Error()
		if m != "" {
			return strings.ToUpper(m[:1]) + m[1:]
		}
	}
	return err.Error()
}

// switchIncr makes f the file commands are appended to: the buffer is written to the old one
// first, which the bio thread then fsyncs and closes. The next command starts with a SELECT, as
// the file is replayed from database 0.
func (s *Server) switchIncr(f *os.File, name string, size int64) {
	a := &s.aof
	s.flushAOF(true)
	if a.file != nil {
		if s.cfg.AppendFsync == "always" && a.unsynced {
			_ = unix.Fdatasync(int(a.file.Fd()))
		}
		s.closeInBackground(a.file)
	}
	a.file, a.fileName, a.incrSize = f, name, size
	a.unsynced = false
	a.selectedDB = -1
}

// startAppendOnly is CONFIG SET appendonly yes: the AOF starts with a rewrite whose base is the
// data set now; commands go to a temporary incremental file until it is done.
func (s *Server) startAppendOnly() error {
	a := &s.aof
	if err := os.MkdirAll(s.aofDir(), 0o755); err != nil {
		return fmt.Errorf("Can't open or create append-only dir %s: %w", s.cfg.AppendDirname, err)
	}
	if a.manifest == nil {
		m, err := s.readManifest()
		if err != nil {
			return err
		}
		if m == nil {
			m = &aof.Manifest{}
		}
		a.manifest = m
	}
	a.waitRewrite = true
	a.lastRewriteOK = true
	if s.persist.running != nil || s.executingUnit() {
		// After the running snapshot, or after the transaction that asked: the cut must fall
		// between units of writes.
		a.rewriteScheduled = true
		s.updatePropagation()
		return nil
	}
	if err := s.startAOFRewrite(); err != nil {
		a.waitRewrite = false
		s.updatePropagation()
		return err
	}
	return nil
}

// executingUnit reports that a command is running (an EXEC, a script): a rewrite's cut cannot
// happen in the middle of a unit of writes.
func (s *Server) executingUnit() bool { return s.repl.prop.nesting > 0 }

// stopAppendOnly is CONFIG SET appendonly no: the buffer is written and fsynced, the file
// closed, a running rewrite abandoned.
func (s *Server) stopAppendOnly() {
	a := &s.aof
	if sn := s.persist.running; sn != nil && sn.aof != nil {
		s.abortBGSave()
	}
	s.flushAOF(true)
	if a.file != nil {
		// Synced here; closed by the bio thread after any fsync it has queued on it.
		_ = unix.Fdatasync(int(a.file.Fd()))
		s.closeInBackground(a.file)
		if a.waitRewrite {
			_ = os.Remove(s.aofPath(a.fileName))
		}
	}
	a.file, a.fileName = nil, ""
	a.buf = a.buf[:0]
	a.on, a.waitRewrite, a.rewriteScheduled = false, false, false
	a.writeErr = nil
	a.syncErr.Store(nil)
	s.updatePropagation() // clients still held go in beforeSleep
}

// closeAOF writes and fsyncs what is buffered before the server exits.
func (s *Server) closeAOF() {
	a := &s.aof
	if a.file == nil {
		return
	}
	s.logf(logNotice, "Calling fsync() on the AOF file.")
	s.flushAOF(true)
	_ = unix.Fdatasync(int(a.file.Fd()))
	s.closeInBackground(a.file) // the bio thread drains its queue before it stops
	a.file = nil
	s.releaseHeld()
}

// misconfError is the error writes get while persistence fails: the RDB's, or the AOF's.
func (s *Server) misconfError() string {
	if err := s.aofWriteError(); err != nil && (s.persist.lastBgsaveOK || !s.cfg.StopWritesOnBGSaveError) {
		return "MISCONF Errors writing to the AOF file: " + strerror(err)
	}
	return errMisconf
}

func (s *Server) infoAOF(f func(string, any)) {
	a := &s.aof
	lastRewrite := a.lastRewriteSec
	f("aof_enabled", boolInt(a.on || a.waitRewrite))
	f("aof_rewrite_in_progress", boolInt(s.aofRewriteRunning()))
	f("aof_rewrite_scheduled", boolInt(a.rewriteScheduled))
	f("aof_last_rewrite_time_sec", lastRewrite)
	current := int64(-1)
	if sn := s.persist.running; sn != nil && sn.aof != nil {
		current = s.unixtime - sn.startUnix
	}
	f("aof_current_rewrite_time_sec", current)
	f("aof_last_bgrewrite_status", okOrErr(a.lastRewriteOK))
	f("aof_rewrites", a.rewrites)
	f("aof_rewrites_consecutive_failures", a.consecutiveFailures)
	f("aof_last_write_status", okOrErr(s.aofWriteError() == nil))
	f("aof_last_cow_size", 0)
	f("module_fork_in_progress", 0)
	f("module_fork_last_cow_size", 0)
	if !a.on && !a.waitRewrite {
		return
	}
	f("aof_current_size", a.currentSize)
	f("aof_base_size", a.baseSize)
	f("aof_pending_rewrite", boolInt(a.rewriteScheduled))
	f("aof_buffer_length", len(a.buf))
	f("aof_pending_bio_fsync", boolInt(a.syncing.Load()))
	f("aof_delayed_fsync", a.delayedFsync)
}
