package engine

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/iocache/iocache/server/config"
)

// The AOF manifest, in Redis 7.0's format: the file <appendfilename>.manifest in appenddirname
// lists the AOF's files, one a line, "file <name> seq <n> type <b|h|i>": at most one base (a
// snapshot, .base.rdb), the history files a finished rewrite made obsolete (deleted soon after),
// then the incremental files in the order they are replayed. The manifest is only ever replaced
// whole (temporary file, fsync, rename, directory fsync), so after a crash it names either the
// files before a change or those after it, never a mix.

const (
	aofTypeBase    = 'b'
	aofTypeHistory = 'h'
	aofTypeIncr    = 'i'
)

// aofInfo is one manifest line.
type aofInfo struct {
	name string
	seq  int64
	typ  byte
}

// aofManifest is the manifest's content, with the highest sequence numbers used so far.
type aofManifest struct {
	base    *aofInfo
	history []aofInfo
	incr    []aofInfo
	baseSeq int64
	incrSeq int64
}

func (m *aofManifest) clone() *aofManifest {
	c := &aofManifest{baseSeq: m.baseSeq, incrSeq: m.incrSeq}
	if m.base != nil {
		b := *m.base
		c.base = &b
	}
	c.history = append([]aofInfo(nil), m.history...)
	c.incr = append([]aofInfo(nil), m.incr...)
	return c
}

// empty reports that the manifest names no file to load.
func (m *aofManifest) empty() bool { return m.base == nil && len(m.incr) == 0 }

// String is the manifest file's content: base, history, then incremental files, as Redis
// writes it.
func (m *aofManifest) String() string {
	var b strings.Builder
	line := func(ai aofInfo) {
		name := ai.name
		if needsRepr(name) {
			name = strconv.Quote(name)
		}
		fmt.Fprintf(&b, "file %s seq %d type %c\n", name, ai.seq, ai.typ)
	}
	if m.base != nil {
		line(*m.base)
	}
	for _, ai := range m.history {
		line(ai)
	}
	for _, ai := range m.incr {
		line(ai)
	}
	return b.String()
}

// needsRepr reports whether a file name must be quoted in the manifest (Redis's sdsneedsrepr).
func needsRepr(s string) bool {
	for i := 0; i < len(s); i++ {
		switch ch := s[i]; {
		case ch == '\\' || ch == '"' || ch == '\n' || ch == '\r' || ch == '\t' || ch == '\a' || ch == '\b':
			return true
		case ch <= ' ' || ch >= 0x7f:
			return true
		}
	}
	return false
}

// parseManifest reads a manifest as Redis's aofLoadManifestFromFile does, with its error texts.
func parseManifest(data []byte) (*aofManifest, error) {
	m := &aofManifest{}
	if len(data) == 0 {
		return nil, errors.New("Found an empty AOF manifest")
	}
	var maxSeq int64
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(make([]byte, 0, 1025), 1025)
	for n := 1; sc.Scan(); n++ {
		raw := sc.Text()
		if strings.HasPrefix(raw, "#") {
			continue
		}
		fail := func(msg string) error {
			return fmt.Errorf("Reading the manifest file, at line %d: >>> '%s': %s", n, strings.TrimSpace(raw), msg)
		}
		line := strings.Trim(raw, " \t\r\n")
		if line == "" {
			return nil, fail("Invalid AOF manifest file format")
		}
		args, err := config.SplitArgs(line)
		if err != nil || len(args) < 6 || len(args)%2 != 0 {
			return nil, fail("Invalid AOF manifest file format")
		}
		var ai aofInfo
		for i := 0; i < len(args); i += 2 {
			switch strings.ToLower(args[i]) {
			case "file":
				ai.name = args[i+1]
				if filepath.Base(ai.name) != ai.name {
					return nil, fail("File can't be a path, just a filename")
				}
			case "seq":
				ai.seq, _ = strconv.ParseInt(args[i+1], 10, 64)
			case "type":
				if args[i+1] != "" {
					ai.typ = args[i+1][0]
				}
			}
		}
		if ai.name == "" || ai.seq == 0 || ai.typ == 0 {
			return nil, fail("Invalid AOF manifest file format")
		}
		switch ai.typ {
		case aofTypeBase:
			if m.base != nil {
				return nil, fail("Found duplicate base file information")
			}
			b := ai
			m.base, m.baseSeq = &b, ai.seq
		case aofTypeHistory:
			m.history = append(m.history, ai)
		case aofTypeIncr:
			if ai.seq <= maxSeq {
				return nil, fail("Found a non-monotonic sequence number")
			}
			m.incr = append(m.incr, ai)
			m.incrSeq, maxSeq = ai.seq, ai.seq
		default:
			return nil, fail("Unknown AOF file type")
		}
	}
	if err := sc.Err(); err != nil {
		return nil, errors.New("The AOF manifest file contains too long line")
	}
	return m, nil
}

// aofDir is where the AOF's files live: appenddirname inside dir.
func (s *Server) aofDir() string { return filepath.Join(s.cfg.Dir, s.cfg.AppendDirname) }

func (s *Server) aofPath(name string) string { return filepath.Join(s.aofDir(), name) }

func (s *Server) manifestName() string { return s.cfg.AppendFilename + ".manifest" }

// newBaseName is the next base's name: .base.rdb, or .base.aof for a base of commands
// (aof-use-rdb-preamble no).
func (s *Server) newBaseName(m *aofManifest) (string, int64) {
	seq := m.baseSeq + 1
	format := "rdb"
	if !s.cfg.AOFUseRDBPreamble {
		format = "aof"
	}
	return fmt.Sprintf("%s.%d.base.%s", s.cfg.AppendFilename, seq, format), seq
}

// newIncrName is the next incremental file's name.
func (s *Server) newIncrName(m *aofManifest) (string, int64) {
	seq := m.incrSeq + 1
	return fmt.Sprintf("%s.%d.incr.aof", s.cfg.AppendFilename, seq), seq
}

// tempIncrName is where the commands go while the first base of an AOF turned on live is
// written (Redis's name for it).
func (s *Server) tempIncrName() string { return "temp-" + s.cfg.AppendFilename + ".incr" }

// readManifest loads the manifest at start: nil when the directory or the manifest does not
// exist (no AOF yet).
func (s *Server) readManifest() (*aofManifest, error) {
	data, err := os.ReadFile(s.aofPath(s.manifestName()))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("Fatal error: can't open the AOF manifest file %s for reading: %w", s.manifestName(), err)
	}
	m, err := parseManifest(data)
	if err != nil {
		return nil, fmt.Errorf("*** FATAL AOF MANIFEST FILE ERROR *** %w", err)
	}
	return m, nil
}

// persistManifest replaces the manifest file atomically.
func (s *Server) persistManifest(m *aofManifest) error {
	dir := s.aofDir()
	tmp := filepath.Join(dir, "temp-"+s.manifestName())
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		return fmt.Errorf("Can't open the AOF manifest file %s: %w", filepath.Base(tmp), err)
	}
	_, err = f.WriteString(m.String())
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, filepath.Join(dir, s.manifestName()))
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("Error trying to write the AOF manifest file %s: %w", s.manifestName(), err)
	}
	return syncDir(dir)
}
