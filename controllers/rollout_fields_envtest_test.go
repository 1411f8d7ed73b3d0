package controllers_test

import (
	"context"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
	"github.com/iocache/iocache/server/testpeer"
)

// refused is a decision of the table below: the API server rejects the change (CEL), so the
// operator never sees it.
const refused = "Refused"

// fieldChange is one change of a spec field, on an instance made with base, and what the
// operator must decide for the pod it runs: a reason of the Rollout condition, or refused.
type fieldChange struct {
	name string
	// setup creates what the base or the change needs in the namespace (Secrets).
	setup  func(t *testing.T, cl *cluster, ns string)
	base   func(*cachev1alpha1.CacheInstance)
	change func(*cachev1alpha1.CacheInstance)
	// recreates: the change recreates the StatefulSet, orphaning its pods (orphanStatefulSet).
	recreates bool
	want      string
}

// specFieldChanges records, for every field of CacheInstanceSpec by its JSON name, what a change
// of it does to a running instance with data. None of them may replace the pod cold without
// consent: a change that needs a new pod of a default instance (no persistence, one pod) goes
// through a surge pod (Warm), or waits for consent where the operator cannot hand the data over
// (TLS added: it can no longer reach the running server; added auth still reaches it, as a
// server without a password takes any). A new field fails TestEverySpecFieldIsDecided until its
// decision is recorded here.
var specFieldChanges = map[string][]fieldChange{
	"cores": {{name: "1 to 2", change: func(ci *cachev1alpha1.CacheInstance) { ci.Spec.Cores = 2 },
		want: cachev1alpha1.RolloutWarm}},
	"cpuMode": {{name: "to Shared", change: func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.CPUMode = cachev1alpha1.CPUShared
		ci.Spec.CPU = ptr.To(resource.MustParse("500m"))
	}, want: cachev1alpha1.RolloutWarm}},
	"cpu": {{name: "500m to 250m", base: sharedCPU("500m"), change: sharedCPU("250m"), want: cachev1alpha1.RolloutWarm}},
	"memory": {{name: "grows", change: func(ci *cachev1alpha1.CacheInstance) { ci.Spec.Memory = resource.MustParse("2Gi") },
		want: cachev1alpha1.RolloutLive}},
	"maxMemory": {{name: "set", change: func(ci *cachev1alpha1.CacheInstance) { ci.Spec.MaxMemory = ptr.To(resource.MustParse("512Mi")) },
		want: cachev1alpha1.RolloutLive}},
	"maxMemoryPolicy": {{name: "allkeys-lfu", change: func(ci *cachev1alpha1.CacheInstance) { ci.Spec.MaxMemoryPolicy = "allkeys-lfu" },
		want: cachev1alpha1.RolloutLive}},
	"ioThreads": {{name: "Fixed 2 on 2 cores", base: cores(2), change: func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.IOThreads = cachev1alpha1.IOThreadsSpec{Policy: cachev1alpha1.IOThreadsFixed, Count: ptr.To[int32](2)}
	}, want: cachev1alpha1.RolloutLive}},
	"cpuAffinity": {{name: "server 0, bio 1", base: cores(2), change: func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.CPUAffinity = &cachev1alpha1.CPUAffinitySpec{Server: "0", Bio: "1"}
	}, want: cachev1alpha1.RolloutLive}},
	"auth": {{name: "added", change: func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.Auth = &cachev1alpha1.AuthSpec{ExistingSecret: "cache-auth", Key: "password"}
	}, setup: authSecret, want: cachev1alpha1.RolloutWarm}},
	"tls": {{name: "added", setup: func(t *testing.T, cl *cluster, ns string) {
		certs := testpeer.NewCerts(t)
		cert, key := certs.Issue(t, "cache")
		if err := cl.c.Create(context.Background(), tlsSecret(t, ns, "cache-tls", certs, cert, key)); err != nil {
			t.Fatal(err)
		}
	}, change: func(ci *cachev1alpha1.CacheInstance) { ci.Spec.TLS = &cachev1alpha1.TLSSpec{SecretName: "cache-tls"} },
		want: cachev1alpha1.RolloutWaitingForConsent}},
	"users": {{name: "the first user", setup: func(t *testing.T, cl *cluster, ns string) {
		authSecret(t, cl, ns)
		if err := cl.c.Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "app", Namespace: ns},
			Data: map[string][]byte{"password": []byte("app-password")}}); err != nil {
			t.Fatal(err)
		}
	}, base: withAuth, change: func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.Users = []cachev1alpha1.UserSpec{{Name: "app", PasswordSecret: "app", Permissions: "~app:* +@read"}}
	}, want: cachev1alpha1.RolloutWarm}},
	"config": {
		{name: "a live directive added", change: func(ci *cachev1alpha1.CacheInstance) {
			ci.Spec.Config = map[string]cachev1alpha1.ConfigValue{"hz": "20"}
		}, want: cachev1alpha1.RolloutLive},
		{name: "a live directive removed", base: func(ci *cachev1alpha1.CacheInstance) {
			ci.Spec.Config = map[string]cachev1alpha1.ConfigValue{"hz": "20"}
		}, change: func(ci *cachev1alpha1.CacheInstance) { ci.Spec.Config = nil }, want: cachev1alpha1.RolloutLive},
		{name: "a start-only directive added", change: func(ci *cachev1alpha1.CacheInstance) {
			ci.Spec.Config = map[string]cachev1alpha1.ConfigValue{"databases": "32"}
		}, want: cachev1alpha1.RolloutWarm},
	},
	"image": {{name: "another image", change: func(ci *cachev1alpha1.CacheInstance) { ci.Spec.Image = "registry.example/iocache:other" },
		want: cachev1alpha1.RolloutWarm}},
	"upgradePolicy": {{name: "Rolling, the operator's image already running",
		change: func(ci *cachev1alpha1.CacheInstance) { ci.Spec.UpgradePolicy = cachev1alpha1.UpgradeRolling }, want: cachev1alpha1.RolloutLive}},
	"imagePullPolicy": {{name: "Always", change: func(ci *cachev1alpha1.CacheInstance) { ci.Spec.ImagePullPolicy = corev1.PullAlways },
		want: cachev1alpha1.RolloutWarm}},
	"replicas": {{name: "1 to 2", change: func(ci *cachev1alpha1.CacheInstance) { ci.Spec.Replicas = ptr.To[int32](2) },
		want: cachev1alpha1.RolloutWarm}},
	// A standalone instance's pod is not a cluster node: 1 to 2 shards is refused (between 2 and
	// 16 shards move slots online: TestShardsChangeMovesSlotsOnline).
	// Backups run in Jobs of their own; the backup user reaches the running pods live.
	"backup": {{name: "added", change: func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.Backup = &cachev1alpha1.BackupSpec{Schedule: "@daily",
			Storage: cachev1alpha1.BackupStorage{Endpoint: "http://127.0.0.1:1", Bucket: "backups", PathStyle: true}}
	}, want: cachev1alpha1.RolloutLive}},
	// Where the first data came from is said at creation only.
	"bootstrap": {{name: "added", change: func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.Bootstrap = &cachev1alpha1.BootstrapSpec{Backup: &cachev1alpha1.BootstrapBackup{Name: "nightly",
			Storage: cachev1alpha1.BackupStorage{Endpoint: "http://127.0.0.1:1", Bucket: "backups", PathStyle: true}}}
	}, want: refused}},
	"shards": {{name: "1 to 2", change: func(ci *cachev1alpha1.CacheInstance) { ci.Spec.Shards = ptr.To[int32](2) },
		want: refused}},
	"replication": {{name: "failoverAfterSeconds", change: func(ci *cachev1alpha1.CacheInstance) { ci.Spec.Replication.FailoverAfterSeconds = 30 },
		want: cachev1alpha1.RolloutLive}},
	"rollout": {{name: "allowColdRestart", change: func(ci *cachev1alpha1.CacheInstance) { ci.Spec.Rollout.AllowColdRestart = true },
		want: cachev1alpha1.RolloutLive}},
	"persistence": {
		{name: "None to RDB", change: persistent(cachev1alpha1.PersistenceRDB), recreates: true, want: cachev1alpha1.RolloutWarm},
		{name: "AOF to None", base: persistent(cachev1alpha1.PersistenceAOF), change: func(ci *cachev1alpha1.CacheInstance) {
			ci.Spec.Persistence = cachev1alpha1.PersistenceSpec{Mode: cachev1alpha1.PersistenceNone}
		}, recreates: true, want: cachev1alpha1.RolloutWarm},
		{name: "RDB to AOF", base: persistent(cachev1alpha1.PersistenceRDB), change: persistent(cachev1alpha1.PersistenceAOF),
			want: cachev1alpha1.RolloutLive},
		{name: "save points", base: persistent(cachev1alpha1.PersistenceRDB), change: func(ci *cachev1alpha1.CacheInstance) {
			ci.Spec.Persistence.SavePoints = "900 1"
		}, want: cachev1alpha1.RolloutLive},
	},
	"metrics": {
		{name: "serviceMonitor", change: func(ci *cachev1alpha1.CacheInstance) { ci.Spec.Metrics.ServiceMonitor = true }, want: cachev1alpha1.RolloutLive},
		{name: "port", change: func(ci *cachev1alpha1.CacheInstance) { ci.Spec.Metrics.Port = 9122 }, want: cachev1alpha1.RolloutWarm},
	},
	"benchmark": {{name: "minOpsPerSecond", change: func(ci *cachev1alpha1.CacheInstance) { ci.Spec.Benchmark.MinOpsPerSecond = ptr.To[int64](1000) },
		want: cachev1alpha1.RolloutLive}},
	"service": {{name: "NodePort", change: func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.Service = &cachev1alpha1.ServiceSpec{Type: corev1.ServiceTypeNodePort}
	}, want: cachev1alpha1.RolloutLive}},
	"networkPolicy": {{name: "disabled", change: func(ci *cachev1alpha1.CacheInstance) { ci.Spec.NetworkPolicy.Enabled = ptr.To(false) },
		want: cachev1alpha1.RolloutLive}},
	"imagePullSecrets": {{name: "one", change: func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "registry"}}
	}, want: cachev1alpha1.RolloutWarm}},
	"topologySpreadConstraints": {{name: "zones", change: func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.TopologySpreadConstraints = []corev1.TopologySpreadConstraint{{MaxSkew: 1, TopologyKey: corev1.LabelTopologyZone,
			WhenUnsatisfiable: corev1.ScheduleAnyway}}
	}, want: cachev1alpha1.RolloutWarm}},
	"nodeSelector": {{name: "a label", change: func(ci *cachev1alpha1.CacheInstance) { ci.Spec.NodeSelector = map[string]string{"pool": "cache"} },
		want: cachev1alpha1.RolloutWarm}},
	"tolerations": {{name: "one", change: func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpExists}}
	}, want: cachev1alpha1.RolloutWarm}},
	"affinity": {{name: "node affinity", change: func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "pool", Operator: corev1.NodeSelectorOpExists}}}}}}}
	}, want: cachev1alpha1.RolloutWarm}},
	"priorityClassName": {{name: "set", setup: func(t *testing.T, cl *cluster, _ string) {
		// Admission refuses a pod whose priority class does not exist.
		pc := &schedulingv1.PriorityClass{ObjectMeta: metav1.ObjectMeta{Name: "cache-critical"}, Value: 1000}
		if err := cl.c.Create(context.Background(), pc); err != nil && !apierrors.IsAlreadyExists(err) {
			t.Fatal(err)
		}
	}, change: func(ci *cachev1alpha1.CacheInstance) { ci.Spec.PriorityClassName = "cache-critical" }, want: cachev1alpha1.RolloutWarm}},
	"podAnnotations": {{name: "one", change: func(ci *cachev1alpha1.CacheInstance) { ci.Spec.PodAnnotations = map[string]string{"team": "cache"} },
		want: cachev1alpha1.RolloutWarm}},
	"podLabels": {{name: "one", change: func(ci *cachev1alpha1.CacheInstance) { ci.Spec.PodLabels = map[string]string{"team": "cache"} },
		want: cachev1alpha1.RolloutWarm}},
}

