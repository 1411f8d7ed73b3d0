package controllers_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
)

// testServers maps "namespace/pod" to the address of a real iocache-server that stands in for that
// pod: envtest has no kubelet, so the tests run the server themselves.
var testServers sync.Map

func testServerAddress(pod *corev1.Pod) string {
	if addr, ok := testServers.Load(pod.Namespace + "/" + pod.Name); ok {
		return addr.(string)
	}
	return net.JoinHostPort(pod.Status.PodIP, "6379")
}

// serverBinary is iocache-server built once for the tests that need a server of their own: a
// separate process, since the operator pins its threads (CONFIG SET of the cpulists), which must
// not confine the test process.
var serverBinary = sync.OnceValues(func() (string, error) {
	serverBinaryBuilt = true
	dir, err := os.MkdirTemp("", "iocache-controllers-test-")
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "iocache-server")
	out, err := exec.Command("go", "build", "-o", bin, "../server/cmd/iocache-server").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("go build iocache-server: %v\n%s", err, out)
	}
	return bin, nil
})

// serverBinaryBuilt says whether a test asked for serverBinary.
var serverBinaryBuilt bool

// removeServerBinary removes what serverBinary built; TestMain calls it.
func removeServerBinary() {
	if !serverBinaryBuilt {
		return
	}
	if bin, err := serverBinary(); err == nil {
		_ = os.RemoveAll(filepath.Dir(bin))
	}
}

// startTestServer runs iocache-server with the password on a free loopback port until the test
// ends.
func startTestServer(t *testing.T, password string) string {
	t.Helper()
	return startTestServerWith(t, "--requirepass", password)
}

// startTestServerWith runs iocache-server with these arguments on a free loopback port until the
// test ends.
func startTestServerWith(t *testing.T, args ...string) string {
	t.Helper()
	bin, err := serverBinary()
	if err != nil {
		t.Fatal(err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	_, port, _ := net.SplitHostPort(addr)
	l.Close()
	cmd := exec.Command(bin, append([]string{"--port", port, "--bind", "127.0.0.1", "--metrics-port", "0", "--loglevel", "warning"}, args...)...)
	var log bytes.Buffer
	cmd.Stdout, cmd.Stderr = &log, &log
	// The server writes into its working directory (dump.rdb, the AOF directory when a test turns
	// it on): the test's own, never the checkout.
	cmd.Dir = t.TempDir()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", addr); err == nil {
			c.Close()
			return addr
		}
		if time.Now().After(deadline) {
			t.Fatalf("iocache-server did not listen on %s:\n%s", addr, log.String())
		}
	}
}

// servePod creates the instance's pod from the StatefulSet's template, as the StatefulSet controller
// would, ready at a pod IP that testServers maps to addr.
func (cl *cluster) servePod(t *testing.T, ns, name, addr string) *corev1.Pod {
	t.Helper()
	ctx := context.Background()
	sts := &appsv1.StatefulSet{}
	if err := cl.get(t, ns, name, sts); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name + "-0", Namespace: ns, Labels: sts.Spec.Template.Labels, Annotations: sts.Spec.Template.Annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(sts, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))}},
		Spec: *sts.Spec.Template.Spec.DeepCopy(),
	}
	// The StatefulSet controller gives each pod a volume per claim template: data-<pod>.
	for _, vct := range sts.Spec.VolumeClaimTemplates {
		pod.Spec.Volumes = append(pod.Spec.Volumes, corev1.Volume{Name: vct.Name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: vct.Name + "-" + pod.Name}}})
	}
	testServers.Store(ns+"/"+pod.Name, addr)
	if err := cl.c.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.244.0.10",
		Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "server", Ready: true}}}
	if err := cl.c.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	return pod
}

