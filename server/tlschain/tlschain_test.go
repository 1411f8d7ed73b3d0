package tlschain

import (
	"crypto/tls"
	"testing"
	"time"

	"github.com/iocache/iocache/server/testpeer"
)

// chainOf reads a certificate file the way a handshake hands it over: DER, leaf first.
func chainOf(t *testing.T, certFile, keyFile string) [][]byte {
	t.Helper()
	pair, err := tls.LoadX509KeyPair(certFile, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	return pair.Certificate
}

// TestVerifier: a chain the CA signed passes and another CA's does not; an expired leaf fails
// unless despiteExpiry; no certificate at all fails.
func TestVerifier(t *testing.T) {
	certs, other := testpeer.NewCerts(t), testpeer.NewCerts(t)
	good := chainOf(t, certs.CertFile, certs.KeyFile)
	expiredCert, expiredKey := certs.IssueValid(t, "expired", time.Now().Add(-2*time.Hour), time.Now().Add(-time.Hour))
	expired := chainOf(t, expiredCert, expiredKey)
	foreign := chainOf(t, other.CertFile, other.KeyFile)
	for _, tc := range []struct {
		name          string
		chain         [][]byte
		despiteExpiry bool
		ok            bool
	}{
		{"signed by the CA", good, false, true},
		{"another CA", foreign, true, false},
		{"expired", expired, false, false},
		{"expired, despite expiry", expired, true, true},
		{"no certificate", nil, true, false},
	} {
		err := Verifier(certs.Pool(), tc.despiteExpiry)(tc.chain, nil)
		if (err == nil) != tc.ok {
			t.Errorf("%s: %v, want ok=%v", tc.name, err, tc.ok)
		}
	}
}
