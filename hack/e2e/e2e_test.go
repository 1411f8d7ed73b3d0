//go:build e2e

// The end-to-end test: a CacheInstance on a real node, with the operator installed by its Helm chart.
// hack/test-e2e.sh brings up the local cluster, imports the images, runs this with
//
//	go test -tags e2e ./hack/e2e -run TestEndToEnd -v -count=1
//
// and then takes the cluster down and checks the machine is as it was. The environment says where
// things are: KUBECONFIG, IOCACHE_E2E_HELM, IOCACHE_E2E_IMAGE, IOCACHE_E2E_PROBE_IMAGE, and, when the
// node is this machine, IOCACHE_E2E_KUBELET_DIR and IOCACHE_E2E_RESERVED_CPUS (node-side checks).
package e2e

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
	"github.com/iocache/iocache/hack/e2e/e2eutil"
	"github.com/iocache/iocache/server/cpuset"
)

const (
	release    = "iocache"
	operatorNS = "iocache-system"
	ns         = "iocache-e2e"
	name       = "e2e"
	chartDir   = "../../charts/iocache"
)

var (
	helm       = e2eutil.Getenv("IOCACHE_E2E_HELM", "../../bin/helm")
	image      = e2eutil.Getenv("IOCACHE_E2E_IMAGE", "ghcr.io/iocache/iocache:v0.1.0")
	probeImage = e2eutil.Getenv("IOCACHE_E2E_PROBE_IMAGE", "localhost/iocache/e2e-probe:dev")
	kubeletDir = os.Getenv("IOCACHE_E2E_KUBELET_DIR")
	reserved   = e2eutil.Getenv("IOCACHE_E2E_RESERVED_CPUS", "0")
)

// phases records how long each part took; the table is printed at the end.
type phases struct {
	start time.Time
	rows  []string
}

func (p *phases) run(t *testing.T, title string, f func(t *testing.T)) bool {
	t.Helper()
	fmt.Printf("\n=== phase: %s\n", title)
	begin := time.Now()
	result := "ok"
	ok := t.Run(title, func(t *testing.T) {
		defer func() {
			switch {
			case t.Skipped():
				result = "SKIPPED"
			case t.Failed():
				result = "FAILED"
			}
		}()
		f(t)
	})
	d := time.Since(begin)
	p.rows = append(p.rows, fmt.Sprintf("  %-62s %-8s %6.1fs", title, result, d.Seconds()))
	fmt.Printf("--- phase: %s: %s in %.1fs\n", title, result, d.Seconds())
	return ok
}

func (p *phases) print() {
	fmt.Printf("\n=== end-to-end phases (total %.1fs)\n%s\n", time.Since(p.start).Seconds(), strings.Join(p.rows, "\n"))
}

