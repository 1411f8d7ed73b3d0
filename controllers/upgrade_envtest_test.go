package controllers_test

import (
	"context"
	"fmt"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
	"github.com/iocache/iocache/controllers/operator"
	"github.com/iocache/iocache/server/testpeer"
)

// Upgrading the operator (a new manager with a new image, against the same API server) leaves an
// instance under upgradePolicy Manual exactly as it was, its pod template unchanged, and says an
// upgrade is available; an instance under Rolling moves to the new image; switching the first to
// Rolling moves it too.
func TestOperatorUpgradeLeavesManualInstancesAlone(t *testing.T) {
	testpeer.KubebuilderAssets(t)
	env := &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join("..", "config", "crd", "bases")}, ErrorIfCRDPathMissing: true}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	c, err := client.New(cfg, client.Options{Scheme: operator.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	startOperator := func(image string) func() {
		stop, err := startManager(cfg, operator.Options{MetricsAddr: "0", ProbeAddr: "0", Image: image, MaxConcurrent: 2, SeveralManagers: true})
		if err != nil {
			t.Fatal(err)
		}
		return func() {
			if err := stop(); err != nil {
				t.Errorf("manager: %v", err)
			}
		}
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "upgrade"}}
	if err := c.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	for _, policy := range []cachev1alpha1.UpgradePolicy{"", cachev1alpha1.UpgradeRolling} {
		name := "manual"
		if policy != "" {
			name = "rolling"
		}
		ci := instanceIn(ns.Name, name, 2, func(ci *cachev1alpha1.CacheInstance) {
			ci.Spec.UpgradePolicy = policy
			ci.Spec.Benchmark.ValidateOnChange = ptr.To(false)
		})
		if err := c.Create(ctx, ci); err != nil {
			t.Fatal(err)
		}
	}
	const v1, v2 = "registry.example/iocache:v1", "registry.example/iocache:v2"
	template := func(name string) (*corev1.PodTemplateSpec, error) {
		sts := &appsv1.StatefulSet{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: name}, sts); err != nil {
			return nil, err
		}
		return &sts.Spec.Template, nil
	}
	instance := func(name string) *cachev1alpha1.CacheInstance {
		ci := &cachev1alpha1.CacheInstance{}
		if err := c.Get(ctx, client.ObjectKey{Namespace: ns.Name, Name: name}, ci); err != nil {
			t.Fatal(err)
		}
		return ci
	}
	waitFor := func(what string, check func() error) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for err := check(); err != nil; err = check() {
			if time.Now().After(deadline) {
				t.Fatalf("%s: %v", what, err)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	imageIs := func(name, image string) func() error {
		return func() error {
			tmpl, err := template(name)
			if err != nil {
				return err
			}
			if got := tmpl.Spec.Containers[0].Image; got != image {
				return fmt.Errorf("%s runs %s", name, got)
			}
			if got := instance(name).Status.Image; got != image {
				return fmt.Errorf("%s: status.image %q", name, got)
			}
			return nil
		}
	}

	stop := startOperator(v1)
	waitFor("both instances on v1", func() error {
		if err := imageIs("manual", v1)(); err != nil {
			return err
		}
		return imageIs("rolling", v1)()
	})
	before, err := template("manual")
	if err != nil {
		t.Fatal(err)
	}
	if got := instance("manual").Spec.UpgradePolicy; got != cachev1alpha1.UpgradeManual {
		t.Errorf("upgradePolicy defaults to %q, want Manual", got)
	}
	stop()

	stop = startOperator(v2)
	defer func() { stop() }()
	waitFor("the Rolling instance on v2", imageIs("rolling", v2))
	waitFor("the Manual instance told of v2", func() error {
		if got := instance("manual").Status.PendingImage; got != v2 {
			return fmt.Errorf("pendingImage %q", got)
		}
		return nil
	})
	after, err := template("manual")
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(before, after) {
		t.Errorf("the Manual instance's pod template changed with the operator's upgrade:\nbefore %+v\nafter  %+v", before, after)
	}
	if err := imageIs("manual", v1)(); err != nil {
		t.Error(err)
	}
	waitFor("an UpgradeAvailable event", func() error {
		var list eventsv1.EventList
		if err := c.List(ctx, &list, client.InNamespace(ns.Name)); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Reason == "UpgradeAvailable" && e.Regarding.Name == "manual" && strings.Contains(e.Note, v2) && strings.Contains(e.Note, v1) {
				return nil
			}
		}
		return fmt.Errorf("none among %d events", len(list.Items))
	})

	ci := instance("manual")
	ci.Spec.UpgradePolicy = cachev1alpha1.UpgradeRolling
	if err := c.Update(ctx, ci); err != nil {
		t.Fatal(err)
	}
	waitFor("the Manual instance on v2 once it asks to roll", imageIs("manual", v2))
	if got := instance("manual").Status.PendingImage; got != "" {
		t.Errorf("pendingImage %q after the upgrade", got)
	}
}

