// Command demo is the part of `make demo` that talks to the cluster (hack/demo.sh brings the cluster
// up and installs the operator first): it applies a CacheInstance, shows its progress until it is
// Ready, then prints what a user came for — the io-threads and cpulists the operator resolved, the
// physical CPUs the kubelet gave the pod (read on the node when the pod runs on this machine), the
// CPUs INFO says each server thread is pinned to, and the validation benchmark's measured ops/s
// and latency once the operator runs benchmarks.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
	"github.com/iocache/iocache/hack/e2e/e2eutil"
)

func main() {
	// A FlagSet of its own: controller-runtime registers --kubeconfig on the global one.
	flag := flag.NewFlagSet("demo", flag.ExitOnError)
	kubeconfig := flag.String("kubeconfig", os.Getenv("KUBECONFIG"), "kubeconfig of the cluster")
	file := flag.String("file", "config/samples/cache_v1alpha1_cacheinstance_1core.yaml", "CacheInstance manifest to apply")
	ns := flag.String("namespace", "iocache-demo", "namespace for the instance")
	release := flag.String("release", "iocache", "Helm release of the operator")
	kubeletDir := flag.String("kubelet-dir", "", "the kubelet's root directory when the node is this machine (for its CPU manager state)")
	timeout := flag.Duration("timeout", 5*time.Minute, "how long to wait for Ready")
	benchTimeout := flag.Duration("bench-timeout", 5*time.Minute, "how long to wait for the validation benchmark's result")
	var try tools
	flag.StringVar(&try.kubectl, "kubectl", "kubectl", "the kubectl the printed commands use (make demo's, matching the node)")
	flag.StringVar(&try.redisCLI, "redis-cli", "redis-cli", "the redis-cli the printed commands use")
	_ = flag.Parse(os.Args[1:])
	if err := run(*kubeconfig, *file, *ns, *release, *kubeletDir, *timeout, *benchTimeout, try); err != nil {
		fmt.Fprintln(os.Stderr, "demo:", err)
		os.Exit(1)
	}
}

// tools are the programs the printed "Try it" commands run, by the paths make demo installed them at.
type tools struct{ kubectl, redisCLI string }