func TestEndToEnd(t *testing.T) {
	ctx := context.Background()
	e, err := e2eutil.New(os.Getenv("KUBECONFIG"), os.Stdout)
	if err != nil {
		t.Fatal(err)
	}
	p := &phases{start: time.Now()}
	defer p.print()
	local := kubeletDir != ""
	if local {
		e.ClusterIPWait = 30 * time.Second
	}
	if !local {
		fmt.Println("IOCACHE_E2E_KUBELET_DIR is not set: the checks that read the node (cgroups, /proc, CPU manager) fail")
	}
	key := client.ObjectKey{Namespace: ns, Name: name}
	var ci *cachev1alpha1.CacheInstance

	if !p.run(t, "install the operator with its Helm chart", func(t *testing.T) {
		out, err := exec.CommandContext(ctx, helm, "upgrade", "--install", release, chartDir, "-n", operatorNS, "--create-namespace",
			"--set", "image.repository="+image[:strings.LastIndex(image, ":")], "--set", "image.tag="+image[strings.LastIndex(image, ":")+1:],
			"--wait", "--timeout", "5m").CombinedOutput()
		if err != nil {
			t.Fatalf("helm upgrade --install: %v\n%s", err, out)
		}
		var dep appsv1.Deployment
		if err := e.Client.Get(ctx, client.ObjectKey{Namespace: operatorNS, Name: release + "-controller-manager"}, &dep); err != nil {
			t.Fatal(err)
		}
		if dep.Status.AvailableReplicas < 1 {
			t.Fatalf("operator Deployment has %d available replicas", dep.Status.AvailableReplicas)
		}
	}) {
		t.FailNow()
	}

	if !p.run(t, "a CacheInstance becomes Ready", func(t *testing.T) {
		deleteNamespace(ctx, t, e, ns) // a previous run's leftovers
		if err := e.EnsureNamespace(ctx, ns); err != nil {
			t.Fatal(err)
		}
		obj := &cachev1alpha1.CacheInstance{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: cachev1alpha1.CacheInstanceSpec{
				Cores:           1,
				Memory:          resource.MustParse("256Mi"),
				MaxMemoryPolicy: "allkeys-lru",
				Auth:            &cachev1alpha1.AuthSpec{Generate: true},
				Config:          map[string]cachev1alpha1.ConfigValue{"hz": "10"},
				// The node's only exclusive CPU is the instance's: the validation client runs on
				// a fraction of the shared one (the default asks a whole CPU per client thread).
				Benchmark: cachev1alpha1.CacheInstanceBenchmarkSpec{
					Workload:  e2eutil.SmallBenchmark(&cachev1alpha1.CacheInstance{}, "").Spec.Workload,
					Resources: e2eutil.SmallBenchmark(&cachev1alpha1.CacheInstance{}, "").Spec.Resources,
				},
			},
		}
		if err := e.Client.Create(ctx, obj); err != nil {
			t.Fatal(err)
		}
		ci, err = e.WaitInstance(ctx, key, 3*time.Minute, e2eutil.Ready)
		if err != nil {
			t.Fatalf("not Ready: %v", err)
		}
		if ci.Status.IOThreads != 1 || ci.Status.CPULists.Server != "0" {
			t.Errorf("status: io-threads %d, server cpulist %q; want 1 and 0 for 1 core", ci.Status.IOThreads, ci.Status.CPULists.Server)
		}
	}) {
		t.FailNow()
	}

	p.run(t, "a Redis client on the host: AUTH, SET/GET through the Service ClusterIP and a port-forward", func(t *testing.T) {
		rdb, how, closeFn, err := e.Redis(ctx, ci)
		if err != nil {
			t.Fatal(err)
		}
		defer closeFn()
		fmt.Printf("  connected through the %s\n", how)
		if local && !strings.HasPrefix(how, "Service ClusterIP") {
			t.Errorf("the host of the local cluster should reach the ClusterIP (kube-proxy); used %s", how)
		}
		if strings.HasPrefix(how, "Service ClusterIP ") {
			anon := redis.NewClient(&redis.Options{Addr: strings.TrimPrefix(how, "Service ClusterIP "), DialTimeout: 3 * time.Second})
			defer anon.Close()
			if err := anon.Get(ctx, "x").Err(); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
				t.Errorf("GET without the password: %v, want NOAUTH", err)
			}
		}
		pipe := rdb.Pipeline()
		for i := range 100 {
			pipe.Set(ctx, fmt.Sprintf("e2e:%d", i), fmt.Sprintf("value-%d", i), time.Hour)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatalf("pipelined SET: %v", err)
		}
		for _, i := range []int{0, 42, 99} {
			got, err := rdb.Get(ctx, fmt.Sprintf("e2e:%d", i)).Result()
			if err != nil || got != fmt.Sprintf("value-%d", i) {
				t.Errorf("GET e2e:%d = %q, %v", i, got, err)
			}
		}
		// The validation benchmark may be filling the keyspace meanwhile: count our keys only.
		var ours int
		iter := rdb.Scan(ctx, 0, "e2e:*", 1000).Iterator()
		for iter.Next(ctx) {
			ours++
		}
		if err := iter.Err(); err != nil || ours != 100 {
			t.Errorf("SCAN MATCH e2e:* found %d keys, %v; want 100", ours, err)
		}
		// And as NOTES.txt tells users: a port-forward (API server -> kubelet -> containerd).
		pod, err := e.ServerPod(ctx, ci)
		if err != nil {
			t.Fatal(err)
		}
		local, stop, err := e.PortForward(pod, 6379)
		if err != nil {
			t.Fatalf("port-forward: %v", err)
		}
		defer stop()
		password, err := e.Password(ctx, ci)
		if err != nil {
			t.Fatal(err)
		}
		pf := redis.NewClient(&redis.Options{Addr: local, Password: password, DialTimeout: 3 * time.Second, ReadTimeout: 5 * time.Second})
		defer pf.Close()
		if got, err := pf.Get(ctx, "e2e:42").Result(); err != nil || got != "value-42" {
			t.Errorf("GET through port-forward %s: %q, %v", local, got, err)
		} else {
			fmt.Printf("  GET e2e:42 through a port-forward (%s -> pod %s) = %q\n", local, pod.Name, got)
		}
	})

	p.run(t, "Guaranteed QoS and exclusive CPUs from the static CPU manager", func(t *testing.T) {
		pod, err := e.ServerPod(ctx, ci)
		if err != nil {
			t.Fatal(err)
		}
		if pod.Status.QOSClass != corev1.PodQOSGuaranteed {
			t.Errorf("pod QoS %s, want Guaranteed", pod.Status.QOSClass)
		}
		if !local {
			t.Skip("the node is not this machine: cgroups and the CPU manager state cannot be read")
		}
		checkExclusiveCPUs(ctx, t, e, pod, int(ci.Spec.Cores))
	})

	p.run(t, "server threads pinned inside exactly the pod's CPUs (INFO vs the node)", func(t *testing.T) {
		checkPinning(ctx, t, e, ci)
	})

	p.run(t, "operator and server /metrics scraped from a pod in the cluster (IPs and DNS)", func(t *testing.T) {
		checkMetrics(ctx, t, e, ci)
	})

	p.run(t, "validation benchmark Job after Ready: ops/s in status, ThroughputValidated", func(t *testing.T) {
		supported, why, err := e.BenchmarkSupport(ctx, release)
		if err != nil {
			t.Fatal(err)
		}
		if !supported {
			t.Skipf("%s; this check runs, unchanged, once the operator has the benchmark controller", why)
		}
		// Whatever happens here, later phases must not wait behind a validation that holds the
		// instance (or start new ones when the spec changes).
		defer func() {
			if err := e.StopValidation(ctx, key); err != nil {
				t.Errorf("turning validation off: %v", err)
			}
		}()
		fmt.Printf("  %s; waiting for the operator's validation run\n", why)
		var got cachev1alpha1.CacheInstance
		cannot := ""
		err = e2eutil.Poll(ctx, 2*time.Second, 5*time.Minute, func(ctx context.Context) (bool, error) {
			if err := e.Client.Get(ctx, key, &got); err != nil {
				return false, err
			}
			if e2eutil.Benchmarked(&got) {
				return true, nil
			}
			cbs, err := e.Benchmarks(ctx, &got)
			if err != nil {
				return false, err
			}
			var states []string
			for i := range cbs {
				cb := &cbs[i]
				states = append(states, e.BenchmarkState(ctx, cb))
				pod, err := e.BenchmarkPod(ctx, cb)
				if err != nil || pod == nil || cb.Spec.Purpose != cachev1alpha1.PurposeValidation {
					continue
				}
				if msg, ok := e2eutil.Unschedulable(pod); ok {
					server, err := e.ServerPod(ctx, &got)
					if err != nil {
						return false, err
					}
					alloc, requested, err := e.CPUCapacity(ctx, server.Spec.NodeName)
					if err != nil {
						return false, err
					}
					cannot = fmt.Sprintf("the operator's validation Job %s asks for %dm CPU but node %s has %dm allocatable and %dm requested already; "+
						"the scheduler says %q", pod.Name, e2eutil.PodCPURequest(pod), server.Spec.NodeName, alloc, requested, msg)
					return true, nil
				}
			}
			return false, fmt.Errorf("no result yet: %s", strings.Join(states, "; "))
		})
		if cannot != "" {
			t.Fatal(cannot)
		}
		if err != nil {
			t.Fatalf("no validation benchmark result: %v", err)
		}
		fmt.Printf("  %s\n", e2eutil.BenchmarkLine(&got))
		lb := got.Status.LastBenchmark
		if lb.OpsPerSecond <= 0 {
			t.Errorf("measured %d ops/s", lb.OpsPerSecond)
		}
		if lb.IOThreads != got.Status.IOThreads {
			t.Errorf("benchmark ran with io-threads %d, instance has %d", lb.IOThreads, got.Status.IOThreads)
		}
		if lb.Purpose != cachev1alpha1.PurposeValidation || lb.Client == nil || lb.Client.Node == "" || lb.Client.CPUUsed == nil ||
			lb.ServerCPU == nil || !strings.Contains(lb.Measured, "client on node "+lb.Client.Node) {
			t.Errorf("lastBenchmark does not say what it measured: purpose %q client %+v server CPU %v, %q", lb.Purpose, lb.Client, lb.ServerCPU, lb.Measured)
		}
		c := apimeta.FindStatusCondition(got.Status.Conditions, cachev1alpha1.ConditionThroughputValidated)
		if c == nil || c.Status != metav1.ConditionTrue {
			t.Errorf("ThroughputValidated = %+v, want True", c)
		}

		// The Job ran as the bench user, whose password is in a Secret of its own and whose ACL
		// keeps it off every user key.
		rdb, how, closeFn, err := e.Redis(ctx, &got)
		if err != nil {
			t.Fatal(err)
		}
		defer closeFn()
		// A map in RESP3, a flat array in RESP2: its text holds the key pattern either way.
		rules, err := rdb.Do(ctx, "ACL", "GETUSER", "iocache-bench").Result()
		if err != nil || !strings.Contains(fmt.Sprint(rules), "~iocache-bench:*") {
			t.Errorf("ACL GETUSER iocache-bench through %s: %v %v", how, rules, err)
		}
		var sec corev1.Secret
		if err := e.Client.Get(ctx, client.ObjectKey{Namespace: key.Namespace, Name: key.Name + "-bench"}, &sec); err != nil {
			t.Fatal(err)
		}
		bench := redis.NewClient(&redis.Options{Addr: rdb.Options().Addr, Username: "iocache-bench", Password: string(sec.Data["password"]),
			DialTimeout: 3 * time.Second, ReadTimeout: 5 * time.Second, MaxRetries: -1})
		defer bench.Close()
		if err := bench.Get(ctx, "e2e:1").Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
			t.Errorf("the bench user reading a user key: %v, want NOPERM", err)
		} else {
			fmt.Printf("  the Job's user iocache-bench: ~iocache-bench:* only; a user key gets %q\n", err)
		}
	})

	p.run(t, "a benchmark Job reaches the instance by DNS name, ops/s in its status (Manual, sized for this node)", func(t *testing.T) {
		supported, why, err := e.BenchmarkSupport(ctx, release)
		if err != nil {
			t.Fatal(err)
		}
		if !supported {
			t.Skipf("%s; this check runs, unchanged, once the operator has the benchmark controller", why)
		}
		// The cache is about to evict (allkeys-lru, 90% of maxmemory): a benchmark that wrote into
		// the user's keyspace would evict user keys. It works in the server's bench space instead.
		rdb, _, closeFn, err := e.Redis(ctx, ci)
		if err != nil {
			t.Fatal(err)
		}
		defer closeFn()
		// The server gives the Go runtime a soft memory limit below the pod's (read from its
		// cgroup), or garbage alone would take a full cache past the limit: the kernel kills it.
		mem, err := e2eutil.Info(ctx, rdb, "memory")
		if err != nil {
			t.Fatal(err)
		}
		if lim, _ := strconv.ParseInt(mem["go_memory_limit"], 10, 64); lim <= 0 || lim >= ci.Spec.Memory.Value() {
			t.Errorf("go_memory_limit %q: the server did not find the pod's memory limit (%s) in its cgroup", mem["go_memory_limit"], &ci.Spec.Memory)
		}
		n, err := e2eutil.FillToFraction(ctx, rdb, "user:", 0.9)
		if err != nil {
			t.Fatalf("filling the cache: %v", err)
		}
		before, err := e2eutil.ReadKeyspace(ctx, rdb)
		if err != nil {
			t.Fatal(err)
		}
		countersBefore, err := e2eutil.Counters(ctx, rdb)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("  user keyspace before the benchmark (%d keys written): %s\n", n, before)
		got, err := e.RunBenchmark(ctx, e2eutil.SmallBenchmark(ci, "e2e-small"), 4*time.Minute)
		if err != nil {
			t.Fatalf("benchmark did not finish: %v", err)
		}
		countersAfter, err := e2eutil.Counters(ctx, rdb)
		if err != nil {
			t.Fatal(err)
		}
		after, err := e2eutil.ReadKeyspace(ctx, rdb)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Printf("  user keyspace after the benchmark: %s\n", after)
		if after.DBSize != before.DBSize || after.Digest != before.Digest {
			t.Errorf("the benchmark changed the user's keyspace: %s before, %s after", before, after)
		}
		if countersAfter.EvictedKeys != countersBefore.EvictedKeys || countersAfter.ExpiredKeys != countersBefore.ExpiredKeys ||
			countersAfter.Hits != countersBefore.Hits || countersAfter.Misses != countersBefore.Misses {
			t.Errorf("the benchmark moved the user's counters: %s before, %s after", countersBefore, countersAfter)
		}
		if got.Status.State != cachev1alpha1.BenchmarkSucceeded || len(got.Status.Results) != 1 {
			t.Fatalf("benchmark %s with %d results: %+v", got.Status.State, len(got.Status.Results), got.Status.Conditions)
		}
		r := &got.Status.Results[0]
		fmt.Printf("  %s\n", e2eutil.ResultLine(r))
		if r.OpsPerSecond <= 0 || r.Errors != 0 || r.Latency.P99 == nil || r.Job == "" {
			t.Errorf("result: %d ops/s, %d errors, p99 %v, job %q", r.OpsPerSecond, r.Errors, r.Latency.P99, r.Job)
		}
		if r.IOThreads != ci.Status.IOThreads {
			t.Errorf("measured io-threads %d, instance runs %d", r.IOThreads, ci.Status.IOThreads)
		}
		if got.Status.BestOpsPerSecond != r.OpsPerSecond {
			t.Errorf("bestOpsPerSecond %d, the one result %d", got.Status.BestOpsPerSecond, r.OpsPerSecond)
		}
	})

	p.run(t, "a maxMemoryPolicy and spec.config change is applied live: same pod, user keys intact", func(t *testing.T) {
		// maxmemory-policy and hz are taken through CONFIG SET: the operator applies them to the
		// running pod and reads them back; the pod (and the cache in it) stays. The explicit Fixed
		// policy renders the same io-threads count, so nothing needs a restart.
		old, err := e.ServerPod(ctx, ci)
		if err != nil {
			t.Fatal(err)
		}
		rdb, _, closeFn, err := e.Redis(ctx, ci)
		if err != nil {
			t.Fatal(err)
		}
		defer closeFn()
		before, err := e2eutil.ReadKeyspace(ctx, rdb)
		if err != nil {
			t.Fatal(err)
		}
		var cur cachev1alpha1.CacheInstance
		if err := e.Client.Get(ctx, key, &cur); err != nil {
			t.Fatal(err)
		}
		oldHash := cur.Status.ConfigHash
		patch := client.MergeFrom(cur.DeepCopy())
		cur.Spec.MaxMemoryPolicy = "allkeys-lfu"
		cur.Spec.IOThreads = cachev1alpha1.IOThreadsSpec{Policy: cachev1alpha1.IOThreadsFixed, Count: ptr.To[int32](1)}
		cur.Spec.Config = map[string]cachev1alpha1.ConfigValue{"hz": "20"}
		if err := e.Client.Patch(ctx, &cur, patch); err != nil {
			t.Fatal(err)
		}
		applied := func(c *cachev1alpha1.CacheInstance) bool {
			cond := apimeta.FindStatusCondition(c.Status.Conditions, cachev1alpha1.ConditionConfigApplied)
			return e2eutil.Ready(c) && c.Status.ConfigHash != oldHash && c.Status.AppliedConfigHash == c.Status.ConfigHash &&
				cond != nil && cond.Status == metav1.ConditionTrue
		}
		ci, err = e.WaitInstance(ctx, key, 3*time.Minute, applied)
		if err != nil {
			t.Fatalf("the change was not applied: %v", err)
		}
		cond := apimeta.FindStatusCondition(ci.Status.Conditions, cachev1alpha1.ConditionConfigApplied)
		fmt.Printf("  config hash %s -> %s: ConfigApplied %s: %s\n", oldHash, ci.Status.ConfigHash, cond.Reason, cond.Message)
		if cond.Reason != "AppliedLive" {
			t.Errorf("ConfigApplied reason %s, want AppliedLive", cond.Reason)
		}
		pod, err := e.ServerPod(ctx, ci)
		if err != nil {
			t.Fatal(err)
		}
		if pod.UID != old.UID {
			t.Errorf("pod replaced (%s -> %s): the change should have been applied live", old.UID, pod.UID)
		}
		for k, want := range map[string]string{"maxmemory-policy": "allkeys-lfu", "hz": "20", "io-threads": "1"} {
			got, err := rdb.ConfigGet(ctx, k).Result()
			if err != nil || got[k] != want {
				t.Errorf("CONFIG GET %s = %v, %v; want %s", k, got, err, want)
			}
		}
		after, err := e2eutil.ReadKeyspace(ctx, rdb)
		if err != nil {
			t.Fatal(err)
		}
		if after.DBSize != before.DBSize || after.Digest != before.Digest {
			t.Errorf("user keyspace changed across the live change: %s before, %s after", before, after)
		} else {
			fmt.Printf("  user keyspace unchanged: %s\n", after)
		}
		checkPinning(ctx, t, e, ci)
	})

	p.run(t, "a memory change resizes the pod in place: same pod, the server follows its cgroup, user keys intact", func(t *testing.T) {
		// The kubelet resizes a Guaranteed pod's memory without a restart; the operator asks it to
		// (pods/resize) instead of replacing the pod, then raises maxmemory, and the server's soft
		// memory limit follows the container's new cgroup limit by itself.
		old, err := e.ServerPod(ctx, ci)
		if err != nil {
			t.Fatal(err)
		}
		rdb, _, closeFn, err := e.Redis(ctx, ci)
		if err != nil {
			t.Fatal(err)
		}
		defer closeFn()
		before, err := e2eutil.ReadKeyspace(ctx, rdb)
		if err != nil {
			t.Fatal(err)
		}
		maxBefore := rdb.ConfigGet(ctx, "maxmemory").Val()["maxmemory"]
		var cur cachev1alpha1.CacheInstance
		if err := e.Client.Get(ctx, key, &cur); err != nil {
			t.Fatal(err)
		}
		grown := cur.Spec.Memory.DeepCopy()
		grown.Add(resource.MustParse("64Mi"))
		patch := client.MergeFrom(cur.DeepCopy())
		cur.Spec.Memory = grown
		if err := e.Client.Patch(ctx, &cur, patch); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		ci, err = e.WaitInstance(ctx, key, 3*time.Minute, func(c *cachev1alpha1.CacheInstance) bool {
			return e2eutil.Ready(c) && c.Status.AppliedConfigHash == c.Status.ConfigHash && c.Status.ObservedGeneration == c.Generation
		})
		if err != nil {
			t.Fatalf("the memory change did not settle: %v\n%s", err, e.Describe(ctx, &cur))
		}
		pod, err := e.ServerPod(ctx, ci)
		if err != nil {
			t.Fatal(err)
		}
		if pod.UID != old.UID {
			t.Fatalf("pod replaced (%s -> %s) for a memory change the kubelet can make in place\n%s", old.UID, pod.UID, e.Describe(ctx, ci))
		}
		var running string
		for _, cs := range pod.Status.ContainerStatuses {
			if cs.Name == "server" && cs.Resources != nil {
				running = cs.Resources.Limits.Memory().String()
			}
		}
		if running != grown.String() {
			t.Errorf("the kubelet reports the server container running with memory %q, want %s", running, grown.String())
		}
		// The server re-reads its cgroup once a second.
		want := grown.Value() - max(grown.Value()/20, min(32<<20, grown.Value()/4))
		var lim int64
		for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(200 * time.Millisecond) {
			mem, err := e2eutil.Info(ctx, rdb, "memory")
			if err != nil {
				t.Fatal(err)
			}
			if lim, _ = strconv.ParseInt(mem["go_memory_limit"], 10, 64); lim == want {
				break
			}
		}
		if lim != want {
			t.Errorf("go_memory_limit %d after the resize, want %d (the soft limit for %s)", lim, want, grown.String())
		}
		maxAfter := rdb.ConfigGet(ctx, "maxmemory").Val()["maxmemory"]
		if a, _ := strconv.ParseInt(maxAfter, 10, 64); a <= 0 || maxAfter == maxBefore {
			t.Errorf("maxmemory %s -> %s: the larger pod's maxmemory was not applied", maxBefore, maxAfter)
		}
		after, err := e2eutil.ReadKeyspace(ctx, rdb)
		if err != nil {
			t.Fatal(err)
		}
		if after.DBSize != before.DBSize || after.Digest != before.Digest {
			t.Errorf("user keyspace changed across the resize: %s before, %s after", before, after)
		}
		fmt.Printf("  memory %s -> %s in place in %s: same pod, kubelet runs it with %s, go_memory_limit %d, maxmemory %s -> %s, user keyspace %s\n",
			old.Spec.Containers[0].Resources.Limits.Memory(), grown.String(), time.Since(start).Round(100*time.Millisecond), running, lim, maxBefore, maxAfter, after)
	})

	p.run(t, "deleting the CacheInstance removes what it owned (garbage collector)", func(t *testing.T) {
		var cur cachev1alpha1.CacheInstance
		if err := e.Client.Get(ctx, key, &cur); err != nil {
			t.Fatal(err)
		}
		owned := ownedObjects(ctx, t, e, cur.UID)
		fmt.Printf("  owned: %s\n", strings.Join(owned, ", "))
		for _, kind := range []string{"StatefulSet/", "Service/" + name, "Service/" + name + "-headless", "ConfigMap/", "PodDisruptionBudget/", "Secret/" + name + "-auth"} {
			if !containsPrefix(owned, kind) {
				t.Errorf("no owned %s among %v", kind, owned)
			}
		}
		if err := e.Client.Delete(ctx, &cur); err != nil {
			t.Fatal(err)
		}
		err := e2eutil.Poll(ctx, time.Second, 3*time.Minute, func(ctx context.Context) (bool, error) {
			left := ownedObjects(ctx, t, e, cur.UID)
			pods, err := e.InstancePods(ctx, &cur)
			if err != nil {
				return false, err
			}
			var ci cachev1alpha1.CacheInstance
			gone := apierrors.IsNotFound(e.Client.Get(ctx, key, &ci))
			if len(left) == 0 && len(pods) == 0 && gone {
				return true, nil
			}
			return false, fmt.Errorf("instance gone %v, still there: %v and %d pods", gone, left, len(pods))
		})
		if err != nil {
			t.Fatal(err)
		}
		if local {
			err := e2eutil.Poll(ctx, time.Second, time.Minute, func(context.Context) (bool, error) {
				st, err := e2eutil.ReadCPUManagerState(kubeletDir)
				if err != nil {
					return false, err
				}
				if _, still := st.Entries[string(cur.UID)]; len(st.Entries) == 0 && !still {
					fmt.Printf("  CPU manager: every CPU back in the shared pool (%s)\n", st.DefaultCPUSet)
					return true, nil
				}
				return false, fmt.Errorf("CPU manager still assigns %v", st.Entries)
			})
			if err != nil {
				t.Error(err)
			}
		}
	})

	p.run(t, "two cpuMode Shared instances side by side on the shared CPU, unpinned", func(t *testing.T) {
		// The node's one exclusive CPU is free again; a Shared instance asks for none of it.
		var shared []*cachev1alpha1.CacheInstance
		for _, n := range []string{"shared-a", "shared-b"} {
			obj := &cachev1alpha1.CacheInstance{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: n},
				Spec: cachev1alpha1.CacheInstanceSpec{
					CPUMode: cachev1alpha1.CPUShared, CPU: ptr.To(resource.MustParse("250m")),
					Memory: resource.MustParse("64Mi"), Auth: &cachev1alpha1.AuthSpec{Generate: true},
					Benchmark: cachev1alpha1.CacheInstanceBenchmarkSpec{ValidateOnChange: ptr.To(false)},
				},
			}
			if err := e.Client.Create(ctx, obj); err != nil {
				t.Fatal(err)
			}
			shared = append(shared, obj)
		}
		defer func() {
			for _, obj := range shared {
				_ = e.Client.Delete(ctx, obj)
			}
		}()
		for _, obj := range shared {
			got, err := e.WaitInstance(ctx, client.ObjectKeyFromObject(obj), 3*time.Minute, e2eutil.Ready)
			if err != nil {
				t.Fatalf("%s not Ready: %v", obj.Name, err)
			}
			fmt.Printf("  %s: %s\n", got.Name, got.Status.CPU)
			if !strings.HasPrefix(got.Status.CPU, "Shared: 250m") || got.Status.IOThreads != 1 {
				t.Errorf("%s: status.cpu %q, io-threads %d", got.Name, got.Status.CPU, got.Status.IOThreads)
			}
			pod, err := e.ServerPod(ctx, got)
			if err != nil {
				t.Fatal(err)
			}
			if cpu := pod.Spec.Containers[0].Resources.Limits.Cpu().String(); cpu != "250m" {
				t.Errorf("%s: CPU limit %s", pod.Name, cpu)
			}
			rdb, _, closeFn, err := e.Redis(ctx, got)
			if err != nil {
				t.Fatal(err)
			}
			if err := rdb.Set(ctx, "who", got.Name, 0).Err(); err != nil {
				t.Errorf("SET on %s: %v", got.Name, err)
			} else if v, err := rdb.Get(ctx, "who").Result(); err != nil || v != got.Name {
				t.Errorf("GET on %s: %q, %v", got.Name, v, err)
			}
			if info, err := e2eutil.Info(ctx, rdb, "server"); err == nil && info["io_threads"] != "1" {
				t.Errorf("%s: INFO io_threads %s", got.Name, info["io_threads"])
			}
			closeFn()
			if local {
				st, err := e2eutil.ReadCPUManagerState(kubeletDir)
				if err != nil {
					t.Fatal(err)
				}
				if _, exclusive := st.Entries[string(pod.UID)]; exclusive {
					t.Errorf("%s got exclusive CPUs from the CPU manager: %v", pod.Name, st.Entries[string(pod.UID)])
				}
			}
		}
	})

	p.run(t, "a default instance keeps 10,000 keys through spec.config changes (live) and a CPU change (warm surge)", func(t *testing.T) {
		testWarmSurge(ctx, t, e, local)
	})

	p.run(t, "no room for the surge pod: the instance waits with its keys until allowColdRestart", func(t *testing.T) {
		testSurgeWithoutRoom(ctx, t, e)
	})

	p.run(t, "persistence RDB: a change that needs a new pod keeps the user's keys (saved on SIGTERM, loaded at start)", func(t *testing.T) {
		testWarmRestart(ctx, t, e, local)
	})

	p.run(t, "persistence AOF, appendfsync always: the pod killed without grace keeps every acknowledged write", func(t *testing.T) {
		testCrashSafeAOF(ctx, t, e, local)
	})

	p.run(t, "spec.tls: probes, a client through the Service over TLS, plaintext refused", func(t *testing.T) {
		testTLS(ctx, t, e)
	})

	p.run(t, "replicas under load: the primary's pod deleted, a rollout, a resize in place, a drain; no acknowledged write lost", func(t *testing.T) {
		testReplication(ctx, t, e)
	})

	p.run(t, "shards: a 3-shard cluster filled, grown to 4 and shrunk to 2 under a cluster client's load; no key or acknowledged increment lost", func(t *testing.T) {
		testShards(ctx, t, e)
	})

	p.run(t, "an instance the node cannot fit: Degraded with the scheduler's reason, and an event", func(t *testing.T) {
		// The node has one exclusive CPU (the others are reserved): two cores cannot be scheduled.
		tooBig := &cachev1alpha1.CacheInstance{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "too-big"},
			Spec: cachev1alpha1.CacheInstanceSpec{Cores: 2, Memory: resource.MustParse("256Mi"),
				Benchmark: cachev1alpha1.CacheInstanceBenchmarkSpec{ValidateOnChange: ptr.To(false)}},
		}
		if err := e.Client.Create(ctx, tooBig); err != nil {
			t.Fatal(err)
		}
		defer func() {
			if err := e.Client.Delete(ctx, tooBig); err != nil && !apierrors.IsNotFound(err) {
				t.Error(err)
			}
		}()
		degraded := func(ci *cachev1alpha1.CacheInstance) bool {
			return apimeta.IsStatusConditionTrue(ci.Status.Conditions, cachev1alpha1.ConditionDegraded)
		}
		got, err := e.WaitInstance(ctx, client.ObjectKeyFromObject(tooBig), 2*time.Minute, degraded)
		if err != nil {
			t.Fatalf("never Degraded: %v", err)
		}
		c := apimeta.FindStatusCondition(got.Status.Conditions, cachev1alpha1.ConditionDegraded)
		fmt.Printf("  Degraded=True %s: %s\n", c.Reason, c.Message)
		if c.Reason != "Unschedulable" || !strings.Contains(c.Message, "Insufficient cpu") {
			t.Errorf("Degraded %s %q, want Unschedulable with the scheduler's \"Insufficient cpu\"", c.Reason, c.Message)
		}
		if pr := apimeta.FindStatusCondition(got.Status.Conditions, cachev1alpha1.ConditionProgressing); pr == nil || pr.Reason == "RolloutComplete" {
			t.Errorf("Progressing %+v while the pod cannot be scheduled", pr)
		}
		if got.Status.Phase != cachev1alpha1.PhaseDegraded {
			t.Errorf("phase %q, want Degraded", got.Status.Phase)
		}
		err = e2eutil.Poll(ctx, time.Second, 30*time.Second, func(ctx context.Context) (bool, error) {
			var events eventsv1.EventList
			if err := e.Client.List(ctx, &events, client.InNamespace(ns)); err != nil {
				return false, err
			}
			for _, ev := range events.Items {
				if ev.Regarding.Kind == "CacheInstance" && ev.Regarding.Name == tooBig.Name && ev.Reason == "Unschedulable" && ev.Type == corev1.EventTypeWarning {
					fmt.Printf("  event %s %s: %s\n", ev.Type, ev.Reason, ev.Note)
					return true, nil
				}
			}
			return false, fmt.Errorf("no Warning event Unschedulable about CacheInstance %s among %d events", tooBig.Name, len(events.Items))
		})
		if err != nil {
			t.Error(err)
		}
	})

	p.run(t, "uninstall the operator", func(t *testing.T) {
		deleteNamespace(ctx, t, e, ns)
		out, err := exec.CommandContext(ctx, helm, "uninstall", release, "-n", operatorNS, "--wait", "--timeout", "2m").CombinedOutput()
		if err != nil {
			t.Fatalf("helm uninstall: %v\n%s", err, out)
		}
	})
}

