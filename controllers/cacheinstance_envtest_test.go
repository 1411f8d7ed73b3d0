package controllers_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
	"sigs.k8s.io/yaml"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
	"github.com/iocache/iocache/server/testpeer"
)

func instanceIn(ns, name string, cores int32, mutate ...func(*cachev1alpha1.CacheInstance)) *cachev1alpha1.CacheInstance {
	ci := &cachev1alpha1.CacheInstance{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       cachev1alpha1.CacheInstanceSpec{Cores: cores, Memory: resource.MustParse("1Gi")},
	}
	for _, m := range mutate {
		m(ci)
	}
	return ci
}

// get reads obj by ns/name, failing the test on any error but NotFound, which it returns.
func (cl *cluster) get(t *testing.T, ns, name string, obj client.Object) error {
	t.Helper()
	err := cl.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, obj)
	if err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
	return err
}

// waitCondition waits until the instance's condition has the status and reason, for its current
// generation, and returns the instance as then stored.
func (cl *cluster) waitCondition(t *testing.T, ns, name, typ string, status metav1.ConditionStatus, reason string) *cachev1alpha1.CacheInstance {
	t.Helper()
	ci := &cachev1alpha1.CacheInstance{}
	eventually(t, fmt.Sprintf("%s %s/%s", typ, status, reason), func() error {
		if err := cl.get(t, ns, name, ci); err != nil {
			return err
		}
		c := meta.FindStatusCondition(ci.Status.Conditions, typ)
		switch {
		case c == nil:
			return fmt.Errorf("no %s condition in %+v", typ, ci.Status.Conditions)
		case c.Status != status || c.Reason != reason || ci.Status.ObservedGeneration != ci.Generation:
			return fmt.Errorf("%s is %s/%s %q at observedGeneration %d (generation %d)", typ, c.Status, c.Reason, c.Message, ci.Status.ObservedGeneration, ci.Generation)
		}
		return nil
	})
	return ci
}

// waitEvent waits for an event about the instance with the reason, and returns its note.
func (cl *cluster) waitEvent(t *testing.T, ns, name, reason string) string {
	t.Helper()
	return cl.waitEventSaying(t, ns, name, reason, "")
}

// waitEventSaying waits for an event about the instance with the reason whose note contains text.
func (cl *cluster) waitEventSaying(t *testing.T, ns, name, reason, text string) string {
	t.Helper()
	var note string
	eventually(t, "event "+reason, func() error {
		var list eventsv1.EventList
		if err := cl.c.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
			return err
		}
		var seen []string
		for _, e := range list.Items {
			if e.Regarding.Kind == "CacheInstance" && e.Regarding.Name == name && e.Reason == reason && strings.Contains(e.Note, text) {
				note = e.Note
				return nil
			}
			seen = append(seen, e.Reason)
		}
		return fmt.Errorf("events so far: %v", seen)
	})
	return note
}

// update changes the instance's spec as a user would, again on a conflict: the operator writes
// the status (and benchmarks their holds) at any time.
func (cl *cluster) update(t *testing.T, ns, name string, mutate func(*cachev1alpha1.CacheInstance)) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		ci := &cachev1alpha1.CacheInstance{}
		if err := cl.get(t, ns, name, ci); err != nil {
			return err
		}
		mutate(ci)
		return cl.c.Update(context.Background(), ci)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// simulateRollout does what the StatefulSet controller and the kubelet would: mark every replica
// updated and ready at the current template.
func (cl *cluster) simulateRollout(t *testing.T, ns, name string) {
	t.Helper()
	sts := &appsv1.StatefulSet{}
	if err := cl.get(t, ns, name, sts); err != nil {
		t.Fatal(err)
	}
	rev := fmt.Sprintf("%s-%d", name, sts.Generation)
	n := ptr.Deref(sts.Spec.Replicas, 1)
	sts.Status = appsv1.StatefulSetStatus{
		ObservedGeneration: sts.Generation, Replicas: n, ReadyReplicas: n, AvailableReplicas: n,
		CurrentReplicas: n, UpdatedReplicas: n, CurrentRevision: rev, UpdateRevision: rev,
	}
	if err := cl.c.Status().Update(context.Background(), sts); err != nil {
		t.Fatal(err)
	}
}

func isControlledBy(obj metav1.Object, ci *cachev1alpha1.CacheInstance) error {
	ref := metav1.GetControllerOf(obj)
	if ref == nil || ref.UID != ci.UID || ref.Kind != "CacheInstance" || !ptr.Deref(ref.BlockOwnerDeletion, false) {
		return fmt.Errorf("%s is not controlled by CacheInstance %s (%s): owner references %+v", obj.GetName(), ci.Name, ci.UID, obj.GetOwnerReferences())
	}
	return nil
}

