// Package operator wires the iocache controllers into a controller-runtime manager: flags, scheme,
// metrics and health endpoints, leader election. The manager command is a thin wrapper around Main.
package operator

import (
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrlconfig "sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	"sigs.k8s.io/controller-runtime/pkg/metrics/filters"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
	"github.com/iocache/iocache/controllers"
	"github.com/iocache/iocache/server/version"
)

// DefaultImageRepository is where release images are published; the operator runs servers and
// benchmarks from the same repository and tag as itself unless told otherwise.
const DefaultImageRepository = "ghcr.io/iocache/iocache"

// Options are the manager's command-line settings.
type Options struct {
	MetricsAddr    string
	ProbeAddr      string
	LeaderElect    bool
	SecureMetrics  bool
	Image          string
	WatchNamespace string
	// OperatorNamespace is the namespace the operator runs in, which the instances'
	// NetworkPolicies admit.
	OperatorNamespace string
	MaxConcurrent     int
	// KubeAPIQPS and KubeAPIBurst bound the operator's requests to the API server; 0 keeps the
	// rest.Config's own.
	KubeAPIQPS   float32
	KubeAPIBurst int
	ZapOptions   zap.Options
	// ValidationRetryBackoff is how long a failed validation waits for its one retry; 0 keeps the
	// controller's five minutes. No flag sets it: tests shorten it.
	ValidationRetryBackoff time.Duration
	// SecretPollInterval is how often the Secrets the operator may not watch are read again; 0
	// keeps the default (30 s). Tests shorten it.
	SecretPollInterval time.Duration
	// ServerAddress, when set, is where the operator reaches a server pod instead of its pod IP.
	// No flag sets it: tests point it at servers of their own.
	ServerAddress func(pod *corev1.Pod) string
	// SeveralManagers lets a process start more than one manager (tests that upgrade the operator),
	// whose controllers then share names. No flag sets it.
	SeveralManagers bool
	// kubeAPIQPS is the flag's value, as flag parses it.
	kubeAPIQPS float64
	// BenchmarkSettleTime is how long an instance's pods must have been ready before a benchmark
	// Job starts; 0 keeps the controller's twenty seconds. No flag sets it: tests shorten it.
	BenchmarkSettleTime time.Duration
}

// NewScheme returns a scheme with the Kubernetes built-in types and the iocache API.
func NewScheme() *runtime.Scheme {
	s := runtime.NewScheme()
	utilruntime.Must(clientgoscheme.AddToScheme(s))
	utilruntime.Must(cachev1alpha1.AddToScheme(s))
	return s
}

// DefaultImage is the image of this very release: IOCACHE_IMAGE when the Deployment sets it, else
// the published repository at this binary's version.
func DefaultImage() string {
	if img := os.Getenv("IOCACHE_IMAGE"); img != "" {
		return img
	}
	return DefaultImageRepository + ":v" + version.Version
}

func parseFlags(args []string) (Options, error) {
	var o Options
	fs := flag.NewFlagSet("manager", flag.ContinueOnError)
	fs.StringVar(&o.MetricsAddr, "metrics-bind-address", ":8080", "Address the metrics endpoint binds to; 0 disables it.")
	fs.StringVar(&o.ProbeAddr, "health-probe-bind-address", ":8081", "Address the health and readiness probes bind to.")
	fs.BoolVar(&o.LeaderElect, "leader-elect", false, "Elect a leader so that only one manager reconciles at a time.")
	fs.BoolVar(&o.SecureMetrics, "metrics-secure", false, "Serve metrics over HTTPS with authentication and authorization.")
	fs.StringVar(&o.Image, "server-image", DefaultImage(), "Image that runs iocache-server and iocache-bench when a CacheInstance names none.")
	fs.StringVar(&o.WatchNamespace, "watch-namespace", os.Getenv("WATCH_NAMESPACE"), "Only watch this namespace (namespaced install); empty watches all.")
	fs.StringVar(&o.OperatorNamespace, "operator-namespace", ownNamespace(), "Namespace the operator runs in, which instances' NetworkPolicies admit to the Redis port (default: POD_NAMESPACE, else the service account's namespace).")
	fs.IntVar(&o.MaxConcurrent, "max-concurrent-reconciles", 4, "Reconciles that may run at once per controller.")
	// controller-runtime's defaults (20/s, bursts of 30) make a fleet wait on the client's rate
	// limiter: a pass costs about seven requests, and 1,000 new instances converged in 1m50s at
	// 20/30 against 44s at 50/100 (make fleet-bench, docs/bench-fleet.md). The API server's
	// priority and fairness still protects it from a busy operator.
	fs.Float64Var(&o.kubeAPIQPS, "kube-api-qps", DefaultKubeAPIQPS, "Requests per second the operator may send the API server.")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", DefaultKubeAPIBurst, "Requests the operator may send the API server in a burst above kube-api-qps.")
	o.ZapOptions = zap.Options{Development: false}
	o.ZapOptions.BindFlags(fs)
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: manager [flags]\n\nThe iocache operator: reconciles CacheInstance and CacheBenchmark objects.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	err := fs.Parse(args)
	o.KubeAPIQPS = float32(o.kubeAPIQPS)
	return o, err
}

// The operator's default API request budget (--kube-api-qps, --kube-api-burst).
const (
	DefaultKubeAPIQPS   = 50
	DefaultKubeAPIBurst = 100
)

// Main runs the operator until it receives SIGTERM; it returns the process exit code.
func Main(args []string) int {
	opts, err := parseFlags(args)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		return 2
	}
	ctrl.SetLogger(zap.New(zap.UseFlagOptions(&opts.ZapOptions)))
	log := ctrl.Log.WithName("setup")
	if err := run(opts); err != nil {
		log.Error(err, "operator stopped")
		return 1
	}
	return 0
}