// checkExclusiveCPUs: the kubelet's static CPU manager gave the container cores CPUs of its own —
// its cgroup cpuset, the CPU manager's assignment and the process's affinity agree, leave out the
// reserved CPU, and no other pod's cpuset shares them.
func checkExclusiveCPUs(ctx context.Context, t *testing.T, e *e2eutil.Env, pod *corev1.Pod, cores int) {
	t.Helper()
	node, err := e2eutil.ReadNode(pod, "server")
	if err != nil {
		t.Fatal(err)
	}
	st, err := e2eutil.ReadCPUManagerState(kubeletDir)
	if err != nil {
		t.Fatal(err)
	}
	assigned := st.Entries[string(pod.UID)]["server"]
	fmt.Printf("  CPU manager (%s): server -> %q, shared pool %q; cgroup cpuset %s; process %d Cpus_allowed_list %s\n",
		st.PolicyName, assigned, st.DefaultCPUSet, node.CgroupCPUs, node.PID, node.ProcCPUs)
	if st.PolicyName != "static" {
		t.Errorf("CPU manager policy %q, want static", st.PolicyName)
	}
	if assigned == "" || !e2eutil.SameCPUs(assigned, node.CgroupCPUs) {
		t.Errorf("CPU manager assigned %q, cgroup cpuset is %q", assigned, node.CgroupCPUs)
	}
	if n := countCPUs(t, node.CgroupCPUs); n != cores {
		t.Errorf("cpuset %s has %d CPUs, want %d (spec.cores)", node.CgroupCPUs, n, cores)
	}
	if shared, err := overlaps(reserved, node.CgroupCPUs); err != nil || shared {
		t.Errorf("cpuset %s includes the reserved CPU %s", node.CgroupCPUs, reserved)
	}
	if shared, _ := overlaps(node.CgroupCPUs, st.DefaultCPUSet); shared {
		t.Errorf("cpuset %s is still in the shared pool %s", node.CgroupCPUs, st.DefaultCPUSet)
	}
	if !e2eutil.SameCPUs(node.ProcCPUs, node.CgroupCPUs) {
		t.Errorf("process affinity %s differs from the cgroup cpuset %s", node.ProcCPUs, node.CgroupCPUs)
	}
	// Every other running pod's containers leave these CPUs: the CPU manager's reconcile loop
	// (cpuManagerReconcilePeriod) shrinks their cpusets to the shared pool shortly after the
	// exclusive assignment.
	begin := time.Now()
	var others []string
	err = e2eutil.Poll(ctx, time.Second, 60*time.Second, func(ctx context.Context) (bool, error) {
		var pods corev1.PodList
		if err := e.Client.List(ctx, &pods); err != nil {
			return false, err
		}
		others = others[:0]
		var bad []string
		for i := range pods.Items {
			o := &pods.Items[i]
			if o.UID == pod.UID || o.Status.Phase != corev1.PodRunning {
				continue
			}
			for _, c := range o.Spec.Containers {
				v, err := e2eutil.ReadNode(o, c.Name)
				if err != nil {
					continue
				}
				desc := fmt.Sprintf("%s/%s container %s (%s): cpuset %s", o.Namespace, o.Name, c.Name, o.Status.QOSClass, v.CgroupCPUs)
				if shared, _ := overlaps(v.CgroupCPUs, node.CgroupCPUs); shared {
					bad = append(bad, desc)
				}
				others = append(others, desc)
			}
		}
		if len(bad) > 0 {
			return false, fmt.Errorf("still sharing the cache's exclusive CPUs %s: %s", node.CgroupCPUs, strings.Join(bad, "; "))
		}
		return true, nil
	})
	if err != nil {
		t.Error(err)
		return
	}
	for _, o := range others {
		fmt.Printf("  other pod %s\n", o)
	}
	fmt.Printf("  no other container shares CPUs %s (%.0fs after the check began)\n", node.CgroupCPUs, time.Since(begin).Seconds())
}

