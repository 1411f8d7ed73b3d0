package controllers

import (
	"crypto/x509"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
	"github.com/iocache/iocache/server/testpeer"
)

func withTLSSecret(ci *cachev1alpha1.CacheInstance) {
	ci.Spec.TLS = &cachev1alpha1.TLSSpec{SecretName: "cache-tls"}
	ci.Spec.TLS.SetDefaults()
}

func withTLSCertManager(ci *cachev1alpha1.CacheInstance) {
	ci.Spec.TLS = &cachev1alpha1.TLSSpec{CertManager: &cachev1alpha1.CertManagerSpec{
		IssuerRef:   cachev1alpha1.IssuerReference{Name: "cache-ca", Kind: "ClusterIssuer"},
		Duration:    &metav1.Duration{Duration: 720 * time.Hour},
		RenewBefore: &metav1.Duration{Duration: 240 * time.Hour},
	}}
	ci.Spec.TLS.SetDefaults()
}

// tlsSecretData is a Secret in cert-manager's layout from the test PKI.
func tlsSecretData(t *testing.T, certs *testpeer.Certs) map[string][]byte {
	t.Helper()
	read := func(p string) []byte {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	return map[string][]byte{tlsCertKey: read(certs.CertFile), tlsKeyKey: read(certs.KeyFile), tlsCAKey: read(certs.CAFile)}
}

// Everything that talks to the server locally speaks TLS, and the Secret's files are projected
// next to the config: the probes, the preStop hook and the volume.
func TestStatefulSetTLS(t *testing.T) {
	_, sts := statefulSetOf(t, newInstance(2, withTLSSecret, func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.Replicas = ptr.To[int32](2)
	}))
	c := sts.Spec.Template.Spec.Containers[0]
	wantTLS := []string{"--tls", "--cacert", "/etc/iocache/tls/ca.crt"}
	for name, cmd := range map[string][]string{
		"readiness": c.ReadinessProbe.Exec.Command, "liveness": c.LivenessProbe.Exec.Command, "preStop": c.Lifecycle.PreStop.Exec.Command,
	} {
		if !slices.Equal(cmd[len(cmd)-3:], wantTLS) || slices.Contains(cmd, "--cert") {
			t.Errorf("%s: %v, want it to end with %v and present no certificate (authClients None)", name, cmd, wantTLS)
		}
	}
	var paths []string
	for _, src := range sts.Spec.Template.Spec.Volumes[0].Projected.Sources {
		if src.Secret != nil && src.Secret.Name == "cache-tls" {
			for _, it := range src.Secret.Items {
				paths = append(paths, it.Key+"="+it.Path)
			}
		}
	}
	if want := []string{"tls.crt=tls/tls.crt", "tls.key=tls/tls.key", "ca.crt=tls/ca.crt"}; !slices.Equal(paths, want) {
		t.Errorf("projected TLS items %v, want %v", paths, want)
	}
	if m := c.VolumeMounts[0]; m.MountPath != configDir || !m.ReadOnly {
		t.Errorf("config mount %+v, want %s read-only", m, configDir)
	}
}

// TLS replaces plaintext: port 0 and the TLS port on the client port, the files where the volume
// puts them, replication over TLS only for replicated instances; spec.config may not set them.
func TestRenderConfigTLS(t *testing.T) {
	cfg, err := renderConfig(newInstance(1, withTLSSecret))
	if err != nil {
		t.Fatal(err)
	}
	d := map[string]string{}
	for _, kv := range directives(cfg.Text) {
		d[kv[0]] = kv[1]
	}
	for k, want := range map[string]string{"port": "0", "tls-port": "6379", "tls-cert-file": tlsCertPath, "tls-key-file": tlsKeyPath,
		"tls-ca-cert-file": tlsCAPath, "tls-auth-clients": "no"} {
		if d[k] != want {
			t.Errorf("%s = %q, want %q", k, d[k], want)
		}
	}
	if _, ok := d["tls-replication"]; ok {
		t.Error("tls-replication on a single-pod instance")
	}
	for _, a := range []struct {
		spec cachev1alpha1.TLSAuthClients
		want string
	}{{cachev1alpha1.TLSAuthClientsNone, "no"}, {cachev1alpha1.TLSAuthClientsOptional, "optional"}, {cachev1alpha1.TLSAuthClientsRequired, "yes"}} {
		if got := redisAuthClients(a.spec); got != a.want {
			t.Errorf("authClients %s renders %q, want %q", a.spec, got, a.want)
		}
	}
	_, err = renderConfig(newInstance(1, withTLSSecret, func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.Config = map[string]cachev1alpha1.ConfigValue{"tls-port": "6380"}
	}))
	if err == nil || !strings.Contains(err.Error(), "must not set tls-port") {
		t.Errorf("spec.config tls-port: %v", err)
	}
	// Turning TLS on changes what the server reads at start (the port): the pods roll.
	plain, _ := renderConfig(newInstance(1))
	if plain.RestartHash == cfg.RestartHash {
		t.Error("adding spec.tls keeps the restart hash")
	}
}