// Objects created with only the required fields must come back with the same defaults the Go code
// applies, or the operator would behave differently from what a user reads back.
func TestSchemaDefaultsMatchGoDefaults(t *testing.T) {
	cl := startEnv(t)
	ns := cl.namespace(t)
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": cachev1alpha1.GroupVersion.String(), "kind": "CacheInstance",
		"metadata": map[string]any{"name": "minimal", "namespace": ns},
		"spec":     map[string]any{"cores": 2, "memory": "1Gi", "auth": map[string]any{"generate": true}},
	}}
	if err := cl.c.Create(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	stored := &cachev1alpha1.CacheInstance{}
	if err := cl.get(t, ns, "minimal", stored); err != nil {
		t.Fatal(err)
	}
	goDefaulted := stored.DeepCopy()
	goDefaulted.Spec = cachev1alpha1.CacheInstanceSpec{Cores: 2, Memory: resource.MustParse("1Gi"), Auth: &cachev1alpha1.AuthSpec{Generate: true}}
	goDefaulted.SetDefaults()
	// The Secret's name is derived in Go only: the schema cannot default from metadata.name.
	goDefaulted.Spec.Auth.ExistingSecret = ""
	if !reflect.DeepEqual(stored.Spec, goDefaulted.Spec) {
		a, _ := yaml.Marshal(stored.Spec)
		b, _ := yaml.Marshal(goDefaulted.Spec)
		t.Errorf("the API server's defaults differ from SetDefaults:\n--- stored:\n%s\n--- SetDefaults:\n%s", a, b)
	}
}

