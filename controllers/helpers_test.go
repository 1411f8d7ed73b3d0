package controllers

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/yaml"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/ with what the code produces now")

// newInstance returns a defaulted CacheInstance "cache" in namespace "ns" with the given cores and
// 1Gi of memory, changed by each mutate in turn.
func newInstance(cores int32, mutate ...func(*cachev1alpha1.CacheInstance)) *cachev1alpha1.CacheInstance {
	ci := &cachev1alpha1.CacheInstance{
		ObjectMeta: metav1.ObjectMeta{Name: "cache", Namespace: "ns", UID: "0b5e1d7c-7f5a-4c1e-9d1e-3a1f5c0d2e4b", Generation: 1},
		Spec: cachev1alpha1.CacheInstanceSpec{
			Cores:  cores,
			Memory: resource.MustParse("1Gi"),
		},
	}
	for _, m := range mutate {
		m(ci)
	}
	ci.SetDefaults()
	return ci
}

// golden compares got with testdata/<name>, or rewrites that file with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("reading golden file: %v (run `go test ./controllers/ -run %s -update` to create it)", err, t.Name())
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file; if the change is intended, rerun with -update.\n--- got:\n%s\n--- want:\n%s", path, got, want)
	}
}

// goldenYAML writes obj as YAML and compares it with testdata/<name>.
func goldenYAML(t *testing.T, name string, obj any) {
	t.Helper()
	b, err := yaml.Marshal(obj)
	if err != nil {
		t.Fatalf("marshalling %s: %v", name, err)
	}
	golden(t, name, b)
}

// sharedKnobs is a small instance as a production cluster would run it: a fraction of a shared core,
// an image from a private registry, spread over zones, reachable through a LoadBalancer.
func sharedKnobs(ci *cachev1alpha1.CacheInstance) {
	ci.Spec.Cores = 1
	ci.Spec.CPUMode = cachev1alpha1.CPUShared
	ci.Spec.CPU = ptr.To(resource.MustParse("500m"))
	ci.Spec.Memory = resource.MustParse("128Mi")
	ci.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registry-credentials"}}
	ci.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{
		MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone, WhenUnsatisfiable: corev1.ScheduleAnyway,
	}}
	ci.Spec.Service = &cachev1alpha1.ServiceSpec{
		Type:                     corev1.ServiceTypeLoadBalancer,
		Annotations:              map[string]string{"service.beta.kubernetes.io/aws-load-balancer-internal": "true"},
		LoadBalancerSourceRanges: []string{"203.0.113.0/24"},
		ExternalTrafficPolicy:    corev1.ServiceExternalTrafficPolicyLocal,
	}
}
