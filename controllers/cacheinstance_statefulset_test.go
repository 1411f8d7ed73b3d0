package controllers

import (
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	appsv1ac "k8s.io/client-go/applyconfigurations/apps/v1"
	"k8s.io/utils/ptr"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
)

const testImage = "registry.example/iocache:test"

// statefulSetOf builds the StatefulSet for ci and reads it back as the typed object the API server
// would store, so tests can check fields by name.
func statefulSetOf(t *testing.T, ci *cachev1alpha1.CacheInstance) (*appsv1ac.StatefulSetApplyConfiguration, *appsv1.StatefulSet) {
	t.Helper()
	cfg, err := renderConfig(ci)
	if err != nil {
		t.Fatal(err)
	}
	ac, err := desiredStatefulSet(ci, cfg, testImage)
	if err != nil {
		t.Fatal(err)
	}
	sts, err := convertJSON[appsv1.StatefulSet](ac)
	if err != nil {
		t.Fatal(err)
	}
	return ac, sts
}

func withEverything(ci *cachev1alpha1.CacheInstance) {
	s := &ci.Spec
	s.Memory = resource.MustParse("2Gi")
	s.Auth = &cachev1alpha1.AuthSpec{ExistingSecret: "cache-password", Key: "redis-password"}
	s.Image = "registry.example/custom:1"
	s.ImagePullPolicy = corev1.PullAlways
	s.NodeSelector = map[string]string{"node.kubernetes.io/instance-type": "c7i.2xlarge"}
	s.Tolerations = []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "cache", Effect: corev1.TaintEffectNoSchedule}}
	s.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{NodeSelectorTerms: []corev1.NodeSelectorTerm{{
			MatchExpressions: []corev1.NodeSelectorRequirement{{Key: "cpu-manager", Operator: corev1.NodeSelectorOpIn, Values: []string{"static"}}},
		}}},
	}}
	s.PriorityClassName = "cache-critical"
	s.PodLabels = map[string]string{"team": "checkout", labelInstance: "someone-else"}
	s.PodAnnotations = map[string]string{"example.com/owner": "checkout", annotationConfigHash: "user-set"}
	s.Metrics.Port = 9200
}

func TestStatefulSetGolden(t *testing.T) {
	for _, tc := range []struct {
		name string
		ci   *cachev1alpha1.CacheInstance
	}{
		{"minimal", newInstance(4)},
		{"auth-scheduling-pod-metadata", newInstance(8, withEverything)},
		{"shared-pull-secrets-spread", newInstance(1, sharedKnobs)},
		{"persistence-rdb", newInstance(2, withRDB)},
		{"tls-auth-replicated-required", newInstance(2, withAuth, withTLSSecret, func(ci *cachev1alpha1.CacheInstance) {
			ci.Spec.Replicas = ptr.To[int32](2)
			ci.Spec.TLS.AuthClients = cachev1alpha1.TLSAuthClientsRequired
		})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg, err := renderConfig(tc.ci)
			if err != nil {
				t.Fatal(err)
			}
			image := tc.ci.Spec.Image
			if image == "" {
				image = testImage
			}
			sts, err := desiredStatefulSet(tc.ci, cfg, image)
			if err != nil {
				t.Fatal(err)
			}
			goldenYAML(t, "statefulset/"+tc.name+".yaml", sts)
		})
	}
}

// Guaranteed QoS needs every container's requests equal to its limits for CPU and memory; the
// static CPU manager also needs an integer CPU count.
func TestStatefulSetGuaranteedQoS(t *testing.T) {
	for _, cores := range []int32{1, 3, 16} {
		_, sts := statefulSetOf(t, newInstance(cores))
		for _, c := range sts.Spec.Template.Spec.Containers {
			req, lim := c.Resources.Requests, c.Resources.Limits
			if req.Cpu().Cmp(*lim.Cpu()) != 0 || req.Memory().Cmp(*lim.Memory()) != 0 {
				t.Errorf("%d cores: container %s requests %v differ from limits %v", cores, c.Name, req, lim)
			}
			if v, ok := req.Cpu().AsInt64(); !ok || v != int64(cores) {
				t.Errorf("%d cores: CPU request %s is not the integer %d", cores, req.Cpu(), cores)
			}
			if req.Memory().Cmp(resource.MustParse("1Gi")) != 0 {
				t.Errorf("memory request %s, want spec.memory 1Gi", req.Memory())
			}
		}
	}
}

