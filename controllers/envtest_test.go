package controllers_test

import (
	"context"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/yaml"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
	"github.com/iocache/iocache/controllers/operator"
	"github.com/iocache/iocache/server/testpeer"
)

// testImage is the operator's default server image in these tests.
const testImage = "registry.example/iocache:envtest"

// testRetryBackoff stands in for the five minutes a failed validation waits for its retry.
const testRetryBackoff = 3 * time.Second

// testSettleTime stands in for the twenty seconds pods must have been ready before a benchmark runs.
const testSettleTime = 500 * time.Millisecond

// testOperatorNamespace is where the tests say the operator runs, for the NetworkPolicies.
const testOperatorNamespace = "iocache-system"

// cluster is one real kube-apiserver and etcd, shared by the tests of this package, with the
// operator running against it.
type cluster struct {
	env *envtest.Environment
	cfg *rest.Config
	// c is an administrator's client without a cache: what a test reads is what is stored.
	c client.Client
}

var (
	clusterOnce sync.Once
	shared      *cluster
	sharedErr   error
	stopShared  func()
)

func TestMain(m *testing.M) {
	code := m.Run()
	removeServerBinary()
	if stopShared != nil {
		stopShared()
	}
	os.Exit(code)
}

// startEnv returns the shared API server (built by hack/k8s-binaries.sh), starting it and the
// operator on first use.
func startEnv(t *testing.T) *cluster {
	t.Helper()
	testpeer.KubebuilderAssets(t)
	clusterOnce.Do(func() { shared, sharedErr = startCluster() })
	if sharedErr != nil {
		t.Fatal(sharedErr)
	}
	return shared
}

func startCluster() (*cluster, error) {
	logOut := io.Discard
	if testing.Verbose() {
		logOut = os.Stderr
	}
	logf.SetLogger(zap.New(zap.WriteTo(logOut), zap.UseDevMode(true)))

	env := &envtest.Environment{
		CRDDirectoryPaths:     []string{filepath.Join("..", "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}
	cfg, err := env.Start()
	if err != nil {
		// Start may fail after starting etcd or creating the API server's folder: remove them.
		_ = env.Stop()
		return nil, fmt.Errorf("starting envtest: %w", err)
	}
	cl := &cluster{env: env, cfg: cfg}
	fail := func(err error) (*cluster, error) { _ = env.Stop(); return nil, err }
	if cl.c, err = client.New(cfg, client.Options{Scheme: operator.NewScheme()}); err != nil {
		return fail(err)
	}
	opCfg, err := cl.operatorUser()
	if err != nil {
		return fail(err)
	}
	opts := operator.Options{MetricsAddr: "0", ProbeAddr: "0", Image: testImage, MaxConcurrent: 2, ValidationRetryBackoff: testRetryBackoff,
		SecretPollInterval: 2 * time.Second,
		ServerAddress:      testServerAddress, BenchmarkSettleTime: testSettleTime, OperatorNamespace: testOperatorNamespace}
	stop, err := startManager(opCfg, opts)
	if err != nil {
		return fail(err)
	}
	stopShared = func() {
		if err := stop(); err != nil {
			fmt.Fprintln(os.Stderr, "manager:", err)
		}
		_ = env.Stop()
	}
	return cl, nil
}

// startManager runs the operator as opts say, with cfg's credentials, until stop; stop returns
// what the manager ended with.
func startManager(cfg *rest.Config, opts operator.Options) (stop func() error, err error) {
	mgr, err := operator.NewManager(cfg, opts)
	if err != nil {
		return nil, err
	}
	if err := operator.Setup(mgr, opts); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	return func() error { cancel(); return <-done }, nil
}

// operatorUser returns credentials of a user that holds exactly config/rbac/role.yaml, the role
// generated from the RBAC markers: the operator runs as it, so a permission the code uses but the
// markers do not grant makes these tests fail.
func (cl *cluster) operatorUser() (*rest.Config, error) {
	raw, err := os.ReadFile(filepath.Join("..", "config", "rbac", "role.yaml"))
	if err != nil {
		return nil, err
	}
	var role rbacv1.ClusterRole
	if err := yaml.Unmarshal(raw, &role); err != nil {
		return nil, fmt.Errorf("reading role.yaml: %w", err)
	}
	ctx := context.Background()
	if err := cl.c.Create(ctx, &role); err != nil {
		return nil, fmt.Errorf("creating the manager role: %w", err)
	}
	const user = "iocache-operator"
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "iocache-operator"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: user}},
	}
	if err := cl.c.Create(ctx, binding); err != nil {
		return nil, fmt.Errorf("binding the manager role: %w", err)
	}
	u, err := cl.env.AddUser(envtest.User{Name: user}, cl.cfg)
	if err != nil {
		return nil, fmt.Errorf("adding the operator's user: %w", err)
	}
	return u.Config(), nil
}

