package engine

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/iocache/iocache/server/aof"
	"github.com/iocache/iocache/server/keyspace"
	"github.com/iocache/iocache/server/rdb"
	"github.com/iocache/iocache/server/resp"
	"github.com/iocache/iocache/server/scripting"
	"github.com/iocache/iocache/server/version"
)

// RDB persistence: snapshots to dir/dbfilename with SAVE (on the main thread), BGSAVE (forkless,
// see bgsave.go), save points and shutdown; loading at start. Files are written to a temporary
// name, fsynced, renamed over the old one and the directory fsynced, so a crash never leaves a
// damaged dump.rdb behind.

// bgsaveRetryDelay is how long save points wait after a failed BGSAVE before trying again
// (Redis's CONFIG_BGSAVE_RETRY_DELAY).
const bgsaveRetryDelay = 5

// persistState is the main thread's record of saves, as INFO persistence reports it.
type persistState struct {
	lastSave      int64 // unix seconds of the last successful save (start time before any)
	lastBgsaveOK  bool
	lastBgsaveSec int64 // duration of the last BGSAVE, -1 before any
	// lastSaveBytes and lastSaveMs are the size of the file and the duration of the last
	// successful save (SAVE or BGSAVE), -1 before any: INFO persistence's rdb_last_save_bytes and
	// rdb_last_save_duration_ms, iocache's own fields, which the operator puts in the instance's
	// status (Redis reports neither).
	lastSaveBytes   int64
	lastSaveMs      int64
	lastBgsaveTry   int64 // unix seconds of the last BGSAVE attempt
	saves           int64
	bgsaveScheduled bool
	running         *rdbSnapshot
	loadedKeys      int64
	loadExpired     int64
	// loadMerge: DEBUG RELOAD MERGE is loading; a key or library already there is replaced.
	loadMerge bool
}

// persistTick runs on every main-loop iteration: a shutdown a signal asked for (saving first as
// shutdown-on-sigterm or shutdown-on-sigint says: with "default", when save points are set),
// and the running BGSAVE's walk.
func (s *Server) persistTick() {
	if sig := s.shutdownSignal.Swap(0); sig != 0 {
		if s.prepareShutdown(s.cfg.ShutdownFlags(syscall.Signal(sig) == syscall.SIGINT)) {
			s.stopping.Store(true)
		}
	}
	s.settleMemory() // writes outside commands: blocked clients served, keys expired
	s.bgsaveStep()
}

// savePoint is one "save <seconds> <changes>" pair.
type savePoint struct{ seconds, changes int64 }

func (s *Server) savePoints() []savePoint {
	f := strings.Fields(s.cfg.Save)
	var out []savePoint
	for i := 0; i+1 < len(f); i += 2 {
		sec, err1 := strconv.ParseInt(f[i], 10, 64)
		ch, err2 := strconv.ParseInt(f[i+1], 10, 64)
		if err1 == nil && err2 == nil {
			out = append(out, savePoint{sec, ch})
		}
	}
	return out
}

// rdbPath is where snapshots go.
func (s *Server) rdbPath() string { return filepath.Join(s.cfg.Dir, s.cfg.DBFilename) }

// writeRDBHeader writes the magic, version and Redis's aux fields, then the function libraries.
func (s *Server) writeRDBHeader(e *rdb.Encoder, ctime int64, usedMem int64, functions [][]byte, aofBase bool) {
	e.Header()
	e.Aux("redis-ver", version.RedisVersion)
	e.Aux("redis-bits", "64")
	e.Aux("ctime", strconv.FormatInt(ctime, 10))
	e.Aux("used-mem", strconv.FormatInt(usedMem, 10))
	e.Aux("aof-base", strconv.Itoa(boolInt(aofBase)))
	for _, code := range functions {
		e.Function(code)
	}
}

