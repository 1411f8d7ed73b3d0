package aof

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"github.com/iocache/iocache/server/resp"
)

// The manifest, in Redis 7.0's format: the file <appendfilename>.manifest in appenddirname lists
// the AOF's files, one a line, "file <name> seq <n> type <b|h|i>": at most one base (a snapshot,
// .base.rdb), the history files a finished rewrite made obsolete (deleted soon after), then the
// incremental files in the order they are replayed. The manifest is only ever replaced whole
// (temporary file, fsync, rename, directory fsync), so after a crash it names either the files
// before a change or those after it, never a mix.

// FileType is a manifest line's type, the letter Redis writes.
type FileType byte

// The types of file a manifest lists.
const (
	TypeBase    FileType = 'b' // the snapshot the incremental files apply to
	TypeHistory FileType = 'h' // replaced by a rewrite, to be deleted
	TypeIncr    FileType = 'i' // commands, replayed in manifest order
)

// Info is one manifest line: a file of the AOF directory, its sequence number and its type.
type Info struct {
	Name string
	Seq  int64
	Type FileType
}

// Manifest is the manifest's content, with the highest sequence numbers used so far (the next
// file's names continue from them, even after the files they numbered are gone).
type Manifest struct {
	Base    *Info
	History []Info
	Incr    []Info
	BaseSeq int64
	IncrSeq int64
}

// Clone is a copy to change: the engine builds the next manifest beside the one on disk and
// adopts it only once it is written.
func (m *Manifest) Clone() *Manifest {
	c := &Manifest{BaseSeq: m.BaseSeq, IncrSeq: m.IncrSeq}
	if m.Base != nil {
		b := *m.Base
		c.Base = &b
	}
	c.History = append([]Info(nil), m.History...)
	c.Incr = append([]Info(nil), m.Incr...)
	return c
}

// Empty reports that the manifest names no file to load.
func (m *Manifest) Empty() bool { return m.Base == nil && len(m.Incr) == 0 }

// LoadOrder is the files a load replays, in order: the base, then the incremental files.
func (m *Manifest) LoadOrder() []Info {
	var files []Info
	if m.Base != nil {
		files = append(files, *m.Base)
	}
	return append(files, m.Incr...)
}

// AddIncr lists a new incremental file, numbered seq, after the others.
func (m *Manifest) AddIncr(name string, seq int64) {
	m.Incr = append(m.Incr, Info{Name: name, Seq: seq, Type: TypeIncr})
	m.IncrSeq = seq
}

// Rebase makes name (numbered seq) the base: the old base, and every incremental file but keep
// ("" keeps none), become history, as they are all in the new base. keep is the incremental
// file a rewrite opened at its cut, which holds what came after the new base.
func (m *Manifest) Rebase(name string, seq int64, keep string) {
	if m.Base != nil {
		h := *m.Base
		h.Type = TypeHistory
		m.History = append(m.History, h)
	}
	m.Base = &Info{Name: name, Seq: seq, Type: TypeBase}
	m.BaseSeq = seq
	var kept []Info
	for _, ai := range m.Incr {
		if keep != "" && ai.Name == keep {
			kept = append(kept, ai)
			continue
		}
		ai.Type = TypeHistory
		m.History = append(m.History, ai)
	}
	m.Incr = kept
}

