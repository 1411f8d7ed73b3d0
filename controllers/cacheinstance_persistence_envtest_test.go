package controllers_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
)

// Persistence RDB puts /data on a volume claim per pod, keeps the claims when the instance goes
// (whenDeleted Retain), gives the server time to save at shutdown and to load at start, and renders
// the save points; the save points and the persistent mode change live, while the claim's class
// cannot change and its size cannot shrink: the API server refuses it with a message, instead of
// the operator replacing the StatefulSet and the data. (Growing is
// TestPersistenceSizeGrowsTheClaims; turning persistence on or off is
// TestTurningPersistenceOnOrOffKeepsTheData.)
func TestPersistenceRDB(t *testing.T) {
	cl := startEnv(t)
	ns := cl.namespace(t)
	ctx := context.Background()
	const password = "persistence-password"
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cache-auth", Namespace: ns}, Data: map[string][]byte{"password": []byte(password)}}
	if err := cl.c.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	ci := instanceIn(ns, "cache", 2, func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.Auth = &cachev1alpha1.AuthSpec{ExistingSecret: "cache-auth"}
		ci.Spec.Persistence = cachev1alpha1.PersistenceSpec{Mode: cachev1alpha1.PersistenceRDB,
			Size: ptr.To(resource.MustParse("2Gi")), StorageClassName: ptr.To("fast-ssd")}
		ci.Spec.Benchmark.ValidateOnChange = ptr.To(false)
	})
	if err := cl.c.Create(ctx, ci); err != nil {
		t.Fatal(err)
	}
	cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionReady, metav1.ConditionFalse, "RollingOut")

	sts := &appsv1.StatefulSet{}
	if err := cl.get(t, ns, "cache", sts); err != nil {
		t.Fatal(err)
	}
	if n := len(sts.Spec.VolumeClaimTemplates); n != 1 {
		t.Fatalf("%d volume claim templates, want 1 (data)", n)
	}
	vct := sts.Spec.VolumeClaimTemplates[0]
	if vct.Name != "data" || ptr.Deref(vct.Spec.StorageClassName, "") != "fast-ssd" ||
		vct.Spec.Resources.Requests.Storage().Cmp(resource.MustParse("2Gi")) != 0 ||
		len(vct.Spec.AccessModes) != 1 || vct.Spec.AccessModes[0] != corev1.ReadWriteOnce {
		t.Errorf("claim template %+v, want data, 2Gi, fast-ssd, ReadWriteOnce", vct.Spec)
	}
	if p := sts.Spec.PersistentVolumeClaimRetentionPolicy; p == nil || p.WhenDeleted != appsv1.RetainPersistentVolumeClaimRetentionPolicyType {
		t.Errorf("retention %+v, want the claims retained when the instance is deleted", p)
	}
	pod := sts.Spec.Template.Spec
	for _, v := range pod.Volumes {
		if v.Name == "data" {
			t.Errorf("the pod template has a data volume of its own (%+v): /data must be the claim", v.VolumeSource)
		}
	}
	if g := ptr.Deref(pod.TerminationGracePeriodSeconds, 30); g < 50 {
		t.Errorf("terminationGracePeriodSeconds %d: too short to save 1Gi at shutdown", g)
	}
	if sp := pod.Containers[0].StartupProbe; sp == nil || sp.PeriodSeconds*sp.FailureThreshold < 300 {
		t.Errorf("startup probe %+v: the server needs minutes to load a snapshot before it listens", sp)
	}
	cm := &corev1.ConfigMap{}
	if err := cl.get(t, ns, "cache-config", cm); err != nil {
		t.Fatal(err)
	}
	if conf := cm.Data["iocache.conf"]; !strings.Contains(conf, "\nsave 3600 1 300 100 60 10000\n") || !strings.Contains(conf, "\ndir /data\n") {
		t.Errorf("config without Redis's save points in /data:\n%s", conf)
	}

	// The save points change live, on the running server, and the pod template stays.
	addr := startTestServer(t, password)
	cl.servePod(t, ns, "cache", addr)
	cl.simulateRollout(t, ns, "cache")
	cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionConfigApplied, metav1.ConditionTrue, "AppliedLive")
	generation := sts.Generation
	cl.update(t, ns, "cache", func(ci *cachev1alpha1.CacheInstance) { ci.Spec.Persistence.SavePoints = "60 1" })
	cl.waitEventSaying(t, ns, "cache", "AppliedLive", "save 3600 1 300 100 60 10000 -> 60 1")
	rdb := redis.NewClient(&redis.Options{Addr: addr, Password: password, Protocol: 2})
	defer rdb.Close()
	if got := rdb.ConfigGet(ctx, "save").Val()["save"]; got != "60 1" {
		t.Errorf("CONFIG GET save %q after the change, want 60 1", got)
	}
	if err := cl.get(t, ns, "cache", sts); err != nil {
		t.Fatal(err)
	}
	if sts.Generation != generation {
		t.Errorf("StatefulSet generation %d -> %d: a change of save points must not replace the pod", generation, sts.Generation)
	}

	// RDB to RDBAndAOF with appendfsync always, and on to AOF: the claim stays, so the server
	// starts (and stops) its append-only file live, keeping its data and its pod.
	if err := rdb.Set(ctx, "user:1", "kept", 0).Err(); err != nil {
		t.Fatal(err)
	}
	cl.update(t, ns, "cache", func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.Persistence.Mode = cachev1alpha1.PersistenceRDBAndAOF
		ci.Spec.Persistence.AppendFsync = "always"
	})
	cl.waitEventSaying(t, ns, "cache", "AppliedLive", "appendonly no -> yes")
	eventually(t, "the append-only file on, fsync always", func() error {
		got := rdb.ConfigGet(ctx, "append*").Val()
		if got["appendonly"] != "yes" || got["appendfsync"] != "always" {
			return fmt.Errorf("CONFIG GET append* = %v", got)
		}
		return nil
	})
	cl.update(t, ns, "cache", func(ci *cachev1alpha1.CacheInstance) { ci.Spec.Persistence.Mode = cachev1alpha1.PersistenceAOF })
	cl.waitEventSaying(t, ns, "cache", "AppliedLive", `save 60 1 -> ""`)
	if err := cl.get(t, ns, "cache", sts); err != nil {
		t.Fatal(err)
	}
	if sts.Generation != generation || rdb.Get(ctx, "user:1").Val() != "kept" || rdb.ConfigGet(ctx, "appendonly").Val()["appendonly"] != "yes" {
		t.Errorf("after RDB -> RDBAndAOF -> AOF: StatefulSet generation %d -> %d, user:1 %q, appendonly %v",
			generation, sts.Generation, rdb.Get(ctx, "user:1").Val(), rdb.ConfigGet(ctx, "appendonly").Val())
	}

	// The claim cannot be replaced or shrunk: the API server says so.
	for _, tc := range []struct {
		name   string
		mutate func(*cachev1alpha1.PersistenceSpec)
		want   string
	}{
		{"size", func(p *cachev1alpha1.PersistenceSpec) { p.Size = ptr.To(resource.MustParse("1Gi")) },
			"persistence.size can only grow"},
		{"class", func(p *cachev1alpha1.PersistenceSpec) { p.StorageClassName = ptr.To("slow") },
			"persistence.storageClassName cannot change on an existing instance"},
	} {
		// The operator writes the status meanwhile: a conflict is tried again, on the newer object.
		err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
			got := &cachev1alpha1.CacheInstance{}
			if err := cl.get(t, ns, "cache", got); err != nil {
				return err
			}
			tc.mutate(&got.Spec.Persistence)
			return cl.c.Update(ctx, got)
		})
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("changing the %s: %v, want Invalid with %q", tc.name, err, tc.want)
		}
	}
}