// What Pod Security "restricted" checks, field by field; envtest also has the API server admit a pod.
func TestStatefulSetRestrictedSecurity(t *testing.T) {
	_, sts := statefulSetOf(t, newInstance(2, withEverything))
	pod := sts.Spec.Template.Spec
	psc := pod.SecurityContext
	if psc == nil || !ptr.Deref(psc.RunAsNonRoot, false) || ptr.Deref(psc.RunAsUser, 0) != nonRootID ||
		psc.SeccompProfile == nil || psc.SeccompProfile.Type != corev1.SeccompProfileTypeRuntimeDefault {
		t.Errorf("pod security context %+v: want runAsNonRoot, uid %d, seccomp RuntimeDefault", psc, nonRootID)
	}
	if ptr.Deref(pod.AutomountServiceAccountToken, true) {
		t.Error("the server pod mounts a service account token it never uses")
	}
	for _, c := range pod.Containers {
		sc := c.SecurityContext
		if sc == nil || ptr.Deref(sc.AllowPrivilegeEscalation, true) || !ptr.Deref(sc.ReadOnlyRootFilesystem, false) ||
			sc.Capabilities == nil || len(sc.Capabilities.Drop) != 1 || sc.Capabilities.Drop[0] != "ALL" || len(sc.Capabilities.Add) != 0 {
			t.Errorf("container %s security context %+v: want no privilege escalation, read-only root, drop ALL", c.Name, sc)
		}
	}
}

func TestStatefulSetPodMetadataStaysOperatorControlled(t *testing.T) {
	ci := newInstance(2, withEverything)
	_, sts := statefulSetOf(t, ci)
	tmpl := sts.Spec.Template
	if got := tmpl.Labels[labelInstance]; got != ci.Name {
		t.Errorf("pod label %s = %q: a user label must not unselect the pod from its StatefulSet", labelInstance, got)
	}
	if tmpl.Labels["team"] != "checkout" || tmpl.Annotations["example.com/owner"] != "checkout" {
		t.Errorf("user pod labels/annotations lost: %v %v", tmpl.Labels, tmpl.Annotations)
	}
	cfg, _ := renderConfig(ci)
	if got := tmpl.Annotations[annotationConfigHash]; got != cfg.RestartHash {
		t.Errorf("config hash annotation %q, want %q: a user annotation must not hide a config change", got, cfg.RestartHash)
	}
	for k, v := range sts.Spec.Selector.MatchLabels {
		if tmpl.Labels[k] != v {
			t.Errorf("selector %s=%s does not match the template's labels %v", k, v, tmpl.Labels)
		}
	}
}

func TestStatefulSetProbesAndFiles(t *testing.T) {
	_, sts := statefulSetOf(t, newInstance(2, withEverything))
	c := sts.Spec.Template.Spec.Containers[0]
	want := []string{serverBinary, "--check-health", "--port", "6379", "--password-file", "/etc/iocache/auth/redis-password"}
	for _, p := range []*corev1.Probe{c.ReadinessProbe, c.LivenessProbe} {
		if p == nil || p.Exec == nil || !slices.Equal(p.Exec.Command, want) {
			t.Errorf("probe %+v, want exec %v", p, want)
		}
	}
	if !slices.Equal(c.Command, []string{serverBinary, "/etc/iocache/iocache.conf"}) {
		t.Errorf("command %v", c.Command)
	}
	var projected *corev1.ProjectedVolumeSource
	for _, v := range sts.Spec.Template.Spec.Volumes {
		if v.Name == "config" {
			projected = v.Projected
		}
	}
	if projected == nil || len(projected.Sources) != 2 || projected.Sources[1].Secret == nil ||
		projected.Sources[1].Secret.Name != "cache-password" || projected.Sources[1].Secret.Items[0].Path != "auth/redis-password" {
		t.Fatalf("config volume %+v: want the ConfigMap and the Secret's key at auth/redis-password", projected)
	}

	_, plain := statefulSetOf(t, newInstance(2))
	pc := plain.Spec.Template.Spec.Containers[0]
	if len(pc.ReadinessProbe.Exec.Command) != 4 {
		t.Errorf("without auth the probe needs no password file: %v", pc.ReadinessProbe.Exec.Command)
	}
	if pc.Image != testImage {
		t.Errorf("image %q, want the operator's default %q", pc.Image, testImage)
	}
}

