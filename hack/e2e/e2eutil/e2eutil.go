// Package e2eutil holds what `make demo` (hack/demo) and the end-to-end test (hack/e2e) share:
// clients for a real cluster, waiting on a CacheInstance while showing progress, reaching its
// server from this machine, and reading from the node what the kubelet actually gave a container
// (its cgroup cpuset, the CPU manager's assignment, each thread's affinity).
package e2eutil

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
	"github.com/iocache/iocache/controllers/operator"
)

// Env is a connection to a cluster.
type Env struct {
	Config *rest.Config
	Client client.Client
	Kube   kubernetes.Interface
	Out    io.Writer
	// ClusterIPWait is how long Redis keeps trying a Service's ClusterIP before it falls back to a
	// port-forward: kube-proxy programs a new endpoint a moment after the pod is ready. Set it when
	// this machine is a node (the local cluster); elsewhere one quick try decides.
	ClusterIPWait time.Duration
}

// New connects with the kubeconfig at path ("" = $KUBECONFIG or ~/.kube/config).
func New(path string, out io.Writer) (*Env, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	if path != "" {
		rules.ExplicitPath = path
	}
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, nil).ClientConfig()
	if err != nil {
		return nil, fmt.Errorf("kubeconfig: %w", err)
	}
	cfg.QPS, cfg.Burst = 50, 100
	c, err := client.New(cfg, client.Options{Scheme: operator.NewScheme()})
	if err != nil {
		return nil, err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Env{Config: cfg, Client: c, Kube: kube, Out: out}, nil
}

// Poll calls f every interval until it reports done, returns an error, or timeout passes. Every
// wait in the demo and the test goes through here, so none is unbounded.
func Poll(ctx context.Context, interval, timeout time.Duration, f func(context.Context) (bool, error)) error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var lastErr error
	for {
		done, err := f(ctx)
		if done {
			return err
		}
		if err != nil {
			lastErr = err
		}
		select {
		case <-ctx.Done():
			if lastErr != nil {
				return fmt.Errorf("timed out after %s: %w", timeout, lastErr)
			}
			return fmt.Errorf("timed out after %s", timeout)
		case <-time.After(interval):
		}
	}
}

// Describe is one line on an instance's progress: its conditions and pods.
func (e *Env) Describe(ctx context.Context, ci *cachev1alpha1.CacheInstance) string {
	var parts []string
	for _, t := range []string{cachev1alpha1.ConditionReady, cachev1alpha1.ConditionProgressing, cachev1alpha1.ConditionDegraded, cachev1alpha1.ConditionThroughputValidated} {
		if c := apimeta.FindStatusCondition(ci.Status.Conditions, t); c != nil {
			parts = append(parts, fmt.Sprintf("%s=%s(%s)", t, c.Status, c.Reason))
		}
	}
	pods, err := e.InstancePods(ctx, ci)
	if err == nil {
		for _, p := range pods {
			parts = append(parts, "pod "+p.Name+" "+podState(&p))
		}
	}
	if cbs, err := e.Benchmarks(ctx, ci); err == nil {
		for i := range cbs {
			if st := cbs[i].Status.State; st != cachev1alpha1.BenchmarkSucceeded && st != cachev1alpha1.BenchmarkFailed {
				parts = append(parts, "benchmark "+e.BenchmarkState(ctx, &cbs[i]))
			}
		}
	}
	if len(parts) == 0 {
		return "waiting for the operator"
	}
	return strings.Join(parts, ", ")
}

func podState(p *corev1.Pod) string {
	if p.DeletionTimestamp != nil {
		return "Terminating"
	}
	for _, c := range p.Status.ContainerStatuses {
		if c.State.Waiting != nil && c.State.Waiting.Reason != "" {
			return string(p.Status.Phase) + "/" + c.State.Waiting.Reason
		}
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
			return "Pending/" + c.Reason + ": " + c.Message
		}
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return "Ready"
		}
	}
	return string(p.Status.Phase)
}