// Each spec the schema refuses, with the message a user reads from kubectl.
func TestInvalidSpecsRejectedWithMessages(t *testing.T) {
	cl := startEnv(t)
	ns := cl.namespace(t)
	for _, tc := range []struct {
		name   string
		mutate func(*cachev1alpha1.CacheInstance)
		want   string
	}{
		{"Fixed without count", func(ci *cachev1alpha1.CacheInstance) { ci.Spec.IOThreads.Policy = cachev1alpha1.IOThreadsFixed },
			"ioThreads.count is required when ioThreads.policy is Fixed"},
		{"count with Auto", func(ci *cachev1alpha1.CacheInstance) { ci.Spec.IOThreads.Count = ptr.To[int32](2) },
			"ioThreads.count is only used with ioThreads.policy Fixed"},
		{"count above cores", func(ci *cachev1alpha1.CacheInstance) {
			ci.Spec.IOThreads = cachev1alpha1.IOThreadsSpec{Policy: cachev1alpha1.IOThreadsFixed, Count: ptr.To[int32](5)}
		}, "ioThreads.count must not exceed cores"},
		{"cpulist beyond the cores", func(ci *cachev1alpha1.CacheInstance) {
			ci.Spec.CPUAffinity = &cachev1alpha1.CPUAffinitySpec{Bio: "3-4"}
		}, "cpuAffinity lists are positions within the instance's cores: every CPU must be below spec.cores"},
		{"server and background overlap", func(ci *cachev1alpha1.CacheInstance) {
			ci.Spec.CPUAffinity = &cachev1alpha1.CPUAffinitySpec{Server: "0-2", BGSave: "2-3"}
		}, "cpuAffinity.server must not overlap bio, aofRewrite or bgsave"},
		{"Shared without cpu", func(ci *cachev1alpha1.CacheInstance) {
			ci.Spec.Cores, ci.Spec.CPUMode = 1, cachev1alpha1.CPUShared
		}, "cpuMode Shared needs cpu: the fraction of a core the instance gets, such as cpu: 500m"},
		{"cpu without Shared", func(ci *cachev1alpha1.CacheInstance) { ci.Spec.CPU = ptr.To(resource.MustParse("500m")) },
			"cpu is only for cpuMode Shared; an Exclusive instance gets whole cores: set cores instead"},
		{"Shared with pinning", func(ci *cachev1alpha1.CacheInstance) {
			ci.Spec.Cores, ci.Spec.CPUMode, ci.Spec.CPU = 1, cachev1alpha1.CPUShared, ptr.To(resource.MustParse("500m"))
			ci.Spec.CPUAffinity = &cachev1alpha1.CPUAffinitySpec{Server: "0"}
		}, "cpuMode Shared runs one unpinned thread on part of a core: leave cores at 1, remove cpuAffinity and use ioThreads policy Auto"},
		{"Shared too small", func(ci *cachev1alpha1.CacheInstance) {
			ci.Spec.Cores, ci.Spec.CPUMode, ci.Spec.CPU = 1, cachev1alpha1.CPUShared, ptr.To(resource.MustParse("1m"))
		}, "cpu must be between 10m and 64"},
		{"source ranges without a LoadBalancer", func(ci *cachev1alpha1.CacheInstance) {
			ci.Spec.Service = &cachev1alpha1.ServiceSpec{Type: corev1.ServiceTypeNodePort, LoadBalancerSourceRanges: []string{"10.0.0.0/8"}}
		}, "service.loadBalancerSourceRanges only applies to service.type LoadBalancer"},
		{"nodePort on ClusterIP", func(ci *cachev1alpha1.CacheInstance) {
			ci.Spec.Service = &cachev1alpha1.ServiceSpec{NodePort: ptr.To[int32](30079)}
		}, "service.nodePort needs service.type NodePort or LoadBalancer"},
		{"range running backwards", func(ci *cachev1alpha1.CacheInstance) {
			ci.Spec.CPUAffinity = &cachev1alpha1.CPUAffinitySpec{Server: "2-0"}
		}, "a CPU range runs upwards, such as 2-5"},
		{"owned directive in config", func(ci *cachev1alpha1.CacheInstance) {
			ci.Spec.Config = map[string]cachev1alpha1.ConfigValue{"hz": "20", "io-threads": "4"}
		}, "spec.config must not set io-threads: the operator sets it from the other spec fields"},
		{"owned directive in another case", func(ci *cachev1alpha1.CacheInstance) {
			ci.Spec.Config = map[string]cachev1alpha1.ConfigValue{"MaxMemory": "1gb"}
		}, "spec.config must not set MaxMemory"},
		{"requirepass-file in config", func(ci *cachev1alpha1.CacheInstance) {
			ci.Spec.Config = map[string]cachev1alpha1.ConfigValue{"requirepass-file": "/tmp/x"}
		}, "spec.config must not set requirepass-file"},
		{"config key that is no directive name", func(ci *cachev1alpha1.CacheInstance) {
			ci.Spec.Config = map[string]cachev1alpha1.ConfigValue{"hz 10": "x"}
		}, "spec.config keys are directive names"},
		{"config value smuggling a second line", func(ci *cachev1alpha1.CacheInstance) {
			ci.Spec.Config = map[string]cachev1alpha1.ConfigValue{"hz": "10\nrequirepass x"}
		}, "spec.config.hz: Invalid value"},
		{"maxMemory not below memory", func(ci *cachev1alpha1.CacheInstance) {
			ci.Spec.MaxMemory = ptr.To(resource.MustParse("1Gi"))
		}, "maxMemory must be less than memory"},
		{"too little memory", func(ci *cachev1alpha1.CacheInstance) { ci.Spec.Memory = resource.MustParse("16Mi") },
			"memory must be at least 32Mi"},
		{"auth with nothing to use", func(ci *cachev1alpha1.CacheInstance) { ci.Spec.Auth = &cachev1alpha1.AuthSpec{} },
			"auth needs existingSecret, or generate: true"},
		{"name too long for the StatefulSet's pods", func(ci *cachev1alpha1.CacheInstance) { ci.Name = strings.Repeat("a", 53) },
			"a CacheInstance name is a DNS label of at most 52 characters"},
		{"negative cores", func(ci *cachev1alpha1.CacheInstance) { ci.Spec.Cores = -1 }, "spec.cores: Invalid value: -1"},
		{"ten replicas", func(ci *cachev1alpha1.CacheInstance) { ci.Spec.Replicas = ptr.To[int32](10) }, "spec.replicas: Invalid value: 10"},
		{"replicaof in config", func(ci *cachev1alpha1.CacheInstance) {
			ci.Spec.Config = map[string]cachev1alpha1.ConfigValue{"replicaof": "10.0.0.1 6379"}
		}, "spec.config must not set replicaof"},
		{"unknown policy", func(ci *cachev1alpha1.CacheInstance) { ci.Spec.IOThreads.Policy = "Fast" }, `spec.ioThreads.policy: Unsupported value: "Fast"`},
		{"save in config", func(ci *cachev1alpha1.CacheInstance) {
			ci.Spec.Config = map[string]cachev1alpha1.ConfigValue{"save": "900 1"}
		}, "spec.config must not set save"},
		{"RDB without a size", func(ci *cachev1alpha1.CacheInstance) {
			ci.Spec.Persistence = cachev1alpha1.PersistenceSpec{Mode: cachev1alpha1.PersistenceRDB}
		}, "persistence.mode RDB, AOF and RDBAndAOF need persistence.size"},
		{"AOF without a size", func(ci *cachev1alpha1.CacheInstance) {
			ci.Spec.Persistence = cachev1alpha1.PersistenceSpec{Mode: cachev1alpha1.PersistenceAOF}
		}, "persistence.mode RDB, AOF and RDBAndAOF need persistence.size"},
		{"an unknown appendFsync", func(ci *cachev1alpha1.CacheInstance) {
			ci.Spec.Persistence = cachev1alpha1.PersistenceSpec{Mode: cachev1alpha1.PersistenceAOF, Size: ptr.To(resource.MustParse("1Gi")), AppendFsync: "sometimes"}
		}, `spec.persistence.appendFsync: Unsupported value: "sometimes"`},
		{"appendonly in config", func(ci *cachev1alpha1.CacheInstance) {
			ci.Spec.Config = map[string]cachev1alpha1.ConfigValue{"appendonly": "yes"}
		}, "spec.config must not set appendonly"},
		{"a size without RDB", func(ci *cachev1alpha1.CacheInstance) {
			ci.Spec.Persistence = cachev1alpha1.PersistenceSpec{Size: ptr.To(resource.MustParse("1Gi"))}
		}, "persistence.size and persistence.storageClassName need a persistence.mode other than None"},
		{"save points that are no pairs", func(ci *cachev1alpha1.CacheInstance) {
			ci.Spec.Persistence = cachev1alpha1.PersistenceSpec{Mode: cachev1alpha1.PersistenceRDB, Size: ptr.To(resource.MustParse("1Gi")), SavePoints: "900"}
		}, "spec.persistence.savePoints: Invalid value"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ci := instanceIn(ns, "invalid", 4, tc.mutate)
			err := cl.c.Create(context.Background(), ci)
			if err == nil {
				_ = cl.c.Delete(context.Background(), ci)
				t.Fatalf("the API server accepted the spec; want %q", tc.want)
			}
			if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v\nwant an Invalid error containing %q", err, tc.want)
			}
		})
	}
	// And what these rules must let through.
	ok := instanceIn(ns, "valid", 8, func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.IOThreads = cachev1alpha1.IOThreadsSpec{Policy: cachev1alpha1.IOThreadsFixed, Count: ptr.To[int32](8)}
		ci.Spec.CPUAffinity = &cachev1alpha1.CPUAffinitySpec{Server: "0-3,5", Bio: "4", AOFRewrite: "6-7", BGSave: "4,6"}
		ci.Spec.MaxMemory = ptr.To(resource.MustParse("900Mi"))
		ci.Spec.Config = map[string]cachev1alpha1.ConfigValue{"client-output-buffer-limit": "pubsub 64mb 16mb 60", "lazyfree-lazy-eviction": "yes"}
	})
	if err := cl.c.Create(context.Background(), ok); err != nil {
		t.Fatalf("a valid spec was refused: %v", err)
	}
}

