// Command fleetbench measures the operator managing a fleet: it starts a real API server (envtest),
// runs the operator in this process as the user config/rbac/role.yaml describes, creates -instances
// CacheInstances, and waits until the operator has converged on every one (its objects applied and
// its status written for the current generation). Then it changes every instance's
// maxMemoryPolicy and waits again. It reports the time to converge, reconcile passes per second,
// API requests per instance (counted on the operator's own connection) and the process's peak
// memory, as a markdown table. `make fleet-bench` runs it; KUBEBUILDER_ASSETS must name the
// kube-apiserver and etcd folder (hack/k8s-binaries.sh prints it).
//
// Nothing here runs pods: envtest has no kubelet, so the instances stay RollingOut, which is what
// a fleet created at once looks like until the nodes catch up.
package main

import (
	"context"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	crmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/yaml"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
	"github.com/iocache/iocache/controllers/operator"
)

func main() {
	n := flag.Int("instances", 1000, "CacheInstances to create")
	concurrent := flag.Int("max-concurrent", 4, "the manager's --max-concurrent-reconciles")
	qps := flag.Float64("kube-api-qps", operator.DefaultKubeAPIQPS, "the manager's --kube-api-qps")
	burst := flag.Int("kube-api-burst", operator.DefaultKubeAPIBurst, "the manager's --kube-api-burst")
	timeout := flag.Duration("timeout", 20*time.Minute, "give up after this long")
	flag.Parse()
	logf.SetLogger(logr.Discard())
	if err := run(*n, *concurrent, *qps, *burst, *timeout); err != nil {
		fmt.Fprintln(os.Stderr, "fleetbench:", err)
		os.Exit(1)
	}
}

// requestCounter counts the operator's API requests by verb.
type requestCounter struct {
	next  http.RoundTripper
	total atomic.Int64
	mu    sync.Mutex
	verbs map[string]int64
}

func (c *requestCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	c.total.Add(1)
	verb := req.Method
	if req.URL.Query().Get("watch") == "true" {
		verb = "WATCH"
	}
	c.mu.Lock()
	c.verbs[verb]++
	c.mu.Unlock()
	return c.next.RoundTrip(req)
}

// peakMemory samples the process's memory every 100ms: the Go runtime's total and the resident
// set's high-water mark.
type peakMemory struct {
	goTotal atomic.Uint64
	stop    chan struct{}
}

func (p *peakMemory) run() {
	s := []metrics.Sample{{Name: "/memory/classes/total:bytes"}}
	for {
		metrics.Read(s)
		if v := s[0].Value.Uint64(); v > p.goTotal.Load() {
			p.goTotal.Store(v)
		}
		select {
		case <-p.stop:
			return
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// residentPeak is VmHWM from /proc/self/status, in bytes.
func residentPeak() int64 {
	raw, _ := os.ReadFile("/proc/self/status")
	for _, line := range strings.Split(string(raw), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

func run(n, concurrent int, qps float64, burst int, timeout time.Duration) error {
	// Ctrl-C or SIGTERM ends the run through the deferred stops below, so that the API server and
	// etcd envtest started go with it.
	sigCtx, stopSignals := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stopSignals()
	ctx, cancel := context.WithTimeout(sigCtx, timeout)
	defer cancel()
	env := &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join("config", "crd", "bases")}, ErrorIfCRDPathMissing: true}
	// envtest's default Service range is a /24: 254 ClusterIPs for a fleet that needs one each.
	env.ControlPlane.GetAPIServer().Configure().Set("service-cluster-ip-range", "10.0.0.0/16")
	cfg, err := env.Start()
	if err != nil {
		return fmt.Errorf("starting envtest (KUBEBUILDER_ASSETS=%q): %w", os.Getenv("KUBEBUILDER_ASSETS"), err)
	}
	defer func() { _ = env.Stop() }()
	// The creating client is fast enough not to be what is measured.
	cfg.QPS, cfg.Burst = 500, 1000
	c, err := client.New(cfg, client.Options{Scheme: operator.NewScheme()})
	if err != nil {
		return err
	}
	opCfg, err := operatorUser(ctx, env, cfg, c)
	if err != nil {
		return err
	}
	counter := &requestCounter{verbs: map[string]int64{}}
	opCfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { counter.next = rt; return counter })
	opts := operator.Options{MetricsAddr: "0", ProbeAddr: "0", Image: "ghcr.io/iocache/iocache:fleet", MaxConcurrent: concurrent,
		KubeAPIQPS: float32(qps), KubeAPIBurst: burst}
	mgr, err := operator.NewManager(opCfg, opts)
	if err != nil {
		return err
	}
	if err := operator.Setup(mgr, opts); err != nil {
		return err
	}
	peak := &peakMemory{stop: make(chan struct{})}
	go peak.run()
	defer close(peak.stop)
	mgrCtx, stopMgr := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- mgr.Start(mgrCtx) }()
	defer func() {
		stopMgr()
		if err := <-done; err != nil {
			fmt.Fprintln(os.Stderr, "fleetbench: manager:", err)
		}
	}()

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "fleet"}}
	if err := c.Create(ctx, ns); err != nil {
		return err
	}
	fmt.Printf("# The operator and a fleet of %d CacheInstances (envtest, %d CPUs, --max-concurrent-reconciles %d, --kube-api-qps %g, --kube-api-burst %d)\n\n",
		n, runtime.NumCPU(), concurrent, qps, burst)
	fmt.Println("| phase | time to converge | reconcile passes | passes/s | operator API requests | per instance | peak Go memory | peak RSS (whole process) |")
	fmt.Println("|---|---|---|---|---|---|---|---|")

	phase := func(name string, act func(i int) error) error {
		requestsBefore, passesBefore := counter.total.Load(), reconcilePasses()
		start := time.Now()
		sem := make(chan struct{}, 32)
		var wg sync.WaitGroup
		var errMu sync.Mutex
		var firstErr error
		for i := range n {
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer func() { <-sem; wg.Done() }()
				if err := act(i); err != nil {
					errMu.Lock()
					if firstErr == nil {
						firstErr = err
					}
					errMu.Unlock()
				}
			}()
		}
		wg.Wait()
		if firstErr != nil {
			return firstErr
		}
		if err := waitConverged(ctx, c, n); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		took := time.Since(start)
		requests, passes := counter.total.Load()-requestsBefore, reconcilePasses()-passesBefore
		fmt.Printf("| %s | %s | %d | %.0f | %d | %.1f | %d MiB | %d MiB |\n", name, took.Round(100*time.Millisecond), passes,
			float64(passes)/took.Seconds(), requests, float64(requests)/float64(n), peak.goTotal.Load()>>20, residentPeak()>>20)
		return nil
	}
	if err := phase(fmt.Sprintf("create %d instances", n), func(i int) error {
		return c.Create(ctx, &cachev1alpha1.CacheInstance{
			ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: fmt.Sprintf("cache-%04d", i)},
			Spec:       cachev1alpha1.CacheInstanceSpec{Cores: 1, Memory: resource.MustParse("256Mi")},
		})
	}); err != nil {
		return err
	}
	if err := phase("change maxMemoryPolicy on each", func(i int) error {
		return retry.RetryOnConflict(retry.DefaultRetry, func() error {
			ci := &cachev1alpha1.CacheInstance{}
			if err := c.Get(ctx, client.ObjectKey{Namespace: "fleet", Name: fmt.Sprintf("cache-%04d", i)}, ci); err != nil {
				return err
			}
			ci.Spec.MaxMemoryPolicy = "allkeys-lfu"
			return c.Update(ctx, ci)
		})
	}); err != nil {
		return err
	}
	counter.mu.Lock()
	fmt.Printf("\nOperator API requests by verb over both phases: %v (WATCH: watches opened).\n", counter.verbs)
	counter.mu.Unlock()
	return nil
}