// An operator upgrade under upgradePolicy Rolling gives a single pod without persistence a new
// image, which needs a new pod: the operator says so before anything happens (Rollout Warm, the
// image named), carries the data through a surge pod, and without room for that pod waits
// (WaitingForRoom) with the pod and its keys in place.
func TestOperatorUpgradeRollingKeepsASinglePodWarm(t *testing.T) {
	testpeer.KubebuilderAssets(t)
	env := &envtest.Environment{CRDDirectoryPaths: []string{filepath.Join("..", "config", "crd", "bases")}, ErrorIfCRDPathMissing: true}
	cfg, err := env.Start()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	c, err := client.New(cfg, client.Options{Scheme: operator.NewScheme()})
	if err != nil {
		t.Fatal(err)
	}
	cl := &cluster{env: env, cfg: cfg, c: c}
	ctx := context.Background()
	startOperator := func(image string) func() {
		stop, err := startManager(cfg, operator.Options{MetricsAddr: "0", ProbeAddr: "0", Image: image, MaxConcurrent: 2, SeveralManagers: true,
			ServerAddress: testServerAddress, OperatorNamespace: testOperatorNamespace})
		if err != nil {
			t.Fatal(err)
		}
		return func() {
			if err := stop(); err != nil {
				t.Errorf("manager: %v", err)
			}
		}
	}
	const v1, v2 = "registry.example/iocache:v1", "registry.example/iocache:v2"
	ns := cl.namespace(t)
	ci := instanceIn(ns, "cache", 1, func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.UpgradePolicy = cachev1alpha1.UpgradeRolling
		ci.Spec.Benchmark.ValidateOnChange = ptr.To(false)
	})
	if err := c.Create(ctx, ci); err != nil {
		t.Fatal(err)
	}
	stop := startOperator(v1)
	sts := &appsv1.StatefulSet{}
	eventually(t, "the StatefulSet", func() error { return cl.get(t, ns, "cache", sts) })
	addr := startTestServerWith(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2})
	defer rdb.Close()
	if err := rdb.Set(ctx, "user:1", "kept", 0).Err(); err != nil {
		t.Fatal(err)
	}
	pod := cl.servePod(t, ns, "cache", addr)
	cl.updatePod(t, ns, pod.Name, func(p *corev1.Pod) {
		p.Labels[appsv1.ControllerRevisionHashLabelKey] = fmt.Sprintf("cache-%d", sts.Generation)
	})
	cl.recordRevision(t, ns, "cache")
	cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionRollout, metav1.ConditionTrue, cachev1alpha1.RolloutLive)
	stop()

	stop = startOperator(v2)
	defer func() { stop() }()
	eventually(t, "the template on v2", func() error {
		if err := cl.get(t, ns, "cache", sts); err != nil {
			return err
		}
		if got := sts.Spec.Template.Spec.Containers[0].Image; got != v2 {
			return fmt.Errorf("image %s", got)
		}
		return nil
	})
	cl.recordRevision(t, ns, "cache")
	warm := cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionRollout, metav1.ConditionTrue, cachev1alpha1.RolloutWarm)
	if m := findCondition(warm.Status.Conditions, cachev1alpha1.ConditionRollout).Message; !strings.Contains(m, "image "+v1+" -> "+v2) {
		t.Errorf("Rollout %q does not name the image change", m)
	}
	cl.noRoomForSurge(t, ns, "cache")
	cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionRollout, metav1.ConditionFalse, cachev1alpha1.RolloutWaitingForRoom)
	time.Sleep(2 * time.Second) // passes go on; none may replace the pod
	p := &corev1.Pod{}
	if err := cl.get(t, ns, pod.Name, p); err != nil || p.UID != pod.UID || !p.DeletionTimestamp.IsZero() {
		t.Fatalf("the pod was replaced by the operator's upgrade (%v)", err)
	}
	if rdb.Get(ctx, "user:1").Val() != "kept" {
		t.Fatal("the data is gone")
	}
}
