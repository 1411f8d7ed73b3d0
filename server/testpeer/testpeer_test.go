package testpeer

import (
	"fmt"
	"strings"
	"testing"
)

// verdict records what Require told a test, without ending the test that checks it.
type verdict struct {
	testing.TB
	fatal, skip string
}

func (v *verdict) Helper()                        {}
func (v *verdict) Fatalf(format string, a ...any) { v.fatal = fmt.Sprintf(format, a...) }
func (v *verdict) Skipf(format string, a ...any)  { v.skip = fmt.Sprintf(format, a...) }

func TestMissingPeerFailsUnlessOptedOut(t *testing.T) {
	t.Setenv(OptOut, "")
	v := &verdict{TB: t}
	Require(v, "redis-benchmark-that-does-not-exist")
	if v.skip != "" || !strings.Contains(v.fatal, "not installed") || !strings.Contains(v.fatal, OptOut+"=1") {
		t.Errorf("without the opt-out: fatal %q, skip %q; want a failure naming %s", v.fatal, v.skip, OptOut)
	}

	t.Setenv(OptOut, "1")
	v = &verdict{TB: t}
	Require(v, "redis-benchmark-that-does-not-exist")
	if v.fatal != "" || !strings.HasPrefix(v.skip, OptOut+"=1: ") {
		t.Errorf("with %s=1: fatal %q, skip %q; want a skip that says why", OptOut, v.fatal, v.skip)
	}
}

func TestDebianPeerNamesItsPackage(t *testing.T) {
	t.Setenv(OptOut, "")
	t.Setenv("PATH", t.TempDir())
	v := &verdict{TB: t}
	Require(v, "redis-cli")
	if !strings.Contains(v.fatal, "apt-get install -y redis-tools") {
		t.Errorf("fatal %q does not name redis-tools, the package of redis-cli", v.fatal)
	}
}

func TestKubebuilderAssets(t *testing.T) {
	t.Setenv(OptOut, "")
	t.Setenv("KUBEBUILDER_ASSETS", "")
	v := &verdict{TB: t}
	KubebuilderAssets(v)
	if !strings.Contains(v.fatal, "make test") {
		t.Errorf("fatal %q does not say how to get the API server", v.fatal)
	}
}