// waitConverged waits until every instance's status was written for its generation.
func waitConverged(ctx context.Context, c client.Client, n int) error {
	lastReport := time.Now()
	for {
		list := &cachev1alpha1.CacheInstanceList{}
		if err := c.List(ctx, list, client.InNamespace("fleet")); err != nil {
			return err
		}
		converged, waiting := 0, ""
		for _, ci := range list.Items {
			if ci.Status.ObservedGeneration == ci.Generation && ci.Status.ConfigHash != "" && ci.Status.Endpoint != "" {
				converged++
			} else if waiting == "" {
				waiting = fmt.Sprintf("%s at generation %d, observed %d, conditions %v", ci.Name, ci.Generation, ci.Status.ObservedGeneration, ci.Status.Conditions)
			}
		}
		if converged == n {
			return nil
		}
		if time.Since(lastReport) > 10*time.Second {
			fmt.Fprintf(os.Stderr, "fleetbench: %d of %d instances converged, %d reconcile passes so far; waiting for %s\n", converged, n, reconcilePasses(), waiting)
			lastReport = time.Now()
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%d of %d instances converged: %w", converged, n, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// reconcilePasses is controller-runtime's count of the cacheinstance controller's passes.
func reconcilePasses() int64 {
	families, err := crmetrics.Registry.Gather()
	if err != nil {
		return 0
	}
	var total float64
	for _, f := range families {
		if f.GetName() != "controller_runtime_reconcile_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			if labelIs(m, "controller", "cacheinstance") {
				total += m.GetCounter().GetValue()
			}
		}
	}
	return int64(total)
}

func labelIs(m *dto.Metric, name, value string) bool {
	for _, l := range m.GetLabel() {
		if l.GetName() == name && l.GetValue() == value {
			return true
		}
	}
	return false
}

// operatorUser returns credentials that hold exactly config/rbac/role.yaml, as the operator runs.
func operatorUser(ctx context.Context, env *envtest.Environment, cfg *rest.Config, c client.Client) (*rest.Config, error) {
	raw, err := os.ReadFile(filepath.Join("config", "rbac", "role.yaml"))
	if err != nil {
		return nil, err
	}
	var role rbacv1.ClusterRole
	if err := yaml.Unmarshal(raw, &role); err != nil {
		return nil, err
	}
	if err := c.Create(ctx, &role); err != nil {
		return nil, err
	}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "iocache-operator"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "iocache-operator"}},
	}
	if err := c.Create(ctx, binding); err != nil {
		return nil, err
	}
	u, err := env.AddUser(envtest.User{Name: "iocache-operator"}, cfg)
	if err != nil {
		return nil, err
	}
	return u.Config(), nil
}
