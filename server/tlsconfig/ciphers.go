package tlsconfig

import (
	"crypto/tls"
	"fmt"
	"strings"
)

// tls-ciphers and tls-ciphersuites: OpenSSL's cipher strings read into what Go's crypto/tls can
// do. Go implements a fixed set of TLS 1.2 suites (no DHE, no CAMELLIA, no CCM), so a string
// selects among those: named suites, keywords (HIGH, ECDHE, AESGCM...), combinations with '+'
// (ECDHE+AESGCM), exclusions with '!' or '-'. What selects nothing Go has (aNULL, MD5, DHE...)
// selects nothing, as OpenSSL would on a build without those suites.

// openSSLCiphers maps OpenSSL's names of the TLS 1.2 suites Go implements to Go's identifiers.
var openSSLCiphers = map[string]uint16{
	"ECDHE-ECDSA-AES128-GCM-SHA256": tls.TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256,
	"ECDHE-ECDSA-AES256-GCM-SHA384": tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384,
	"ECDHE-RSA-AES128-GCM-SHA256":   tls.TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256,
	"ECDHE-RSA-AES256-GCM-SHA384":   tls.TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384,
	"ECDHE-ECDSA-CHACHA20-POLY1305": tls.TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256,
	"ECDHE-RSA-CHACHA20-POLY1305":   tls.TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256,
	"ECDHE-ECDSA-AES128-SHA":        tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA,
	"ECDHE-ECDSA-AES256-SHA":        tls.TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA,
	"ECDHE-RSA-AES128-SHA":          tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA,
	"ECDHE-RSA-AES256-SHA":          tls.TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA,
	"ECDHE-ECDSA-AES128-SHA256":     tls.TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256,
	"ECDHE-RSA-AES128-SHA256":       tls.TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256,
	"AES128-GCM-SHA256":             tls.TLS_RSA_WITH_AES_128_GCM_SHA256,
	"AES256-GCM-SHA384":             tls.TLS_RSA_WITH_AES_256_GCM_SHA384,
	"AES128-SHA":                    tls.TLS_RSA_WITH_AES_128_CBC_SHA,
	"AES256-SHA":                    tls.TLS_RSA_WITH_AES_256_CBC_SHA,
	"AES128-SHA256":                 tls.TLS_RSA_WITH_AES_128_CBC_SHA256,
}

// cipherKeyword is what an OpenSSL keyword selects among Go's suites, by their Go names
// (TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256).
func cipherKeyword(kw string) (func(name string) bool, bool) {
	has := func(parts ...string) func(string) bool {
		return func(n string) bool {
			for _, p := range parts {
				if !strings.Contains(n, p) {
					return false
				}
			}
			return true
		}
	}
	switch kw {
	case "ECDHE", "EECDH", "kEECDH", "kECDHE", "AECDH":
		return has("_ECDHE_"), true
	case "kRSA", "RSA": // RSA key exchange
		return func(n string) bool { return strings.HasPrefix(n, "TLS_RSA_") }, true
	case "aRSA": // RSA authentication
		return func(n string) bool { return strings.HasPrefix(n, "TLS_RSA_") || strings.Contains(n, "_ECDHE_RSA_") }, true
	case "ECDSA", "aECDSA":
		return has("_ECDSA_"), true
	case "AESGCM":
		return has("_AES_", "_GCM_"), true
	case "AES":
		return has("_AES_"), true
	case "AES128":
		return has("_AES_128_"), true
	case "AES256":
		return has("_AES_256_"), true
	case "CHACHA20":
		return has("CHACHA20"), true
	case "SHA256": // the MAC's digest: AEAD suites have none
		return func(n string) bool { return strings.HasSuffix(n, "_SHA256") && strings.Contains(n, "_CBC_") }, true
	case "SHA384":
		return func(n string) bool { return strings.HasSuffix(n, "_SHA384") && strings.Contains(n, "_CBC_") }, true
	case "SHA1", "SHA":
		return func(n string) bool { return strings.HasSuffix(n, "_SHA") }, true
	case "TLSv1.2":
		return func(n string) bool {
			return strings.Contains(n, "_GCM_") || strings.Contains(n, "CHACHA20") ||
				strings.HasSuffix(n, "_SHA256") || strings.HasSuffix(n, "_SHA384")
		}, true
	case "HIGH", "DEFAULT", "ALL":
		// Every suite Go has (bar RC4 and 3DES) is in each of them for OpenSSL 3.
		return func(string) bool { return true }, true
	}
	// Keywords of what Go does not implement select nothing.
	switch kw {
	case "aNULL", "eNULL", "NULL", "MD5", "RC4", "3DES", "DES", "EXPORT", "EXP", "LOW", "MEDIUM", "PSK", "SRP", "DSS",
		"aDSS", "kDHE", "DHE", "EDH", "ADH", "AECDH-NULL", "CAMELLIA", "ARIA", "SEED", "IDEA", "CCM", "CCM8", "SSLv3", "TLSv1",
		"kPSK", "aPSK", "SHA224", "GOST", "aGOST", "kGOST", "COMPLEMENTOFALL":
		return func(string) bool { return false }, true
	}
	return nil, false
}