// WaitInstance polls an instance until done says so, printing a line whenever its progress changes.
func (e *Env) WaitInstance(ctx context.Context, key client.ObjectKey, timeout time.Duration, done func(*cachev1alpha1.CacheInstance) bool) (*cachev1alpha1.CacheInstance, error) {
	start := time.Now()
	last := ""
	var ci cachev1alpha1.CacheInstance
	err := Poll(ctx, time.Second, timeout, func(ctx context.Context) (bool, error) {
		if err := e.Client.Get(ctx, key, &ci); err != nil {
			return false, err
		}
		if d := e.Describe(ctx, &ci); d != last {
			fmt.Fprintf(e.Out, "  [%5.1fs] %s: %s\n", time.Since(start).Seconds(), key.Name, d)
			last = d
		}
		return done(&ci), nil
	})
	return &ci, err
}

// Ready is true when the instance is Ready for its current generation.
func Ready(ci *cachev1alpha1.CacheInstance) bool {
	c := apimeta.FindStatusCondition(ci.Status.Conditions, cachev1alpha1.ConditionReady)
	return c != nil && c.Status == metav1.ConditionTrue && ci.Status.ObservedGeneration == ci.Generation && c.ObservedGeneration == ci.Generation
}

// InstancePods are the server pods of an instance, by the labels the operator selects them with.
func (e *Env) InstancePods(ctx context.Context, ci *cachev1alpha1.CacheInstance) ([]corev1.Pod, error) {
	var pods corev1.PodList
	err := e.Client.List(ctx, &pods, client.InNamespace(ci.Namespace),
		client.MatchingLabels{"app.kubernetes.io/name": "iocache", "app.kubernetes.io/instance": ci.Name})
	return pods.Items, err
}

// ServerPod is the instance's running, ready, not terminating pod (replica 0).
func (e *Env) ServerPod(ctx context.Context, ci *cachev1alpha1.CacheInstance) (*corev1.Pod, error) {
	pods, err := e.InstancePods(ctx, ci)
	if err != nil {
		return nil, err
	}
	for i := range pods {
		p := &pods[i]
		if p.DeletionTimestamp == nil && p.Status.Phase == corev1.PodRunning && podState(p) == "Ready" {
			return p, nil
		}
	}
	return nil, fmt.Errorf("no ready pod of %s/%s among %d", ci.Namespace, ci.Name, len(pods))
}

// Password is the instance's password from its auth Secret, "" without auth.
func (e *Env) Password(ctx context.Context, ci *cachev1alpha1.CacheInstance) (string, error) {
	if ci.Spec.Auth == nil {
		return "", nil
	}
	d := ci.DeepCopy()
	d.SetDefaults() // names the generated Secret as the operator does
	var s corev1.Secret
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: d.Namespace, Name: d.Spec.Auth.ExistingSecret}, &s); err != nil {
		return "", err
	}
	return string(s.Data[d.Spec.Auth.Key]), nil
}

// Redis connects to the instance from this machine: through its Service's ClusterIP when this
// machine routes to it (a node of the cluster, as the local cluster's host is), else through a
// port-forward to its pod. how says which; close releases the port-forward.
func (e *Env) Redis(ctx context.Context, ci *cachev1alpha1.CacheInstance) (rdb *redis.Client, how string, closeFn func(), err error) {
	password, err := e.Password(ctx, ci)
	if err != nil {
		return nil, "", nil, fmt.Errorf("password: %w", err)
	}
	var svc corev1.Service
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: ci.Namespace, Name: ci.Name}, &svc); err != nil {
		return nil, "", nil, fmt.Errorf("service: %w", err)
	}
	addr := net.JoinHostPort(svc.Spec.ClusterIP, "6379")
	dialed := Poll(ctx, 500*time.Millisecond, max(e.ClusterIPWait, time.Second), func(context.Context) (bool, error) {
		conn, err := net.DialTimeout("tcp", addr, 2*time.Second)
		if err != nil {
			return false, err
		}
		conn.Close()
		return true, nil
	})
	if dialed == nil {
		rdb := redis.NewClient(&redis.Options{Addr: addr, Password: password, DialTimeout: 3 * time.Second, ReadTimeout: 5 * time.Second})
		return rdb, "Service ClusterIP " + addr, func() { _ = rdb.Close() }, nil
	}
	pod, err := e.ServerPod(ctx, ci)
	if err != nil {
		return nil, "", nil, err
	}
	local, stop, err := e.PortForward(pod, 6379)
	if err != nil {
		return nil, "", nil, err
	}
	rdb = redis.NewClient(&redis.Options{Addr: local, Password: password, DialTimeout: 3 * time.Second, ReadTimeout: 5 * time.Second})
	return rdb, "port-forward " + local + " -> pod " + pod.Name, func() { _ = rdb.Close(); stop() }, nil
}