func run(kubeconfig, file, ns, release, kubeletDir string, timeout, benchTimeout time.Duration, try tools) error {
	ctx := context.Background()
	out := os.Stdout
	e, err := e2eutil.New(kubeconfig, out)
	if err != nil {
		return err
	}
	if kubeletDir != "" { // the node is this machine: its ClusterIPs are reachable from here
		e.ClusterIPWait = 30 * time.Second
	}
	if err := e.EnsureNamespace(ctx, ns); err != nil {
		return err
	}
	u, err := e.ApplyFile(ctx, file, ns)
	if err != nil {
		return err
	}
	key := client.ObjectKey{Namespace: ns, Name: u.GetName()}
	fmt.Fprintf(out, "applied %s as CacheInstance %s; waiting for Ready (at most %s):\n", file, key, timeout)
	start := time.Now()
	ci, err := e.WaitInstance(ctx, key, timeout, e2eutil.Ready)
	if err != nil {
		return fmt.Errorf("CacheInstance %s not Ready: %w", key, err)
	}
	readyAfter := time.Since(start).Round(time.Second)
	pod, err := e.ServerPod(ctx, ci)
	if err != nil {
		return err
	}

	fmt.Fprintf(out, "\n== CacheInstance %s: Ready (after %s) ==\n", key, readyAfter)
	fmt.Fprintf(out, "pod %s on node %s, QoS %s, requests=limits cpu %s memory %s\n", pod.Name, pod.Spec.NodeName, pod.Status.QOSClass,
		pod.Spec.Containers[0].Resources.Limits.Cpu(), pod.Spec.Containers[0].Resources.Limits.Memory())

	fmt.Fprintf(out, "\nWhat the operator resolved (status):\n")
	fmt.Fprintf(out, "  io-threads   %d (spec.ioThreads.policy %s, %d cores)\n", ci.Status.IOThreads, ci.Spec.IOThreads.Policy, ci.Spec.Cores)
	l := ci.Status.CPULists
	fmt.Fprintf(out, "  cpulists     server=%s bio=%s aof_rewrite=%s bgsave=%s (positions within the pod's CPUs)\n", l.Server, l.Bio, l.AOFRewrite, l.BGSave)
	fmt.Fprintf(out, "  endpoint     %s, config hash %s\n", ci.Status.Endpoint, ci.Status.ConfigHash)

	fmt.Fprintf(out, "\nWhat the kubelet gave the pod (read on the node):\n")
	node, nodeErr := e2eutil.ReadNode(pod, "server")
	if kubeletDir != "" {
		if st, err := e2eutil.ReadCPUManagerState(kubeletDir); err == nil {
			fmt.Fprintf(out, "  CPU manager  policy %s: container server -> CPUs %q; shared pool (system-reserved and unassigned) %q\n",
				st.PolicyName, st.Entries[string(pod.UID)]["server"], st.DefaultCPUSet)
		} else {
			fmt.Fprintf(out, "  CPU manager  state not readable: %v\n", err)
		}
	}
	if nodeErr != nil {
		fmt.Fprintf(out, "  not readable from here: %v\n", nodeErr)
	} else {
		fmt.Fprintf(out, "  cgroup       cpuset.cpus = %s (%s)\n", node.CgroupCPUs, node.CgroupDir)
		fmt.Fprintf(out, "  process      pid %d %q: Cpus_allowed_list %s\n", node.PID, node.Command, node.ProcCPUs)
	}

	rdb, how, closeFn, err := e.Redis(ctx, ci)
	if err != nil {
		return err
	}
	defer closeFn()
	if err := rdb.Set(ctx, "demo:greeting", "hello from "+hostname(), 0).Err(); err != nil {
		return fmt.Errorf("SET: %w", err)
	}
	got, err := rdb.Get(ctx, "demo:greeting").Result()
	if err != nil {
		return fmt.Errorf("GET: %w", err)
	}
	server, err := e2eutil.Info(ctx, rdb, "server")
	if err != nil {
		return fmt.Errorf("INFO server: %w", err)
	}
	threads, err := e2eutil.Info(ctx, rdb, "threads")
	if err != nil {
		return fmt.Errorf("INFO threads: %w", err)
	}
	fmt.Fprintf(out, "\nWhat the server reports (INFO, through the %s):\n", how)
	fmt.Fprintf(out, "  server       %s\n", e2eutil.KV(server, "cpus_allowed", "cpus_effective", "server_cpulist", "bio_cpulist", "aof_rewrite_cpulist", "bgsave_cpulist", "cpulist_mode"))
	fmt.Fprintf(out, "  io-threads   %s (io_threads_active=%s: 0 means the main thread serves the sockets itself)\n", server["io_threads"], threads["io_threads_active"])
	for _, t := range e2eutil.Threads(threads) {
		host := ""
		if node != nil {
			if h, ok := node.Threads[t.TID]; ok {
				host = fmt.Sprintf(" (on the node: thread %d, Cpus_allowed_list %s)", h.HostTID, h.CPUs)
			}
		}
		fmt.Fprintf(out, "  %-12s pinned to CPUs %s, tid %d%s\n", t.Name, t.CPUs, t.TID, host)
	}
	fmt.Fprintf(out, "  SET/GET      demo:greeting = %q\n", got)

	fmt.Fprintf(out, "\nValidation benchmark:\n")
	if err := benchmark(ctx, e, key, release, benchTimeout); err != nil {
		fmt.Fprintf(out, "  %v\n", err)
	}

	fmt.Fprintf(out, "\nTry it:\n  export KUBECONFIG=%s\n  %s -n %s get cacheinstances -o wide\n", kubeconfig, try.kubectl, ns)
	if strings.HasPrefix(how, "Service ClusterIP ") {
		fmt.Fprintf(out, "  %s -h %s info threads\n", try.redisCLI, strings.Split(strings.TrimPrefix(how, "Service ClusterIP "), ":")[0])
	} else {
		fmt.Fprintf(out, "  %s -n %s port-forward svc/%s 6379:6379 & %s -p 6379 info threads\n", try.kubectl, ns, ci.Name, try.redisCLI)
	}
	return nil
}

