package controllers_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
	"github.com/iocache/iocache/controllers/operator"
	"github.com/iocache/iocache/server/testpeer"
)

// waitSurgePod waits until the operator has created the instance's surge pod.
func (cl *cluster) waitSurgePod(t *testing.T, ns, name string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{}
	eventually(t, "the surge pod", func() error { return cl.get(t, ns, name+"-surge", pod) })
	return pod
}

// noRoomForSurge does what the scheduler does with a pod no node has room for.
func (cl *cluster) noRoomForSurge(t *testing.T, ns, name string) {
	t.Helper()
	cl.waitSurgePod(t, ns, name)
	cl.updatePodStatus(t, ns, name+"-surge", func(p *corev1.Pod) {
		p.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled,
			Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: "0/1 nodes are available: 1 Insufficient cpu."}}}
	})
}

// serviceWriter writes numbered keys through the client Service as kube-proxy would route them:
// to a ready pod its selector picks (envtest runs no EndpointSlice controller, so it resolves the
// selector itself whenever a write fails), and keeps what was acknowledged.
type serviceWriter struct {
	cl       *cluster
	t        *testing.T
	ns       string
	password string
	tls      *tls.Config
	stop     chan struct{}
	done     sync.WaitGroup
	acked    map[string]string
	failures int
	maxGap   time.Duration
}

func (cl *cluster) startServiceWriter(t *testing.T, ns, password string, tlsConfig *tls.Config) *serviceWriter {
	w := &serviceWriter{cl: cl, t: t, ns: ns, password: password, tls: tlsConfig, stop: make(chan struct{}), acked: map[string]string{}}
	w.done.Add(1)
	go w.run()
	return w
}

// route is the address of a ready pod the client Service selects, or "".
func (w *serviceWriter) route(ctx context.Context) string {
	svc := &corev1.Service{}
	if err := w.cl.c.Get(ctx, client.ObjectKey{Namespace: w.ns, Name: "cache"}, svc); err != nil {
		return ""
	}
	pods := &corev1.PodList{}
	if err := w.cl.c.List(ctx, pods, client.InNamespace(w.ns), client.MatchingLabels(svc.Spec.Selector)); err != nil {
		return ""
	}
	for _, p := range pods.Items {
		ready := false
		for _, c := range p.Status.Conditions {
			ready = ready || (c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue)
		}
		if addr, ok := testServers.Load(w.ns + "/" + p.Name); ok && ready && p.DeletionTimestamp.IsZero() {
			return addr.(string)
		}
	}
	return ""
}

func (w *serviceWriter) run() {
	defer w.done.Done()
	ctx := context.Background()
	var rdb *redis.Client
	defer func() {
		if rdb != nil {
			_ = rdb.Close()
		}
	}()
	last := time.Now()
	for seq := 0; ; seq++ {
		select {
		case <-w.stop:
			return
		default:
		}
		if rdb == nil {
			addr := w.route(ctx)
			if addr == "" {
				w.failures++
				time.Sleep(20 * time.Millisecond)
				continue
			}
			rdb = redis.NewClient(&redis.Options{Addr: addr, Password: w.password, TLSConfig: w.tls, Protocol: 2, MaxRetries: -1, PoolSize: 1,
				DialTimeout: time.Second, ReadTimeout: 15 * time.Second})
		}
		key, value := "load:"+strconv.Itoa(seq), strconv.Itoa(seq)
		if err := rdb.Set(ctx, key, value, 0).Err(); err != nil {
			w.failures++
			_ = rdb.Close()
			rdb = nil
			time.Sleep(20 * time.Millisecond)
			continue
		}
		w.acked[key] = value
		w.maxGap = max(w.maxGap, time.Since(last))
		last = time.Now()
		time.Sleep(2 * time.Millisecond)
	}
}

func (w *serviceWriter) finish() {
	close(w.stop)
	w.done.Wait()
}

// A change that needs a new pod, on a default instance (one pod, no persistence) holding 10,000
// keys under a write load through the client Service: the operator starts the surge pod, which
// syncs and takes the writes over; it replaces the pod; the new pod syncs from the surge pod and
// takes them back; the surge pod goes. Real servers stand in for the three pods, the test plays
// the kubelet and the StatefulSet controller. Every key, and every acknowledged write, is on the
// new pod, which serves under the same name and Service.
func TestSurgeReplacesASinglePodWarm(t *testing.T) {
	t.Run("plaintext", func(t *testing.T) { surgeReplacesASinglePod(t, startEnv(t), nil, nil) })
	// A TLS-only pod: the surge pod's server follows over TLS with its own certificate.
	t.Run("tls", func(t *testing.T) { surgeReplacesASinglePod(t, startEnv(t), testpeer.NewCerts(t), nil) })
}

