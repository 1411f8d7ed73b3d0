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
// TLS with the instance's CA, a plaintext client refused on the same port, the certificate's
// expiry in the status, and a rotation: a new certificate in the Secret reaches the running server
// once the kubelet has updated the projected files (the operator reloads it with CONFIG SET), with
// no restart and the open connection kept. The envtests cover rendering, rotation and replication
// against real servers on this machine; only a pod shows the kubelet's files and the probes.
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
			// Changed live below, to make the operator look at the rotated Secret now rather than
			// at its next periodic read (every 5 minutes: it watches no Secret).
			Config: map[string]cachev1alpha1.ConfigValue{"hz": "10"},
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

	// Rotation: a new leaf of the same CA in the Secret.
	pod := &corev1.Pod{}
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "secure-0"}, pod); err != nil {
		t.Fatal(err)
	}
	newCert, newKey := certs.Issue(t, "rotated")
	secret.Data["tls.crt"], secret.Data["tls.key"] = read(newCert), read(newKey)
	if err := e.Client.Update(ctx, secret); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	if err := e.Client.Get(ctx, client.ObjectKeyFromObject(ci), got); err != nil {
		t.Fatal(err)
	}
	got.Spec.Config = map[string]cachev1alpha1.ConfigValue{"hz": "11"}
	if err := e.Client.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	rotated := func(c *cachev1alpha1.CacheInstance) bool {
		return tlsReady(c) && c.Status.TLS != nil && c.Status.TLS.Subject == "CN=rotated" && c.Status.TLS.ServedBy == 1
	}
	if _, err := e.WaitInstance(ctx, client.ObjectKeyFromObject(ci), 4*time.Minute, rotated); err != nil {
		t.Fatalf("the rotated certificate is not served: %v\n%s", err, e.Describe(ctx, ci))
	}
	took := time.Since(start)
	if v, err := secure.Get(ctx, "tls:key").Result(); err != nil || v != "over TLS" {
		t.Errorf("the connection opened before the rotation: %q %v", v, err)
	}
	fresh := redis.NewClient(&redis.Options{Addr: plain.Options().Addr, Password: password, TLSConfig: certs.ClientConfig(t, false),
		DialTimeout: 3 * time.Second, ReadTimeout: 5 * time.Second})
	defer fresh.Close()
	if v, err := fresh.Get(ctx, "tls:key").Result(); err != nil || v != "over TLS" {
		t.Errorf("a new connection after the rotation: %q %v (the data must have stayed)", v, err)
	}
	after := &corev1.Pod{}
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "secure-0"}, after); err != nil {
		t.Fatal(err)
	}
	if after.UID != pod.UID || restarts(after) != restarts(pod) {
		t.Errorf("the pod was replaced or restarted for the rotation (uid %s -> %s, restarts %d -> %d)", pod.UID, after.UID, restarts(pod), restarts(after))
	}
	fmt.Printf("  rotation: CN=rotated served %s after the Secret changed (kubelet file update + CONFIG SET), same pod, connection kept\n", took.Round(time.Second))
}

// restarts counts a pod's container restarts.
func restarts(p *corev1.Pod) int32 {
	var n int32
	for _, cs := range p.Status.ContainerStatuses {
		n += cs.RestartCount
	}
	return n
}