// functionCodes are the libraries' codes, in name order, for a file or FUNCTION DUMP.
func (s *Server) functionCodes() [][]byte {
	var codes [][]byte
	for _, lib := range s.functions.Libraries() {
		codes = append(codes, []byte(lib.Code))
	}
	return codes
}

// keyMeta is what a file records about a record besides its value: the TTL, and the LRU idle
// time or LFU counter under a policy that uses them (as Redis writes them).
func (s *Server) keyMeta(db *keyspace.DB, r keyspace.Ref) rdb.KeyMeta {
	m := rdb.NoMeta
	if exp, ok := db.ExpireAt(r); ok {
		m.ExpireAt = exp
	}
	switch p := s.cfg.MaxMemoryPolicy; {
	case strings.HasSuffix(p, "lfu"):
		m.Freq = int(db.LRU(r) & 0xff)
	case strings.HasSuffix(p, "lru"):
		m.Idle = s.idleMs(db.LRU(r)) / 1000
	}
	return m
}

// saveRDB writes the whole keyspace to path on the calling (main) thread: SAVE, SHUTDOWN and
// FLUSHALL's save.
func (s *Server) saveRDB(path string) error {
	start := nanotime()
	err := s.writeKeyspace(path, false)
	if err != nil {
		s.logf(logWarning, "Failed saving the DB: %v", err)
		return err
	}
	s.logf(logNotice, "DB saved on disk")
	s.stats.dirty = 0
	s.persist.lastSave = time.Now().Unix()
	s.persist.lastBgsaveOK = true
	s.persist.saves++
	s.recordSave(path, start)
	return nil
}

// recordSave notes the size of the snapshot just written to path and how long it took since
// startNs.
func (s *Server) recordSave(path string, startNs int64) {
	p := &s.persist
	p.lastSaveMs = (nanotime() - startNs) / 1e6
	p.lastSaveBytes = -1
	if fi, err := os.Stat(path); err == nil {
		p.lastSaveBytes = fi.Size()
	}
}

// writeKeyspace writes the whole keyspace in RDB format to path on the calling (main) thread: a
// snapshot, or an AOF base (aofBase).
func (s *Server) writeKeyspace(path string, aofBase bool) error {
	start := time.Now()
	if aofBase && !s.cfg.AOFUseRDBPreamble {
		return writeFileAtomically(path, func(f *os.File) error {
			b := aof.NewBaseWriter(f)
			b.Functions(s.functionCodes())
			for i, db := range s.dbs {
				db.Each(func(r keyspace.Ref) bool {
					var str []byte
					var obj any
					if db.Type(r) == keyspace.TypeString {
						str = db.Str(r)
					} else {
						obj = db.Obj(r)
					}
					exp, _ := db.ExpireAt(r)
					b.Key(i, db.Key(r), db.Type(r), str, obj, exp)
					db.ReleaseViews()
					return b.Err() == nil
				})
			}
			return b.Close()
		})
	}
	return writeFileAtomically(path, func(f *os.File) error {
		e := rdb.NewEncoder(f, s.rdbOptions())
		s.writeRDBHeader(e, start.Unix(), s.usedMemory(), s.functionCodes(), aofBase)
		for i, db := range s.dbs {
			if db.Len() == 0 {
				continue
			}
			e.SelectDB(i, db.Len(), db.ExpiresLen())
			db.Each(func(r keyspace.Ref) bool {
				e.Key(db.Key(r), recordValue(db, r), s.keyMeta(db, r))
				db.ReleaseViews() // an inline collection's view is done with once encoded
				return true
			})
		}
		return e.Close()
	})
}

// writeFileAtomically writes path through a temporary file in the same directory: written,
// fsynced, renamed over path, and the directory fsynced so the rename survives a crash.
func writeFileAtomically(path string, write func(*os.File) error) error {
	dir := filepath.Dir(path)
	tmp := filepath.Join(dir, fmt.Sprintf("temp-%d-%d.rdb", os.Getpid(), time.Now().UnixNano()))
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o644)
	if err != nil {
		return fmt.Errorf("failed opening the temp RDB file %s (in server root dir %s) for saving: %w", filepath.Base(tmp), dir, err)
	}
	err = write(f)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return err
	}
	return syncDir(dir)
}

