// Package tlschain verifies a TLS peer's certificate chain against a CA pool without a host name,
// as Redis's own TLS connections do (replication, redis-cli): the certificate of an instance is
// issued for its Services and pods, while its peers dial pod IPs, loopback or forwarded ports.
// The replication client, the health probe, the preStop hook, iocache-bench and the operator all
// use it in tls.Config.VerifyPeerCertificate (with InsecureSkipVerify, which only turns the
// standard library's host-name check off).
package tlschain

import (
	"crypto/x509"
	"errors"
	"time"
)

// Verifier returns a VerifyPeerCertificate function that checks that roots (nil: the system's)
// signed the peer's chain. With despiteExpiry the check is made at a moment within the leaf's
// validity: a server whose certificate expired is still the instance's own, and a probe or the
// operator that refused it would restart it (emptying the cache) or could not make it load the
// renewed files; the expiry is reported elsewhere.
func Verifier(roots *x509.CertPool, despiteExpiry bool) func([][]byte, [][]*x509.Certificate) error {
	return func(raw [][]byte, _ [][]*x509.Certificate) error {
		if len(raw) == 0 {
			return errors.New("tls: the peer sent no certificate")
		}
		certs := make([]*x509.Certificate, len(raw))
		for i, b := range raw {
			c, err := x509.ParseCertificate(b)
			if err != nil {
				return err
			}
			certs[i] = c
		}
		inter := x509.NewCertPool()
		for _, c := range certs[1:] {
			inter.AddCert(c)
		}
		opts := x509.VerifyOptions{Roots: roots, Intermediates: inter}
		if leaf := certs[0]; despiteExpiry && time.Now().After(leaf.NotAfter) {
			opts.CurrentTime = leaf.NotAfter
		}
		_, err := certs[0].Verify(opts)
		return err
	}
}
