package bench

import (
	"bytes"
	"strconv"
	"strings"
	"testing"

	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/testpeer"
)

// TestTLS runs the benchmark against a TLS-only iocache-server (port 0 and a tls-port, as
// spec.tls renders it) that requires client certificates: with --tls, the CA and the client
// certificate it measures; without the certificate the server refuses it.
func TestTLS(t *testing.T) {
	certs := testpeer.NewCerts(t)
	port := startIOCache(t, func(c *config.Config) {
		args := certs.ServerArgs(strconv.Itoa(testpeer.FreePort(t)))
		for i := 0; i+1 < len(args); i += 2 {
			if err := c.Set(strings.TrimPrefix(args[i], "--"), []string{args[i+1]}, false); err != nil {
				t.Fatal(err)
			}
		}
	})
	tlsArgs := []string{"--tls", "--cacert", certs.CAFile, "--cert", certs.ClientCertFile, "--key", certs.ClientKeyFile}
	r, code, stderr := runJSON(t, portArgs(port, append(tlsArgs, "--tests", "set,get", "--requests", strconv.Itoa(requests),
		"--clients", "4", "--threads", "2", "--benchspace")...)...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	checkResult(t, r, "set", "get")

	if _, code, _ := runJSON(t, portArgs(port, "--tls", "--cacert", certs.CAFile, "--requests", "10")...); code != 1 {
		t.Errorf("without a client certificate: exit %d, want 1 (refused)", code)
	}
	other := testpeer.NewCerts(t)
	if r, code, _ := runJSON(t, portArgs(port, "--tls", "--cacert", other.CAFile, "--cert", certs.ClientCertFile,
		"--key", certs.ClientKeyFile, "--requests", "10")...); code != 1 || !strings.Contains(r.Error, "certificate") {
		t.Errorf("a server signed by another CA: exit %d, %q; want 1 and a certificate error", code, r.Error)
	}
	var out, errb bytes.Buffer
	if code := Main(portArgs(port, "--cacert", certs.CAFile), &out, &errb); code != 2 || !strings.Contains(errb.String(), "need --tls") {
		t.Errorf("--cacert without --tls: exit %d, %q; want a usage error", code, errb.String())
	}
}
