package controllers_test

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
	"github.com/iocache/iocache/server/testpeer"
)

// tlsSecret is a Secret in cert-manager's layout (tls.crt, tls.key, ca.crt) from certificate and
// key files of the test PKI.
func tlsSecret(t *testing.T, ns, name string, certs *testpeer.Certs, certFile, keyFile string) *corev1.Secret {
	t.Helper()
	read := func(p string) []byte {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{"tls.crt": read(certFile), "tls.key": read(keyFile), "ca.crt": read(certs.CAFile)}}
}

// leafOf parses the certificate in a PEM file.
func leafOf(t *testing.T, certFile string) *x509.Certificate {
	t.Helper()
	b, err := os.ReadFile(certFile)
	if err != nil {
		t.Fatal(err)
	}
	block, _ := pem.Decode(b)
	c, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// startTLSTestServer runs iocache-server as spec.tls renders it, TLS only (port 0, a tls-port),
// requiring client certificates, with the password, on a free loopback port.
func startTLSTestServer(t *testing.T, password string, certs *testpeer.Certs) string {
	t.Helper()
	bin, err := serverBinary()
	if err != nil {
		t.Fatal(err)
	}
	port := fmt.Sprint(testpeer.FreePort(t))
	args := append([]string{"--port", "0", "--bind", "127.0.0.1", "--metrics-port", "0", "--loglevel", "warning",
		"--requirepass", password, "--tls-auth-clients", "yes"}, certs.ServerArgs(port)...)
	cmd := exec.Command(bin, args...)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	cmd.Dir = t.TempDir()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	addr := net.JoinHostPort("127.0.0.1", port)
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("iocache-server did not listen on %s:\n%s", addr, log.String())
		}
	}
}

// servedCN is the common name of the certificate addr serves to a new TLS connection.
func servedCN(t *testing.T, addr string, certs *testpeer.Certs) string {
	t.Helper()
	c, err := tls.Dial("tcp", addr, certs.ClientConfig(t, true))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].Subject.CommonName
}