// Create an instance: every owned object appears, owned by it, with the fields the issue asks for;
// the status reports what was resolved.
func TestCreateInstanceOwnsEveryObject(t *testing.T) {
	cl := startEnv(t)
	ns := cl.namespace(t)
	ctx := context.Background()
	ci := instanceIn(ns, "cache", 4, func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.Memory = resource.MustParse("2Gi")
		ci.Spec.Auth = &cachev1alpha1.AuthSpec{Generate: true}
		ci.Spec.PodLabels = map[string]string{"team": "checkout"}
		ci.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
	})
	if err := cl.c.Create(ctx, ci); err != nil {
		t.Fatal(err)
	}

	ci = cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionProgressing, metav1.ConditionTrue, "RollingOut")
	st := ci.Status
	if st.IOThreads != 3 || st.CPULists.Server != "0-2" || st.CPULists.Bio != "3" || st.Endpoint != "cache."+ns+".svc:6379" || st.ConfigHash == "" {
		t.Errorf("status %+v: want io-threads 3, server 0-2, bio 3, the Service endpoint and a config hash", st)
	}
	for typ, want := range map[string][2]string{
		cachev1alpha1.ConditionReady:               {"False", "RollingOut"},
		cachev1alpha1.ConditionDegraded:            {"False", "AsExpected"},
		cachev1alpha1.ConditionThroughputValidated: {"Unknown", "NotMeasured"},
	} {
		if c := meta.FindStatusCondition(st.Conditions, typ); c == nil || string(c.Status) != want[0] || c.Reason != want[1] {
			t.Errorf("%s = %+v, want %s/%s", typ, c, want[0], want[1])
		}
	}

	cm := &corev1.ConfigMap{}
	if err := cl.get(t, ns, "cache-config", cm); err != nil {
		t.Fatal(err)
	}
	conf := cm.Data["iocache.conf"]
	for _, line := range []string{"io-threads 3", "server_cpulist 0-2", "bio_cpulist 3", "cpulist-mode relative",
		"maxmemory 1932735284", "requirepass-file /etc/iocache/auth/password"} {
		if !strings.Contains(conf, line+"\n") {
			t.Errorf("iocache.conf lacks %q:\n%s", line, conf)
		}
	}

	sec := &corev1.Secret{}
	if err := cl.get(t, ns, "cache-auth", sec); err != nil {
		t.Fatal(err)
	}
	pw := string(sec.Data["password"])
	if len(pw) != 52 {
		t.Errorf("generated password has %d characters, want 52", len(pw))
	}
	if strings.Contains(conf, pw) {
		t.Error("the password is in the ConfigMap")
	}
	if note := cl.waitEvent(t, ns, "cache", "SecretCreated"); strings.Contains(note, pw) {
		t.Error("the password is in an event")
	}

	sts := &appsv1.StatefulSet{}
	if err := cl.get(t, ns, "cache", sts); err != nil {
		t.Fatal(err)
	}
	tmpl := sts.Spec.Template
	c := tmpl.Spec.Containers[0]
	if c.Image != testImage || c.Resources.Requests.Cpu().String() != "4" || c.Resources.Limits.Cpu().String() != "4" ||
		c.Resources.Requests.Memory().String() != "2Gi" || c.Resources.Limits.Memory().String() != "2Gi" {
		t.Errorf("container image %s resources %+v: want the operator's image, 4 CPUs and 2Gi as requests and limits", c.Image, c.Resources)
	}
	if tmpl.Annotations["cache.iocache.dev/config-hash"] != st.RestartHash {
		t.Errorf("pod template hash %q, status restart hash %q", tmpl.Annotations["cache.iocache.dev/config-hash"], st.RestartHash)
	}
	if tmpl.Labels["team"] != "checkout" || len(tmpl.Spec.Tolerations) != 1 || sts.Spec.ServiceName != "cache-headless" {
		t.Errorf("pod labels %v, tolerations %v, serviceName %q", tmpl.Labels, tmpl.Spec.Tolerations, sts.Spec.ServiceName)
	}
	if c.ReadinessProbe == nil || c.ReadinessProbe.Exec == nil || !strings.Contains(strings.Join(c.ReadinessProbe.Exec.Command, " "), "--check-health --port 6379 --password-file /etc/iocache/auth/password") {
		t.Errorf("readiness probe %+v", c.ReadinessProbe)
	}

	// Pod Security "restricted" is enforced in this namespace: the API server must admit a pod made
	// from the template, and refuse it once one restricted field is loosened (so the check bites).
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "from-template", Namespace: ns}, Spec: *tmpl.Spec.DeepCopy()}
	if err := cl.c.Create(ctx, pod, client.DryRunAll); err != nil {
		t.Errorf("Pod Security restricted refuses the server pod: %v", err)
	}
	loose := pod.DeepCopy()
	loose.Spec.Containers[0].SecurityContext.AllowPrivilegeEscalation = ptr.To(true)
	if err := cl.c.Create(ctx, loose, client.DryRunAll); err == nil || !strings.Contains(err.Error(), "restricted") {
		t.Errorf("a pod allowing privilege escalation was not refused by Pod Security: %v", err)
	}

	client_, headless := &corev1.Service{}, &corev1.Service{}
	if err := cl.get(t, ns, "cache", client_); err != nil {
		t.Fatal(err)
	}
	if err := cl.get(t, ns, "cache-headless", headless); err != nil {
		t.Fatal(err)
	}
	if client_.Spec.Type != corev1.ServiceTypeClusterIP || len(client_.Spec.Ports) != 2 || client_.Spec.Ports[0].Port != 6379 || client_.Spec.Ports[1].Port != 9121 {
		t.Errorf("client Service spec %+v", client_.Spec)
	}
	if headless.Spec.ClusterIP != corev1.ClusterIPNone || !headless.Spec.PublishNotReadyAddresses {
		t.Errorf("headless Service spec %+v", headless.Spec)
	}
	pdb := &policyv1.PodDisruptionBudget{}
	if err := cl.get(t, ns, "cache", pdb); err != nil {
		t.Fatal(err)
	}
	if pdb.Spec.MaxUnavailable == nil || pdb.Spec.MaxUnavailable.IntValue() != 1 {
		t.Errorf("PDB spec %+v", pdb.Spec)
	}

	// envtest runs no garbage collector, so deletion is checked where it is decided: every owned
	// object names the instance as its controller, which is what the collector follows.
	for _, obj := range []client.Object{cm, sec, sts, client_, headless, pdb} {
		if err := isControlledBy(obj, ci); err != nil {
			t.Error(err)
		}
	}
	if err := cl.c.Delete(ctx, ci); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the instance is gone", func() error {
		if err := cl.get(t, ns, "cache", &cachev1alpha1.CacheInstance{}); err == nil {
			return fmt.Errorf("still there")
		}
		return nil
	})
	eventually(t, "its metric series are dropped", func() error {
		if n := reconcileCount(t, ns, "cache"); n != 0 {
			return fmt.Errorf("%v reconciles still counted", n)
		}
		return nil
	})
}