// String is the manifest file's content: base, history, then incremental files, as Redis
// writes it.
func (m *Manifest) String() string {
	var b strings.Builder
	line := func(ai Info) {
		name := ai.Name
		if needsRepr(name) {
			name = strconv.Quote(name)
		}
		fmt.Fprintf(&b, "file %s seq %d type %c\n", name, ai.Seq, ai.Type)
	}
	if m.Base != nil {
		line(*m.Base)
	}
	for _, ai := range m.History {
		line(ai)
	}
	for _, ai := range m.Incr {
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

// ParseManifest reads a manifest as Redis's aofLoadManifestFromFile does, with its error texts
// (the server prints them as they are when it refuses to start).
func ParseManifest(data []byte) (*Manifest, error) {
	m := &Manifest{}
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
		args, ok := resp.SplitArgs([]byte(line), nil)
		if !ok || len(args) < 6 || len(args)%2 != 0 {
			return nil, fail("Invalid AOF manifest file format")
		}
		var ai Info
		for i := 0; i < len(args); i += 2 {
			val := string(args[i+1])
			switch strings.ToLower(string(args[i])) {
			case "file":
				ai.Name = val
				if filepath.Base(ai.Name) != ai.Name {
					return nil, fail("File can't be a path, just a filename")
				}
			case "seq":
				ai.Seq, _ = strconv.ParseInt(val, 10, 64)
			case "type":
				if val != "" {
					ai.Type = FileType(val[0])
				}
			}
		}
		if ai.Name == "" || ai.Seq == 0 || ai.Type == 0 {
			return nil, fail("Invalid AOF manifest file format")
		}
		switch ai.Type {
		case TypeBase:
			if m.Base != nil {
				return nil, fail("Found duplicate base file information")
			}
			b := ai
			m.Base, m.BaseSeq = &b, ai.Seq
		case TypeHistory:
			m.History = append(m.History, ai)
		case TypeIncr:
			if ai.Seq <= maxSeq {
				return nil, fail("Found a non-monotonic sequence number")
			}
			m.Incr = append(m.Incr, ai)
			m.IncrSeq, maxSeq = ai.Seq, ai.Seq
		default:
			return nil, fail("Unknown AOF file type")
		}
	}
	if err := sc.Err(); err != nil {
		return nil, errors.New("The AOF manifest file contains too long line")
	}
	return m, nil
}

// The files' names are Redis's, derived from appendfilename (the configured name, passed in):
// a server and redis-server read each other's directories.

// ManifestName is the manifest's file name.
func ManifestName(appendFilename string) string { return appendFilename + ".manifest" }

// NextBase is the next base's name and sequence number: .base.rdb, or .base.aof for a base of
// commands (rdbPreamble false: aof-use-rdb-preamble no).
func (m *Manifest) NextBase(appendFilename string, rdbPreamble bool) (string, int64) {
	seq := m.BaseSeq + 1
	format := "rdb"
	if !rdbPreamble {
		format = "aof"
	}
	return fmt.Sprintf("%s.%d.base.%s", appendFilename, seq, format), seq
}

// NextIncr is the next incremental file's name and sequence number.
func (m *Manifest) NextIncr(appendFilename string) (string, int64) {
	seq := m.IncrSeq + 1
	return fmt.Sprintf("%s.%d.incr.aof", appendFilename, seq), seq
}

// TempIncrName is where the commands go while the first base of an AOF turned on live is
// written (Redis's name for it); it is renamed to the next incremental file once the base is.
func TempIncrName(appendFilename string) string { return "temp-" + appendFilename + ".incr" }

// ReadManifest reads the manifest of the AOF directory dir: nil, and no error, when the
// directory or the manifest does not exist (no AOF yet). Its errors are the texts Redis prints.
func ReadManifest(dir, appendFilename string) (*Manifest, error) {
	name := ManifestName(appendFilename)
	data, err := os.ReadFile(filepath.Join(dir, name))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("Fatal error: can't open the AOF manifest file %s for reading: %w", name, err)
	}
	m, err := ParseManifest(data)
	if err != nil {
		return nil, fmt.Errorf("*** FATAL AOF MANIFEST FILE ERROR *** %w", err)
	}
	return m, nil
}

// WriteManifest replaces the manifest of dir with m atomically: a temporary file, fsynced,
// renamed over it, then the directory fsynced so that the rename survives a crash.
func WriteManifest(dir, appendFilename string, m *Manifest) error {
	name := ManifestName(appendFilename)
	tmp := filepath.Join(dir, "temp-"+name)
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
		err = os.Rename(tmp, filepath.Join(dir, name))
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("Error trying to write the AOF manifest file %s: %w", name, err)
	}
	return syncDir(dir)
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// OpenIncr opens the incremental file name of dir for appending (emptied first with truncate)
// and returns its size.
func OpenIncr(dir, name string, truncate bool) (*os.File, int64, error) {
	flags := os.O_WRONLY | os.O_CREATE | os.O_APPEND
	if truncate {
		flags |= os.O_TRUNC
	}
	f, err := os.OpenFile(filepath.Join(dir, name), flags, 0o644)
	if err != nil {
		return nil, 0, fmt.Errorf("Can't open the append-only file %s: %w", name, err)
	}
	fi, err := f.Stat()
	if err != nil {
		_ = f.Close()
		return nil, 0, err
	}
	return f, fi.Size(), nil
}
