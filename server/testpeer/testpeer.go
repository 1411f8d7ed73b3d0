// Package testpeer finds the real programs that tests run against: Debian's redis-server,
// redis-cli, redis-benchmark, redis-check-rdb, redis-check-aof, openssl, promtool and prometheus, the kube-apiserver and etcd of envtest,
// and the helm and kustomize that `make test` builds. A test whose peer is missing fails with the
// command that installs it; it skips only when the run opts out explicitly with IOCACHE_SKIP_PEERS=1
// (README, "Testing"), so a run without peers can never pass unnoticed.
package testpeer

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
)

// OptOut is the variable that turns a missing peer from a failure into a skip.
const OptOut = "IOCACHE_SKIP_PEERS"

// debianPackage names the package that ships each Debian peer.
var debianPackage = map[string]string{
	"redis-server":    "redis-server",
	"redis-cli":       "redis-tools",
	"redis-benchmark": "redis-tools",
	"redis-check-rdb": "redis-tools",
	"redis-check-aof": "redis-tools",
	"prometheus":      "prometheus",
	"promtool":        "prometheus",
	"openssl":         "openssl",
}

// Require returns the path of a Debian peer program, or fails (skips under IOCACHE_SKIP_PEERS=1)
// when it is not installed.
func Require(t testing.TB, program string) string {
	t.Helper()
	if p, err := exec.LookPath(program); err == nil {
		return p
	}
	pkg := debianPackage[program]
	if pkg == "" {
		pkg = program
	}
	missing(t, program+" is not installed: `make test` installs it as root, or run `apt-get install -y "+pkg+"`")
	return ""
}

// Tool returns the absolute path of a program `make test` builds into bin/ and names in the
// variable env (HELM, KUSTOMIZE); binDir is bin/ relative to the test's package.
func Tool(t testing.TB, env, name, binDir string) string {
	t.Helper()
	for _, p := range []string{os.Getenv(env), filepath.Join(binDir, name)} {
		if p == "" {
			continue
		}
		if _, err := os.Stat(p); err == nil {
			abs, err := filepath.Abs(p)
			if err != nil {
				t.Fatal(err)
			}
			return abs
		}
	}
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	missing(t, name+" not found: `make test` builds it into bin/ (or `make "+name+"`)")
	return ""
}

// KubebuilderAssets fails (skips under IOCACHE_SKIP_PEERS=1) unless KUBEBUILDER_ASSETS names
// the folder of kube-apiserver and etcd.
func KubebuilderAssets(t testing.TB) {
	t.Helper()
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		missing(t, "KUBEBUILDER_ASSETS is not set: run `make test`, or set it to the folder "+
			"`hack/k8s-binaries.sh kube-apiserver etcd | tail -n 1` prints")
	}
}

func missing(t testing.TB, why string) {
	t.Helper()
	if os.Getenv(OptOut) == "1" {
		t.Skipf("%s=1: %s", OptOut, why)
	} else {
		t.Fatalf("%s (or %s=1 to skip the tests that need it)", why, OptOut)
	}
}

// FreePort returns a loopback TCP port that was free a moment ago, for a peer or server that
// must be told its port (one that can bind port 0 itself should).
func FreePort(t testing.TB) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