// reconcileCount sums the operator's per-instance reconcile counter.
func reconcileCount(t *testing.T, ns, name string) float64 {
	t.Helper()
	families, err := metrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var n float64
	for _, f := range families {
		if f.GetName() != "iocache_cacheinstance_reconciles_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["namespace"] == ns && labels["name"] == name {
				n += m.GetCounter().GetValue()
			}
		}
	}
	return n
}

// Ready follows the StatefulSet; a change of cores re-renders the config, rolls the pods through the
// hash, and the conditions and observedGeneration move as documented.
func TestStatusFollowsRolloutAndCoresChange(t *testing.T) {
	cl := startEnv(t)
	ns := cl.namespace(t)
	if err := cl.c.Create(context.Background(), instanceIn(ns, "cache", 4)); err != nil {
		t.Fatal(err)
	}
	ci := cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionReady, metav1.ConditionFalse, "RollingOut")
	firstHash := ci.Status.ConfigHash

	cl.simulateRollout(t, ns, "cache")
	ci = cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionReady, metav1.ConditionTrue, "PodsReady")
	cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionProgressing, metav1.ConditionFalse, "RolloutComplete")
	if ci.Status.ReadyReplicas != 1 || ci.Status.ObservedGeneration != 1 {
		t.Errorf("readyReplicas %d observedGeneration %d, want 1 and 1", ci.Status.ReadyReplicas, ci.Status.ObservedGeneration)
	}
	if n := reconcileCount(t, ns, "cache"); n < 1 {
		t.Errorf("the reconcile counter for the instance reads %v", n)
	}

	cl.update(t, ns, "cache", func(ci *cachev1alpha1.CacheInstance) { ci.Spec.Cores = 8 })
	ci = cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionReady, metav1.ConditionFalse, "RollingOut")
	cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionProgressing, metav1.ConditionTrue, "RollingOut")
	cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionThroughputValidated, metav1.ConditionUnknown, "ConfigChanged")
	if ci.Status.ObservedGeneration != 2 || ci.Status.IOThreads != 6 || ci.Status.ConfigHash == firstHash {
		t.Errorf("after 4→8 cores: observedGeneration %d io-threads %d hash %s (was %s)", ci.Status.ObservedGeneration, ci.Status.IOThreads, ci.Status.ConfigHash, firstHash)
	}
	cm := &corev1.ConfigMap{}
	if err := cl.get(t, ns, "cache-config", cm); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cm.Data["iocache.conf"], "io-threads 6\n") || !strings.Contains(cm.Data["iocache.conf"], "bio_cpulist 6-7\n") {
		t.Errorf("ConfigMap not re-rendered for 8 cores:\n%s", cm.Data["iocache.conf"])
	}
	sts := &appsv1.StatefulSet{}
	if err := cl.get(t, ns, "cache", sts); err != nil {
		t.Fatal(err)
	}
	if got := sts.Spec.Template.Annotations["cache.iocache.dev/config-hash"]; got != ci.Status.RestartHash {
		t.Errorf("pod template hash %s, want the new %s", got, ci.Status.RestartHash)
	}
	if cpu := sts.Spec.Template.Spec.Containers[0].Resources.Limits.Cpu().String(); cpu != "8" {
		t.Errorf("CPU limit %s, want 8", cpu)
	}
	if note := cl.waitEvent(t, ns, "cache", "Rolled"); !strings.Contains(note, ci.Status.ConfigHash) || !strings.Contains(note, "because cpu 4 -> 8") {
		t.Errorf("Rolled event %q does not name the new config and why", note)
	}
	cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionConfigApplied, metav1.ConditionFalse, "RollingOut")

	cl.simulateRollout(t, ns, "cache")
	cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionReady, metav1.ConditionTrue, "PodsReady")
	cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionDegraded, metav1.ConditionFalse, "AsExpected")
	ci = cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionConfigApplied, metav1.ConditionTrue, "Rolled")
	if ci.Status.AppliedConfigHash != ci.Status.ConfigHash {
		t.Errorf("appliedConfigHash %s, configHash %s", ci.Status.AppliedConfigHash, ci.Status.ConfigHash)
	}
}

