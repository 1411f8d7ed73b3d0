package testpeer

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// Certs is a throw-away PKI for TLS tests, written into a test's temporary directory: a CA, a
// server certificate for 127.0.0.1 and localhost, and a client certificate, all PEM files that
// iocache, redis-server, redis-cli and go-redis read alike. Issue makes more leaves (a second
// server certificate for a reload test).
type Certs struct {
	Dir                           string
	CAFile                        string
	CertFile, KeyFile             string // the server's (good for client authentication too)
	ClientCertFile, ClientKeyFile string

	ca     *x509.Certificate
	caKey  *ecdsa.PrivateKey
	pool   *x509.CertPool
	serial atomic.Int64
}

// NewCerts writes a CA, a server and a client certificate into t.TempDir().
func NewCerts(t testing.TB) *Certs {
	t.Helper()
	c := &Certs{Dir: t.TempDir()}
	key := newKey(t)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "iocache test CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageCRLSign}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	if c.ca, err = x509.ParseCertificate(der); err != nil {
		t.Fatal(err)
	}
	c.caKey = key
	c.serial.Store(1)
	c.CAFile = filepath.Join(c.Dir, "ca.crt")
	writePEM(t, c.CAFile, "CERTIFICATE", der)
	c.pool = x509.NewCertPool()
	c.pool.AddCert(c.ca)
	c.CertFile, c.KeyFile = c.Issue(t, "server")
	c.ClientCertFile, c.ClientKeyFile = c.Issue(t, "client")
	return c
}

// Issue signs a new leaf for 127.0.0.1 and localhost, usable by servers and clients, and
// returns its certificate and key files (name.crt, name.key).
func (c *Certs) Issue(t testing.TB, name string) (certFile, keyFile string) {
	t.Helper()
	return c.IssueValid(t, name, time.Now().Add(-time.Hour), time.Now().Add(24*time.Hour))
}

// IssueValid is Issue with the validity given: an expired certificate, one not valid yet.
func (c *Certs) IssueValid(t testing.TB, name string, notBefore, notAfter time.Time) (certFile, keyFile string) {
	t.Helper()
	key := newKey(t)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(c.serial.Add(1)), Subject: pkix.Name{CommonName: name},
		NotBefore: notBefore, NotAfter: notAfter,
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}, DNSNames: []string{"localhost"}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, c.ca, &key.PublicKey, c.caKey)
	if err != nil {
		t.Fatal(err)
	}
	kb, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	certFile, keyFile = filepath.Join(c.Dir, name+".crt"), filepath.Join(c.Dir, name+".key")
	writePEM(t, certFile, "CERTIFICATE", der)
	writePEM(t, keyFile, "PRIVATE KEY", kb)
	return certFile, keyFile
}

// Pool holds the CA, for a client's RootCAs.
func (c *Certs) Pool() *x509.CertPool { return c.pool }

// ClientConfig is a go-redis or crypto/tls client configuration that trusts the CA, with the
// client certificate when withCert.
func (c *Certs) ClientConfig(t testing.TB, withCert bool) *tls.Config {
	t.Helper()
	cfg := &tls.Config{RootCAs: c.pool, ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
	if withCert {
		cert, err := tls.LoadX509KeyPair(c.ClientCertFile, c.ClientKeyFile)
		if err != nil {
			t.Fatal(err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg
}

// ServerArgs are the redis-server (and iocache-server) arguments that serve TLS on port with
// these certificates, and replicate over TLS when asked.
func (c *Certs) ServerArgs(port string) []string {
	return []string{"--tls-port", port, "--tls-cert-file", c.CertFile, "--tls-key-file", c.KeyFile,
		"--tls-ca-cert-file", c.CAFile}
}

func newKey(t testing.TB) *ecdsa.PrivateKey {
	t.Helper()
	k, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	return k
}

func writePEM(t testing.TB, path, typ string, der []byte) {
	t.Helper()
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
}