// An operator that stops once the surge pod has taken the writes over, and an operator that
// starts afterwards, finish the surge from what the pods and servers say: the new pod takes the
// data back, nothing is lost.
func TestSurgeSurvivesAnOperatorRestart(t *testing.T) {
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
	start := func() func() error {
		stop, err := startManager(cfg, operator.Options{MetricsAddr: "0", ProbeAddr: "0", Image: testImage, MaxConcurrent: 2, SeveralManagers: true,
			ServerAddress: testServerAddress, OperatorNamespace: testOperatorNamespace})
		if err != nil {
			t.Fatal(err)
		}
		return stop
	}
	stop := start()
	t.Cleanup(func() { _ = stop() })
	surgeReplacesASinglePod(t, &cluster{env: env, cfg: cfg, c: c}, nil, func() {
		if err := stop(); err != nil {
			t.Errorf("manager: %v", err)
		}
		stop = start()
	})
}

// surgeReplacesASinglePod runs the surge of TestSurgeReplacesASinglePodWarm against cl, over TLS
// with certs; afterTakeOver, when set, runs once the surge pod has the writes and the old pod is
// gone.
func surgeReplacesASinglePod(t *testing.T, cl *cluster, certs *testpeer.Certs, afterTakeOver func()) {
	surgeReplacesASinglePodFor(t, cl, certs, afterTakeOver, surgeChange{
		change: func(ci *cachev1alpha1.CacheInstance) {
			ci.Spec.Config = map[string]cachev1alpha1.ConfigValue{"databases": "32"} // read only at start
		},
	})
}

// surgeChange is the spec change a surge carries out: base is the instance before it; recreates
// says the change recreates the StatefulSet (persistence turned on or off), whose orphaning the
// test does in the garbage collector's place.
type surgeChange struct {
	base, change func(*cachev1alpha1.CacheInstance)
	recreates    bool
}