// A rule only Go can check blocks the instance with an event; the operator applies nothing.
func TestUnrenderableSpecIsDegraded(t *testing.T) {
	cl := startEnv(t)
	ns := cl.namespace(t)
	// Without cpuAffinity.server the schema cannot know the computed server list is 0-5.
	ci := instanceIn(ns, "cache", 8, func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.CPUAffinity = &cachev1alpha1.CPUAffinitySpec{Bio: "0-1"}
	})
	if err := cl.c.Create(context.Background(), ci); err != nil {
		t.Fatal(err)
	}
	ci = cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionDegraded, metav1.ConditionTrue, "InvalidSpec")
	msg := meta.FindStatusCondition(ci.Status.Conditions, cachev1alpha1.ConditionDegraded).Message
	if !strings.Contains(msg, "cpuAffinity.bio shares CPU 0-1 with the computed server list 0-5") {
		t.Errorf("Degraded message %q does not explain the overlap", msg)
	}
	if c := meta.FindStatusCondition(ci.Status.Conditions, cachev1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionUnknown {
		t.Errorf("Ready = %+v, want Unknown until a StatefulSet is applied", c)
	}
	cl.waitEvent(t, ns, "cache", "InvalidSpec")
	if err := cl.get(t, ns, "cache", &appsv1.StatefulSet{}); !apierrors.IsNotFound(err) {
		t.Errorf("a StatefulSet exists for a spec that cannot be rendered: %v", err)
	}

	cl.update(t, ns, "cache", func(ci *cachev1alpha1.CacheInstance) { ci.Spec.CPUAffinity.Server = "2-7" })
	cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionDegraded, metav1.ConditionFalse, "AsExpected")
}

// A Secret that is missing or lacks the key blocks the instance with an event until it is fixed.
func TestMissingSecretIsDegraded(t *testing.T) {
	cl := startEnv(t)
	ns := cl.namespace(t)
	ci := instanceIn(ns, "cache", 2, func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.Auth = &cachev1alpha1.AuthSpec{ExistingSecret: "cache-password", Key: "pw"}
	})
	if err := cl.c.Create(context.Background(), ci); err != nil {
		t.Fatal(err)
	}
	cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionDegraded, metav1.ConditionTrue, "SecretMissing")
	if note := cl.waitEvent(t, ns, "cache", "SecretMissing"); !strings.Contains(note, "Secret cache-password does not exist") {
		t.Errorf("SecretMissing event %q", note)
	}

	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cache-password", Namespace: ns}, Data: map[string][]byte{"other": []byte("x")}}
	if err := cl.c.Create(context.Background(), sec); err != nil {
		t.Fatal(err)
	}
	// The operator polls for Secrets (it may not watch them); a spec change makes it look now.
	cl.update(t, ns, "cache", func(ci *cachev1alpha1.CacheInstance) { ci.Spec.PodLabels = map[string]string{"touch": "1"} })
	ci = cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionDegraded, metav1.ConditionTrue, "SecretMissing")
	if msg := meta.FindStatusCondition(ci.Status.Conditions, cachev1alpha1.ConditionDegraded).Message; !strings.Contains(msg, "has no key pw") {
		t.Errorf("Degraded message %q does not name the missing key", msg)
	}

	sec.Data = map[string][]byte{"pw": []byte("s3cret")}
	if err := cl.c.Update(context.Background(), sec); err != nil {
		t.Fatal(err)
	}
	cl.update(t, ns, "cache", func(ci *cachev1alpha1.CacheInstance) { ci.Spec.PodLabels = map[string]string{"touch": "2"} })
	cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionDegraded, metav1.ConditionFalse, "AsExpected")
	if err := cl.get(t, ns, "cache", &appsv1.StatefulSet{}); err != nil {
		t.Errorf("no StatefulSet once the Secret is there: %v", err)
	}
	current := &corev1.Secret{}
	if err := cl.get(t, ns, "cache-password", current); err != nil || string(current.Data["pw"]) != "s3cret" || len(current.OwnerReferences) != 0 {
		t.Errorf("the operator changed a Secret it did not create: %+v (%v)", current, err)
	}
}

