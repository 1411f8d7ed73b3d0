package tlsconfig

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/binary"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/tlschain"
)

// Material is one build of the configuration: Server for accepted conns, Client for the link
// to a primary under tls-replication.
type Material struct {
	Server, Client *tls.Config
}

// Wanted says whether the configuration asks for TLS at all, which is when Redis configures
// it (and checks the files).
func Wanted(c *config.Config) bool {
	return c.TLSPort != 0 || c.TLSReplication || c.CompatValue("tls-cluster") == "yes"
}

// Build makes the material from c. The error is the warning Redis logs for the same fault.
func Build(c *config.Config) (*Material, error) {
	v := c.CompatValue
	certFile, keyFile := v("tls-cert-file"), v("tls-key-file")
	if certFile == "" {
		return nil, errors.New("No tls-cert-file configured!")
	}
	if keyFile == "" {
		return nil, errors.New("No tls-key-file configured!")
	}
	auth := v("tls-auth-clients")
	caFile, caDir := v("tls-ca-cert-file"), v("tls-ca-cert-dir")
	if (auth != "no" || v("tls-cluster") == "yes" || v("tls-replication") == "yes") && caFile == "" && caDir == "" {
		return nil, errors.New("Either tls-ca-cert-file or tls-ca-cert-dir must be specified when tls-cluster, tls-replication or tls-auth-clients are enabled!")
	}
	minV, maxV, err := parseTLSProtocols(v("tls-protocols"))
	if err != nil {
		return nil, err
	}
	cert, err := loadKeyPair(certFile, keyFile, v("tls-key-file-pass"))
	if err != nil {
		return nil, err
	}
	var roots *x509.CertPool
	if caFile != "" || caDir != "" {
		if roots, err = LoadCAs(caFile, caDir); err != nil {
			return nil, fmt.Errorf("Failed to configure CA certificate(s) file/directory: %v", err)
		}
	}
	suites, err := parseCiphers(v("tls-ciphers"))
	if err != nil {
		return nil, err
	}
	if err := checkCiphersuites(v("tls-ciphersuites")); err != nil {
		return nil, err
	}
	if f := v("tls-dh-params-file"); f != "" {
		// Go has no finite-field DH to give the parameters to (noeffect.go); Redis's check
		// that the file opens is kept, so a configuration Redis refuses is refused here too.
		fh, err := os.Open(f)
		if err != nil {
			return nil, fmt.Errorf("Failed to load %s: %v", f, pathErr(err))
		}
		fh.Close()
	}
	base := tls.Config{MinVersion: minV, MaxVersion: maxV, CipherSuites: suites,
		// Records of full size from the first byte: Redis replies are read whole by clients,
		// and small first records only cost throughput on large values.
		DynamicRecordSizingDisabled: true}

	srv := base.Clone()
	srv.Certificates = []tls.Certificate{cert}
	srv.ClientCAs = roots
	switch auth {
	case "yes":
		srv.ClientAuth = tls.RequireAndVerifyClientCert
	case "optional":
		srv.ClientAuth = tls.VerifyClientCertIfGiven
	default:
		srv.ClientAuth = tls.NoClientCert
	}
	if v("tls-session-caching") == "no" {
		srv.SessionTicketsDisabled = true
	} else {
		limitTicketAge(srv, c.CompatValue("tls-session-cache-timeout"))
	}

	cli := base.Clone()
	clientCert := cert
	if cf, kf := v("tls-client-cert-file"), v("tls-client-key-file"); cf != "" && kf != "" {
		if clientCert, err = loadKeyPair(cf, kf, v("tls-client-key-file-pass")); err != nil {
			return nil, err
		}
	}
	cli.Certificates = []tls.Certificate{clientCert}
	// Redis checks the primary's chain against its CAs and not the host name it dialled
	// (it sets no expected host): InsecureSkipVerify turns off Go's check, which always
	// includes the name, and VerifyPeerCertificate does the chain check alone.
	cli.InsecureSkipVerify = true
	cli.VerifyPeerCertificate = tlschain.Verifier(roots, false)
	return &Material{Server: srv, Client: cli}, nil
}

// pathErr is an *os.PathError's reason alone, as strerror prints it.
func pathErr(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		s := pe.Err.Error()
		return strings.ToUpper(s[:1]) + s[1:]
	}
	return err.Error()
}

// parseTLSProtocols is Redis's parseProtocolsConfig. Go enables a range of versions, so a list
// with a gap ("TLSv1 TLSv1.3") enables the run of versions that ends with the highest listed
// (TLS 1.3 alone): never a version that was not asked for.
func parseTLSProtocols(s string) (uint16, uint16, error) {
	if strings.TrimSpace(s) == "" {
		return tls.VersionTLS12, tls.VersionTLS13, nil
	}
	listed := map[uint16]bool{}
	var hi uint16
	for _, tok := range strings.Fields(s) {
		var ver uint16
		switch strings.ToLower(tok) {
		case "tlsv1":
			ver = tls.VersionTLS10
		case "tlsv1.1":
			ver = tls.VersionTLS11
		case "tlsv1.2":
			ver = tls.VersionTLS12
		case "tlsv1.3":
			ver = tls.VersionTLS13
		default:
			return 0, 0, errors.New("Invalid tls-protocols specified. Use a combination of 'TLSv1', 'TLSv1.1', 'TLSv1.2' and 'TLSv1.3'.")
		}
		listed[ver] = true
		hi = max(hi, ver)
	}
	lo := hi
	for lo > tls.VersionTLS10 && listed[lo-1] {
		lo--
	}
	return lo, hi, nil
}

