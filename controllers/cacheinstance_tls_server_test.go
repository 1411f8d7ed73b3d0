package controllers

import (
	"context"
	"crypto/sha256"
	"encoding/pem"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/engine"
	"github.com/iocache/iocache/server/testpeer"
)

// startTLSServer runs an in-process iocache-server as spec.tls renders it (TLS only, client
// certificates required, a password) and returns its address.
func startTLSServer(t *testing.T, certs *testpeer.Certs, password string) string {
	t.Helper()
	cfg := config.New()
	cfg.Port = 0
	cfg.Bind = []string{"127.0.0.1"}
	cfg.LogLevel = "warning"
	cfg.Save = ""
	cfg.MetricsPort = 0
	args := append(certs.ServerArgs(strconv.Itoa(testpeer.FreePort(t))), "--tls-auth-clients", "yes", "--requirepass", password)
	for i := 0; i+1 < len(args); i += 2 {
		if err := cfg.Set(strings.TrimPrefix(args[i], "--"), []string{args[i+1]}, false); err != nil {
			t.Fatal(err)
		}
	}
	s, err := engine.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = s.Serve()
	}()
	select {
	case <-s.Ready():
	case <-time.After(10 * time.Second):
		t.Fatal("iocache-server did not become ready")
	}
	t.Cleanup(func() {
		s.Shutdown()
		<-done
	})
	return s.TLSAddr()
}

// The operator's own connection to a TLS-only server that requires client certificates, with the
// configuration parseTLSSecret builds from the Secret: it verifies the chain against ca.crt,
// presents the key pair under authClients Required, sees which certificate is served, and has the
// server reload rotated files.
func TestServerClientOverTLS(t *testing.T) {
	certs := testpeer.NewCerts(t)
	const password = "pw"
	addr := startTLSServer(t, certs, password)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	_, cfg, err := parseTLSSecret(tlsSecretData(t, certs), true)
	if err != nil {
		t.Fatal(err)
	}
	creds := serverCreds{password: password, tls: cfg}
	if role, _, _, _, err := readRole(ctx, addr, creds); err != nil || role != "primary" {
		t.Fatalf("ROLE over TLS: %q %v", role, err)
	}

	_, noCert, _ := parseTLSSecret(tlsSecretData(t, certs), false)
	if _, _, _, _, err := readRole(ctx, addr, serverCreds{password: password, tls: noCert}); err == nil {
		t.Error("the server took a client without a certificate under tls-auth-clients yes")
	}
	other := testpeer.NewCerts(t)
	_, otherCfg, _ := parseTLSSecret(tlsSecretData(t, other), true)
	if _, _, _, _, err := readRole(ctx, addr, serverCreds{password: password, tls: otherCfg}); err == nil {
		t.Error("the operator accepted a server its CA did not sign")
	}
	if _, _, _, _, err := readRole(ctx, addr, serverCreds{password: password}); err == nil {
		t.Error("a plaintext client was served on the TLS port")
	}

	leaf, _ := os.ReadFile(certs.CertFile)
	first, err := servedFingerprint(ctx, addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if want := sha256.Sum256(leafOfPEM(t, leaf)); first != want {
		t.Fatal("servedFingerprint is not the served leaf's SHA-256")
	}
	// Rotated in place, as the kubelet rotates a mounted Secret: served only after the reload.
	cert2, key2 := certs.Issue(t, "server2")
	for src, dst := range map[string]string{cert2: certs.CertFile, key2: certs.KeyFile} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if fp, _ := servedFingerprint(ctx, addr, cfg); fp != first {
		t.Fatal("the server read the new files before it was told to")
	}
	if err := reloadTLSFiles(ctx, addr, creds); err != nil {
		t.Fatal(err)
	}
	b2, _ := os.ReadFile(cert2)
	if fp, err := servedFingerprint(ctx, addr, cfg); err != nil || fp != sha256.Sum256(leafOfPEM(t, b2)) {
		t.Fatalf("after the reload: %v", err)
	}

	// A server whose certificate expired (its renewal came late) is still reached, to be told to
	// load the renewed files; a certificate from another CA is not.
	expCert, expKey := certs.IssueValid(t, "expired", time.Now().Add(-50*time.Minute), time.Now().Add(-time.Minute))
	for src, dst := range map[string]string{expCert: certs.CertFile, expKey: certs.KeyFile} {
		b, _ := os.ReadFile(src)
		if err := os.WriteFile(dst, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	if err := reloadTLSFiles(ctx, addr, creds); err != nil {
		t.Fatal(err)
	}
	if _, err := servedFingerprint(ctx, addr, cfg); err != nil {
		t.Errorf("a server serving an expired certificate of the CA: %v", err)
	}
	if err := reloadTLSFiles(ctx, addr, creds); err != nil {
		t.Errorf("reloading the files of a server serving an expired certificate: %v", err)
	}
	if _, err := servedFingerprint(ctx, addr, otherCfg); err == nil {
		t.Error("an expired certificate was taken from a CA the Secret does not name")
	}
}

// leafOfPEM is the DER of the first certificate in PEM text.
func leafOfPEM(t *testing.T, b []byte) []byte {
	t.Helper()
	block, _ := pem.Decode(b)
	if block == nil {
		t.Fatal("no PEM block")
	}
	return block.Bytes
}
