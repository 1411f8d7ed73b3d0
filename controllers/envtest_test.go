package controllers

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
	"github.com/iocache/iocache/controllers/operator"
)

// startEnv starts a real kube-apiserver and etcd (built by hack/k8s-binaries.sh) with the
// generated CRDs installed.
func startEnv(t *testing.T) client.Client {
	t.Helper()
	if os.Getenv("KUBEBUILDER_ASSETS") == "" {
		if os.Getenv("IOCACHE_REQUIRE_PEERS") != "" {
			t.Fatal("KUBEBUILDER_ASSETS is not set; run the tests with `make test`")
		}
		t.Skip("KUBEBUILDER_ASSETS not set; `make test` builds and sets it")
	}
	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		t.Fatalf("starting envtest: %v", err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	c, err := client.New(cfg, client.Options{Scheme: operator.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestAPIServerServesCRDs(t *testing.T) {
	c := startEnv(t)
	ctx := context.Background()
	var list cachev1alpha1.CacheInstanceList
	if err := c.List(ctx, &list, client.InNamespace("default")); err != nil {
		t.Fatalf("listing CacheInstances: %v", err)
	}
	var bl cachev1alpha1.CacheBenchmarkList
	if err := c.List(ctx, &bl, client.InNamespace("default")); err != nil {
		t.Fatalf("listing CacheBenchmarks: %v", err)
	}
}