func run(opts Options) error {
	cfg, err := ctrl.GetConfig()
	if err != nil {
		return fmt.Errorf("loading kubeconfig: %w", err)
	}
	mgr, err := NewManager(cfg, opts)
	if err != nil {
		return err
	}
	if err := Setup(mgr, opts); err != nil {
		return err
	}
	if err := mgr.AddHealthzCheck("healthz", healthz.Ping); err != nil {
		return fmt.Errorf("adding health check: %w", err)
	}
	if err := mgr.AddReadyzCheck("readyz", healthz.Ping); err != nil {
		return fmt.Errorf("adding ready check: %w", err)
	}
	ctrl.Log.WithName("setup").Info("starting operator", "version", version.Version, "serverImage", opts.Image)
	return mgr.Start(ctrl.SetupSignalHandler())
}

// NewManager creates the manager with the operator's cache and client settings; tests use it too, so
// they run the operator as deployed.
func NewManager(cfg *rest.Config, opts Options) (ctrl.Manager, error) {
	if opts.KubeAPIQPS > 0 || opts.KubeAPIBurst > 0 {
		cfg = rest.CopyConfig(cfg)
		if opts.KubeAPIQPS > 0 {
			cfg.QPS = opts.KubeAPIQPS
		}
		if opts.KubeAPIBurst > 0 {
			cfg.Burst = opts.KubeAPIBurst
		}
	}
	mgrOpts := ctrl.Options{
		Scheme: NewScheme(),
		Metrics: metricsserver.Options{
			BindAddress:   opts.MetricsAddr,
			SecureServing: opts.SecureMetrics,
			// HTTP/2 is off: it is exposed to the Rapid Reset and Stream Cancellation CVEs.
			TLSOpts: []func(*tls.Config){func(c *tls.Config) { c.NextProtos = []string{"http/1.1"} }},
		},
		HealthProbeBindAddress: opts.ProbeAddr,
		LeaderElection:         opts.LeaderElect,
		LeaderElectionID:       "operator.cache.iocache.dev",
		Controller:             ctrlconfig.Controller{SkipNameValidation: &opts.SeveralManagers},
		Cache: cache.Options{
			// The operator only caches the ConfigMaps, Jobs and pods it made, not every one of the cluster.
			ByObject: map[client.Object]cache.ByObject{
				&corev1.ConfigMap{}: {Label: labels.SelectorFromSet(labels.Set{controllers.LabelManagedBy: controllers.ManagedBy})},
				&batchv1.Job{}:      {Label: labels.SelectorFromSet(labels.Set{controllers.LabelManagedBy: controllers.ManagedBy})},
				// Server pods only, whose status the instance reports; benchmark pods are read
				// uncached, once their Job has finished.
				&corev1.Pod{}: {Label: labels.SelectorFromSet(controllers.ServerPodLabels)},
			},
		},
		Client: client.Options{
			// Secrets are read straight from the API server: the operator may get a Secret it is
			// told about, but not list or watch them all, which a cache would need.
			Cache: &client.CacheOptions{DisableFor: []client.Object{&corev1.Secret{}}},
		},
	}
	if opts.SecureMetrics {
		// HTTPS alone would let anyone read the metrics: authenticate the scraper's token and
		// authorize it (TokenReview, SubjectAccessReview; the metrics-auth role grants both).
		mgrOpts.Metrics.FilterProvider = filters.WithAuthenticationAndAuthorization
	}
	if opts.WatchNamespace != "" {
		mgrOpts.Cache.DefaultNamespaces = map[string]cache.Config{opts.WatchNamespace: {}}
	}
	mgr, err := ctrl.NewManager(cfg, mgrOpts)
	if err != nil {
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	return mgr, nil
}

// Setup registers the iocache controllers with mgr.
func Setup(mgr ctrl.Manager, opts Options) error {
	recorder := mgr.GetEventRecorder("iocache-operator")
	r := &controllers.CacheInstanceReconciler{
		Client:                 mgr.GetClient(),
		APIReader:              mgr.GetAPIReader(),
		Recorder:               recorder,
		Image:                  opts.Image,
		ValidationRetryBackoff: opts.ValidationRetryBackoff,
		SecretPollInterval:     opts.SecretPollInterval,
		ServerAddress:          opts.ServerAddress,
		OperatorNamespace:      opts.OperatorNamespace,
	}
	if err := r.SetupWithManager(mgr, opts.MaxConcurrent); err != nil {
		return fmt.Errorf("setting up the CacheInstance controller: %w", err)
	}
	b := &controllers.CacheBenchmarkReconciler{
		Client:     mgr.GetClient(),
		APIReader:  mgr.GetAPIReader(),
		Recorder:   recorder,
		Image:      opts.Image,
		SettleTime: opts.BenchmarkSettleTime,
	}
	if err := b.SetupWithManager(mgr, opts.MaxConcurrent); err != nil {
		return fmt.Errorf("setting up the CacheBenchmark controller: %w", err)
	}
	k := &controllers.CacheBackupReconciler{
		Client:    mgr.GetClient(),
		APIReader: mgr.GetAPIReader(),
		Recorder:  recorder,
		Image:     opts.Image,
	}
	if err := k.SetupWithManager(mgr, opts.MaxConcurrent); err != nil {
		return fmt.Errorf("setting up the CacheBackup controller: %w", err)
	}
	return nil
}

// ownNamespace is the namespace the operator's pod runs in: POD_NAMESPACE when the Deployment sets
// it, else the mounted service account's; "" outside a cluster.
func ownNamespace() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	b, err := os.ReadFile("/var/run/secrets/kubernetes.io/serviceaccount/namespace")
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}
