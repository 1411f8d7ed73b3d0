// Package cmd holds the mains of iocache-server and iocache-bench; this test builds all three
// programs the image ships and checks what the Dockerfile assumes about them.
package cmd

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

var programs = map[string]string{
	"manager":        "../../controllers/cmd/manager",
	"iocache-server": "./iocache-server",
	"iocache-bench":  "./iocache-bench",
}

func TestProgramsBuildAndPrintHelp(t *testing.T) {
	dir := t.TempDir()
	for name, pkg := range programs {
		t.Run(name, func(t *testing.T) {
			bin := filepath.Join(dir, name)
			build := exec.Command("go", "build", "-o", bin, pkg)
			build.Env = append(os.Environ(), "CGO_ENABLED=0")
			if out, err := build.CombinedOutput(); err != nil {
				t.Fatalf("go build %s: %v\n%s", pkg, err, out)
			}
			out, err := exec.Command(bin, "--help").CombinedOutput()
			if err != nil {
				t.Fatalf("%s --help: %v\n%s", name, err, out)
			}
			if !strings.Contains(string(out), "Usage") {
				t.Fatalf("%s --help printed no usage:\n%s", name, out)
			}
		})
	}
}

// TestDockerfileMatchesBuild checks what can be checked without a Docker engine: the image copies
// exactly the binaries `make build` produces, runs as non-root, and starts the manager.
func TestDockerfileMatchesBuild(t *testing.T) {
	mk, err := os.ReadFile("../../Makefile")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^BINARIES := (.+)$`).FindSubmatch(mk)
	if m == nil {
		t.Fatal("Makefile has no BINARIES line")
	}
	want := strings.Fields(string(m[1]))
	for _, b := range want {
		if !regexp.MustCompile(`-o \$\(LOCALBIN\)/` + regexp.QuoteMeta(b) + ` `).Match(mk) {
			t.Errorf("make build does not produce bin/%s", b)
		}
	}
	f, err := os.Open("../../Dockerfile")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var copied []string
	var entrypoint, user string
	final := false
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		switch {
		case strings.HasPrefix(line, "FROM "):
			final = !strings.Contains(line, " AS ")
		case final && strings.HasPrefix(line, "COPY --from=build /src/bin/"):
			copied = append(copied, filepath.Base(strings.Fields(line)[2]))
		case final && strings.HasPrefix(line, "ENTRYPOINT"):
			entrypoint = line
		case final && strings.HasPrefix(line, "USER"):
			user = line
		}
	}
	if strings.Join(copied, " ") != strings.Join(want, " ") {
		t.Errorf("runtime stage copies %v, make build produces %v", copied, want)
	}
	if !strings.Contains(entrypoint, "/manager") {
		t.Errorf("entrypoint %q is not the manager", entrypoint)
	}
	if user == "" || strings.Contains(user, " 0") || strings.Contains(user, "root") {
		t.Errorf("runtime stage user %q is not a non-root user", user)
	}
}
