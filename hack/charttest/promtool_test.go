package charttest

import (
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/iocache/iocache/server/testpeer"
)

// promtoolTestRules runs promtool's rule unit tests on the chart's rules: tests is a promtool test
// file without its rule_files line, which names the chart's rules file.
func promtoolTestRules(t *testing.T, tests string) {
	t.Helper()
	promtool := testpeer.Require(t, "promtool")
	rules, err := filepath.Abs(rulesFile)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "rules.test.yaml")
	if err := os.WriteFile(path, []byte("rule_files: ["+rules+"]\n"+tests), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(promtool, "test", "rules", path).CombinedOutput(); err != nil {
		t.Fatalf("promtool test rules: %v\n%s", err, out)
	}
}