// surgeReplacesASinglePodFor is surgeReplacesASinglePod for the change sc.
func surgeReplacesASinglePodFor(t *testing.T, cl *cluster, certs *testpeer.Certs, afterTakeOver func(), sc surgeChange) {
	ns := cl.namespace(t)
	ctx := context.Background()
	const password = "surge-password"
	if err := cl.c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cache-auth", Namespace: ns},
		Data: map[string][]byte{"password": []byte(password)}}); err != nil {
		t.Fatal(err)
	}
	startServer := func() string { return startTestServer(t, password) }
	var clientTLS *tls.Config
	if certs != nil {
		if err := cl.c.Create(ctx, tlsSecret(t, ns, "cache-tls", certs, certs.CertFile, certs.KeyFile)); err != nil {
			t.Fatal(err)
		}
		startServer = func() string { return startTLSTestServer(t, password, certs) }
		clientTLS = certs.ClientConfig(t, true)
	}
	ci := instanceIn(ns, "cache", 1, func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.Auth = &cachev1alpha1.AuthSpec{ExistingSecret: "cache-auth"}
		if certs != nil {
			ci.Spec.TLS = &cachev1alpha1.TLSSpec{SecretName: "cache-tls", AuthClients: cachev1alpha1.TLSAuthClientsRequired}
		}
		ci.Spec.Benchmark.ValidateOnChange = ptr.To(false)
		if sc.base != nil {
			sc.base(ci)
		}
	})
	if err := cl.c.Create(ctx, ci); err != nil {
		t.Fatal(err)
	}
	sts := &appsv1.StatefulSet{}
	eventually(t, "the StatefulSet", func() error { return cl.get(t, ns, "cache", sts) })
	oldAddr := startServer()
	old := redis.NewClient(&redis.Options{Addr: oldAddr, Password: password, Protocol: 2, TLSConfig: clientTLS})
	defer old.Close()
	const userKeys = 10000
	pipe := old.Pipeline()
	for i := range userKeys {
		pipe.Set(ctx, "user:"+strconv.Itoa(i), i, 0)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	pod := cl.servePod(t, ns, "cache", oldAddr)
	cl.updatePod(t, ns, pod.Name, func(p *corev1.Pod) {
		p.Labels[appsv1.ControllerRevisionHashLabelKey] = fmt.Sprintf("cache-%d", sts.Generation)
	})
	cl.recordRevision(t, ns, "cache")
	cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionRollout, metav1.ConditionTrue, cachev1alpha1.RolloutLive)

	writer := cl.startServiceWriter(t, ns, password, clientTLS)
	start := time.Now()
	cl.update(t, ns, "cache", sc.change)
	gen, uid := sts.Generation, sts.UID
	if sc.recreates {
		cl.orphanStatefulSet(t, ns, "cache")
	}
	eventually(t, "the new template", func() error {
		if err := cl.get(t, ns, "cache", sts); err != nil {
			return err
		}
		if sts.Generation == gen && sts.UID == uid {
			return fmt.Errorf("generation still %d", gen)
		}
		return nil
	})
	update := cl.recordRevision(t, ns, "cache")
	cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionRollout, metav1.ConditionTrue, cachev1alpha1.RolloutWarm)
	cl.waitEventSaying(t, ns, "cache", cachev1alpha1.RolloutWarm, "cache-surge")

	// The kubelet starts the surge pod.
	surge := cl.waitSurgePod(t, ns, "cache")
	if surge.Labels["cache.iocache.dev/role"] != "replica" {
		t.Errorf("surge pod labels %v: it must not be selected before it takes over", surge.Labels)
	}
	svc := &corev1.Service{}
	if err := cl.get(t, ns, "cache", svc); err != nil || svc.Spec.Selector["cache.iocache.dev/role"] != "primary" {
		t.Fatalf("client Service selector during the surge: %v (%v)", svc.Spec.Selector, err)
	}
	surgeAddr := startServer()
	testServers.Store(ns+"/cache-surge", surgeAddr)
	cl.updatePodStatus(t, ns, "cache-surge", func(p *corev1.Pod) {
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.244.0.20",
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "server", Ready: true}}}
	})

	// The surge pod takes over and the old pod is deleted.
	eventually(t, "the old pod replaced", func() error {
		p := &corev1.Pod{}
		err := cl.get(t, ns, pod.Name, p)
		if apierrors.IsNotFound(err) || (err == nil && (p.UID != pod.UID || !p.DeletionTimestamp.IsZero())) {
			return nil
		}
		return fmt.Errorf("pod %s still there", pod.Name)
	})
	tookOver := redis.NewClient(&redis.Options{Addr: surgeAddr, Password: password, Protocol: 2, TLSConfig: clientTLS})
	defer tookOver.Close()
	if role := tookOver.Do(ctx, "ROLE").Val(); fmt.Sprint(role) == "" || fmt.Sprint(role.([]any)[0]) != "master" {
		t.Fatalf("the surge server's role is %v after the old pod was deleted", role)
	}
	if n := tookOver.DBSize(ctx).Val(); n < userKeys {
		t.Fatalf("the surge server holds %d keys, want at least %d", n, userKeys)
	}

	if afterTakeOver != nil {
		afterTakeOver()
	}

	// The StatefulSet controller makes cache-0 again from the current template.
	newAddr := startServer()
	fresh := cl.servePod(t, ns, "cache", newAddr)
	cl.updatePod(t, ns, fresh.Name, func(p *corev1.Pod) { p.Labels[appsv1.ControllerRevisionHashLabelKey] = update })
	cl.countUpdated(t, ns, "cache")
	eventually(t, "the surge pod removed", func() error {
		p := &corev1.Pod{}
		if err := cl.get(t, ns, "cache-surge", p); apierrors.IsNotFound(err) || (err == nil && !p.DeletionTimestamp.IsZero()) {
			return nil
		}
		return fmt.Errorf("cache-surge still there")
	})
	took := time.Since(start)
	cl.waitEventSaying(t, ns, "cache", "SurgeFinished", "cache-0")
	cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionRollout, metav1.ConditionTrue, cachev1alpha1.RolloutLive)
	time.Sleep(300 * time.Millisecond)
	writer.finish()

	back := redis.NewClient(&redis.Options{Addr: newAddr, Password: password, Protocol: 2, TLSConfig: clientTLS})
	defer back.Close()
	if role := back.Do(ctx, "ROLE").Val(); fmt.Sprint(role.([]any)[0]) != "master" {
		t.Fatalf("the new cache-0 is %v, want the primary", role)
	}
	lost := 0
	for k, v := range writer.acked {
		if got, err := back.Get(ctx, k).Result(); err != nil || got != v {
			lost++
		}
	}
	for i := range userKeys {
		if back.Exists(ctx, "user:"+strconv.Itoa(i)).Val() != 1 {
			t.Fatalf("user:%d lost", i)
		}
	}
	if lost > 0 || len(writer.acked) == 0 {
		t.Errorf("%d of %d acknowledged writes lost", lost, len(writer.acked))
	}
	p := &corev1.Pod{}
	if err := cl.get(t, ns, "cache-0", p); err != nil || p.Labels["cache.iocache.dev/role"] != "primary" {
		t.Errorf("cache-0 labels %v (%v)", p.Labels, err)
	}
	if sc.recreates {
		cur := &cachev1alpha1.CacheInstance{}
		if err := cl.get(t, ns, "cache", cur); err != nil {
			t.Fatal(err)
		}
		onClaim := slices.ContainsFunc(p.Spec.Volumes, func(v corev1.Volume) bool { return v.Name == "data" && v.PersistentVolumeClaim != nil })
		if want := cur.Spec.Persistence.Mode.Persistent(); onClaim != want {
			t.Errorf("the new cache-0's /data is a claim: %v, want %v (persistence %s)", onClaim, want, cur.Spec.Persistence.Mode)
		}
		if len(sts.Spec.VolumeClaimTemplates) > 0 != cur.Spec.Persistence.Mode.Persistent() {
			t.Errorf("the new StatefulSet's claim templates %v for persistence %s", sts.Spec.VolumeClaimTemplates, cur.Spec.Persistence.Mode)
		}
	}
	eventually(t, "the client Service back to the instance's pods", func() error {
		if err := cl.get(t, ns, "cache", svc); err != nil {
			return err
		}
		if _, ok := svc.Spec.Selector["cache.iocache.dev/role"]; ok {
			return fmt.Errorf("selector %v", svc.Spec.Selector)
		}
		return nil
	})
	t.Logf("surge in %s: %d user keys and %d acknowledged writes on the new cache-0, 0 lost; %d write attempts failed and were retried; longest time without a successful write %s",
		took.Round(time.Millisecond), userKeys, len(writer.acked), writer.failures, writer.maxGap.Round(time.Millisecond))
}