// ServiceMonitors appear only once their CRD exists, and go away when no longer asked for.
func TestServiceMonitorFollowsCRDAndSpec(t *testing.T) {
	cl := startEnv(t)
	ns := cl.namespace(t)
	ci := instanceIn(ns, "cache", 2, func(ci *cachev1alpha1.CacheInstance) { ci.Spec.Metrics.ServiceMonitor = true })
	if err := cl.c.Create(context.Background(), ci); err != nil {
		t.Fatal(err)
	}
	cl.waitEvent(t, ns, "cache", "ServiceMonitorUnavailable")
	ci = cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionDegraded, metav1.ConditionFalse, "AsExpected")

	if _, err := envtest.InstallCRDs(cl.cfg, envtest.CRDInstallOptions{
		Paths: []string{filepath.Join("testdata", "crds")}, ErrorIfPathMissing: true,
	}); err != nil {
		t.Fatal(err)
	}
	cl.update(t, ns, "cache", func(ci *cachev1alpha1.CacheInstance) { ci.Spec.PodLabels = map[string]string{"touch": "1"} })
	sm := &unstructured.Unstructured{}
	sm.SetGroupVersionKind(schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "ServiceMonitor"})
	eventually(t, "the ServiceMonitor exists", func() error {
		return cl.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "cache"}, sm)
	})
	if err := isControlledBy(sm, ci); err != nil {
		t.Error(err)
	}
	sel, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	if sel["cache.iocache.dev/service"] != "client" || sel["app.kubernetes.io/instance"] != "cache" {
		t.Errorf("ServiceMonitor selects %v", sel)
	}

	cl.update(t, ns, "cache", func(ci *cachev1alpha1.CacheInstance) { ci.Spec.Metrics.ServiceMonitor = false })
	eventually(t, "the ServiceMonitor is deleted", func() error {
		err := cl.c.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "cache"}, sm)
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("still there (%v)", err)
	})
}

// The samples users copy must pass validation and reconcile without trouble, once the Secrets
// their comments tell users to create exist.
func TestSamplesAreValid(t *testing.T) {
	cl := startEnv(t)
	ns := cl.namespace(t)
	certs := testpeer.NewCerts(t)
	for _, sec := range []*corev1.Secret{
		tlsSecret(t, ns, "cacheinstance-tls-cert", certs, certs.CertFile, certs.KeyFile),
		{ObjectMeta: metav1.ObjectMeta{Name: "app-passwords", Namespace: ns}, Data: map[string][]byte{"v1": []byte("app-password")}},
	} {
		if err := cl.c.Create(context.Background(), sec); err != nil {
			t.Fatal(err)
		}
	}
	files, err := filepath.Glob(filepath.Join("..", "config", "samples", "cache_v1alpha1_cacheinstance*.yaml"))
	if err != nil || len(files) < 2 {
		t.Fatalf("want a small and a large CacheInstance sample, found %v (%v)", files, err)
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(raw, &u.Object); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		u.SetNamespace(ns)
		if err := cl.c.Create(context.Background(), u); err != nil {
			t.Fatalf("%s refused: %v", f, err)
		}
		cl.waitCondition(t, ns, u.GetName(), cachev1alpha1.ConditionDegraded, metav1.ConditionFalse, "AsExpected")
	}
	// Benchmark and backup samples pass validation; dry run, so that they do not start running.
	files, err = filepath.Glob(filepath.Join("..", "config", "samples", "cache_v1alpha1_cacheb[ea]*.yaml"))
	if err != nil || len(files) < 2 {
		t.Fatalf("want CacheBenchmark and CacheBackup samples, found %v (%v)", files, err)
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(raw, &u.Object); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		u.SetNamespace(ns)
		if err := cl.c.Create(context.Background(), u, client.DryRunAll); err != nil {
			t.Fatalf("%s refused: %v", f, err)
		}
	}
}

// simulatePod does what the StatefulSet controller and then the scheduler or kubelet would: create
// the instance's pod from the StatefulSet's template, write status into it through the status
// subresource, and count it in the StatefulSet's status (updated, ready or not).
func (cl *cluster) simulatePod(t *testing.T, ns, name string, status corev1.PodStatus) {
	t.Helper()
	ctx := context.Background()
	sts := &appsv1.StatefulSet{}
	if err := cl.get(t, ns, name, sts); err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{}
	if err := cl.get(t, ns, name+"-0", pod); apierrors.IsNotFound(err) {
		pod = &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: name + "-0", Namespace: ns, Labels: sts.Spec.Template.Labels,
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(sts, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))}},
			Spec: *sts.Spec.Template.Spec.DeepCopy(),
		}
		if err := cl.c.Create(ctx, pod); err != nil {
			t.Fatal(err)
		}
	}
	pod.Status = status
	if err := cl.c.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	ready := int32(0)
	for _, c := range status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			ready = 1
		}
	}
	rev := fmt.Sprintf("%s-%d", name, sts.Generation)
	sts.Status = appsv1.StatefulSetStatus{
		ObservedGeneration: sts.Generation, Replicas: 1, ReadyReplicas: ready, AvailableReplicas: ready,
		CurrentReplicas: 1, UpdatedReplicas: 1, CurrentRevision: rev, UpdateRevision: rev,
	}
	if err := cl.c.Status().Update(ctx, sts); err != nil {
		t.Fatal(err)
	}
}