// touchPod changes an annotation of the pod, which brings a pass of its instance: the operator
// may not watch Secrets, and a change of the instance's spec would roll the pod.
func (cl *cluster) touchPod(t *testing.T, pod *corev1.Pod, value string) {
	t.Helper()
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"test/touch":"`+value+`"}}}`))
	if err := cl.c.Patch(context.Background(), pod, patch); err != nil {
		t.Fatal(err)
	}
}

// An instance with spec.tls against a real TLS-only iocache-server that requires client
// certificates: the rendered objects speak TLS, the operator's own connection (live config) works
// with the Secret's CA and key pair, status reports the certificate, and a renewed Secret reaches
// the running server without a restart once its files change, as the kubelet changes them.
func TestTLSInstanceServesAndRotatesLive(t *testing.T) {
	cl := startEnv(t)
	ns := cl.namespace(t)
	ctx := context.Background()
	const password = "tls-password"
	certs := testpeer.NewCerts(t)
	if err := cl.c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cache-auth", Namespace: ns},
		Data: map[string][]byte{"password": []byte(password)}}); err != nil {
		t.Fatal(err)
	}
	sec := tlsSecret(t, ns, "cache-tls", certs, certs.CertFile, certs.KeyFile)
	if err := cl.c.Create(ctx, sec); err != nil {
		t.Fatal(err)
	}
	addr := startTLSTestServer(t, password, certs)
	ci := instanceIn(ns, "cache", 2, func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.Auth = &cachev1alpha1.AuthSpec{ExistingSecret: "cache-auth"}
		ci.Spec.TLS = &cachev1alpha1.TLSSpec{SecretName: "cache-tls", AuthClients: cachev1alpha1.TLSAuthClientsRequired}
		ci.Spec.Benchmark.ValidateOnChange = ptr.To(false)
	})
	if err := cl.c.Create(ctx, ci); err != nil {
		t.Fatal(err)
	}
	cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionReady, metav1.ConditionFalse, "RollingOut")

	sts := &appsv1.StatefulSet{}
	if err := cl.get(t, ns, "cache", sts); err != nil {
		t.Fatal(err)
	}
	c := sts.Spec.Template.Spec.Containers[0]
	wantTLS := []string{"--tls", "--cacert", "/etc/iocache/tls/ca.crt", "--cert", "/etc/iocache/tls/tls.crt", "--key", "/etc/iocache/tls/tls.key"}
	if cmd := c.ReadinessProbe.Exec.Command; !slices.Equal(cmd[len(cmd)-len(wantTLS):], wantTLS) {
		t.Errorf("readiness probe %v, want it to end with %v", cmd, wantTLS)
	}
	projected := false
	for _, src := range sts.Spec.Template.Spec.Volumes[0].Projected.Sources {
		projected = projected || src.Secret != nil && src.Secret.Name == "cache-tls"
	}
	if !projected {
		t.Errorf("Secret cache-tls is not projected into the config volume: %+v", sts.Spec.Template.Spec.Volumes[0])
	}
	cm := &corev1.ConfigMap{}
	if err := cl.get(t, ns, "cache-config", cm); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"\nport 0\n", "\ntls-port 6379\n", "\ntls-auth-clients yes\n", "\ntls-cert-file /etc/iocache/tls/tls.crt\n"} {
		if !strings.Contains(cm.Data["iocache.conf"], want) {
			t.Errorf("the config lacks %q:\n%s", strings.TrimSpace(want), cm.Data["iocache.conf"])
		}
	}

	pod := cl.servePod(t, ns, "cache", addr)
	cl.simulateRollout(t, ns, "cache")
	// The operator reached the server over TLS with its client certificate: it applied the live
	// directives and checked the certificate served.
	cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionConfigApplied, metav1.ConditionTrue, "AppliedLive")
	ci = cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionTLSReady, metav1.ConditionTrue, "CertificateServed")
	leaf := leafOf(t, certs.CertFile)
	if st := ci.Status.TLS; st == nil || st.SecretName != "cache-tls" || st.Subject != "CN=server" || st.ServedBy != 1 ||
		!st.NotAfter.Time.Equal(leaf.NotAfter) || !st.NotBefore.Time.Equal(leaf.NotBefore) {
		t.Fatalf("status.tls %+v, want CN=server until %s served by 1 pod", st, leaf.NotAfter)
	}
	if c := meta.FindStatusCondition(ci.Status.Conditions, cachev1alpha1.ConditionCertificateExpiring); c == nil || c.Status != metav1.ConditionFalse {
		t.Errorf("CertificateExpiring %+v for a certificate with 23 of its 25 hours left", c)
	}
	if v, ok := gauge(t, "iocache_instance_tls_certificate_expiry_timestamp_seconds", map[string]string{"namespace": ns, "instance": "cache"}); !ok || v != float64(leaf.NotAfter.Unix()) {
		t.Errorf("expiry gauge %v (%v), want %d", v, ok, leaf.NotAfter.Unix())
	}

	// A renewal: the Secret holds a new certificate, but the pod's files are still the old ones.
	cert2, key2 := certs.Issue(t, "server2")
	renewed := tlsSecret(t, ns, "cache-tls", certs, cert2, key2)
	sec.Data = renewed.Data
	if err := cl.c.Update(ctx, sec); err != nil {
		t.Fatal(err)
	}
	cl.touchPod(t, pod, "1")
	ci = cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionTLSReady, metav1.ConditionFalse, "Rotating")
	if msg := meta.FindStatusCondition(ci.Status.Conditions, cachev1alpha1.ConditionTLSReady).Message; !strings.Contains(msg, "cache-0") {
		t.Errorf("Rotating message %q does not name the pod", msg)
	}
	// The kubelet updates the mounted files; the operator's next look has the server load them.
	for src, dst := range map[string]string{cert2: certs.CertFile, key2: certs.KeyFile} {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(dst, b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	ci = cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionTLSReady, metav1.ConditionTrue, "CertificateServed")
	if cn := servedCN(t, addr, certs); cn != "server2" || ci.Status.TLS.Subject != "CN=server2" {
		t.Errorf("after the rotation the server serves %q, status says %q", cn, ci.Status.TLS.Subject)
	}
	cl.waitEventSaying(t, ns, "cache", "CertificateReloaded", "cache-0")
	rdb := redis.NewClient(&redis.Options{Addr: addr, Password: password, TLSConfig: certs.ClientConfig(t, true), Protocol: 2})
	defer rdb.Close()
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Errorf("a client after the rotation: %v", err)
	}
}

// A TLS Secret the pods could not start with stops the instance with a message that says what to
// do, and no crash; once fixed, the instance goes on.
func TestTLSSecretProblemsAreDegraded(t *testing.T) {
	cl := startEnv(t)
	ns := cl.namespace(t)
	ctx := context.Background()
	ci := instanceIn(ns, "cache", 1, func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.TLS = &cachev1alpha1.TLSSpec{SecretName: "cache-tls"}
		ci.Spec.Benchmark.ValidateOnChange = ptr.To(false)
	})
	if err := cl.c.Create(ctx, ci); err != nil {
		t.Fatal(err)
	}
	ci = cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionDegraded, metav1.ConditionTrue, "SecretMissing")
	if msg := meta.FindStatusCondition(ci.Status.Conditions, cachev1alpha1.ConditionTLSReady).Message; !strings.Contains(msg, "Secret cache-tls does not exist: create it with tls.crt, tls.key and ca.crt") {
		t.Errorf("TLSReady message %q", msg)
	}
	if err := cl.get(t, ns, "cache", &appsv1.StatefulSet{}); !apierrors.IsNotFound(err) {
		t.Errorf("a StatefulSet whose pods could not mount their Secret: %v", err)
	}
	cl.waitEventSaying(t, ns, "cache", "SecretMissing", "Secret cache-tls does not exist")

	certs := testpeer.NewCerts(t)
	sec := tlsSecret(t, ns, "cache-tls", certs, certs.CertFile, certs.KeyFile)
	delete(sec.Data, "ca.crt")
	if err := cl.c.Create(ctx, sec); err != nil {
		t.Fatal(err)
	}
	cl.update(t, ns, "cache", func(ci *cachev1alpha1.CacheInstance) { ci.Spec.PodLabels = map[string]string{"touch": "1"} })
	ci = cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionTLSReady, metav1.ConditionFalse, "SecretInvalid")
	if msg := meta.FindStatusCondition(ci.Status.Conditions, cachev1alpha1.ConditionDegraded).Message; !strings.Contains(msg, "key ca.crt is missing") {
		t.Errorf("Degraded message %q does not name the missing key", msg)
	}

	sec.Data = tlsSecret(t, ns, "cache-tls", certs, certs.CertFile, certs.KeyFile).Data
	if err := cl.c.Update(ctx, sec); err != nil {
		t.Fatal(err)
	}
	cl.update(t, ns, "cache", func(ci *cachev1alpha1.CacheInstance) { ci.Spec.PodLabels = map[string]string{"touch": "2"} })
	ci = cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionDegraded, metav1.ConditionFalse, "AsExpected")
	if st := ci.Status.TLS; st == nil || st.NotAfter == nil || st.Subject != "CN=server" {
		t.Errorf("status.tls %+v", st)
	}
	cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionTLSReady, metav1.ConditionUnknown, "NotChecked")
	if err := cl.get(t, ns, "cache", &appsv1.StatefulSet{}); err != nil {
		t.Errorf("no StatefulSet once the Secret is right: %v", err)
	}

	// Without spec.tls again, its conditions and status go.
	cl.update(t, ns, "cache", func(ci *cachev1alpha1.CacheInstance) { ci.Spec.TLS = nil })
	eventually(t, "TLS status removed", func() error {
		if err := cl.get(t, ns, "cache", ci); err != nil {
			return err
		}
		if ci.Status.TLS != nil || meta.FindStatusCondition(ci.Status.Conditions, cachev1alpha1.ConditionTLSReady) != nil {
			return fmt.Errorf("status.tls %+v, conditions %+v", ci.Status.TLS, ci.Status.Conditions)
		}
		return nil
	})
}

// spec.tls.certManager: without cert-manager's CRD the instance says so; with it (a stand-in CRD,
// no cert-manager running) the operator applies the Certificate, waits for its Secret, and goes
// on once the Secret exists, as cert-manager would write it.
func TestTLSCertManagerCertificate(t *testing.T) {
	cl := startEnv(t)
	ns := cl.namespace(t)
	ctx := context.Background()
	certGVK := schema.GroupVersionKind{Group: "cert-manager.io", Version: "v1", Kind: "Certificate"}
	_, err := cl.c.RESTMapper().RESTMapping(certGVK.GroupKind(), certGVK.Version)
	installed := err == nil
	ci := instanceIn(ns, "cache", 1, func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.TLS = &cachev1alpha1.TLSSpec{CertManager: &cachev1alpha1.CertManagerSpec{
			IssuerRef: cachev1alpha1.IssuerReference{Name: "cache-ca"},
			Duration:  &metav1.Duration{Duration: 2160 * time.Hour},
		}, AuthClients: cachev1alpha1.TLSAuthClientsRequired}
		ci.Spec.Benchmark.ValidateOnChange = ptr.To(false)
	})
	if err := cl.c.Create(ctx, ci); err != nil {
		t.Fatal(err)
	}
	if !installed {
		ci = cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionTLSReady, metav1.ConditionFalse, "CertManagerMissing")
		if msg := meta.FindStatusCondition(ci.Status.Conditions, cachev1alpha1.ConditionDegraded).Message; !strings.Contains(msg, "Certificate CRD (cert-manager.io/v1) is not installed") {
			t.Errorf("Degraded message %q", msg)
		}
		if _, err := envtest.InstallCRDs(cl.cfg, envtest.CRDInstallOptions{
			Paths: []string{filepath.Join("testdata", "certmanager")}, ErrorIfPathMissing: true,
		}); err != nil {
			t.Fatal(err)
		}
		cl.update(t, ns, "cache", func(ci *cachev1alpha1.CacheInstance) { ci.Spec.PodLabels = map[string]string{"touch": "1"} })
	}
	ci = cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionTLSReady, metav1.ConditionFalse, "SecretMissing")
	if msg := meta.FindStatusCondition(ci.Status.Conditions, cachev1alpha1.ConditionTLSReady).Message; !strings.Contains(msg, "Waiting for cert-manager to issue Certificate cache-tls") {
		t.Errorf("TLSReady message %q", msg)
	}
	cert := &unstructured.Unstructured{}
	cert.SetGroupVersionKind(certGVK)
	if err := cl.get(t, ns, "cache-tls", cert); err != nil {
		t.Fatal(err)
	}
	if err := isControlledBy(cert, ci); err != nil {
		t.Error(err)
	}
	spec, _, _ := unstructured.NestedMap(cert.Object, "spec")
	dns, _, _ := unstructured.NestedStringSlice(spec, "dnsNames")
	usages, _, _ := unstructured.NestedStringSlice(spec, "usages")
	issuer, _, _ := unstructured.NestedStringMap(spec, "issuerRef")
	if spec["secretName"] != "cache-tls" || spec["duration"] != "2160h0m0s" || !slices.Contains(dns, "cache."+ns+".svc") ||
		!slices.Contains(usages, "client auth") || issuer["name"] != "cache-ca" || issuer["kind"] != "Issuer" || issuer["group"] != "cert-manager.io" {
		t.Errorf("Certificate spec %v", spec)
	}

	certs := testpeer.NewCerts(t)
	if err := cl.c.Create(ctx, tlsSecret(t, ns, "cache-tls", certs, certs.CertFile, certs.KeyFile)); err != nil {
		t.Fatal(err)
	}
	// The operator looks for the issued Secret every few seconds.
	cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionDegraded, metav1.ConditionFalse, "AsExpected")
	if err := cl.get(t, ns, "cache", &appsv1.StatefulSet{}); err != nil {
		t.Errorf("no StatefulSet once cert-manager's Secret exists: %v", err)
	}

	// With authClients Required the benchmark Jobs get a client certificate of their own, from the
	// same issuer: the servers' key goes into no benchmark pod.
	benchCert := &unstructured.Unstructured{}
	benchCert.SetGroupVersionKind(certGVK)
	if err := cl.get(t, ns, "cache-bench-tls", benchCert); err != nil {
		t.Fatal(err)
	}
	if err := isControlledBy(benchCert, ci); err != nil {
		t.Error(err)
	}
	bspec, _, _ := unstructured.NestedMap(benchCert.Object, "spec")
	busages, _, _ := unstructured.NestedStringSlice(bspec, "usages")
	bissuer, _, _ := unstructured.NestedStringMap(bspec, "issuerRef")
	if bspec["secretName"] != "cache-bench-tls" || bspec["commonName"] != "iocache-bench" || !slices.Contains(busages, "client auth") ||
		slices.Contains(busages, "server auth") || bissuer["name"] != "cache-ca" || bspec["dnsNames"] != nil {
		t.Errorf("benchmark Certificate spec %v", bspec)
	}
	// A benchmark waits for it to be issued, then its Job mounts it.
	cl.rollTo(t, ns, "cache", 0)
	if err := cl.c.Create(ctx, benchmarkOf(ns, "once", "cache")); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the benchmark waits for its certificate", func() error {
		cb := &cachev1alpha1.CacheBenchmark{}
		if err := cl.get(t, ns, "once", cb); err != nil {
			return err
		}
		if c := meta.FindStatusCondition(cb.Status.Conditions, cachev1alpha1.ConditionComplete); c == nil || c.Reason != "AwaitingCertificate" {
			return fmt.Errorf("Complete %+v", c)
		}
		return nil
	})
	clientCert, clientKey := certs.Issue(t, "iocache-bench")
	if err := cl.c.Create(ctx, tlsSecret(t, ns, "cache-bench-tls", certs, clientCert, clientKey)); err != nil {
		t.Fatal(err)
	}
	job := cl.waitJob(t, ns, "once-run")
	var tlsVolume *corev1.SecretVolumeSource
	for _, v := range job.Spec.Template.Spec.Volumes {
		if v.Name == "tls" {
			tlsVolume = v.Secret
		}
	}
	if tlsVolume == nil || tlsVolume.SecretName != "cache-bench-tls" || len(tlsVolume.Items) != 3 {
		t.Errorf("the Job's TLS volume %+v: want the Job's own certificate, cache-bench-tls", tlsVolume)
	}
}

// The API server refuses spec.tls with both or neither source, and adding it to a replicated
// instance, with messages a person can act on.
func TestTLSSpecValidation(t *testing.T) {
	cl := startEnv(t)
	ns := cl.namespace(t)
	ctx := context.Background()
	issuer := &cachev1alpha1.CertManagerSpec{IssuerRef: cachev1alpha1.IssuerReference{Name: "ca"}}
	for name, tc := range map[string]struct {
		tls  *cachev1alpha1.TLSSpec
		want string
	}{
		"both":        {&cachev1alpha1.TLSSpec{SecretName: "s", CertManager: issuer}, "tls needs exactly one of secretName"},
		"neither":     {&cachev1alpha1.TLSSpec{}, "tls needs exactly one of secretName"},
		"authClients": {&cachev1alpha1.TLSSpec{SecretName: "s", AuthClients: "yes"}, `Unsupported value: "yes"`},
		"issuer kind": {&cachev1alpha1.TLSSpec{CertManager: &cachev1alpha1.CertManagerSpec{IssuerRef: cachev1alpha1.IssuerReference{Name: "ca", Kind: "Vault"}}}, `Unsupported value: "Vault"`},
		"spec.config": {&cachev1alpha1.TLSSpec{SecretName: "s"}, "spec.config must not set tls-port: the operator sets it from the other spec fields"},
	} {
		ci := instanceIn(ns, strings.ReplaceAll(strings.ReplaceAll(name, " ", "-"), ".", "-"), 1, func(ci *cachev1alpha1.CacheInstance) {
			ci.Spec.TLS = tc.tls
			if name == "spec.config" {
				ci.Spec.Config = map[string]cachev1alpha1.ConfigValue{"tls-port": "6380"}
			}
		})
		err := cl.c.Create(ctx, ci)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", name, err, tc.want)
		}
	}

	ci := instanceIn(ns, "replicated", 1, func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.Replicas = ptr.To[int32](2)
		ci.Spec.Benchmark.ValidateOnChange = ptr.To(false)
	})
	if err := cl.c.Create(ctx, ci); err != nil {
		t.Fatal(err)
	}
	ci.Spec.TLS = &cachev1alpha1.TLSSpec{SecretName: "s"}
	if err := cl.c.Update(ctx, ci); err == nil || !strings.Contains(err.Error(), "spec.tls cannot be added or removed while replicas is above 1") {
		t.Errorf("adding tls to a replicated instance: %v", err)
	}
	// Created with TLS, it keeps it.
	ci = instanceIn(ns, "replicated-tls", 1, func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.Replicas = ptr.To[int32](2)
		ci.Spec.TLS = &cachev1alpha1.TLSSpec{SecretName: "s"}
		ci.Spec.Benchmark.ValidateOnChange = ptr.To(false)
	})
	if err := cl.c.Create(ctx, ci); err != nil {
		t.Fatalf("a replicated instance created with TLS: %v", err)
	}
}

// newTLSPodServer is a podServer as spec.tls renders a replicated instance's server: TLS only on
// its port, requiring client certificates, replicating over TLS.
func newTLSPodServer(t *testing.T, password string, certs *testpeer.Certs) *podServer {
	port := fmt.Sprint(testpeer.FreePort(t))
	ps := &podServer{t: t, port: port, password: password, dir: t.TempDir(),
		extra: append([]string{"--port", "0", "--tls-auth-clients", "yes", "--tls-replication", "yes"}, certs.ServerArgs(port)...)}
	ps.start()
	t.Cleanup(ps.kill)
	return ps
}

// A replicated instance with spec.tls over three real TLS-only servers: the operator reads roles
// and points the replicas at the primary through TLS connections that present the Secret's
// certificate, and the replicas follow their primary over TLS (tls-replication yes) on its one
// port.
func TestTLSReplication(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three servers")
	}
	cl := startEnv(t)
	ns := cl.namespace(t)
	ctx := context.Background()
	const password = "tls-replication-password"
	certs := testpeer.NewCerts(t)
	if err := cl.c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cache-auth", Namespace: ns},
		Data: map[string][]byte{"password": []byte(password)}}); err != nil {
		t.Fatal(err)
	}
	if err := cl.c.Create(ctx, tlsSecret(t, ns, "cache-tls", certs, certs.CertFile, certs.KeyFile)); err != nil {
		t.Fatal(err)
	}
	servers := []*podServer{newTLSPodServer(t, password, certs), newTLSPodServer(t, password, certs), newTLSPodServer(t, password, certs)}
	ci := instanceIn(ns, "cache", 1, func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.Replicas = ptr.To[int32](3)
		ci.Spec.Auth = &cachev1alpha1.AuthSpec{ExistingSecret: "cache-auth"}
		ci.Spec.TLS = &cachev1alpha1.TLSSpec{SecretName: "cache-tls", AuthClients: cachev1alpha1.TLSAuthClientsRequired}
		ci.Spec.Benchmark.ValidateOnChange = ptr.To(false)
	})
	if err := cl.c.Create(ctx, ci); err != nil {
		t.Fatal(err)
	}
	cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionReady, metav1.ConditionFalse, "RollingOut")
	sts := &appsv1.StatefulSet{}
	if err := cl.get(t, ns, "cache", sts); err != nil {
		t.Fatal(err)
	}
	if cmd := sts.Spec.Template.Spec.Containers[0].Lifecycle.PreStop.Exec.Command; !slices.Contains(cmd, "--tls") {
		t.Errorf("preStop hook %v does not speak TLS", cmd)
	}
	for i, ps := range servers {
		cl.servePodAt(t, ns, "cache", i, fmt.Sprintf("cache-%d", sts.Generation), ps)
	}
	cl.simulateRollout(t, ns, "cache")
	ci = cl.waitPrimary(t, ns, "cache", "", true)
	// A pass may have seen only some of the pods: wait for all three.
	eventually(t, "every pod serves the certificate", func() error {
		ci = cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionTLSReady, metav1.ConditionTrue, "CertificateServed")
		if ci.Status.TLS.ServedBy != 3 {
			return fmt.Errorf("status.tls.servedBy %d, want 3", ci.Status.TLS.ServedBy)
		}
		return nil
	})
	primary := servers[ordinalSuffix(ci.Status.Replication.Primary)]
	client := func(ps *podServer) *redis.Client {
		c := redis.NewClient(&redis.Options{Addr: ps.addr(), Password: password, TLSConfig: certs.ClientConfig(t, true), Protocol: 2})
		t.Cleanup(func() { c.Close() })
		return c
	}
	if err := client(primary).Set(ctx, "k", "over tls", 0).Err(); err != nil {
		t.Fatal(err)
	}
	for _, ps := range servers {
		if ps == primary {
			continue
		}
		c := client(ps)
		eventually(t, "the replica has the primary's write", func() error {
			if v, err := c.Get(ctx, "k").Result(); err != nil || v != "over tls" {
				return fmt.Errorf("GET k on %s: %q %v", ps.addr(), v, err)
			}
			return nil
		})
		if info := c.Info(ctx, "replication").Val(); !strings.Contains(info, "master_link_status:up") || !strings.Contains(info, "master_port:"+primary.port) {
			t.Errorf("replica %s:\n%s", ps.addr(), info)
		}
	}
}