func cores(n int32) func(*cachev1alpha1.CacheInstance) {
	return func(ci *cachev1alpha1.CacheInstance) { ci.Spec.Cores = n }
}

func sharedCPU(cpu string) func(*cachev1alpha1.CacheInstance) {
	return func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.CPUMode = cachev1alpha1.CPUShared
		ci.Spec.CPU = ptr.To(resource.MustParse(cpu))
	}
}

func persistent(mode cachev1alpha1.PersistenceMode) func(*cachev1alpha1.CacheInstance) {
	return func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.Persistence.Mode = mode
		ci.Spec.Persistence.Size = ptr.To(resource.MustParse("2Gi"))
	}
}

func withAuth(ci *cachev1alpha1.CacheInstance) {
	ci.Spec.Auth = &cachev1alpha1.AuthSpec{ExistingSecret: "cache-auth", Key: "password"}
}

// fieldsPassword is the auth Secret's password in these cases.
const fieldsPassword = "fields-password"

func authSecret(t *testing.T, cl *cluster, ns string) {
	t.Helper()
	if err := cl.c.Create(context.Background(), &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cache-auth", Namespace: ns},
		Data: map[string][]byte{"password": []byte(fieldsPassword)}}); err != nil {
		t.Fatal(err)
	}
}

// specFieldNames are the JSON names of CacheInstanceSpec's fields, read from the type.
func specFieldNames() []string {
	var names []string
	typ := reflect.TypeFor[cachev1alpha1.CacheInstanceSpec]()
	for i := range typ.NumField() {
		name, _, _ := strings.Cut(typ.Field(i).Tag.Get("json"), ",")
		names = append(names, name)
	}
	return names
}