// benchmark prints the validation benchmark's result from the instance's status. Where the node
// cannot schedule the validation Job (a 2-core machine: its one exclusive CPU is the instance's,
// and the Job asks for whole CPUs) it says so, turns validation off for this instance and runs a
// Manual CacheBenchmark sized for the node instead.
func benchmark(ctx context.Context, e *e2eutil.Env, key client.ObjectKey, release string, timeout time.Duration) error {
	out := e.Out
	supported, why, err := e.BenchmarkSupport(ctx, release)
	if err != nil {
		return err
	}
	if !supported {
		fmt.Fprintf(out, "  not measured: %s.\n", why)
		return nil
	}
	var ci cachev1alpha1.CacheInstance
	if err := e.Client.Get(ctx, key, &ci); err != nil {
		return err
	}
	if v := ci.Spec.Benchmark.ValidateOnChange; v != nil && !*v && !e2eutil.Benchmarked(&ci) {
		// An earlier make demo turned validation off on this node: show its Manual run.
		fmt.Fprintf(out, "  spec.benchmark.validateOnChange is off (an earlier make demo found the validation Job unschedulable here).\n")
		return manualBenchmark(ctx, e, &ci)
	}
	unschedulable := ""
	err = e2eutil.Poll(ctx, 2*time.Second, timeout, func(ctx context.Context) (bool, error) {
		if err := e.Client.Get(ctx, key, &ci); err != nil {
			return false, err
		}
		if e2eutil.Benchmarked(&ci) {
			return true, nil
		}
		cbs, err := e.Benchmarks(ctx, &ci)
		if err != nil {
			return false, err
		}
		for i := range cbs {
			if cbs[i].Spec.Purpose != cachev1alpha1.PurposeValidation {
				continue
			}
			if pod, err := e.BenchmarkPod(ctx, &cbs[i]); err == nil && pod != nil {
				if msg, ok := e2eutil.Unschedulable(pod); ok {
					unschedulable = fmt.Sprintf("the operator's validation Job asks for %dm CPU (a whole CPU per client thread) and cannot be scheduled: %s",
						e2eutil.PodCPURequest(pod), strings.TrimSuffix(msg, "."))
					return true, nil
				}
			}
		}
		return false, nil
	})
	if err != nil {
		return fmt.Errorf("no result within %s: %w", timeout, err)
	}
	if unschedulable == "" {
		fmt.Fprintf(out, "  %s\n", e2eutil.BenchmarkLine(&ci))
		return nil
	}
	fmt.Fprintf(out, "  not measured on this node: %s.\n", unschedulable)
	fmt.Fprintf(out, "  So the demo turns spec.benchmark.validateOnChange off for this instance and runs a Manual\n")
	fmt.Fprintf(out, "  CacheBenchmark with a fraction of the shared CPU instead (10 s, 8 connections, 1 client thread):\n")
	if err := e.StopValidation(ctx, key); err != nil {
		return err
	}
	return manualBenchmark(ctx, e, &ci)
}

// manualBenchmark shows the demo's Manual CacheBenchmark, running it unless it already succeeded.
func manualBenchmark(ctx context.Context, e *e2eutil.Env, ci *cachev1alpha1.CacheInstance) error {
	out := e.Out
	small := e2eutil.SmallBenchmark(ci, ci.Name+"-demo")
	cb := &cachev1alpha1.CacheBenchmark{}
	err := e.Client.Get(ctx, client.ObjectKeyFromObject(small), cb)
	if err != nil || cb.Status.State != cachev1alpha1.BenchmarkSucceeded {
		if cb, err = e.RunBenchmark(ctx, small, 4*time.Minute); err != nil {
			return err
		}
	}
	if cb.Status.State != cachev1alpha1.BenchmarkSucceeded || len(cb.Status.Results) == 0 {
		return fmt.Errorf("CacheBenchmark %s: %s", cb.Name, cb.Status.State)
	}
	fmt.Fprintf(out, "  measured by CacheBenchmark %s: %s\n", cb.Name, e2eutil.ResultLine(&cb.Status.Results[0]))
	fmt.Fprintf(out, "  (client and server share this machine's 2 CPUs, so this shows the path works, not the server's speed)\n")
	return nil
}

func hostname() string {
	h, err := os.Hostname()
	if err != nil {
		return "the host"
	}
	return h
}