// checkPinning compares what the server says (INFO server and threads) with the pod's cpuset and
// each thread's affinity as the node's /proc shows them.
func checkPinning(ctx context.Context, t *testing.T, e *e2eutil.Env, ci *cachev1alpha1.CacheInstance) {
	t.Helper()
	rdb, _, closeFn, err := e.Redis(ctx, ci)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	server, err := e2eutil.Info(ctx, rdb, "server")
	if err != nil {
		t.Fatal(err)
	}
	threadsInfo, err := e2eutil.Info(ctx, rdb, "threads")
	if err != nil {
		t.Fatal(err)
	}
	threads := e2eutil.Threads(threadsInfo)
	fmt.Printf("  INFO server: %s\n", e2eutil.KV(server, "io_threads", "cpus_allowed", "server_cpulist", "bio_cpulist", "aof_rewrite_cpulist", "bgsave_cpulist"))
	if want := fmt.Sprint(ci.Status.IOThreads); server["io_threads"] != want {
		t.Errorf("INFO io_threads %s, status.ioThreads %s", server["io_threads"], want)
	}
	ioThreads := 0
	for _, th := range threads {
		if strings.HasPrefix(th.Name, "io_thread_") {
			ioThreads++
		}
	}
	if fmt.Sprint(ioThreads) != server["io_threads"] {
		t.Errorf("INFO threads lists %d I/O threads (main included), io_threads is %s", ioThreads, server["io_threads"])
	}
	if kubeletDir == "" {
		t.Skip("the node is not this machine: thread affinities cannot be read")
	}
	pod, err := e.ServerPod(ctx, ci)
	if err != nil {
		t.Fatal(err)
	}
	node, err := e2eutil.ReadNode(pod, "server")
	if err != nil {
		t.Fatal(err)
	}
	if !e2eutil.SameCPUs(server["cpus_allowed"], node.CgroupCPUs) {
		t.Errorf("INFO cpus_allowed %s, the node's cgroup cpuset %s", server["cpus_allowed"], node.CgroupCPUs)
	}
	for _, k := range []string{"server_cpulist", "bio_cpulist", "aof_rewrite_cpulist", "bgsave_cpulist"} {
		if in, err := e2eutil.Subset(server[k], node.CgroupCPUs); err != nil || !in {
			t.Errorf("INFO %s %s is not inside the pod's cpuset %s (%v)", k, server[k], node.CgroupCPUs, err)
		}
	}
	for _, th := range threads {
		host, ok := node.Threads[th.TID]
		if !ok {
			t.Errorf("%s: tid %d is not a thread of pid %d on the node", th.Name, th.TID, node.PID)
			continue
		}
		fmt.Printf("  %-12s INFO cpus=%s tid=%d | node: thread %d %q Cpus_allowed_list %s\n", th.Name, th.CPUs, th.TID, host.HostTID, host.Name, host.CPUs)
		if !e2eutil.SameCPUs(th.CPUs, host.CPUs) {
			t.Errorf("%s: INFO says CPUs %s, the node says the thread may run on %s", th.Name, th.CPUs, host.CPUs)
		}
		if in, _ := e2eutil.Subset(host.CPUs, node.CgroupCPUs); !in {
			t.Errorf("%s: pinned to %s, outside the pod's cpuset %s", th.Name, host.CPUs, node.CgroupCPUs)
		}
	}
	for tid, h := range node.Threads {
		if in, _ := e2eutil.Subset(h.CPUs, node.CgroupCPUs); !in {
			t.Errorf("thread %d (%s) may run on %s, outside the pod's cpuset %s", tid, h.Name, h.CPUs, node.CgroupCPUs)
		}
	}
}

