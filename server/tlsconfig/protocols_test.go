package tlsconfig

import (
	"crypto/tls"
	"testing"
)

// tls-protocols enables the run of versions that ends with the highest listed, never one that
// was not asked for.
func TestProtocolsRange(t *testing.T) {
	for _, c := range []struct {
		s      string
		lo, hi uint16
	}{{"TLSv1.2", tls.VersionTLS12, tls.VersionTLS12}, {"tlsv1 TLSv1.1 tlsv1.2", tls.VersionTLS10, tls.VersionTLS12},
		{"TLSv1 TLSv1.3", tls.VersionTLS13, tls.VersionTLS13}, {"TLSv1.3 TLSv1.1 TLSv1.2", tls.VersionTLS11, tls.VersionTLS13}} {
		if lo, hi, err := parseTLSProtocols(c.s); err != nil || lo != c.lo || hi != c.hi {
			t.Errorf("tls-protocols %q: %s-%s %v", c.s, tls.VersionName(lo), tls.VersionName(hi), err)
		}
	}
}
