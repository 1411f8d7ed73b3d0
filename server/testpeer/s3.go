package testpeer

import (
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// S3Server is a real S3-compatible server on loopback for the backup tests: versitygw (the
// Versity S3 Gateway, Apache-2.0) serving a directory of the test's own, one folder per bucket.
// It is not a fake of the API: requests are signed and checked, multipart uploads are staged
// and completed, objects are files.
type S3Server struct {
	Endpoint             string // http://127.0.0.1:<port>
	Bucket               string // created empty
	Root                 string // the served directory: Root/<bucket>/<key>
	AccessKey, SecretKey string
	Addr                 string // 127.0.0.1:<port>

	cmd *exec.Cmd
}

// StartS3 starts versitygw (VERSITYGW, or bin/versitygw found from binDir, or $PATH; `make
// test` builds it) with one bucket, sets AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY for the
// test (as a Job gets them from a Secret), and stops it when the test ends.
func StartS3(t testing.TB, binDir string) *S3Server {
	t.Helper()
	bin := Tool(t, "VERSITYGW", "versitygw", binDir)
	s := &S3Server{Bucket: "backups", Root: t.TempDir(), AccessKey: "iocache-test", SecretKey: "iocache-test-secret-key"}
	if err := os.Mkdir(filepath.Join(s.Root, s.Bucket), 0o755); err != nil {
		t.Fatal(err)
	}
	port := FreePort(t)
	s.Addr = "127.0.0.1:" + strconv.Itoa(port)
	s.Endpoint = "http://" + s.Addr
	s.cmd = exec.Command(bin, "--access", s.AccessKey, "--secret", s.SecretKey, "--port", s.Addr, "--quiet",
		"posix", s.Root)
	s.cmd.Stdout, s.cmd.Stderr = os.Stderr, os.Stderr
	if err := s.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	deadline := time.Now().Add(20 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", s.Addr, 200*time.Millisecond)
		if err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("versitygw did not listen on %s: %v", s.Addr, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Setenv("AWS_ACCESS_KEY_ID", s.AccessKey)
	t.Setenv("AWS_SECRET_ACCESS_KEY", s.SecretKey)
	return s
}

// Stop ends the server (again is fine).
func (s *S3Server) Stop() {
	if s.cmd.Process != nil && s.cmd.ProcessState == nil {
		_ = s.cmd.Process.Kill()
		_ = s.cmd.Wait()
	}
}