// removeStaleTempFiles deletes temporary snapshot files an earlier process left behind when it
// died mid-save (writeFileAtomically's names), so that repeated crashes cannot fill the disk.
func removeStaleTempFiles(dir string, removed func(string)) {
	names, _ := filepath.Glob(filepath.Join(dir, "temp-*-*.rdb"))
	for _, p := range names {
		var pid, stamp int64
		if _, err := fmt.Sscanf(filepath.Base(p), "temp-%d-%d.rdb", &pid, &stamp); err != nil || pid == int64(os.Getpid()) {
			continue
		}
		if os.Remove(p) == nil {
			removed(filepath.Base(p))
		}
	}
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// loadRDB fills the keyspace from dir/dbfilename at start, if the file exists. Keys whose TTL
// has passed are skipped, as a Redis master does.
func (s *Server) loadRDB() error {
	removeStaleTempFiles(s.cfg.Dir, func(name string) { s.logf(logNotice, "Removed %s, left by a save that did not finish", name) })
	s.hookNewKeys(false) // loading announces nothing, as in Redis
	defer s.hookNewKeys(true)
	path := s.rdbPath()
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("Fatal error loading the DB: %w. Exiting.", err)
	}
	defer f.Close()
	start := time.Now()
	st, loaded, expired, err := s.loadRDBStream(bufio.NewReaderSize(f, 1<<20), start, false)
	if err != nil {
		return fmt.Errorf("Fatal error loading the DB %s: %w. Exiting.", path, err)
	}
	s.persist.loadedKeys, s.persist.loadExpired = loaded, expired
	s.logf(logNotice, "Done loading RDB (version %d), keys loaded: %d, keys expired: %d, empty keys skipped: %d.", st.Version, loaded, expired, st.Skipped)
	s.logf(logNotice, "DB loaded from disk: %.3f seconds", time.Since(start).Seconds())
	if fi, err := f.Stat(); err == nil {
		s.persist.lastSave = fi.ModTime().Unix()
	}
	return nil
}

// loadRDBStream adds the keys and functions of an RDB stream to the keyspace. Keys whose TTL has
// passed are skipped, as a Redis master does, except in an AOF base (keepExpired): the commands
// that follow it were recorded against them.
func (s *Server) loadRDBStream(r io.Reader, start time.Time, keepExpired bool) (rdb.Stats, int64, int64, error) {
	now := start.UnixMilli()
	var loaded, expired int64
	st, err := rdb.Load(r, rdb.Handler{
		Aux: func(k, v []byte) {
			switch string(k) {
			case "redis-ver":
				s.logf(logNotice, "Loading RDB produced by version %s", v)
			case "ctime":
				if t, err := strconv.ParseInt(string(v), 10, 64); err == nil {
					s.logf(logNotice, "RDB age %d seconds", start.Unix()-t)
				}
			case "used-mem":
				if n, err := strconv.ParseInt(string(v), 10, 64); err == nil {
					s.logf(logNotice, "RDB memory usage when created %.2f Mb", float64(n)/(1024*1024))
				}
			}
		},
		Function: func(code []byte) error {
			lib, errText := s.loadLibrary(code)
			if errText == "" {
				if s.functions.Library(lib.Name) != nil && !s.persist.loadMerge {
					errText = "ERR Library '" + lib.Name + "' already exists"
				} else {
					errText = s.functions.Conflicts(lib)
				}
			}
			if errText != "" {
				return fmt.Errorf("Failed loading library: %s", strings.TrimPrefix(errText, "ERR "))
			}
			s.functions.Add(lib)
			return nil
		},
		Entry: func(e *rdb.Entry) error {
			if e.DB >= len(s.dbs) {
				return fmt.Errorf("FATAL: Data file was created with a Redis server configured to handle more than %d databases. Exiting", len(s.dbs))
			}
			if e.ExpireAt > 0 && e.ExpireAt <= now && !keepExpired {
				expired++
				return nil
			}
			db := s.dbs[e.DB]
			if r, exists := db.Find(e.Key); exists {
				if !s.persist.loadMerge {
					return fmt.Errorf("RDB has duplicated key '%s' in DB %d", e.Key, e.DB)
				}
				db.Delete(r) // DEBUG RELOAD MERGE: the file's value wins, as in Redis
			}
			s.storeValue(db, e.Key, e.Value, e.ExpireAt, s.loadedClock(e.KeyMeta))
			loaded++
			return nil
		},
	})
	return st, loaded, expired, err
}