// A change of maxMemoryPolicy and of a spec.config value reaches the running server through CONFIG
// SET over an authenticated connection: the pod template stays as it was (no pod is replaced, the
// data stays), the server reports the new values, and the status, the condition and an event say
// it was applied live.
func TestLiveConfigChangeKeepsThePod(t *testing.T) {
	cl := startEnv(t)
	ns := cl.namespace(t)
	ctx := context.Background()
	const password = "live-change-password"
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cache-auth", Namespace: ns}, Data: map[string][]byte{"password": []byte(password + "\n")}}
	if err := cl.c.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	addr := startTestServer(t, password)
	rdb := redis.NewClient(&redis.Options{Addr: addr, Password: password, Protocol: 2})
	defer rdb.Close()
	if err := rdb.Set(ctx, "user:1", "kept", 0).Err(); err != nil {
		t.Fatal(err)
	}
	ci := instanceIn(ns, "cache", 2, func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.Auth = &cachev1alpha1.AuthSpec{ExistingSecret: "cache-auth"}
		ci.Spec.Config = map[string]cachev1alpha1.ConfigValue{"hz": "10"}
		f := false
		ci.Spec.Benchmark.ValidateOnChange = &f
	})
	if err := cl.c.Create(ctx, ci); err != nil {
		t.Fatal(err)
	}
	cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionReady, metav1.ConditionFalse, "RollingOut")
	pod := cl.servePod(t, ns, "cache", addr)
	cl.simulateRollout(t, ns, "cache")
	// The stand-in server did not start from the rendered file: the operator's first check of the
	// pod brings its live directives to the rendered values.
	ci = cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionConfigApplied, metav1.ConditionTrue, "AppliedLive")
	if len(ci.Status.Pods) != 1 || ci.Status.Pods[0].UID != string(pod.UID) || ci.Status.Pods[0].ConfigHash != ci.Status.ConfigHash ||
		ci.Status.AppliedConfigHash != ci.Status.ConfigHash {
		t.Fatalf("status after the pod started: pods %+v, applied %s, config %s", ci.Status.Pods, ci.Status.AppliedConfigHash, ci.Status.ConfigHash)
	}
	if got := rdb.ConfigGet(ctx, "maxmemory").Val()["maxmemory"]; got != "966367642" {
		t.Errorf("maxmemory %s after the first check, want 90%% of 1Gi", got)
	}
	sts := &appsv1.StatefulSet{}
	if err := cl.get(t, ns, "cache", sts); err != nil {
		t.Fatal(err)
	}
	template := sts.Spec.Template.Annotations["cache.iocache.dev/config-hash"]
	firstHash := ci.Status.ConfigHash

	cl.update(t, ns, "cache", func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.MaxMemoryPolicy = "allkeys-lfu"
		ci.Spec.Config["hz"] = "20"
	})
	ci = cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionConfigApplied, metav1.ConditionTrue, "AppliedLive")
	if ci.Status.ConfigHash == firstHash || ci.Status.AppliedConfigHash != ci.Status.ConfigHash || ci.Status.Pods[0].ConfigHash != ci.Status.ConfigHash {
		t.Errorf("status after the live change: config %s (was %s), applied %s, pods %+v", ci.Status.ConfigHash, firstHash, ci.Status.AppliedConfigHash, ci.Status.Pods)
	}
	for k, want := range map[string]string{"maxmemory-policy": "allkeys-lfu", "hz": "20"} {
		if got := rdb.ConfigGet(ctx, k).Val()[k]; got != want {
			t.Errorf("CONFIG GET %s = %q, want %q", k, got, want)
		}
	}
	if v := rdb.Get(ctx, "user:1").Val(); v != "kept" {
		t.Errorf("user:1 = %q after the live change", v)
	}
	if err := cl.get(t, ns, "cache", sts); err != nil {
		t.Fatal(err)
	}
	if got := sts.Spec.Template.Annotations["cache.iocache.dev/config-hash"]; got != template {
		t.Errorf("pod template config hash %s -> %s: a live change must not replace the pod", template, got)
	}
	note := cl.waitEventSaying(t, ns, "cache", "AppliedLive", ci.Status.ConfigHash)
	for _, want := range []string{"maxmemory-policy allkeys-lru -> allkeys-lfu", "hz 10 -> 20", "cache-0"} {
		if !strings.Contains(note, want) {
			t.Errorf("AppliedLive event %q does not say %q", note, want)
		}
	}
	cm := &corev1.ConfigMap{}
	if err := cl.get(t, ns, "cache-config", cm); err != nil {
		t.Fatal(err)
	}
	if conf := cm.Data["iocache.conf"]; !strings.Contains(conf, "maxmemory-policy allkeys-lfu\n") || !strings.Contains(conf, "hz 20\n") {
		t.Errorf("the ConfigMap must hold the whole current config, for a pod that restarts:\n%s", conf)
	}

	// A value the server refuses is reported, not retried silently. (Not hz 5000: Redis, and iocache
	// with it, take that and clamp it to 500.)
	cl.update(t, ns, "cache", func(ci *cachev1alpha1.CacheInstance) { ci.Spec.Config["hz"] = "-1" })
	cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionConfigApplied, metav1.ConditionFalse, "LiveChangeFailed")
	cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionDegraded, metav1.ConditionTrue, "LiveChangeFailed")
	if got := rdb.ConfigGet(ctx, "hz").Val()["hz"]; got != "20" {
		t.Errorf("hz %s after a refused change, want 20", got)
	}
}