// checkMetrics runs a pod with the probe image that scrapes the server's /metrics by pod IP, Service
// ClusterIP and Service DNS name, and the operator's secure endpoint through its Service with an
// authorised service-account token (and once without, which must be refused).
func checkMetrics(ctx context.Context, t *testing.T, e *e2eutil.Env, ci *cachev1alpha1.CacheInstance) {
	t.Helper()
	pod, err := e.ServerPod(ctx, ci)
	if err != nil {
		t.Fatal(err)
	}
	var opSvc, cacheSvc corev1.Service
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: operatorNS, Name: release + "-metrics"}, &opSvc); err != nil {
		t.Fatal(err)
	}
	if err := e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &cacheSvc); err != nil {
		t.Fatal(err)
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "e2e-scraper"}}
	crb := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "iocache-e2e-metrics-reader"},
		RoleRef:    rbacv1.RoleRef{APIGroup: "rbac.authorization.k8s.io", Kind: "ClusterRole", Name: release + "-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Namespace: ns, Name: sa.Name}},
	}
	for _, o := range []client.Object{sa, crb} {
		if err := e.Client.Create(ctx, o); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}
	defer e.Client.Delete(ctx, crb) //nolint:errcheck // best effort; the namespace goes anyway

	opURL := fmt.Sprintf("https://%s/metrics", net.JoinHostPort(opSvc.Spec.ClusterIP, "8443"))
	urls := []string{
		fmt.Sprintf("http://%s/metrics", net.JoinHostPort(pod.Status.PodIP, "9121")),
		fmt.Sprintf("http://%s/metrics", net.JoinHostPort(cacheSvc.Spec.ClusterIP, "9121")),
		opURL,
		"anon+" + opURL,
		// By the Service's DNS name, as the benchmark Jobs reach the instance: cluster DNS works.
		fmt.Sprintf("http://%s.%s.svc:9121/metrics", name, ns),
	}
	probe := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "metrics-probe"},
		Spec: corev1.PodSpec{
			ServiceAccountName: sa.Name,
			RestartPolicy:      corev1.RestartPolicyNever,
			SecurityContext: &corev1.PodSecurityContext{
				RunAsNonRoot: ptr.To(true), RunAsUser: ptr.To[int64](65532),
				SeccompProfile: &corev1.SeccompProfile{Type: corev1.SeccompProfileTypeRuntimeDefault},
			},
			Containers: []corev1.Container{{
				Name: "probe", Image: probeImage, ImagePullPolicy: corev1.PullIfNotPresent, Args: urls,
				SecurityContext: &corev1.SecurityContext{
					AllowPrivilegeEscalation: ptr.To(false), ReadOnlyRootFilesystem: ptr.To(true),
					Capabilities: &corev1.Capabilities{Drop: []corev1.Capability{"ALL"}},
				},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("10m"), corev1.ResourceMemory: resource.MustParse("16Mi")},
					Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")},
				},
			}},
		},
	}
	_ = e.Client.Delete(ctx, probe)
	_ = e2eutil.Poll(ctx, time.Second, time.Minute, func(ctx context.Context) (bool, error) {
		return apierrors.IsNotFound(e.Client.Get(ctx, client.ObjectKeyFromObject(probe), &corev1.Pod{})), nil
	})
	if err := e.Client.Create(ctx, probe); err != nil {
		t.Fatal(err)
	}
	var phase corev1.PodPhase
	err = e2eutil.Poll(ctx, time.Second, 2*time.Minute, func(ctx context.Context) (bool, error) {
		var p corev1.Pod
		if err := e.Client.Get(ctx, client.ObjectKeyFromObject(probe), &p); err != nil {
			return false, err
		}
		phase = p.Status.Phase
		return phase == corev1.PodSucceeded || phase == corev1.PodFailed, nil
	})
	logs, logErr := e.Kube.CoreV1().Pods(ns).GetLogs(probe.Name, &corev1.PodLogOptions{}).DoRaw(ctx)
	fmt.Printf("%s\n", e2eutil.Indent(abbreviate(string(logs)), "  probe| "))
	if err != nil || phase != corev1.PodSucceeded {
		t.Fatalf("probe pod %s (%v); logs: %v", phase, err, logErr)
	}
	seen := map[string]string{}
	sc := bufio.NewScanner(strings.NewReader(string(logs)))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		f := strings.SplitN(sc.Text(), " ", 4)
		if len(f) == 4 {
			seen[f[0]] = f[1] + " " + f[3]
		}
	}
	want := map[string][]string{
		urls[0]: {"redis_connected_clients", "redis_commands_processed_total", "iocache_io_thread_reads_total", "iocache_io_thread_pinned_cpus"},
		urls[1]: {"redis_connected_clients"},
		urls[2]: {"iocache_cacheinstance_reconciles_total", "controller_runtime_reconcile_total"},
		urls[4]: {"redis_connected_clients"},
	}
	for u, names := range want {
		got, ok := seen[u]
		if !ok || !strings.HasPrefix(got, "200 ") {
			t.Errorf("%s: %q, want 200", u, got)
			continue
		}
		for _, n := range names {
			if !strings.Contains(","+strings.TrimPrefix(got, "200 ")+",", ","+n+",") {
				t.Errorf("%s: no %s among the metrics", u, n)
			}
		}
	}
	if got := seen[urls[3]]; !strings.HasPrefix(got, "401") && !strings.HasPrefix(got, "403") {
		t.Errorf("operator metrics without a token: %q, want 401 or 403", got)
	}
	_ = e.Client.Delete(ctx, probe)
}

