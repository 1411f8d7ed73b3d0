package controllers

import (
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
)

// newBenchmark returns a defaulted CacheBenchmark "bench" of instance "cache" in namespace "ns".
func newBenchmark(mutate ...func(*cachev1alpha1.CacheBenchmark)) *cachev1alpha1.CacheBenchmark {
	cb := &cachev1alpha1.CacheBenchmark{
		ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: "ns", UID: "5f0c1c9e-2b7d-4a51-8f3e-7d9b6a4c3e21", Generation: 1},
		Spec:       cachev1alpha1.CacheBenchmarkSpec{InstanceRef: corev1.LocalObjectReference{Name: "cache"}},
	}
	for _, m := range mutate {
		m(cb)
	}
	cb.SetDefaults()
	return cb
}

func withAuth(ci *cachev1alpha1.CacheInstance) {
	ci.Spec.Auth = &cachev1alpha1.AuthSpec{ExistingSecret: "cache-password", Key: "pw"}
}

// The whole Job, as a golden file: what the cluster gets.
func TestDesiredJobGolden(t *testing.T) {
	ci := newInstance(4, withAuth)
	cb := newBenchmark(func(cb *cachev1alpha1.CacheBenchmark) { cb.Spec.IOThreads = []int32{1, 3} })
	goldenYAML(t, "job/sweep-auth.yaml", desiredJob(cb, ci, 3, "registry.example/iocache:v1"))
	goldenYAML(t, "job/minimal.yaml", desiredJob(newBenchmark(), newInstance(2), 1, "registry.example/iocache:v1"))
	goldenYAML(t, "job/pull-secrets.yaml", desiredJob(newBenchmark(), newInstance(1, sharedKnobs), 1, "registry.example/iocache:v1"))
	goldenYAML(t, "job/tls-required-auth.yaml", desiredJob(newBenchmark(), newInstance(1, withAuth, withTLSSecret, func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.TLS.AuthClients = cachev1alpha1.TLSAuthClientsRequired
	}), 1, "registry.example/iocache:v1"))
	// cert-manager issues the Jobs a client certificate of their own: they mount it, not the
	// servers' key.
	goldenYAML(t, "job/tls-certmanager-required.yaml", desiredJob(newBenchmark(), newInstance(1, func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.TLS = &cachev1alpha1.TLSSpec{CertManager: &cachev1alpha1.CertManagerSpec{IssuerRef: cachev1alpha1.IssuerReference{Name: "ca"}},
			AuthClients: cachev1alpha1.TLSAuthClientsRequired}
	}), 1, "registry.example/iocache:v1"))
}