// PortForward forwards a free loopback port to the pod's port, as kubectl port-forward does.
func (e *Env) PortForward(pod *corev1.Pod, port int) (local string, stop func(), err error) {
	transport, upgrader, err := spdy.RoundTripperFor(e.Config)
	if err != nil {
		return "", nil, err
	}
	url := e.Kube.CoreV1().RESTClient().Post().Resource("pods").Namespace(pod.Namespace).Name(pod.Name).SubResource("portforward").URL()
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: transport}, http.MethodPost, url)
	stopCh, readyCh := make(chan struct{}), make(chan struct{})
	fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{fmt.Sprintf("0:%d", port)}, stopCh, readyCh, io.Discard, io.Discard)
	if err != nil {
		return "", nil, err
	}
	errCh := make(chan error, 1)
	go func() { errCh <- fw.ForwardPorts() }()
	select {
	case <-readyCh:
	case err := <-errCh:
		return "", nil, fmt.Errorf("port-forward: %w", err)
	case <-time.After(30 * time.Second):
		close(stopCh)
		return "", nil, fmt.Errorf("port-forward: not ready after 30s")
	}
	ports, err := fw.GetPorts()
	if err != nil {
		close(stopCh)
		return "", nil, err
	}
	return fmt.Sprintf("127.0.0.1:%d", ports[0].Local), func() { close(stopCh) }, nil
}

// Info runs INFO section and returns its fields.
func Info(ctx context.Context, rdb *redis.Client, section string) (map[string]string, error) {
	s, err := rdb.Info(ctx, section).Result()
	if err != nil {
		return nil, err
	}
	m := map[string]string{}
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if line == "" || line[0] == '#' {
			continue
		}
		if k, v, ok := strings.Cut(line, ":"); ok {
			m[k] = v
		}
	}
	return m, nil
}

// Thread is a server thread as INFO threads reports it: io_thread_N (0 = main) or bio_thread.
type Thread struct {
	Name string
	CPUs string // the cpulist INFO says the thread is pinned to
	TID  int    // its thread id inside the container's PID namespace
}

// Threads parses INFO threads into its threads: the I/O threads in order, then bio_thread.
func Threads(info map[string]string) []Thread {
	var ts []Thread
	for k, v := range info {
		if !strings.HasPrefix(k, "io_thread_") && k != "bio_thread" {
			continue
		}
		t := Thread{Name: k}
		for _, f := range strings.Split(v, ",") {
			kk, vv, _ := strings.Cut(f, "=")
			switch kk {
			case "cpus":
				t.CPUs = vv
			case "tid":
				_, _ = fmt.Sscanf(vv, "%d", &t.TID) // no tid: the thread is reported without one
			}
		}
		ts = append(ts, t)
	}
	// io_thread_0 (main), io_thread_1, ... then bio_thread.
	rank := func(t Thread) int {
		var n int
		if _, err := fmt.Sscanf(t.Name, "io_thread_%d", &n); err == nil {
			return n
		}
		return 1 << 30
	}
	sort.Slice(ts, func(i, j int) bool { return rank(ts[i]) < rank(ts[j]) })
	return ts
}

// Indent prefixes every line of s.
func Indent(s, prefix string) string {
	return prefix + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n"+prefix)
}

// Getenv returns the variable or def.
func Getenv(k, def string) string {
	if v := os.Getenv(k); v != "" {
		return v
	}
	return def
}