func TestRollout(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		r                    rollout
		current, ready       bool
		readyCurrentReplicas int32
	}{
		{"new StatefulSet, not observed", rollout{generation: 1, replicas: 1}, false, false, 0},
		{"observed, pod starting", rollout{generation: 1, observedGeneration: 1, replicas: 1, updatedReplicas: 1, currentRevision: "a", updateRevision: "a"}, true, false, 0},
		{"ready", rollout{generation: 1, observedGeneration: 1, replicas: 1, readyReplicas: 1, updatedReplicas: 1, currentRevision: "a", updateRevision: "a"}, true, true, 1},
		{"new template not yet observed, old pod ready", rollout{generation: 2, observedGeneration: 1, replicas: 1, readyReplicas: 1, updatedReplicas: 1, currentRevision: "a", updateRevision: "a"}, false, false, 0},
		{"rolling: old revision ready", rollout{generation: 2, observedGeneration: 2, replicas: 1, readyReplicas: 1, updatedReplicas: 0, currentRevision: "a", updateRevision: "b"}, false, false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := tc.r.current(); got != tc.current {
				t.Errorf("current() = %v, want %v", got, tc.current)
			}
			if got := tc.r.ready(); got != tc.ready {
				t.Errorf("ready() = %v, want %v", got, tc.ready)
			}
			if got := tc.r.readyCurrent(); got != tc.readyCurrentReplicas {
				t.Errorf("readyCurrent() = %d, want %d", got, tc.readyCurrentReplicas)
			}
		})
	}
}

func withRDB(ci *cachev1alpha1.CacheInstance) {
	ci.Spec.Persistence = cachev1alpha1.PersistenceSpec{Mode: cachev1alpha1.PersistenceRDB, Size: ptr.To(resource.MustParse("4Gi")),
		StorageClassName: ptr.To("fast-ssd"), SavePoints: "900 1 60 10000", WhenDeleted: cachev1alpha1.DeleteVolumeClaims}
}

// A persistent instance's /data is the claim, and the pod gives the server time to save at
// shutdown and to load at start; the claims go with the instance under whenDeleted Delete.
func TestStatefulSetPersistence(t *testing.T) {
	_, sts := statefulSetOf(t, newInstance(2, withRDB))
	if len(sts.Spec.VolumeClaimTemplates) != 1 || sts.Spec.VolumeClaimTemplates[0].Name != "data" {
		t.Fatalf("claim templates %+v", sts.Spec.VolumeClaimTemplates)
	}
	if p := sts.Spec.PersistentVolumeClaimRetentionPolicy; p == nil || p.WhenDeleted != appsv1.DeletePersistentVolumeClaimRetentionPolicyType {
		t.Errorf("retention %+v, want Delete", p)
	}
	mounted := false
	for _, m := range sts.Spec.Template.Spec.Containers[0].VolumeMounts {
		mounted = mounted || (m.Name == "data" && m.MountPath == dataDir)
	}
	if !mounted {
		t.Error("the claim is not mounted at /data")
	}
	// 1Gi at 50 MiB/s is about 20 s on top of the default 30.
	if g := ptr.Deref(sts.Spec.Template.Spec.TerminationGracePeriodSeconds, 0); g != 50 {
		t.Errorf("grace %d s, want 50", g)
	}
	_, plain := statefulSetOf(t, newInstance(2))
	if plain.Spec.Template.Spec.TerminationGracePeriodSeconds != nil || plain.Spec.Template.Spec.Containers[0].StartupProbe != nil ||
		plain.Spec.VolumeClaimTemplates != nil {
		t.Error("an instance without persistence got a grace period, a startup probe or claims")
	}
}