// debugReload is DEBUG RELOAD [MERGE] [NOFLUSH] [NOSAVE]: save (unless NOSAVE), empty every
// database and the functions (unless NOFLUSH), load the file back; a round trip through the RDB
// format in place. Without MERGE a key or library that is already there fails the load, as in
// Redis; with it, the file's replaces it.
func (s *Server) debugReload(c *client, opts [][]byte) {
	save, flush, merge := true, true, false
	for _, o := range opts {
		switch {
		case resp.EqualFold(o, "merge"):
			merge = true
		case resp.EqualFold(o, "noflush"):
			flush = false
		case resp.EqualFold(o, "nosave"):
			save = false
		default:
			s.addError(c, "ERR DEBUG RELOAD only supports the MERGE, NOFLUSH and NOSAVE options.")
			return
		}
	}
	s.abortBGSave()
	if save {
		if err := s.saveRDB(s.rdbPath()); err != nil {
			s.addError(c, "ERR Error trying to save the DB")
			return
		}
	}
	if flush {
		for i := range s.dbs {
			old := s.dbs[i]
			s.dbs[i] = s.newDB()
			s.touchReplacedDB(i, old, nil)
		}
		s.functions = scripting.Registry{} // the file holds them
	}
	s.persist.loadMerge = merge
	err := s.loadRDB()
	s.persist.loadMerge = false
	if err != nil {
		s.logf(logWarning, "%v", err)
		s.addError(c, "ERR Error trying to load the RDB dump") // Redis 7.0's text
		return
	}
	s.logf(logNotice, "DB reloaded by DEBUG RELOAD")
	c.w.OK()
}

// loadedClock is the LRU/LFU value of a loaded key: what the file recorded, else a new key's.
func (s *Server) loadedClock(m rdb.KeyMeta) uint32 {
	o := restoreOptions{idle: m.Idle, freq: int64(m.Freq)}
	return s.restoredClock(o)
}

// persistCron starts a BGSAVE when a save point is reached (Redis's serverCron): enough changes
// in enough seconds, not sooner than bgsaveRetryDelay after a failed attempt.
func (s *Server) persistCron() {
	p := &s.persist
	if p.running != nil {
		return
	}
	if p.bgsaveScheduled {
		p.bgsaveScheduled = false
		_ = s.startBGSave() // nothing runs here, so it starts
		return
	}
	for _, sp := range s.savePoints() {
		if s.stats.dirty >= sp.changes && s.unixtime-p.lastSave > sp.seconds &&
			(s.unixtime-p.lastBgsaveTry > bgsaveRetryDelay || p.lastBgsaveOK) {
			s.logf(logNotice, "%d changes in %d seconds. Saving...", sp.changes, sp.seconds)
			_ = s.startBGSave() // nothing runs here, so it starts
			return
		}
	}
}