func abbreviate(logs string) string {
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		if len(line) > 160 {
			line = line[:160] + "..."
		}
		out = append(out, line)
	}
	return strings.Join(out, "\n")
}

// ownedObjects lists the objects in the test namespace whose owner is uid, as Kind/name.
func ownedObjects(ctx context.Context, t *testing.T, e *e2eutil.Env, uid types.UID) []string {
	t.Helper()
	var out []string
	lists := map[string]client.ObjectList{
		"StatefulSet": &appsv1.StatefulSetList{}, "Service": &corev1.ServiceList{}, "ConfigMap": &corev1.ConfigMapList{},
		"PodDisruptionBudget": &policyv1.PodDisruptionBudgetList{}, "Secret": &corev1.SecretList{},
	}
	for kind, l := range lists {
		if err := e.Client.List(ctx, l, client.InNamespace(ns)); err != nil {
			t.Fatal(err)
		}
		items, err := apimeta.ExtractList(l)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range items {
			o := it.(client.Object)
			for _, ref := range o.GetOwnerReferences() {
				if ref.UID == uid {
					out = append(out, kind+"/"+o.GetName())
				}
			}
		}
	}
	return out
}

func containsPrefix(list []string, prefix string) bool {
	for _, s := range list {
		if strings.HasPrefix(s, prefix) {
			return true
		}
	}
	return false
}

