package backup_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/iocache/iocache/server/backup"
	"github.com/iocache/iocache/server/testpeer"
)

// The CLI as a Job runs it: iocache-server backup against a password-protected server (the
// password from a file, the storage's keys from the environment), the manifest written to
// --json-out, retention applied; iocache-server restore into a new server's directory. The
// password appears in no output.
func TestCLIBackupAndRestore(t *testing.T) {
	s3 := testpeer.StartS3(t, "../../bin")
	const password = "s3cret-Passw0rd"
	source := startServer(t, "iocache", "", "--requirepass", password)
	dir := t.TempDir()
	pwFile := filepath.Join(dir, "password")
	if err := os.WriteFile(pwFile, []byte(password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	authed := startClient(t, source.Addr, password)
	fill(t, authed, 2000)
	want := digestOf(t, authed)
	bin := iocacheBinary(t)
	storage := []string{"--endpoint", s3.Endpoint, "--bucket", s3.Bucket, "--prefix", "team/cache", "--path-style", "--region", "us-east-1"}
	for i, name := range []string{"one", "two", "three"} {
		out := filepath.Join(dir, name+".json")
		args := append([]string{"backup", "--source", source.Addr, "--password-file", pwFile, "--name", name,
			"--label", "instance=cache", "--keep", "2", "--json-out", out}, storage...)
		b, err := exec.Command(bin, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("backup %d: %v\n%s", i, err, b)
		}
		if strings.Contains(string(b), password) {
			t.Fatalf("the password is in the output:\n%s", b)
		}
		var m backup.Manifest
		raw, _ := os.ReadFile(out)
		if err := json.Unmarshal(raw, &m); err != nil || m.Name != name || m.Keys == 0 || m.Labels["instance"] != "cache" {
			t.Fatalf("--json-out: %v %s", err, raw)
		}
	}
	if got := listNames(t, openStore(t, s3, "team/cache")); strings.Join(got, ",") != "two,three" {
		t.Fatalf("--keep 2 left %v", got)
	}
	dataDir := t.TempDir()
	args := append([]string{"restore", "--name", "three", "--to", filepath.Join(dataDir, "dump.rdb")}, storage...)
	if b, err := exec.Command(bin, args...).CombinedOutput(); err != nil {
		t.Fatalf("restore: %v\n%s", err, b)
	}
	restored := startServer(t, "iocache", dataDir)
	if got := restored.digest(t); got != want {
		t.Fatalf("restored digest %s, source %s", got, want)
	}
	// A wrong password fails with the server's error, and says nothing of the password.
	if err := os.WriteFile(pwFile, []byte("wrong-"+password), 0o600); err != nil {
		t.Fatal(err)
	}
	args = append([]string{"backup", "--source", source.Addr, "--password-file", pwFile, "--name", "four"}, storage...)
	b, err := exec.Command(bin, args...).CombinedOutput()
	if err == nil || !strings.Contains(string(b), "WRONGPASS") || strings.Contains(string(b), password) {
		t.Fatalf("backup with a wrong password: %v\n%s", err, b)
	}
}
