package controllers_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
)

// The scale subresource, through which a HorizontalPodAutoscaler, KEDA or `kubectl scale` drive
// spec.replicas: reading it gives the pods that exist and their selector; writing it changes
// spec.replicas (live: replicas are added next to the running primary), within the schema's
// bounds.
func TestScaleSubresource(t *testing.T) {
	cl := startEnv(t)
	ns := cl.namespace(t)
	ctx := context.Background()
	ci := instanceIn(ns, "cache", 1, func(ci *cachev1alpha1.CacheInstance) { ci.Spec.Benchmark.ValidateOnChange = ptr.To(false) })
	if err := cl.c.Create(ctx, ci); err != nil {
		t.Fatal(err)
	}
	sts := &appsv1.StatefulSet{}
	eventually(t, "the StatefulSet", func() error { return cl.get(t, ns, "cache", sts) })
	cl.simulateRollout(t, ns, "cache")

	scale := &autoscalingv1.Scale{}
	eventually(t, "the scale subresource", func() error {
		if err := cl.c.SubResource("scale").Get(ctx, ci, scale); err != nil {
			return err
		}
		if scale.Spec.Replicas != 1 || scale.Status.Replicas != 1 || scale.Status.Selector == "" {
			return fmt.Errorf("scale %+v", scale)
		}
		return nil
	})
	for k, v := range sts.Spec.Selector.MatchLabels {
		if !strings.Contains(scale.Status.Selector, k+"="+v) {
			t.Errorf("scale selector %q does not select the StatefulSet's pods (%v)", scale.Status.Selector, sts.Spec.Selector.MatchLabels)
		}
	}

	scale.Spec.Replicas = 3
	if err := cl.c.SubResource("scale").Update(ctx, ci, client.WithSubResourceBody(scale)); err != nil {
		t.Fatal(err)
	}
	eventually(t, "spec.replicas and the StatefulSet at 3", func() error {
		cur := &cachev1alpha1.CacheInstance{}
		if err := cl.get(t, ns, "cache", cur); err != nil {
			return err
		}
		if err := cl.get(t, ns, "cache", sts); err != nil {
			return err
		}
		if ptr.Deref(cur.Spec.Replicas, 0) != 3 || ptr.Deref(sts.Spec.Replicas, 0) != 3 {
			return fmt.Errorf("spec.replicas %v, StatefulSet replicas %v", cur.Spec.Replicas, sts.Spec.Replicas)
		}
		return nil
	})

	// The schema's bounds hold through /scale as through the object. The operator writes the
	// object too (status, events' rollouts), so a stale resourceVersion is read again.
	var err error
	for range 10 {
		if err = cl.c.SubResource("scale").Get(ctx, ci, scale); err != nil {
			t.Fatal(err)
		}
		scale.Spec.Replicas = 12
		if err = cl.c.SubResource("scale").Update(ctx, ci, client.WithSubResourceBody(scale)); !apierrors.IsConflict(err) {
			break
		}
	}
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.replicas") {
		t.Errorf("scaling to 12 replicas: %v, want the schema's refusal of spec.replicas", err)
	}
}