// Persistence is off by default, and an instance without it takes no snapshots: a save would only
// cost CPU for a file that goes with the pod. Turning it on later is accepted: the warm rollout that
// follows is TestEverySpecFieldIsDecided's "None to RDB" case.
func TestPersistenceNoneByDefault(t *testing.T) {
	cl := startEnv(t)
	ns := cl.namespace(t)
	ci := instanceIn(ns, "cache", 1, func(ci *cachev1alpha1.CacheInstance) { ci.Spec.Benchmark.ValidateOnChange = ptr.To(false) })
	if err := cl.c.Create(context.Background(), ci); err != nil {
		t.Fatal(err)
	}
	cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionReady, metav1.ConditionFalse, "RollingOut")
	got := &cachev1alpha1.CacheInstance{}
	if err := cl.get(t, ns, "cache", got); err != nil {
		t.Fatal(err)
	}
	if got.Spec.Persistence.Mode != cachev1alpha1.PersistenceNone {
		t.Errorf("persistence.mode defaulted to %q, want None", got.Spec.Persistence.Mode)
	}
	sts := &appsv1.StatefulSet{}
	if err := cl.get(t, ns, "cache", sts); err != nil {
		t.Fatal(err)
	}
	if len(sts.Spec.VolumeClaimTemplates) != 0 {
		t.Errorf("volume claim templates %+v without persistence", sts.Spec.VolumeClaimTemplates)
	}
	cm := &corev1.ConfigMap{}
	if err := cl.get(t, ns, "cache-config", cm); err != nil {
		t.Fatal(err)
	}
	if conf := cm.Data["iocache.conf"]; !strings.Contains(conf, "\nsave \"\"\n") {
		t.Errorf("config without save \"\":\n%s", conf)
	}
	got.Spec.Persistence = cachev1alpha1.PersistenceSpec{Mode: cachev1alpha1.PersistenceRDB, Size: ptr.To(resource.MustParse("1Gi"))}
	if err := cl.c.Update(context.Background(), got); err != nil {
		t.Errorf("turning persistence on: %v, want it accepted", err)
	}
}
