package tlsconfig

import (
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/iocache/iocache/server/testpeer"
)

// TestCipherStringsMatchOpenSSL: tls-ciphers selects, among the suites Go implements, what
// OpenSSL selects for the same string (`openssl ciphers -tls1_2`). A string that selects no
// suite Go has is refused (OpenSSL refuses one that selects nothing at all, and takes one that
// selects only suites Go lacks, such as DHE-RSA-AES256-GCM-SHA384).
func TestCipherStringsMatchOpenSSL(t *testing.T) {
	openssl := testpeer.Require(t, "openssl")
	for _, s := range []string{
		"ECDHE+AESGCM:!ECDSA", "HIGH:!aNULL:!MD5", "DEFAULT", "ALL:!RSA", "kEECDH+AES256", "AES128-SHA:ECDHE-RSA-AES256-GCM-SHA384",
		"ECDHE-ECDSA-AES128-GCM-SHA256", "HIGH:!aNULL:!kRSA", "AESGCM:!aRSA", "ECDHE+CHACHA20", "aECDSA", "EECDH+AESGCM:EDH+AESGCM",
		"HIGH:!SHA1", "ECDHE:!SHA", "AES256:-ECDSA", "TLSv1.2:!RSA", "SHA256", "SHA384", "AES128+SHA256", "CHACHA20",
		"NOPE", "DHE-RSA-AES256-GCM-SHA384", "PSK", "RSA+AESGCM", "aRSA+SHA", "ECDHE-RSA-AES128-GCM-SHA256,ECDHE-RSA-AES256-GCM-SHA384",
	} {
		out, err := exec.Command(openssl, "ciphers", "-tls1_2", s).Output()
		var want []string
		for _, name := range strings.Split(strings.TrimSpace(string(out)), ":") {
			if _, ok := openSSLCiphers[name]; ok && err == nil {
				want = append(want, name)
			}
		}
		got, perr := parseCiphers(s)
		var names []string
		for _, id := range got {
			for n, v := range openSSLCiphers {
				if v == id {
					names = append(names, n)
				}
			}
		}
		slices.Sort(want)
		slices.Sort(names)
		if len(want) == 0 {
			if perr == nil {
				t.Errorf("%q: OpenSSL selects none Go has, iocache takes %v", s, names)
			} else if perr.Error() != "Failed to configure ciphers: "+s {
				t.Errorf("%q: %v", s, perr)
			}
			continue
		}
		if !slices.Equal(want, names) {
			t.Errorf("%q:\n openssl: %v\n iocache: %v (%v)", s, want, names, perr)
		}
	}
}