func TestDesiredJob(t *testing.T) {
	ci := newInstance(8, withAuth, func(ci *cachev1alpha1.CacheInstance) { ci.Spec.ImagePullPolicy = corev1.PullAlways })
	cb := newBenchmark(func(cb *cachev1alpha1.CacheBenchmark) {
		cb.Spec.Workload = cachev1alpha1.WorkloadSpec{Clients: 200, Threads: 6, Pipeline: 16, DataSize: 1024, Keyspace: 5000, Ratio: "1:3",
			Duration: &metav1.Duration{Duration: time.Minute}, Warmup: &metav1.Duration{Duration: 10 * time.Second}}
	})
	job := desiredJob(cb, ci, 6, "img:1")
	pod := job.Spec.Template.Spec
	c := pod.Containers[0]
	args := strings.Join(c.Command, " ")
	for _, want := range []string{
		"/usr/local/bin/iocache-bench --host cache.ns.svc --port 6379 --clients 200 --threads 6 --pipeline 16 --data-size 1024 --keyspace 5000 --ratio 1:3 --tests mixed --warmup 10s --duration 1m0s",
		"--json-out /dev/termination-log",
		"--user iocache-bench --password-file /etc/iocache-bench/auth/password --key-prefix iocache-bench:",
	} {
		if !strings.Contains(args, want) {
			t.Errorf("command %q lacks %q", args, want)
		}
	}
	if c.Image != "img:1" || c.ImagePullPolicy != corev1.PullAlways {
		t.Errorf("image %s pull policy %s", c.Image, c.ImagePullPolicy)
	}
	if len(c.Env) != 0 || len(c.EnvFrom) != 0 {
		t.Errorf("the container has environment variables %v %v; the password travels as a file only", c.Env, c.EnvFrom)
	}
	// The bench user's password, never the instance's (cache-password).
	if len(pod.Volumes) != 1 || pod.Volumes[0].Secret == nil || pod.Volumes[0].Secret.SecretName != "cache-bench" ||
		pod.Volumes[0].Secret.Items[0].Key != "password" || c.VolumeMounts[0].MountPath != "/etc/iocache-bench/auth" || !c.VolumeMounts[0].ReadOnly {
		t.Errorf("auth volume %+v mounts %+v", pod.Volumes, c.VolumeMounts)
	}
	if c.TerminationMessagePolicy != corev1.TerminationMessageFallbackToLogsOnError || c.TerminationMessagePath != "/dev/termination-log" {
		t.Errorf("termination message %s %s", c.TerminationMessagePath, c.TerminationMessagePolicy)
	}
	if cpu, mem := c.Resources.Limits.Cpu(), c.Resources.Limits.Memory(); cpu.String() != "6" || !cpu.Equal(*c.Resources.Requests.Cpu()) ||
		!mem.Equal(*c.Resources.Requests.Memory()) || mem.Cmp(resource.MustParse("128Mi")) <= 0 {
		t.Errorf("resources %+v: want 6 CPUs and more than 128Mi, requests equal to limits", c.Resources)
	}
	// 1 minute and 10 s per attempt plus 15 s to connect and report, two attempts, two minutes to
	// schedule and pull.
	if got := *job.Spec.ActiveDeadlineSeconds; got != 2*(60+10+15)+120 {
		t.Errorf("activeDeadlineSeconds %d", got)
	}
	if *job.Spec.BackoffLimit != 1 || *job.Spec.TTLSecondsAfterFinished != 3600 || pod.RestartPolicy != corev1.RestartPolicyNever {
		t.Errorf("backoffLimit %d ttl %d restartPolicy %s", *job.Spec.BackoffLimit, *job.Spec.TTLSecondsAfterFinished, pod.RestartPolicy)
	}
	sc, psc := c.SecurityContext, pod.SecurityContext
	if !*sc.RunAsNonRoot || !*sc.ReadOnlyRootFilesystem || *sc.AllowPrivilegeEscalation || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) ||
		!*psc.RunAsNonRoot || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault || *pod.AutomountServiceAccountToken {
		t.Errorf("security context %+v pod %+v", sc, psc)
	}
	terms := pod.Affinity.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution
	if len(terms) != 1 || terms[0].PodAffinityTerm.TopologyKey != "kubernetes.io/hostname" ||
		!labels.SelectorFromSet(terms[0].PodAffinityTerm.LabelSelector.MatchLabels).Matches(labels.Set(selectorLabels(ci))) {
		t.Errorf("anti-affinity %+v does not keep off the server's node", terms)
	}
	if pod.Affinity.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution != nil {
		t.Error("required anti-affinity would leave a one-node cluster without benchmarks")
	}
	// The server's Services, PDB and StatefulSet must never select a benchmark pod.
	if labels.SelectorFromSet(selectorLabels(ci)).Matches(labels.Set(job.Spec.Template.Labels)) {
		t.Errorf("benchmark pod labels %v match the server's selector", job.Spec.Template.Labels)
	}
	if ref := metav1.GetControllerOf(job); ref == nil || ref.Kind != "CacheBenchmark" || ref.Name != "bench" {
		t.Errorf("owner %+v", job.OwnerReferences)
	}

	cb.Spec.Resources = &corev1.ResourceRequirements{Limits: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m")}}
	if got := desiredJob(cb, ci, 6, "img:1").Spec.Template.Spec.Containers[0].Resources; !got.Limits.Cpu().Equal(resource.MustParse("500m")) || got.Requests != nil {
		t.Errorf("spec.resources not used as given: %+v", got)
	}
}

// Default CPUs follow the client threads, but never more than the connections they drive.
func TestBenchResources(t *testing.T) {
	for _, tc := range []struct {
		clients, threads int32
		cpu              string
	}{{50, 2, "2"}, {50, 8, "8"}, {3, 8, "3"}, {1, 1, "1"}} {
		w := cachev1alpha1.WorkloadSpec{Clients: tc.clients, Threads: tc.threads}
		w.SetDefaults()
		limits := benchResources(&w).Limits
		if got := limits.Cpu().String(); got != tc.cpu {
			t.Errorf("%d clients, %d threads: %s CPUs, want %s", tc.clients, tc.threads, got, tc.cpu)
		}
	}
}

func TestJobName(t *testing.T) {
	sweep := func(cb *cachev1alpha1.CacheBenchmark) { cb.Spec.IOThreads = []int32{4, 12} }
	long := func(cb *cachev1alpha1.CacheBenchmark) { cb.Name = strings.Repeat("a", 60) + ".b" }
	for _, tc := range []struct {
		cb   *cachev1alpha1.CacheBenchmark
		n    int32
		want string
	}{
		{newBenchmark(), 3, "bench-run"},
		{newBenchmark(sweep), 12, "bench-io12"},
		// Cut to fit 63 characters, a hash of the whole name keeps it unique.
		{newBenchmark(sweep, long), 12, strings.Repeat("a", 49) + "-604ffdff-io12"},
	} {
		got := jobName(tc.cb, tc.n)
		if got != tc.want || len(got) > 63 {
			t.Errorf("jobName(%s, %d) = %s, want %s (at most 63 characters)", tc.cb.Name, tc.n, got, tc.want)
		}
	}
	other := newBenchmark(sweep, long, func(cb *cachev1alpha1.CacheBenchmark) { cb.Name += "c" })
	if jobName(other, 12) == jobName(newBenchmark(sweep, long), 12) {
		t.Error("two long names that share a prefix got the same Job name")
	}
}
