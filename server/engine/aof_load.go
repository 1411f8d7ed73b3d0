package engine

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/iocache/iocache/server/aof"
)

// Loading at start. With appendonly yes and an AOF on disk, the AOF wins over dump.rdb, as in
// Redis: it holds every acknowledged write. The base loads as an RDB (or as commands, written with
// aof-use-rdb-preamble no), then each incremental file in manifest order is
// replayed through a client of no connection, as Redis's fake AOF client does. A last file cut
// short by a crash loads up to its last complete command and is truncated there, with
// aof-load-truncated yes; with no, the server refuses to start. With appendonly yes and no AOF
// yet, dump.rdb is loaded (Redis 7.0 would ignore it and start empty) and becomes the first base.
// The single-file AOF of Redis before 7.0 is not converted: the server refuses to start on one.

// loadAtStart fills the keyspace from the AOF or dump.rdb and opens the AOF when it is on.
func (s *Server) loadAtStart() error {
	a := &s.aof
	a.lastRewriteSec, a.lastRewriteOK, a.selectedDB = -1, true, -1
	m, err := s.readManifest()
	if err != nil {
		if s.cfg.AppendOnly {
			return err
		}
		s.logf(logWarning, "%v", err)
		m = nil
	}
	a.manifest = m
	if !s.cfg.AppendOnly {
		return s.loadRDB()
	}
	removeStaleTempFiles(s.aofDir(), func(name string) { s.logf(logNotice, "Removed %s, left by a rewrite that did not finish", name) })
	_ = os.Remove(s.aofPath(aof.TempIncrName(s.cfg.AppendFilename))) // an AOF turned on live that never got its base
	if m == nil || m.Empty() {
		if _, err := os.Stat(filepath.Join(s.cfg.Dir, s.cfg.AppendFilename)); err == nil {
			// Redis 7.0 moves such a file into the directory as its base; iocache does not, and
			// starting from dump.rdb instead would silently drop what only that file holds.
			return fmt.Errorf("Found %s, an append only file of a Redis before 7.0, and no %s in %s: iocache does not convert it. Start redis-server 7.0 with appendonly yes on this directory once to convert it, or remove it", s.cfg.AppendFilename, aof.ManifestName(s.cfg.AppendFilename), s.cfg.AppendDirname)
		}
		if err := s.loadRDB(); err != nil {
			return err
		}
		return s.createAOFAtStart()
	}
	if err := s.loadAOF(m); err != nil {
		return err
	}
	return s.openAOFAtStart()
}

// createAOFAtStart writes the first base, of what was loaded, and opens the first incremental
// file.
func (s *Server) createAOFAtStart() error {
	a := &s.aof
	if err := os.MkdirAll(s.aofDir(), 0o755); err != nil {
		return fmt.Errorf("Can't open or create append-only dir %s: %w", s.cfg.AppendDirname, err)
	}
	m := &aof.Manifest{}
	if a.manifest != nil {
		m = a.manifest.Clone()
	}
	baseName, baseSeq := m.NextBase(s.cfg.AppendFilename, s.cfg.AOFUseRDBPreamble)
	if err := s.writeKeyspace(s.aofPath(baseName), true); err != nil {
		return fmt.Errorf("Can't create the AOF base file %s: %w", baseName, err)
	}
	s.logf(logNotice, "Creating AOF base file %s on server start", baseName)
	m.Rebase(baseName, baseSeq, "")
	a.manifest = m
	return s.openAOFAtStart()
}

// openAOFAtStart opens the last incremental file for appending (a new one when the manifest has
// none) and removes history files.
func (s *Server) openAOFAtStart() error {
	a := &s.aof
	m := a.manifest.Clone()
	var name string
	if n := len(m.Incr); n > 0 {
		name = m.Incr[n-1].Name
	} else {
		var seq int64
		name, seq = m.NextIncr(s.cfg.AppendFilename)
		m.AddIncr(name, seq)
		s.logf(logNotice, "Creating AOF incr file %s on server start", name)
	}
	f, size, err := aof.OpenIncr(s.aofDir(), name, false)
	if err != nil {
		return err
	}
	if err := s.persistManifest(m); err != nil {
		_ = f.Close()
		return err
	}
	a.manifest = m
	a.file, a.fileName, a.incrSize = f, name, size
	a.baseSize, a.currentSize = 0, 0
	if m.Base != nil {
		if fi, err := os.Stat(s.aofPath(m.Base.Name)); err == nil {
			a.baseSize = fi.Size()
		}
	}
	a.currentSize = a.baseSize
	for _, ai := range m.Incr {
		if fi, err := os.Stat(s.aofPath(ai.Name)); err == nil {
			a.currentSize += fi.Size()
		}
	}
	a.on = true
	a.selectedDB = -1
	s.deleteHistory()
	s.updatePropagation()
	return nil
}