// A server pod that cannot serve makes the instance Degraded with the scheduler's or kubelet's own
// reason and message, and an event; Progressing is not RolloutComplete while the pod is not ready;
// the phase says Degraded. A pod that recovers clears it all.
func TestPodTroubleIsDegraded(t *testing.T) {
	cl := startEnv(t)
	now := metav1.Now()
	notReady := corev1.PodCondition{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "ContainersNotReady"}
	waiting := func(reason, message string, restarts int32) corev1.PodStatus {
		return corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, notReady},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "server", RestartCount: restarts,
				State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason, Message: message}}}}}
	}
	oom := waiting("CrashLoopBackOff", "back-off 40s restarting failed container=server", 3)
	oom.ContainerStatuses[0].LastTerminationState.Terminated = &corev1.ContainerStateTerminated{
		ExitCode: 137, Reason: "OOMKilled", StartedAt: now, FinishedAt: now}
	for _, tc := range []struct {
		name, reason, says string
		status             corev1.PodStatus
	}{
		{"unschedulable", "Unschedulable", "0/1 nodes are available: 1 Insufficient cpu.",
			corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
				Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable,
				Message: "0/1 nodes are available: 1 Insufficient cpu. preemption: 0/1 nodes are available: 1 No preemption victims found for incoming pod."}}}},
		{"image pull", "ImagePullBackOff", `Back-off pulling image "registry.example/iocache:envtest"`,
			waiting("ImagePullBackOff", `Back-off pulling image "registry.example/iocache:envtest"`, 0)},
		{"crash loop", "CrashLoopBackOff", "back-off 5m0s restarting failed container=server",
			waiting("CrashLoopBackOff", "back-off 5m0s restarting failed container=server", 7)},
		{"OOM killed", "OOMKilled", "exceeding its memory limit (1Gi)", oom},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ns := cl.namespace(t)
			if err := cl.c.Create(context.Background(), instanceIn(ns, "cache", 2)); err != nil {
				t.Fatal(err)
			}
			cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionReady, metav1.ConditionFalse, "RollingOut")
			cl.simulatePod(t, ns, "cache", tc.status)

			ci := cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionDegraded, metav1.ConditionTrue, tc.reason)
			if c := meta.FindStatusCondition(ci.Status.Conditions, cachev1alpha1.ConditionDegraded); !strings.Contains(c.Message, tc.says) || !strings.Contains(c.Message, "cache-0") {
				t.Errorf("Degraded message %q does not name the pod and say %q", c.Message, tc.says)
			}
			cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionProgressing, metav1.ConditionFalse, tc.reason)
			ci = cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionReady, metav1.ConditionFalse, "PodsNotReady")
			if ci.Status.Phase != cachev1alpha1.PhaseDegraded {
				t.Errorf("phase %q, want Degraded", ci.Status.Phase)
			}
			if note := cl.waitEvent(t, ns, "cache", tc.reason); !strings.Contains(note, tc.says) {
				t.Errorf("%s event %q does not say %q", tc.reason, note, tc.says)
			}

			// The trouble passes (or, for the OOM kill, the container came back long enough ago).
			recovered := corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: corev1.ConditionTrue}},
				ContainerStatuses: []corev1.ContainerStatus{{Name: "server", Ready: true,
					State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}}}}}
			cl.simulatePod(t, ns, "cache", recovered)
			cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionDegraded, metav1.ConditionFalse, "AsExpected")
			// The phase of the status that completed the rollout: Degraded is AsExpected also in
			// the pass before, while the pods are not ready yet (Progressing).
			ci = cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionProgressing, metav1.ConditionFalse, "RolloutComplete")
			if ci.Status.Phase != cachev1alpha1.PhaseReady {
				t.Errorf("phase %q after recovery, want Ready", ci.Status.Phase)
			}
		})
	}
}

// Pods that run the current config but are not ready yet, with nothing known to be wrong, are
// progress, not a completed rollout.
func TestStartingPodsAreProgressing(t *testing.T) {
	cl := startEnv(t)
	ns := cl.namespace(t)
	if err := cl.c.Create(context.Background(), instanceIn(ns, "cache", 2)); err != nil {
		t.Fatal(err)
	}
	cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionReady, metav1.ConditionFalse, "RollingOut")
	cl.simulatePod(t, ns, "cache", corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: corev1.ConditionFalse}},
		ContainerStatuses: []corev1.ContainerStatus{{Name: "server",
			State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ContainerCreating"}}}}})
	ci := cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionProgressing, metav1.ConditionTrue, "PodsNotReady")
	cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionDegraded, metav1.ConditionFalse, "AsExpected")
	if ci.Status.Phase != cachev1alpha1.PhaseProgressing {
		t.Errorf("phase %q, want Progressing", ci.Status.Phase)
	}
}