// Turning persistence on or off recreates the StatefulSet (its claim templates cannot change)
// around the running pod, which keeps serving; the pod, whose data is only in its memory, is then
// replaced through a surge like any other single pod: every key is on the new cache-0, whose /data
// is a claim when persistence is on, and no acknowledged write is lost.
func TestTurningPersistenceOnOrOffKeepsTheData(t *testing.T) {
	t.Run("on", func(t *testing.T) {
		surgeReplacesASinglePodFor(t, startEnv(t), nil, nil, surgeChange{change: withPersistence(cachev1alpha1.PersistenceRDB), recreates: true})
	})
	t.Run("off", func(t *testing.T) {
		surgeReplacesASinglePodFor(t, startEnv(t), nil, nil, surgeChange{base: withPersistence(cachev1alpha1.PersistenceAOF),
			change: func(ci *cachev1alpha1.CacheInstance) {
				ci.Spec.Persistence = cachev1alpha1.PersistenceSpec{Mode: cachev1alpha1.PersistenceNone}
			},
			recreates: true})
	})
}

func withPersistence(mode cachev1alpha1.PersistenceMode) func(*cachev1alpha1.CacheInstance) {
	return func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.Persistence.Mode = mode
		ci.Spec.Persistence.Size = ptr.To(resource.MustParse("1Gi"))
	}
}