// The Certificate asks for the Service names, both usages, the issuer and the durations given, into
// the Secret the pods mount, owned by the instance.
func TestDesiredCertificate(t *testing.T) {
	ci := newInstance(1, withTLSCertManager)
	u := desiredCertificate(ci)
	goldenYAML(t, "certificate.yaml", u.Object)
	if u.GetName() != ci.TLSSecretName() || u.GetName() != "cache-tls" {
		t.Errorf("Certificate %s, Secret %s", u.GetName(), ci.TLSSecretName())
	}
}

// parseTLSSecret accepts cert-manager's layout and refuses, with a message that quotes nothing of
// the key, what the pods could not serve.
func TestParseTLSSecret(t *testing.T) {
	certs := testpeer.NewCerts(t)
	good := tlsSecretData(t, certs)
	leaf, cfg, err := parseTLSSecret(good, true)
	if err != nil {
		t.Fatal(err)
	}
	if leaf.Subject.CommonName != "server" || len(cfg.Certificates) != 1 || cfg.VerifyPeerCertificate == nil {
		t.Errorf("leaf %s, %d client certificates", leaf.Subject, len(cfg.Certificates))
	}
	if _, cfg, _ := parseTLSSecret(good, false); len(cfg.Certificates) != 0 {
		t.Error("a client certificate presented without authClients Required")
	}
	other := testpeer.NewCerts(t)
	otherKey := tlsSecretData(t, other)[tlsKeyKey]
	for name, tc := range map[string]struct {
		mutate func(map[string][]byte)
		want   string
	}{
		"no ca.crt":       {func(d map[string][]byte) { delete(d, tlsCAKey) }, "key ca.crt is missing"},
		"empty tls.key":   {func(d map[string][]byte) { d[tlsKeyKey] = nil }, "key tls.key is missing"},
		"another key":     {func(d map[string][]byte) { d[tlsKeyKey] = otherKey }, "do not make a key pair"},
		"another CA":      {func(d map[string][]byte) { d[tlsCAKey] = tlsSecretData(t, other)[tlsCAKey] }, "ca.crt does not verify tls.crt"},
		"ca.crt not PEM":  {func(d map[string][]byte) { d[tlsCAKey] = []byte("not a certificate") }, "ca.crt holds no PEM certificate"},
		"tls.crt not PEM": {func(d map[string][]byte) { d[tlsCertKey] = []byte("junk") }, "do not make a key pair"},
	} {
		d := map[string][]byte{}
		for k, v := range good {
			d[k] = v
		}
		tc.mutate(d)
		_, _, err := parseTLSSecret(d, false)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
			continue
		}
		if strings.Contains(err.Error(), "PRIVATE KEY") {
			t.Errorf("%s: the message quotes the key: %v", name, err)
		}
	}
}

// A certificate counts as expiring below 7 days or a quarter of its lifetime, whichever is shorter:
// a 90-day certificate at 7 days, a 1-day one at 6 hours; cert-manager renews at a third.
func TestCertificateExpiring(t *testing.T) {
	now := time.Date(2026, 12, 1, 0, 0, 0, 0, time.UTC)
	cert := func(lifetime, left time.Duration) *x509.Certificate {
		return &x509.Certificate{NotBefore: now.Add(left - lifetime), NotAfter: now.Add(left)}
	}
	day := 24 * time.Hour
	for _, tc := range []struct {
		lifetime, left time.Duration
		want           bool
	}{
		{90 * day, 30 * day, false}, {90 * day, 7*day + time.Minute, false}, {90 * day, 7*day - time.Minute, true},
		{day, 8 * time.Hour, false}, {day, 6*time.Hour - time.Minute, true}, {90 * day, -time.Hour, true},
	} {
		if got := certificateExpiring(cert(tc.lifetime, tc.left), now); got != tc.want {
			t.Errorf("lifetime %s, %s left: expiring %v, want %v", tc.lifetime, tc.left, got, tc.want)
		}
	}
}
