package backup_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"

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

// The backup user's rules (backup.ACLRules) are enough to take a backup and no more: the user
// backs up, and it can neither read nor write a key.
func TestBackupAsTheBackupUser(t *testing.T) {
	s3 := testpeer.StartS3(t, "../../bin")
	source := startServer(t, "iocache", "")
	fill(t, source.C, 500)
	const password = "backup-user-Passw0rd"
	rules := append([]any{"ACL", "SETUSER", backup.UserName, "on", ">" + password}, toAny(backup.ACLRules())...)
	if err := source.C.Do(t.Context(), rules...).Err(); err != nil {
		t.Fatal(err)
	}
	pwFile := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(pwFile, []byte(password), 0o600); err != nil {
		t.Fatal(err)
	}
	args := []string{"backup", "--source", source.Addr, "--user", backup.UserName, "--password-file", pwFile, "--name", "as-user",
		"--endpoint", s3.Endpoint, "--bucket", s3.Bucket, "--prefix", "u", "--path-style", "--region", "us-east-1"}
	if b, err := exec.Command(iocacheBinary(t), args...).CombinedOutput(); err != nil {
		t.Fatalf("backup as %s: %v\n%s", backup.UserName, err, b)
	}
	as := redis.NewClient(&redis.Options{Addr: source.Addr, Username: backup.UserName, Password: password, Protocol: 2, DisableIdentity: true})
	defer as.Close()
	for _, cmd := range [][]any{{"GET", "k:1"}, {"SET", "x", "1"}, {"CONFIG", "GET", "maxmemory"}, {"KEYS", "*"}} {
		if err := as.Do(t.Context(), cmd...).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
			t.Fatalf("%v as the backup user: %v, want NOPERM", cmd, err)
		}
	}
}

func toAny(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// What a bootstrapping pod's init container runs: restore only while the operator's pending file
// exists, and never over data the volume already holds (a pod that restarts mid-bootstrap keeps
// what it wrote since).
func TestCLIRestoreForBootstrap(t *testing.T) {
	s3 := testpeer.StartS3(t, "../../bin")
	source := startServer(t, "iocache", "")
	fill(t, source.C, 300)
	bin := iocacheBinary(t)
	storage := []string{"--endpoint", s3.Endpoint, "--bucket", s3.Bucket, "--prefix", "boot", "--path-style", "--region", "us-east-1"}
	if b, err := exec.Command(bin, append([]string{"backup", "--source", source.Addr, "--name", "b1"}, storage...)...).CombinedOutput(); err != nil {
		t.Fatalf("backup: %v\n%s", err, b)
	}
	dir := t.TempDir()
	pending := filepath.Join(t.TempDir(), "pending")
	dst := filepath.Join(dir, "dump.rdb")
	restore := func() string {
		t.Helper()
		args := append([]string{"restore", "--name", "b1", "--to", dst, "--pending-file", pending, "--keep-existing"}, storage...)
		b, err := exec.Command(bin, args...).CombinedOutput()
		if err != nil {
			t.Fatalf("restore: %v\n%s", err, b)
		}
		return string(b)
	}
	if out := restore(); !strings.Contains(out, "no restore pending") {
		t.Fatalf("without the pending file: %s", out)
	}
	if _, err := os.Stat(dst); err == nil {
		t.Fatal("restored without the pending file")
	}
	if err := os.WriteFile(pending, []byte("b1"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := restore(); !strings.Contains(out, "restored backup b1: ") {
		t.Fatalf("with the pending file: %s", out)
	}
	if err := os.WriteFile(dst, []byte("newer data"), 0o644); err != nil {
		t.Fatal(err)
	}
	if out := restore(); !strings.Contains(out, "already holds data") {
		t.Fatalf("over existing data: %s", out)
	}
	if b, _ := os.ReadFile(dst); string(b) != "newer data" {
		t.Fatal("the existing data was overwritten")
	}
}
