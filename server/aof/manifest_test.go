package aof

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestManifestFormat: the manifest reads and writes as Redis's aof.c does, and refuses what
// Redis refuses.
func TestManifestFormat(t *testing.T) {
	text := "file appendonly.aof.2.base.rdb seq 2 type b\nfile appendonly.aof.1.incr.aof seq 1 type h\n" +
		"file appendonly.aof.3.incr.aof seq 3 type i\nfile appendonly.aof.4.incr.aof seq 4 type i\n"
	m, err := ParseManifest([]byte("# a comment\n" + text))
	if err != nil {
		t.Fatal(err)
	}
	if got := m.String(); got != text {
		t.Fatalf("round trip:\n%s\nwant\n%s", got, text)
	}
	if m.BaseSeq != 2 || m.IncrSeq != 4 || len(m.Incr) != 2 || len(m.History) != 1 {
		t.Fatalf("parsed %+v", m)
	}
	quoted := &Manifest{Base: &Info{Name: "my file", Seq: 1, Type: TypeBase}}
	if back, err := ParseManifest([]byte(quoted.String())); err != nil || back.Base.Name != "my file" {
		t.Fatalf("quoted name: %q → %v %v", quoted.String(), back, err)
	}
	for bad, want := range map[string]string{
		"":                        "Found an empty AOF manifest",
		"file a seq 1\n":          "Invalid AOF manifest file format",
		"file a/b seq 1 type b\n": "File can't be a path, just a filename",
		"file a seq 1 type b\nfile b seq 2 type b\n":               "Found duplicate base file information",
		"file a seq 2 type i\nfile b seq 1 type i\n":               "Found a non-monotonic sequence number",
		"file a seq 1 type x\n":                                    "Unknown AOF file type",
		"file \"a seq 1 type b\n":                                  "Invalid AOF manifest file format",
		"file a seq 1 type b\n" + strings.Repeat("#", 2000) + "\n": "too long line",
	} {
		if _, err := ParseManifest([]byte(bad)); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: %v, want %q", bad, err, want)
		}
	}
}

// TestManifestLifecycle: the names and the manifest of an AOF from its first base through a
// rewrite, as Redis names them: sequence numbers continue, the replaced files become history
// in order, and the incremental file opened at the rewrite's cut stays.
func TestManifestLifecycle(t *testing.T) {
	const fn = "appendonly.aof"
	m := &Manifest{}
	base, seq := m.NextBase(fn, true)
	if base != "appendonly.aof.1.base.rdb" || seq != 1 {
		t.Fatalf("first base %s %d", base, seq)
	}
	m.Rebase(base, seq, "")
	incr, seq := m.NextIncr(fn)
	m.AddIncr(incr, seq)
	cut, seq := m.NextIncr(fn)
	m.AddIncr(cut, seq)
	if got := m.LoadOrder(); len(got) != 3 || got[0].Name != base || got[2].Name != cut {
		t.Fatalf("load order %+v", got)
	}
	before := m.Clone()
	next, seq := m.NextBase(fn, false)
	if next != "appendonly.aof.2.base.aof" {
		t.Fatalf("base of commands: %s", next)
	}
	m.Rebase(next, seq, cut)
	want := "file appendonly.aof.2.base.aof seq 2 type b\n" +
		"file appendonly.aof.1.base.rdb seq 1 type h\nfile appendonly.aof.1.incr.aof seq 1 type h\n" +
		"file appendonly.aof.2.incr.aof seq 2 type i\n"
	if got := m.String(); got != want {
		t.Fatalf("after the rewrite:\n%s\nwant\n%s", got, want)
	}
	if before.Base.Name != base || len(before.Incr) != 2 || len(before.History) != 0 {
		t.Fatalf("the clone changed with the original: %+v", before)
	}
	if ManifestName(fn) != "appendonly.aof.manifest" || TempIncrName(fn) != "temp-appendonly.aof.incr" {
		t.Fatalf("names %s %s", ManifestName(fn), TempIncrName(fn))
	}
	if (&Manifest{}).Empty() != true || m.Empty() {
		t.Fatal("Empty")
	}
}

// TestManifestFile: a manifest written to a directory reads back; none there reads as nil
// without an error; the temporary file is gone.
func TestManifestFile(t *testing.T) {
	dir := t.TempDir()
	if m, err := ReadManifest(dir, "x.aof"); m != nil || err != nil {
		t.Fatalf("no manifest: %v %v", m, err)
	}
	m := &Manifest{}
	m.Rebase("x.aof.1.base.rdb", 1, "")
	m.AddIncr("x.aof.1.incr.aof", 1)
	if err := WriteManifest(dir, "x.aof", m); err != nil {
		t.Fatal(err)
	}
	back, err := ReadManifest(dir, "x.aof")
	if err != nil || back.String() != m.String() {
		t.Fatalf("read back %v %v", back, err)
	}
	names, _ := filepath.Glob(filepath.Join(dir, "*"))
	if len(names) != 1 || filepath.Base(names[0]) != "x.aof.manifest" {
		t.Fatalf("files left: %v", names)
	}
	if err := os.WriteFile(filepath.Join(dir, "x.aof.manifest"), []byte("file a seq 1 type x\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadManifest(dir, "x.aof"); err == nil || !strings.HasPrefix(err.Error(), "*** FATAL AOF MANIFEST FILE ERROR *** ") {
		t.Fatalf("bad manifest: %v", err)
	}
}
