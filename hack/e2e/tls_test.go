//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
	"github.com/iocache/iocache/hack/e2e/e2eutil"
	"github.com/iocache/iocache/server/testpeer"
)

// testTLS shows spec.tls on a real node: the certificate Secret projected into the pod, the exec
// probes speaking TLS (the pod becomes Ready only if they do), a client through the Service over
// TLS with the instance's CA, a plaintext client refused on the same port, and the certificate's
// expiry in the status. The envtests cover rendering, rotation and replication against real
// servers on this machine; only a pod shows the kubelet's files and the probes.
func testTLS(ctx context.Context, t *testing.T, e *e2eutil.Env) {
	certs := testpeer.NewCerts(t)
	read := func(path string) []byte {
		b, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "secure-tls"}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{"tls.crt": read(certs.CertFile), "tls.key": read(certs.KeyFile), "ca.crt": read(certs.CAFile)}}
	if err := e.Client.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.Client.Delete(ctx, secret) }()
	ci := &cachev1alpha1.CacheInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "secure"},
		Spec: cachev1alpha1.CacheInstanceSpec{
			CPUMode: cachev1alpha1.CPUShared, CPU: ptr.To(resource.MustParse("250m")),
			Memory: resource.MustParse("64Mi"), Auth: &cachev1alpha1.AuthSpec{Generate: true},
			TLS:       &cachev1alpha1.TLSSpec{SecretName: "secure-tls"},
			Benchmark: cachev1alpha1.CacheInstanceBenchmarkSpec{ValidateOnChange: ptr.To(false)},
		},
	}
	if err := e.Client.Create(ctx, ci); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.Client.Delete(ctx, ci) }()
	tlsReady := func(c *cachev1alpha1.CacheInstance) bool {
		return e2eutil.Ready(c) && meta.IsStatusConditionTrue(c.Status.Conditions, cachev1alpha1.ConditionTLSReady)
	}
	got, err := e.WaitInstance(ctx, client.ObjectKeyFromObject(ci), 3*time.Minute, tlsReady)
	if err != nil {
		t.Fatalf("not Ready with TLS: %v\n%s", err, e.Describe(ctx, ci))
	}
	if st := got.Status.TLS; st == nil || st.NotAfter == nil || st.ServedBy != 1 {
		t.Errorf("status.tls %+v, want the certificate's expiry, served by the pod", got.Status.TLS)
	} else {
		fmt.Printf("  status.tls: %s, valid until %s, served by %d pod\n", st.Subject, st.NotAfter.UTC().Format(time.RFC3339), st.ServedBy)
	}

	// e.Redis finds the way to the Service (ClusterIP or a port-forward); this test speaks TLS on it.
	plain, how, closeFn, err := e.Redis(ctx, got)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	password, err := e.Password(ctx, got)
	if err != nil {
		t.Fatal(err)
	}
	secure := redis.NewClient(&redis.Options{Addr: plain.Options().Addr, Password: password, TLSConfig: certs.ClientConfig(t, false),
		DialTimeout: 3 * time.Second, ReadTimeout: 5 * time.Second})
	defer secure.Close()
	if err := secure.Set(ctx, "tls:key", "over TLS", 0).Err(); err != nil {
		t.Fatalf("SET over TLS through %s: %v", how, err)
	}
	if v, err := secure.Get(ctx, "tls:key").Result(); err != nil || v != "over TLS" {
		t.Errorf("GET over TLS: %q %v", v, err)
	}
	if err := plain.Ping(ctx).Err(); err == nil {
		t.Errorf("a plaintext client was served on the TLS port (%s)", how)
	} else {
		fmt.Printf("  through %s: SET/GET over TLS; a plaintext client is refused (%v)\n", how, err)
	}
}