// goSuites are the TLS 1.2 suites a cipher string chooses among: Go's secure ones, and those
// OpenSSL still lists (RSA key exchange, CBC-SHA256), never RC4 or 3DES.
func goSuites() []*tls.CipherSuite {
	out := append([]*tls.CipherSuite(nil), tls.CipherSuites()...)
	for _, cs := range tls.InsecureCipherSuites() {
		if !strings.Contains(cs.Name, "RC4") && !strings.Contains(cs.Name, "3DES") {
			out = append(out, cs)
		}
	}
	return out
}

// parseCiphers reads tls-ciphers (TLS 1.2 and below) into the suites OpenSSL 3 would select
// among those Go has. A string that selects nothing fails with Redis's warning, as
// SSL_CTX_set_cipher_list does.
func parseCiphers(s string) ([]uint16, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	suites := goSuites()
	var picked []uint16
	seen := map[uint16]bool{}
	dropped := map[uint16]bool{}
	pick := func(id uint16) {
		if !seen[id] {
			seen[id] = true
			picked = append(picked, id)
		}
	}
	for _, tok := range strings.FieldsFunc(s, func(r rune) bool { return r == ':' || r == ',' || r == ' ' }) {
		if strings.HasPrefix(tok, "@") {
			continue // @STRENGTH, @SECLEVEL=n: ordering and levels, which Go decides
		}
		neg := strings.HasPrefix(tok, "!") || strings.HasPrefix(tok, "-")
		name := strings.TrimLeft(tok, "!-+")
		var match func(cs *tls.CipherSuite) bool
		if id, ok := openSSLCiphers[name]; ok {
			match = func(cs *tls.CipherSuite) bool { return cs.ID == id }
		} else {
			var preds []func(string) bool
			known := true
			for _, kw := range strings.Split(name, "+") {
				p, ok := cipherKeyword(kw)
				known = known && ok
				preds = append(preds, p)
			}
			if !known {
				continue // OpenSSL too skips words it does not know
			}
			match = func(cs *tls.CipherSuite) bool {
				for _, p := range preds {
					if !p(cs.Name) {
						return false
					}
				}
				return true
			}
		}
		for _, cs := range suites {
			if !match(cs) {
				continue
			}
			if neg {
				dropped[cs.ID] = true
			} else if !strings.HasPrefix(tok, "+") {
				pick(cs.ID)
			}
		}
	}
	out := picked[:0]
	for _, id := range picked {
		if !dropped[id] {
			out = append(out, id)
		}
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("Failed to configure ciphers: %s", s)
	}
	return out, nil
}

// checkCiphersuites checks tls-ciphersuites (TLS 1.3) as SSL_CTX_set_ciphersuites does: every
// name must be a suite OpenSSL knows. Go enables its three suites whatever the list says.
func checkCiphersuites(s string) error {
	if s == "" {
		return nil
	}
	for _, name := range strings.Split(s, ":") {
		switch name {
		case "TLS_AES_128_GCM_SHA256", "TLS_AES_256_GCM_SHA384", "TLS_CHACHA20_POLY1305_SHA256",
			"TLS_AES_128_CCM_SHA256", "TLS_AES_128_CCM_8_SHA256":
		default:
			return fmt.Errorf("Failed to configure ciphersuites: %s", s)
		}
	}
	return nil
}
