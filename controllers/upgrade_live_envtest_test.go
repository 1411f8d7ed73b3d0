package controllers_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
	"github.com/iocache/iocache/controllers"
	"github.com/iocache/iocache/controllers/operator"
	"github.com/iocache/iocache/server/testpeer"
)

const configHashKey = "cache.iocache.dev/config-hash"

// Upgrading from the operator before issue #30 (b0d1362), which counted the names of live
// spec.config directives in the pod template's config hash, replaces no pod of an instance whose
// spec.config has one (hz): the new template differs only in that hash, the pod runs exactly the
// start-only config it asks for, so the operator relabels the pod (revision and hash) instead of
// deleting it, the keys stay, and later passes change nothing. A start-only change afterwards needs
// a new pod; without room for the surge pod it waits (WaitingForRoom), the pod keeping its keys,
// and replaces the pod once spec.rollout.allowColdRestart allows it.
//
// The old operator is played by stopping the operator and giving the StatefulSet, its revision,
// the pod and the status what the old one wrote: the same objects but for the hash (the
// rendering of everything else did not change) and status.pods without live names. The server
// standing in for the pod is a real iocache-server holding keys.
func TestOperatorUpgradeKeepsPodsOfLiveSpecConfig(t *testing.T) {
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
	startOperator := func() func() {
		stop, err := startManager(cfg, operator.Options{MetricsAddr: "0", ProbeAddr: "0", Image: testImage, MaxConcurrent: 2, SeveralManagers: true,
			ServerAddress: testServerAddress, SecretPollInterval: 2 * time.Second, OperatorNamespace: testOperatorNamespace})
		if err != nil {
			t.Fatal(err)
		}
		return func() {
			if err := stop(); err != nil {
				t.Errorf("manager: %v", err)
			}
		}
	}
	ns := cl.namespace(t)
	const password = "upgrade-live-password"
	if err := c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cache-auth", Namespace: ns},
		Data: map[string][]byte{"password": []byte(password)}}); err != nil {
		t.Fatal(err)
	}
	addr := startTestServer(t, password)
	rdb := redis.NewClient(&redis.Options{Addr: addr, Password: password, Protocol: 2})
	defer rdb.Close()
	const keys = 1000
	pipe := rdb.Pipeline()
	for i := range keys {
		pipe.Set(ctx, fmt.Sprintf("key:%d", i), "kept", 0)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	ci := instanceIn(ns, "cache", 2, func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.Auth = &cachev1alpha1.AuthSpec{ExistingSecret: "cache-auth"}
		ci.Spec.Config = map[string]cachev1alpha1.ConfigValue{"hz": "20"}
		ci.Spec.Benchmark.ValidateOnChange = ptr.To(false)
	})
	if err := c.Create(ctx, ci); err != nil {
		t.Fatal(err)
	}

	// The instance as the old operator ran it: rendered, its pod up, hz set.
	stop := startOperator()
	cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionReady, metav1.ConditionFalse, "RollingOut")
	pod := cl.servePod(t, ns, "cache", addr)
	cl.simulateRollout(t, ns, "cache")
	cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionConfigApplied, metav1.ConditionTrue, "AppliedLive")
	stop()
	if got := rdb.ConfigGet(ctx, "hz").Val()["hz"]; got != "20" {
		t.Fatalf("hz %s before the upgrade", got)
	}
	if err := cl.get(t, ns, "cache", ci); err != nil {
		t.Fatal(err)
	}
	if ci.Spec.Persistence.Mode.Persistent() || ptr.Deref(ci.Spec.Replicas, 1) > 1 {
		t.Fatal("the instance must be one the replacement would empty: no persistence, one pod")
	}
	legacy, err := controllers.LegacyRestartHash(ci)
	if err != nil {
		t.Fatal(err)
	}
	sts := &appsv1.StatefulSet{}
	if err := cl.get(t, ns, "cache", sts); err != nil {
		t.Fatal(err)
	}
	current := sts.Spec.Template.Annotations[configHashKey]
	if current == legacy {
		t.Fatalf("the old and new config hash are both %s: the test would show nothing", legacy)
	}
	sts.Spec.Template.Annotations[configHashKey] = legacy
	if err := c.Update(ctx, sts); err != nil {
		t.Fatal(err)
	}
	oldRev := cl.recordRevision(t, ns, "cache")
	cl.updatePod(t, ns, pod.Name, func(p *corev1.Pod) {
		p.Annotations[configHashKey] = legacy
		p.Labels[appsv1.ControllerRevisionHashLabelKey] = oldRev
	})
	cl.simulateRollout(t, ns, "cache")
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		ci := &cachev1alpha1.CacheInstance{}
		if err := cl.get(t, ns, "cache", ci); err != nil {
			return err
		}
		ci.Status.RestartHash = legacy
		for i := range ci.Status.Pods {
			ci.Status.Pods[i].Live = nil
		}
		return c.Status().Update(ctx, ci)
	})
	if err != nil {
		t.Fatal(err)
	}

	// The upgraded operator.
	stop = startOperator()
	defer func() { stop() }()
	eventually(t, "the new template", func() error {
		if err := cl.get(t, ns, "cache", sts); err != nil {
			return err
		}
		if got := sts.Spec.Template.Annotations[configHashKey]; got != current {
			return fmt.Errorf("config hash %s, want %s", got, current)
		}
		return nil
	})
	// The StatefulSet controller records the new revision; with OnDelete it replaces nothing.
	newRev := cl.recordRevision(t, ns, "cache")
	if newRev == oldRev {
		t.Fatal("no new revision")
	}
	keptPod := func(step string) *corev1.Pod {
		t.Helper()
		p := &corev1.Pod{}
		if err := cl.get(t, ns, pod.Name, p); err != nil {
			t.Fatalf("%s: the pod is gone: %v", step, err)
		}
		if p.UID != pod.UID || !p.DeletionTimestamp.IsZero() {
			t.Fatalf("%s: pod replaced or being deleted (UID %s -> %s, deletion %v)", step, pod.UID, p.UID, p.DeletionTimestamp)
		}
		if n := rdb.DBSize(ctx).Val(); n != keys {
			t.Fatalf("%s: DBSIZE %d, want %d", step, n, keys)
		}
		return p
	}
	eventually(t, "the pod relabelled", func() error {
		p := keptPod("relabelling")
		if p.Labels[appsv1.ControllerRevisionHashLabelKey] != newRev || p.Annotations[configHashKey] != current {
			return fmt.Errorf("pod revision %s, config hash %s", p.Labels[appsv1.ControllerRevisionHashLabelKey], p.Annotations[configHashKey])
		}
		return nil
	})
	cl.countUpdated(t, ns, "cache")
	cl.waitEventSaying(t, ns, "cache", "RestartHashUpdated", legacy+" -> "+current)
	cl.waitEventSaying(t, ns, "cache", "RestartHashUpdated", "Pod "+pod.Name+" kept")
	eventually(t, "the instance settled", func() error {
		ci := &cachev1alpha1.CacheInstance{}
		if err := cl.get(t, ns, "cache", ci); err != nil {
			return err
		}
		if ci.Status.RestartHash != current || ci.Status.AppliedConfigHash != ci.Status.ConfigHash || len(ci.Status.Pods) != 1 ||
			!slices.Contains(ci.Status.Pods[0].Live, "hz") || ci.Status.ObservedGeneration != ci.Generation {
			return fmt.Errorf("status: restart hash %s, config %s applied %s, pods %+v", ci.Status.RestartHash, ci.Status.ConfigHash, ci.Status.AppliedConfigHash, ci.Status.Pods)
		}
		if c := findCondition(ci.Status.Conditions, cachev1alpha1.ConditionProgressing); c == nil || c.Reason != "RolloutComplete" {
			return fmt.Errorf("Progressing %+v", c)
		}
		return nil
	})

	// Later passes change nothing: no new template, the pod as it is.
	generation := sts.Generation
	before := keptPod("settled")
	cl.touchPod(t, before, "1")
	time.Sleep(2 * time.Second)
	if err := cl.get(t, ns, "cache", sts); err != nil {
		t.Fatal(err)
	}
	if sts.Generation != generation {
		t.Errorf("StatefulSet generation %d -> %d on a pass with nothing to do", generation, sts.Generation)
	}
	after := keptPod("a later pass")
	if after.Labels[appsv1.ControllerRevisionHashLabelKey] != newRev || after.Annotations[configHashKey] != current {
		t.Errorf("pod revision %s, config hash %s after a later pass", after.Labels[appsv1.ControllerRevisionHashLabelKey], after.Annotations[configHashKey])
	}
	var events eventsv1.EventList
	if err := c.List(ctx, &events, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for _, e := range events.Items {
		if e.Reason == "ReplacingPod" || e.Reason == "Rolled" || e.Action == "RollPods" {
			t.Errorf("event %s: %s", e.Reason, e.Note)
		}
	}
	if got := rdb.ConfigGet(ctx, "hz").Val()["hz"]; got != "20" {
		t.Errorf("hz %s after the upgrade", got)
	}

	// A directive read only at start needs a new pod: a surge pod would carry the data, but no
	// node has room for it, so the instance waits, the pod serving with its data, and the pod is
	// replaced once the user allows a cold restart.
	cl.update(t, ns, "cache", func(ci *cachev1alpha1.CacheInstance) { ci.Spec.Config["databases"] = "32" })
	eventually(t, "the template for databases 32", func() error {
		if err := cl.get(t, ns, "cache", sts); err != nil {
			return err
		}
		if sts.Generation == generation {
			return fmt.Errorf("generation still %d", generation)
		}
		return nil
	})
	cl.recordRevision(t, ns, "cache")
	cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionRollout, metav1.ConditionTrue, cachev1alpha1.RolloutWarm)
	cl.noRoomForSurge(t, ns, "cache")
	waiting := cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionRollout, metav1.ConditionFalse, cachev1alpha1.RolloutWaitingForRoom)
	if c := findCondition(waiting.Status.Conditions, cachev1alpha1.ConditionRollout); !strings.Contains(c.Message, "directives the server reads only at start") ||
		!strings.Contains(c.Message, "allowColdRestart") {
		t.Errorf("Rollout condition %q does not say what changed and what the user can do", c.Message)
	}
	cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionDegraded, metav1.ConditionTrue, cachev1alpha1.RolloutWaitingForRoom)
	cl.waitEventSaying(t, ns, "cache", cachev1alpha1.RolloutWaitingForRoom, "cache-surge")
	time.Sleep(2 * time.Second) // passes go on; none may replace the pod
	keptPod("waiting for room")
	cl.update(t, ns, "cache", func(ci *cachev1alpha1.CacheInstance) { ci.Spec.Rollout.AllowColdRestart = true })
	cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionRollout, metav1.ConditionTrue, cachev1alpha1.RolloutColdRestart)
	eventually(t, "the pod replaced for databases", func() error {
		p := &corev1.Pod{}
		err := cl.get(t, ns, pod.Name, p)
		if apierrors.IsNotFound(err) || (err == nil && (!p.DeletionTimestamp.IsZero() || p.UID != pod.UID)) {
			return nil
		}
		return fmt.Errorf("pod %s still there", pod.Name)
	})
	cl.waitEventSaying(t, ns, "cache", "ReplacingPod", pod.Name)
}
