// Package testpeer finds the real programs that tests run against (Debian's redis-server,
// redis-cli, redis-benchmark, promtool, prometheus). Without them a test skips locally, but fails
// in CI, where IOCACHE_REQUIRE_PEERS=1 says they must be there.
package testpeer

import (
	"os"
	"os/exec"
	"testing"
)

// Require returns the path of program, or skips (fails under IOCACHE_REQUIRE_PEERS) when absent.
func Require(t testing.TB, program string) string {
	t.Helper()
	p, err := exec.LookPath(program)
	if err == nil {
		return p
	}
	if os.Getenv("IOCACHE_REQUIRE_PEERS") != "" {
		t.Fatalf("%s is required (IOCACHE_REQUIRE_PEERS is set) but not installed: %v", program, err)
	}
	t.Skipf("%s not installed (apt-get install redis-server redis-tools prometheus); skipping", program)
	return ""
}
