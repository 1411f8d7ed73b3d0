package controllers_test

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
)

// dataClaim creates data-<name>-0 as the StatefulSet controller would from the claim template,
// bound (only a bound claim may grow) with the capacity it asked for.
func (cl *cluster) dataClaim(t *testing.T, ns, name, class string) {
	t.Helper()
	ctx := context.Background()
	sts := &appsv1.StatefulSet{}
	if err := cl.get(t, ns, name, sts); err != nil {
		t.Fatal(err)
	}
	tmpl := sts.Spec.VolumeClaimTemplates[0]
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Name: "data-" + name + "-0", Namespace: ns, Labels: tmpl.Labels},
		Spec: *tmpl.Spec.DeepCopy()}
	pvc.Spec.StorageClassName = ptr.To(class)
	pvc.Spec.VolumeName = "pv-" + ns
	if err := cl.c.Create(ctx, pvc); err != nil {
		t.Fatal(err)
	}
	pvc.Status = corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound, AccessModes: pvc.Spec.AccessModes,
		Capacity: corev1.ResourceList{corev1.ResourceStorage: pvc.Spec.Resources.Requests[corev1.ResourceStorage]}}
	if err := cl.c.Status().Update(ctx, pvc); err != nil {
		t.Fatal(err)
	}
}

// A larger persistence.size grows the running pods' claims instead of being refused: the
// StatefulSet keeps its claim template (which cannot change), each claim asks for the new size
// where the StorageClass allows expansion, and a class that does not is reported as Degraded with
// the API server's reason, the claim keeping its size.
func TestPersistenceSizeGrowsTheClaims(t *testing.T) {
	cl := startEnv(t)
	ns := cl.namespace(t)
	ctx := context.Background()
	expandable, fixed := "expandable-"+ns, "fixed-"+ns
	for _, sc := range []*storagev1.StorageClass{
		{ObjectMeta: metav1.ObjectMeta{Name: expandable}, Provisioner: "example.com/csi", AllowVolumeExpansion: ptr.To(true)},
		{ObjectMeta: metav1.ObjectMeta{Name: fixed}, Provisioner: "example.com/csi", AllowVolumeExpansion: ptr.To(false)},
	} {
		if err := cl.c.Create(ctx, sc); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = cl.c.Delete(context.Background(), sc) })
	}
	for name, class := range map[string]string{"grows": expandable, "stays": fixed} {
		ci := instanceIn(ns, name, 1, func(ci *cachev1alpha1.CacheInstance) {
			ci.Spec.Persistence = cachev1alpha1.PersistenceSpec{Mode: cachev1alpha1.PersistenceRDB,
				Size: ptr.To(resource.MustParse("1Gi")), StorageClassName: ptr.To(class)}
			ci.Spec.Benchmark.ValidateOnChange = ptr.To(false)
		})
		if err := cl.c.Create(ctx, ci); err != nil {
			t.Fatal(err)
		}
		cl.waitCondition(t, ns, name, cachev1alpha1.ConditionReady, metav1.ConditionFalse, "RollingOut")
		cl.dataClaim(t, ns, name, class)
		cl.simulateRollout(t, ns, name)
		cl.waitCondition(t, ns, name, cachev1alpha1.ConditionReady, metav1.ConditionTrue, "PodsReady")
		cl.update(t, ns, name, func(ci *cachev1alpha1.CacheInstance) { ci.Spec.Persistence.Size = ptr.To(resource.MustParse("3Gi")) })
	}

	pvc := &corev1.PersistentVolumeClaim{}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if err := cl.get(t, ns, "data-grows-0", pvc); err != nil {
			t.Fatal(err)
		}
		if q := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; q.Cmp(resource.MustParse("3Gi")) == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("claim data-grows-0 still asks for %v, want 3Gi", pvc.Spec.Resources.Requests)
		}
	}
	cl.waitEventSaying(t, ns, "grows", "ExpandingVolume", "data-grows-0 from 1Gi to 3Gi")
	sts := &appsv1.StatefulSet{}
	if err := cl.get(t, ns, "grows", sts); err != nil {
		t.Fatal(err)
	}
	if q := sts.Spec.VolumeClaimTemplates[0].Spec.Resources.Requests[corev1.ResourceStorage]; q.Cmp(resource.MustParse("1Gi")) != 0 {
		t.Errorf("the claim template asks for %s: a StatefulSet's claim template cannot change, it must stay 1Gi", q.String())
	}
	ci := cl.waitCondition(t, ns, "grows", cachev1alpha1.ConditionDegraded, metav1.ConditionFalse, "AsExpected")
	if ci.Status.ObservedGeneration != ci.Generation {
		t.Errorf("status describes generation %d of %d", ci.Status.ObservedGeneration, ci.Generation)
	}

	ci = cl.waitCondition(t, ns, "stays", cachev1alpha1.ConditionDegraded, metav1.ConditionTrue, "VolumeExpansionRefused")
	msg := findCondition(ci.Status.Conditions, cachev1alpha1.ConditionDegraded).Message
	for _, want := range []string{"data-stays-0 cannot grow from 1Gi to 3Gi", "storageclass", "allowVolumeExpansion: true"} {
		if !strings.Contains(msg, want) {
			t.Errorf("Degraded says %q; want it to say %q", msg, want)
		}
	}
	if err := cl.get(t, ns, "data-stays-0", pvc); err != nil {
		t.Fatal(err)
	}
	if q := pvc.Spec.Resources.Requests[corev1.ResourceStorage]; q.Cmp(resource.MustParse("1Gi")) != 0 {
		t.Errorf("a claim whose class cannot grow asks for %s", q.String())
	}
}
