// Package server holds no code of its own: its test keeps docs/architecture.md, the README's
// layout and the import direction they describe true for every package under server/.
package server

import (
	"go/build"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/iocache/iocache/"

// packageDirs are the directories below server/ that hold Go files, as paths from the module
// root ("server/engine").
func packageDirs(t *testing.T) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		name := d.Name()
		if d.IsDir() && path != "." && (name == "testdata" || strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_")) {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(name, ".go") && filepath.Dir(path) != "." {
			dir := "server/" + filepath.ToSlash(filepath.Dir(path))
			if !slices.Contains(dirs, dir) {
				dirs = append(dirs, dir)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) < 10 {
		t.Fatalf("found only %v under server/", dirs)
	}
	return dirs
}

// layoutSection is the README's "## Layout" section.
func layoutSection(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../README.md")
	if err != nil {
		t.Fatal(err)
	}
	_, s, ok := strings.Cut(string(b), "\n## Layout\n")
	if !ok {
		t.Fatal("README.md has no \"## Layout\" section")
	}
	s, _, _ = strings.Cut(s, "\n## ")
	return s
}

// TestPackagesDocumented: every package under server/ is named in docs/architecture.md and in
// the README's layout (as `server/x/`), and has a package comment.
func TestPackagesDocumented(t *testing.T) {
	arch, err := os.ReadFile("../docs/architecture.md")
	if err != nil {
		t.Fatal(err)
	}
	readme := layoutSection(t)
	for _, dir := range packageDirs(t) {
		name := "`" + dir + "/`"
		if !strings.Contains(string(arch), name) {
			t.Errorf("docs/architecture.md does not name %s", name)
		}
		if !strings.Contains(readme, name) {
			t.Errorf("README.md's layout does not name %s", name)
		}
		if !hasPackageComment(t, strings.TrimPrefix(dir, "server/")) {
			t.Errorf("%s has no package comment (// Package ... or // Command ...)", dir)
		}
	}
}

// hasPackageComment says whether a file of dir, test files included (server/cmd has only
// tests), carries a comment on its package clause.
func hasPackageComment(t *testing.T, dir string) bool {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, file := range files {
		f, err := parser.ParseFile(token.NewFileSet(), file, nil, parser.PackageClauseOnly|parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		if f.Doc != nil && strings.TrimSpace(f.Doc.Text()) != "" {
			return true
		}
	}
	return false
}

// TestImportDirection: the rules of docs/architecture.md's "Import direction". Only the mains
// (server/cmd/...) import server/engine, though a test may start a server to run against (as
// server/bench's do); and nothing under server/, tests included, imports the operator (api/,
// controllers/) or hack/.
func TestImportDirection(t *testing.T) {
	for _, dir := range packageDirs(t) {
		p, err := build.ImportDir(strings.TrimPrefix(dir, "server/"), 0)
		if err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		if slices.Contains(p.Imports, module+"server/engine") && !strings.HasPrefix(dir, "server/cmd/") {
			t.Errorf("%s imports server/engine: only the mains under server/cmd/ may", dir)
		}
		for _, imp := range slices.Concat(p.Imports, p.TestImports, p.XTestImports) {
			if path, ok := strings.CutPrefix(imp, module); ok && !strings.HasPrefix(path, "server/") {
				t.Errorf("%s imports %s: the server may not import the operator or hack/", dir, path)
			}
		}
	}
}