// loadKeyPair reads a PEM certificate chain and its key; pass decrypts an encrypted key.
func loadKeyPair(certFile, keyFile, pass string) (tls.Certificate, error) {
	certPEM, err := os.ReadFile(certFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("Failed to load certificate: %s: %v", certFile, pathErr(err))
	}
	keyPEM, err := os.ReadFile(keyFile)
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("Failed to load private key: %s: %v", keyFile, pathErr(err))
	}
	if keyPEM, err = decryptKey(keyPEM, pass); err != nil {
		return tls.Certificate{}, fmt.Errorf("Failed to load private key: %s: %v", keyFile, err)
	}
	cert, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil && strings.Contains(err.Error(), "certificate input") {
		return tls.Certificate{}, fmt.Errorf("Failed to load certificate: %s: %v", certFile, err)
	}
	if err != nil {
		return tls.Certificate{}, fmt.Errorf("Failed to load private key: %s: %v", keyFile, err)
	}
	return cert, nil
}

// decryptKey returns the key PEM in clear: an encrypted PKCS#8 key (pkcs8.go), or one in
// the traditional encrypted PEM form.
func decryptKey(keyPEM []byte, pass string) ([]byte, error) {
	block, _ := pem.Decode(keyPEM)
	if block == nil {
		return keyPEM, nil // X509KeyPair says what is wrong
	}
	if block.Type == "ENCRYPTED PRIVATE KEY" {
		if pass == "" {
			return nil, errors.New("the key is encrypted and its pass is empty")
		}
		der, err := decryptPKCS8(block.Bytes, pass)
		if err != nil {
			return nil, err
		}
		return pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), nil
	}
	//nolint:staticcheck // RFC 1423 PEM encryption is what redis.conf's tls-key-file-pass opens; no replacement exists
	if !x509.IsEncryptedPEMBlock(block) {
		return keyPEM, nil
	}
	if pass == "" {
		return nil, errors.New("the key is encrypted and its pass is empty")
	}
	der, err := x509.DecryptPEMBlock(block, []byte(pass)) //nolint:staticcheck // as above
	if err != nil {
		return nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: block.Type, Bytes: der}), nil
}

// LoadCAs reads tls-ca-cert-file and every certificate file in tls-ca-cert-dir; an error is
// about the file.
func LoadCAs(file, dir string) (*x509.CertPool, error) {
	pool := x509.NewCertPool()
	if file != "" {
		b, err := os.ReadFile(file)
		if err != nil {
			return nil, err
		}
		if !pool.AppendCertsFromPEM(b) {
			return nil, fmt.Errorf("%s: no certificate found", file)
		}
	}
	if dir != "" {
		// OpenSSL looks certificates up in the directory when it verifies, by their hashed
		// names, so a directory it cannot read is no error, only no certificates (Redis takes
		// a missing tls-ca-cert-dir). Every certificate file in it is read here, at load.
		entries, _ := os.ReadDir(dir)
		for _, e := range entries {
			if e.IsDir() {
				continue
			}
			if b, err := os.ReadFile(filepath.Join(dir, e.Name())); err == nil {
				pool.AppendCertsFromPEM(b) // OpenSSL too skips what is not a certificate
			}
		}
	}
	return pool, nil
}

// limitTicketAge makes session tickets older than tls-session-cache-timeout seconds useless
// for resumption, as Redis's session cache timeout expires sessions: the ticket carries its
// creation time, checked when it comes back.
func limitTicketAge(cfg *tls.Config, timeout string) {
	secs, _ := time.ParseDuration(timeout + "s")
	cfg.WrapSession = func(cs tls.ConnectionState, ss *tls.SessionState) ([]byte, error) {
		ss.Extra = append(ss.Extra, binary.BigEndian.AppendUint64(nil, uint64(time.Now().Unix())))
		return cfg.EncryptTicket(cs, ss)
	}
	cfg.UnwrapSession = func(identity []byte, cs tls.ConnectionState) (*tls.SessionState, error) {
		ss, err := cfg.DecryptTicket(identity, cs)
		if err != nil || ss == nil || len(ss.Extra) == 0 {
			return nil, err
		}
		last := ss.Extra[len(ss.Extra)-1]
		if len(last) != 8 || time.Since(time.Unix(int64(binary.BigEndian.Uint64(last)), 0)) > secs {
			return nil, nil // a full handshake
		}
		return ss, nil
	}
}