func countCPUs(t *testing.T, list string) int {
	t.Helper()
	cpus, err := cpuset.Parse(list)
	if err != nil {
		t.Fatalf("cpulist %q: %v", list, err)
	}
	return len(cpus)
}

// overlaps reports whether two cpulists share a CPU.
func overlaps(a, b string) (bool, error) {
	x, err := cpuset.Parse(a)
	if err != nil {
		return false, err
	}
	y, err := cpuset.Parse(b)
	if err != nil {
		return false, err
	}
	return len(cpuset.Overlap(x, y)) > 0, nil
}

// deleteNamespace deletes a namespace and waits until it is gone.
func deleteNamespace(ctx context.Context, t *testing.T, e *e2eutil.Env, name string) {
	t.Helper()
	nsObj := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := e.Client.Delete(ctx, nsObj); apierrors.IsNotFound(err) {
		return
	} else if err != nil {
		t.Fatal(err)
	}
	if err := e2eutil.Poll(ctx, time.Second, 3*time.Minute, func(ctx context.Context) (bool, error) {
		return apierrors.IsNotFound(e.Client.Get(ctx, client.ObjectKey{Name: name}, &corev1.Namespace{})), nil
	}); err != nil {
		t.Fatalf("namespace %s not deleted: %v", name, err)
	}
}