// Every field of CacheInstanceSpec, as the API type has them, is changed on a running instance
// whose pod holds data (a real iocache-server stands in for it): the operator decides live,
// warm (a surge pod is started), or waiting for consent, says so in the Rollout condition, and
// never replaces the pod cold.
func TestEverySpecFieldIsDecided(t *testing.T) {
	fields := specFieldNames()
	for _, name := range fields {
		if len(specFieldChanges[name]) == 0 {
			t.Errorf("spec.%s has no recorded rollout decision: add its changes to specFieldChanges (rollout_fields_envtest_test.go)", name)
		}
	}
	for name := range specFieldChanges {
		if !slices.Contains(fields, name) {
			t.Errorf("specFieldChanges records spec.%s, which CacheInstanceSpec does not have", name)
		}
	}
	if t.Failed() {
		return
	}
	cl := startEnv(t)
	for _, name := range fields {
		for _, fc := range specFieldChanges[name] {
			t.Run(name+"/"+fc.name, func(t *testing.T) {
				t.Parallel()
				cl.checkFieldChange(t, fc)
			})
		}
	}
}

// checkFieldChange runs one change: an instance with a ready pod at the current revision, the
// change, the StatefulSet controller's new revision when the template changed, and then the
// decision, with the pod still there unless the decision is Warm.
func (cl *cluster) checkFieldChange(t *testing.T, fc fieldChange) {
	ctx := context.Background()
	ns := cl.namespace(t)
	if fc.setup != nil {
		fc.setup(t, cl, ns)
	}
	ci := instanceIn(ns, "cache", 1, func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.Benchmark.ValidateOnChange = ptr.To(false)
		if fc.base != nil {
			fc.base(ci)
		}
	})
	if err := cl.c.Create(ctx, ci); err != nil {
		t.Fatal(err)
	}
	password := ""
	if ci.Spec.Auth != nil {
		password = fieldsPassword
	}
	sts := &appsv1.StatefulSet{}
	eventually(t, "the StatefulSet", func() error { return cl.get(t, ns, "cache", sts) })
	pod := cl.servePod(t, ns, "cache", startTestServer(t, password))
	first := fmt.Sprintf("cache-%d", sts.Generation)
	cl.updatePod(t, ns, pod.Name, func(p *corev1.Pod) { p.Labels[appsv1.ControllerRevisionHashLabelKey] = first })
	cl.recordRevision(t, ns, "cache")
	cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionRollout, metav1.ConditionTrue, cachev1alpha1.RolloutLive)

	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur := &cachev1alpha1.CacheInstance{}
		if err := cl.get(t, ns, "cache", cur); err != nil {
			return err
		}
		fc.change(cur)
		return cl.c.Update(ctx, cur)
	})
	if fc.want == refused {
		if !apierrors.IsInvalid(err) {
			t.Fatalf("the change was not refused: %v", err)
		}
		return
	}
	if err != nil {
		t.Fatal(err)
	}
	uid := sts.UID
	if fc.recreates {
		cl.orphanStatefulSet(t, ns, "cache")
		eventually(t, "the StatefulSet recreated", func() error {
			if err := cl.get(t, ns, "cache", sts); err != nil {
				return err
			}
			if sts.UID == uid {
				return fmt.Errorf("still the old StatefulSet")
			}
			return nil
		})
	}
	eventually(t, "the change reconciled", func() error {
		cur := &cachev1alpha1.CacheInstance{}
		if err := cl.get(t, ns, "cache", cur); err != nil {
			return err
		}
		if cur.Status.ObservedGeneration != cur.Generation {
			return fmt.Errorf("observedGeneration %d of %d", cur.Status.ObservedGeneration, cur.Generation)
		}
		return nil
	})
	before := sts.Generation
	if err := cl.get(t, ns, "cache", sts); err != nil {
		t.Fatal(err)
	}
	if sts.Generation != before || sts.UID != uid {
		cl.recordRevision(t, ns, "cache")
	}
	// The passes after the new revision decide; give them time, then the decision must hold.
	time.Sleep(1500 * time.Millisecond)
	got := cl.waitRolloutReason(t, ns, fc.want)
	time.Sleep(time.Second)
	if again := cl.waitRolloutReason(t, ns, fc.want); again.Message != got.Message {
		t.Errorf("the decision changed: %q -> %q", got.Message, again.Message)
	}
	// No pod runs the surge pod here, so even a warm replacement has not replaced the pod yet.
	p := &corev1.Pod{}
	if cl.get(t, ns, pod.Name, p) != nil || p.UID != pod.UID || !p.DeletionTimestamp.IsZero() {
		t.Fatalf("the pod was replaced (decision %s: %s)", got.Reason, got.Message)
	}
	surge := cl.get(t, ns, "cache-surge", &corev1.Pod{}) == nil
	if want := strings.Contains(got.Message, "cache-surge"); surge != want {
		t.Errorf("surge pod exists: %v, want %v (decision %s)", surge, want, got.Message)
	}
	t.Logf("spec change %s: pod template %s, Rollout %s: %s", fc.name, map[bool]string{true: "changed", false: "unchanged"}[sts.Generation != before || sts.UID != uid], got.Reason, got.Message)
}

// waitRolloutReason waits until the Rollout condition of instance "cache" has the reason at the
// current generation, and returns it.
func (cl *cluster) waitRolloutReason(t *testing.T, ns, reason string) metav1.Condition {
	t.Helper()
	var got metav1.Condition
	eventually(t, "Rollout "+reason, func() error {
		cur := &cachev1alpha1.CacheInstance{}
		if err := cl.get(t, ns, "cache", cur); err != nil {
			return err
		}
		c := meta.FindStatusCondition(cur.Status.Conditions, cachev1alpha1.ConditionRollout)
		if c == nil || c.Reason != reason || c.ObservedGeneration != cur.Generation {
			return fmt.Errorf("Rollout %+v at generation %d", c, cur.Generation)
		}
		got = *c
		return nil
	})
	return got
}