// writesDenied reports that a failed save blocks writes (stop-writes-on-bgsave-error), or a
// failed AOF write or fsync.
func (s *Server) writesDenied() bool {
	return (!s.persist.lastBgsaveOK && s.cfg.StopWritesOnBGSaveError && len(s.savePoints()) > 0) ||
		((s.aof.writeErr != nil || s.aof.syncErr.Load() != nil) && s.aofWriteError() != nil)
}

const errMisconf = "MISCONF Redis is configured to save RDB snapshots, but it's currently unable to persist to disk. Commands that may modify the data set are disabled, because this instance is configured to report errors during writes if RDB snapshotting fails (stop-writes-on-bgsave-error option). Please check the Redis logs for details about the RDB error."

// prepareShutdown saves before the server stops when asked to (SHUTDOWN SAVE) or when save
// points are set and NOSAVE was not given; a running BGSAVE is abandoned first. It reports false
// when the save failed and the shutdown must not happen (unless forced).
func (s *Server) prepareShutdown(save, nosave, force bool) bool {
	if s.aof.waitRewrite {
		// The AOF turned on live has no base yet: it does not hold the data set.
		if !force {
			s.logf(logWarning, "Writing initial AOF, can't exit.")
			return false
		}
		s.logf(logWarning, "Writing initial AOF. Exit anyway.")
	}
	if sn := s.persist.running; sn != nil {
		if sn.aof != nil {
			s.logf(logWarning, "There is a child rewriting the AOF. Killing it!")
		} else {
			s.logf(logWarning, "There is a background save in progress. Stopping it!")
		}
		s.abortBGSave()
	}
	if nosave || (!save && len(s.savePoints()) == 0) {
		return true
	}
	s.logf(logNotice, "Saving the final RDB snapshot before exiting.")
	if err := s.saveRDB(s.rdbPath()); err != nil {
		if force {
			s.logf(logWarning, "Error trying to save the DB. Exit anyway.")
			return true
		}
		s.logf(logWarning, "Error trying to save the DB, can't exit.")
		return false
	}
	return true
}

func (s *Server) infoPersistence(f func(string, any)) {
	p := &s.persist
	f("loading", 0)
	f("async_loading", 0)
	f("current_cow_peak", 0)
	f("current_cow_size", 0)
	f("current_cow_size_age", 0)
	f("current_fork_perc", "0.00")
	processed, total := int64(0), int64(0)
	if sn := p.running; sn != nil {
		processed, total = sn.keysWritten.Load(), sn.keysTotal
	}
	f("current_save_keys_processed", processed)
	f("current_save_keys_total", total)
	f("rdb_changes_since_last_save", s.stats.dirty)
	bgsave := p.running != nil && p.running.aof == nil // an AOF rewrite is not a BGSAVE
	f("rdb_bgsave_in_progress", boolInt(bgsave))
	f("rdb_last_save_time", p.lastSave)
	f("rdb_last_bgsave_status", okOrErr(p.lastBgsaveOK))
	f("rdb_last_bgsave_time_sec", p.lastBgsaveSec)
	current := int64(-1)
	if bgsave {
		current = s.unixtime - p.running.startUnix
	}
	f("rdb_current_bgsave_time_sec", current)
	f("rdb_saves", p.saves)
	f("rdb_last_cow_size", 0)
	f("rdb_last_load_keys_expired", p.loadExpired)
	f("rdb_last_load_keys_loaded", p.loadedKeys)
	s.infoAOF(f)
	// iocache's own, after Redis's fields (iocacheInfoPersistenceFields).
	f("rdb_last_save_bytes", p.lastSaveBytes)
	f("rdb_last_save_duration_ms", p.lastSaveMs)
}

// iocacheInfoPersistenceFields are the INFO persistence fields Redis 7.0 does not have.
var iocacheInfoPersistenceFields = []string{"rdb_last_save_bytes", "rdb_last_save_duration_ms"}

func okOrErr(ok bool) string {
	if ok {
		return "ok"
	}
	return "err"
}