// Issue #30: adding live directives to spec.config, and taking them out again, keeps the pod and
// its keys. Added, they are set with CONFIG SET; taken out, they go back to the server's defaults
// (hz 10, latency-monitor-threshold 0); the pod template never changes. An operator that stopped
// after writing the new config but before setting the pod (status.pods still saying the old one)
// finishes the job from status, and a pod already verified is not set again.
func TestLiveConfigSpecConfigAddAndRemoveKeepsThePod(t *testing.T) {
	cl := startEnv(t)
	ns := cl.namespace(t)
	ctx := context.Background()
	const password = "spec-config-password"
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cache-auth", Namespace: ns}, Data: map[string][]byte{"password": []byte(password)}}
	if err := cl.c.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	addr := startTestServer(t, password)
	rdb := redis.NewClient(&redis.Options{Addr: addr, Password: password, Protocol: 2})
	defer rdb.Close()
	const keys = 1201
	pipe := rdb.Pipeline()
	for i := range keys {
		pipe.Set(ctx, fmt.Sprintf("key:%d", i), "kept", 0)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	ci := instanceIn(ns, "cache", 2, func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.Auth = &cachev1alpha1.AuthSpec{ExistingSecret: "cache-auth"}
		f := false
		ci.Spec.Benchmark.ValidateOnChange = &f
	})
	if err := cl.c.Create(ctx, ci); err != nil {
		t.Fatal(err)
	}
	cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionReady, metav1.ConditionFalse, "RollingOut")
	pod := cl.servePod(t, ns, "cache", addr)
	cl.simulateRollout(t, ns, "cache")
	cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionConfigApplied, metav1.ConditionTrue, "AppliedLive")
	sts := &appsv1.StatefulSet{}
	if err := cl.get(t, ns, "cache", sts); err != nil {
		t.Fatal(err)
	}
	template := sts.Spec.Template.Annotations["cache.iocache.dev/config-hash"]

	// converged waits until the pod runs the current config, verified, and checks that it is the
	// same pod with the same template and all its keys, running values.
	converged := func(step string, values map[string]string) *cachev1alpha1.CacheInstance {
		t.Helper()
		var ci *cachev1alpha1.CacheInstance
		eventually(t, step, func() error {
			ci = &cachev1alpha1.CacheInstance{}
			if err := cl.get(t, ns, "cache", ci); err != nil {
				return err
			}
			if ci.Status.ObservedGeneration != ci.Generation || ci.Status.AppliedConfigHash != ci.Status.ConfigHash ||
				len(ci.Status.Pods) != 1 || ci.Status.Pods[0].ConfigHash != ci.Status.ConfigHash {
				return fmt.Errorf("generation %d observed %d, config %s applied %s, pods %+v",
					ci.Generation, ci.Status.ObservedGeneration, ci.Status.ConfigHash, ci.Status.AppliedConfigHash, ci.Status.Pods)
			}
			for k, want := range values {
				if got := rdb.ConfigGet(ctx, k).Val()[k]; got != want {
					return fmt.Errorf("CONFIG GET %s = %q, want %q", k, got, want)
				}
			}
			return nil
		})
		if c := meta.FindStatusCondition(ci.Status.Conditions, cachev1alpha1.ConditionConfigApplied); c == nil || c.Reason != "AppliedLive" {
			t.Errorf("%s: ConfigApplied %+v, want AppliedLive", step, c)
		}
		if err := cl.get(t, ns, "cache", sts); err != nil {
			t.Fatal(err)
		}
		if got := sts.Spec.Template.Annotations["cache.iocache.dev/config-hash"]; got != template || ci.Status.RestartHash != template {
			t.Errorf("%s: pod template config hash %s -> %s (status %s): the pod would be replaced", step, template, got, ci.Status.RestartHash)
		}
		now := &corev1.Pod{}
		if err := cl.get(t, ns, pod.Name, now); err != nil || now.UID != pod.UID {
			t.Errorf("%s: pod %s is not the one that was serving (%v)", step, pod.Name, err)
		}
		if n := rdb.DBSize(ctx).Val(); n != keys {
			t.Errorf("%s: DBSIZE %d, want %d", step, n, keys)
		}
		return ci
	}

	cl.update(t, ns, "cache", func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.Config = map[string]cachev1alpha1.ConfigValue{"hz": "20", "latency-monitor-threshold": "100"}
	})
	added := converged("adding hz and latency-monitor-threshold", map[string]string{"hz": "20", "latency-monitor-threshold": "100"})
	if live := added.Status.Pods[0].Live; !slices.Contains(live, "hz") || !slices.Contains(live, "latency-monitor-threshold") {
		t.Errorf("status.pods[0].live %v does not name the directives set", live)
	}
	note := cl.waitEventSaying(t, ns, "cache", "AppliedLive", added.Status.ConfigHash)
	for _, want := range []string{"hz 10 -> 20", "latency-monitor-threshold 0 -> 100"} {
		if !strings.Contains(note, want) {
			t.Errorf("AppliedLive event %q does not say %q", note, want)
		}
	}

	cl.update(t, ns, "cache", func(ci *cachev1alpha1.CacheInstance) { ci.Spec.Config = nil })
	removed := converged("removing them", map[string]string{"hz": "10", "latency-monitor-threshold": "0"})
	if live := removed.Status.Pods[0].Live; slices.Contains(live, "hz") || slices.Contains(live, "latency-monitor-threshold") {
		t.Errorf("status.pods[0].live %v still names directives no longer in the config", live)
	}
	// The config is the first one again, and so is its hash: the event is told apart by what it says.
	note = cl.waitEventSaying(t, ns, "cache", "AppliedLive", "hz 20 -> 10")
	for _, want := range []string{removed.Status.ConfigHash, "hz 20 -> 10 (the default: no longer in the config)", "latency-monitor-threshold 100 -> 0 (the default"} {
		if !strings.Contains(note, want) {
			t.Errorf("AppliedLive event %q does not say %q", note, want)
		}
	}

	// A verified pod is not set again on later passes: a value changed on the server by hand stays.
	if err := rdb.ConfigSet(ctx, "hz", "33").Err(); err != nil {
		t.Fatal(err)
	}
	cl.touchPod(t, pod, "1")
	time.Sleep(2 * time.Second)
	if got := rdb.ConfigGet(ctx, "hz").Val()["hz"]; got != "33" {
		t.Errorf("hz %s after a pass over a verified pod: the operator set it again", got)
	}

	// The state an operator leaves when it stops between writing the ConfigMap and setting the pod:
	// status.pods says the pod runs the config with both directives, and it does.
	if err := rdb.Do(ctx, "CONFIG", "SET", "hz", "20", "latency-monitor-threshold", "100").Err(); err != nil {
		t.Fatal(err)
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		ci := &cachev1alpha1.CacheInstance{}
		if err := cl.get(t, ns, "cache", ci); err != nil {
			return err
		}
		ci.Status.Pods = added.Status.Pods
		return cl.c.Status().Update(ctx, ci)
	})
	if err != nil {
		t.Fatal(err)
	}
	cl.touchPod(t, pod, "2")
	converged("finishing from status", map[string]string{"hz": "10", "latency-monitor-threshold": "0"})
}