// loadAOF replays the base and the incremental files the manifest lists.
func (s *Server) loadAOF(m *aof.Manifest) error {
	s.hookNewKeys(false)
	defer s.hookNewKeys(true)
	s.loading = true
	defer func() { s.loading = false }()
	files := m.LoadOrder()
	for _, ai := range files {
		if _, err := os.Stat(s.aofPath(ai.Name)); err != nil {
			return fmt.Errorf("The append log file %s doesn't exist: %w", ai.Name, err)
		}
	}
	start := time.Now()
	for i, ai := range files {
		fileStart := time.Now()
		if err := s.loadAOFFile(ai.Name, i == len(files)-1); err != nil {
			return err
		}
		kind := "incr"
		if ai.Type == aof.TypeBase {
			kind = "base"
		}
		s.logf(logNotice, "DB loaded from %s file %s: %.3f seconds", kind, ai.Name, time.Since(fileStart).Seconds())
	}
	s.logf(logNotice, "DB loaded from append only file: %.3f seconds", time.Since(start).Seconds())
	return nil
}

// loadAOFFile replays one file of the AOF (Redis's loadSingleAppendOnlyFile): package aof reads
// it, the commands execute here through a client of no connection, as Redis's fake AOF client.
func (s *Server) loadAOFFile(name string, last bool) error {
	path := s.aofPath(name)
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("Fatal error: can't open the append log file %s for reading: %w", name, err)
	}
	defer f.Close()
	fake := newClient(0, -1, 0)
	fake.addr, fake.authed, fake.user = "aof", true, s.acl.users.Default()
	err = aof.Replay(f, aof.Handler{
		RDB: func(br *bufio.Reader) error {
			s.logf(logNotice, "Reading RDB base file on AOF loading...")
			if _, _, _, err := s.loadRDBStream(br, time.Now(), true); err != nil {
				return fmt.Errorf("Error reading the RDB base file %s, AOF loading aborted: %w", name, err)
			}
			return nil
		},
		Command: func(argv [][]byte) (bool, error) {
			cmd := s.lookupCommand(argv[0])
			if cmd == nil {
				return false, fmt.Errorf("Unknown command '%s' reading the append only file %s", argv[0], name)
			}
			if fake.flags&flagMulti != 0 && cmd.name != "exec" {
				s.queueMulti(fake, cmd, argv)
			} else {
				s.execute(fake, cmd, argv)
			}
			fake.w.Buf = fake.w.Buf[:0]
			return cmd.name == "multi", nil
		},
		InTransaction: func() bool { return fake.flags&flagMulti != 0 },
	})
	var short *aof.TruncatedError
	switch {
	case errors.As(err, &short):
		if short.InTransaction {
			s.logf(logWarning, "Revert incomplete MULTI/EXEC transaction in AOF file %s", name)
		}
		return s.shortAOF(name, path, last, short.ValidUpTo)
	case errors.Is(err, aof.ErrBadFormat):
		return fmt.Errorf("Bad file format reading the append only file %s: make a backup of your AOF file, then use ./redis-check-aof --fix <filename.manifest>", name)
	}
	return err
}

// shortAOF handles a file that ends inside a command (or a transaction): loaded up to its last
// complete one and truncated there when aof-load-truncated allows it and it is the last file.
func (s *Server) shortAOF(name, path string, last bool, validUpTo int64) error {
	if s.cfg.AOFLoadTruncated && last {
		s.logf(logWarning, "!!! Warning: short read while loading the AOF file %s!!!", name)
		s.logf(logWarning, "!!! Truncating the AOF %s at offset %d !!!", name, validUpTo)
		if err := os.Truncate(path, validUpTo); err != nil {
			return fmt.Errorf("Error truncating the AOF file %s: %w", name, err)
		}
		s.logf(logWarning, "AOF %s loaded anyway because aof-load-truncated is enabled", name)
		return nil
	}
	if s.cfg.AOFLoadTruncated {
		return fmt.Errorf("Fatal error: the truncated file is not the last file (%s)", name)
	}
	return fmt.Errorf("Unexpected end of file reading the append only file %s. You can: 1) Make a backup of your AOF file, then use ./redis-check-aof --fix <filename.manifest>. 2) Alternatively you can set the 'aof-load-truncated' configuration option to yes and restart the server.", name)
}