// orphanStatefulSet does for the instance's StatefulSet, deleted by the operator with orphan
// propagation, what the garbage collector does (envtest runs none): it takes the owner
// references off its pods and revisions, then removes the orphan finalizer, and the StatefulSet
// goes. Real revisions are named by their template's hash, so the new StatefulSet's never share a
// name with the old ones; these tests name them by generation, which a new StatefulSet starts
// again, so the old revisions and the pods' labels are renamed as a hash would keep them apart.
func (cl *cluster) orphanStatefulSet(t *testing.T, ns, name string) {
	t.Helper()
	ctx := context.Background()
	sts := &appsv1.StatefulSet{}
	eventually(t, "the StatefulSet deleted, its pods orphaned", func() error {
		if err := cl.get(t, ns, name, sts); err != nil {
			return err
		}
		if sts.DeletionTimestamp.IsZero() || !slices.Contains(sts.Finalizers, metav1.FinalizerOrphanDependents) {
			return fmt.Errorf("StatefulSet %s not deleted with orphan propagation (finalizers %v)", name, sts.Finalizers)
		}
		return nil
	})
	ownedBy := func(refs []metav1.OwnerReference) bool {
		return slices.ContainsFunc(refs, func(r metav1.OwnerReference) bool { return r.UID == sts.UID })
	}
	revs := &appsv1.ControllerRevisionList{}
	if err := cl.c.List(ctx, revs, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	renamed := map[string]string{}
	for i := range revs.Items {
		rev := &revs.Items[i]
		if !ownedBy(rev.OwnerReferences) {
			continue
		}
		orphan := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: rev.Name + "-old", Namespace: ns, Labels: rev.Labels},
			Data: rev.Data, Revision: rev.Revision}
		if err := cl.c.Create(ctx, orphan); err != nil {
			t.Fatal(err)
		}
		if err := cl.c.Delete(ctx, rev); err != nil {
			t.Fatal(err)
		}
		renamed[rev.Name] = orphan.Name
	}
	pods := &corev1.PodList{}
	if err := cl.c.List(ctx, pods, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	for i := range pods.Items {
		if !ownedBy(pods.Items[i].OwnerReferences) {
			continue
		}
		cl.updatePod(t, ns, pods.Items[i].Name, func(p *corev1.Pod) {
			p.OwnerReferences = slices.DeleteFunc(p.OwnerReferences, func(r metav1.OwnerReference) bool { return r.UID == sts.UID })
			if to, ok := renamed[p.Labels[appsv1.ControllerRevisionHashLabelKey]]; ok {
				p.Labels[appsv1.ControllerRevisionHashLabelKey] = to
			}
		})
	}
	if err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if err := cl.get(t, ns, name, sts); err != nil {
			return err
		}
		sts.Finalizers = slices.DeleteFunc(sts.Finalizers, func(f string) bool { return f == metav1.FinalizerOrphanDependents })
		return cl.c.Update(ctx, sts)
	}); err != nil && !apierrors.IsNotFound(err) {
		t.Fatal(err)
	}
}

// Without room for the surge pod the instance waits, Degraded with the reason, its pod serving
// with the data; once a cold restart is allowed, the surge pod goes and the pod is replaced.
func TestSurgeWithoutRoomWaits(t *testing.T) {
	cl := startEnv(t)
	ns := cl.namespace(t)
	ctx := context.Background()
	ci := instanceIn(ns, "cache", 1, func(ci *cachev1alpha1.CacheInstance) { ci.Spec.Benchmark.ValidateOnChange = ptr.To(false) })
	if err := cl.c.Create(ctx, ci); err != nil {
		t.Fatal(err)
	}
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

	cl.update(t, ns, "cache", func(ci *cachev1alpha1.CacheInstance) { ci.Spec.Cores = 2 })
	gen := sts.Generation
	eventually(t, "the new template", func() error {
		if err := cl.get(t, ns, "cache", sts); err != nil {
			return err
		}
		if sts.Generation == gen {
			return fmt.Errorf("generation still %d", gen)
		}
		return nil
	})
	cl.recordRevision(t, ns, "cache")
	cl.noRoomForSurge(t, ns, "cache")
	cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionRollout, metav1.ConditionFalse, cachev1alpha1.RolloutWaitingForRoom)
	cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionDegraded, metav1.ConditionTrue, cachev1alpha1.RolloutWaitingForRoom)
	cl.waitEventSaying(t, ns, "cache", cachev1alpha1.RolloutWaitingForRoom, "allowColdRestart")
	time.Sleep(2 * time.Second) // passes go on; none may replace the pod
	p := &corev1.Pod{}
	if err := cl.get(t, ns, pod.Name, p); err != nil || p.UID != pod.UID || !p.DeletionTimestamp.IsZero() {
		t.Fatalf("the pod was replaced without room for the surge (%v)", err)
	}
	if rdb.Get(ctx, "user:1").Val() != "kept" {
		t.Fatal("the data is gone")
	}

	cl.update(t, ns, "cache", func(ci *cachev1alpha1.CacheInstance) { ci.Spec.Rollout.AllowColdRestart = true })
	cl.waitEventSaying(t, ns, "cache", cachev1alpha1.RolloutColdRestart, "no node has room")
	eventually(t, "the surge pod and the old pod gone", func() error {
		for _, name := range []string{"cache-surge", pod.Name} {
			p := &corev1.Pod{}
			err := cl.get(t, ns, name, p)
			if err == nil && p.DeletionTimestamp.IsZero() && (name != pod.Name || p.UID == pod.UID) {
				return fmt.Errorf("%s still there", name)
			}
		}
		return nil
	})
}