// namespace creates a namespace for one test, where Pod Security "restricted" is enforced.
func (cl *cluster) namespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "test-", Labels: map[string]string{
		"pod-security.kubernetes.io/enforce": "restricted",
	}}}
	if err := cl.c.Create(context.Background(), ns); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		// envtest runs no namespace controller: instances left in a terminating namespace would be
		// reconciled (and fail) until the suite ends.
		_ = cl.c.DeleteAllOf(context.Background(), &cachev1alpha1.CacheBenchmark{}, client.InNamespace(ns.Name))
		_ = cl.c.DeleteAllOf(context.Background(), &cachev1alpha1.CacheBackup{}, client.InNamespace(ns.Name))
		_ = cl.c.DeleteAllOf(context.Background(), &cachev1alpha1.CacheInstance{}, client.InNamespace(ns.Name))
		_ = cl.c.Delete(context.Background(), ns)
	})
	return ns.Name
}

// eventually retries check until it returns nil, failing the test with its last error after 30s.
func eventually(t *testing.T, what string, check func() error) {
	t.Helper()
	eventuallyWithin(t, 30*time.Second, what, check)
}

// eventuallyWithin is eventually with another deadline, for what the operator notices only on a
// periodic check.
func eventuallyWithin(t *testing.T, d time.Duration, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(d)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: still not true after %v: %v", what, d, err)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestAPIServerServesCRDs(t *testing.T) {
	cl := startEnv(t)
	ctx := context.Background()
	var list cachev1alpha1.CacheInstanceList
	if err := cl.c.List(ctx, &list, client.InNamespace("default")); err != nil {
		t.Fatalf("listing CacheInstances: %v", err)
	}
	var bl cachev1alpha1.CacheBenchmarkList
	if err := cl.c.List(ctx, &bl, client.InNamespace("default")); err != nil {
		t.Fatalf("listing CacheBenchmarks: %v", err)
	}
}

// ownOperatorEnv is an API server of the test's own and a way to start an operator on it (and
// stop it), for the tests that stop the operator in the middle of something: the shared
// operator would carry on meanwhile.
func ownOperatorEnv(t *testing.T) (*cluster, func() (stop func())) {
	t.Helper()
	testpeer.KubebuilderAssets(t)
	env := &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join("..", "config", "crd", "bases")}, ErrorIfCRDPathMissing: true}
	cfg, err := env.Start()
	if err != nil {
		_ = env.Stop()
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	c, err := client.New(cfg, client.Options{Scheme: operator.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	cl := &cluster{env: env, cfg: cfg, c: c}
	opCfg, err := cl.operatorUser()
	if err != nil {
		t.Fatal(err)
	}
	return cl, func() func() {
		stopManager, err := startManager(opCfg, operator.Options{MetricsAddr: "0", ProbeAddr: "0", Image: testImage, MaxConcurrent: 2, SeveralManagers: true,
			ServerAddress: testServerAddress, BenchmarkSettleTime: testSettleTime, OperatorNamespace: testOperatorNamespace})
		if err != nil {
			t.Fatal(err)
		}
		return func() {
			if err := stopManager(); err != nil {
				t.Errorf("manager: %v", err)
			}
		}
	}
}
