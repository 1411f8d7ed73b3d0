package controllers_test

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
)

// podServer is a real iocache-server standing in for one pod's container: it can be killed and
// started again on the same port, empty, as a container restart does.
type podServer struct {
	t        *testing.T
	port     string
	password string
	dir      string
	// extra are more arguments, after the usual ones (TLS: newTLSPodServer).
	extra []string
	mu    sync.Mutex
	cmd   *exec.Cmd
	log   bytes.Buffer
}

func (ps *podServer) addr() string { return net.JoinHostPort("127.0.0.1", ps.port) }

// start runs the server as the operator's rendered config would for a replicated instance: a
// replica without a primary until the operator says otherwise.
func (ps *podServer) start() {
	ps.t.Helper()
	bin, err := serverBinary()
	if err != nil {
		ps.t.Fatal(err)
	}
	ps.mu.Lock()
	defer ps.mu.Unlock()
	ps.log.Reset()
	args := append([]string{"--port", ps.port, "--bind", "127.0.0.1", "--metrics-port", "0", "--loglevel", "warning",
		"--requirepass", ps.password, "--start-as-replica", "yes", "--save", ""}, ps.extra...)
	cmd := exec.Command(bin, args...)
	cmd.Stdout, cmd.Stderr = &ps.log, &ps.log
	cmd.Dir = ps.dir // dump.rdb and the like go to the test's directory, not the checkout
	if err := cmd.Start(); err != nil {
		ps.t.Fatal(err)
	}
	ps.cmd = cmd
	for deadline := time.Now().Add(20 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if c, err := net.Dial("tcp", ps.addr()); err == nil {
			c.Close()
			return
		}
		if time.Now().After(deadline) {
			ps.t.Fatalf("iocache-server did not listen on %s:\n%s", ps.addr(), ps.log.String())
		}
	}
}

func (ps *podServer) kill() {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.cmd != nil {
		_ = ps.cmd.Process.Kill()
		_ = ps.cmd.Wait()
		ps.cmd = nil
	}
}

func newPodServer(t *testing.T, password string) *podServer {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(l.Addr().String())
	l.Close()
	ps := &podServer{t: t, port: port, password: password, dir: t.TempDir()}
	ps.start()
	t.Cleanup(ps.kill)
	return ps
}

func (ps *podServer) client() *redis.Client {
	return redis.NewClient(&redis.Options{Addr: ps.addr(), Password: ps.password, Protocol: 2, MaxRetries: -1,
		DialTimeout: time.Second, ReadTimeout: 5 * time.Second})
}

// servePodAt creates pod <name>-<ordinal> from the StatefulSet's template at the given revision,
// ready, standing in for ps.
func (cl *cluster) servePodAt(t *testing.T, ns, name string, ordinal int, revision string, ps *podServer) {
	t.Helper()
	ctx := context.Background()
	sts := &appsv1.StatefulSet{}
	if err := cl.get(t, ns, name, sts); err != nil {
		t.Fatal(err)
	}
	podName := fmt.Sprintf("%s-%d", name, ordinal)
	labels := map[string]string{appsv1.ControllerRevisionHashLabelKey: revision}
	for k, v := range sts.Spec.Template.Labels {
		labels[k] = v
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: podName, Namespace: ns, Labels: labels, Annotations: sts.Spec.Template.Annotations,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(sts, appsv1.SchemeGroupVersion.WithKind("StatefulSet"))}},
		Spec: *sts.Spec.Template.Spec.DeepCopy(),
	}
	testServers.Store(ns+"/"+podName, ps.addr())
	if err := cl.c.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	cl.setPodReady(t, ns, podName, true)
}

// updatePod changes a pod as the kubelet or a user would, again on a conflict: the operator
// labels pods with their roles at any time.
func (cl *cluster) updatePod(t *testing.T, ns, name string, mutate func(*corev1.Pod)) {
	t.Helper()
	cl.retryPodUpdate(t, ns, name, mutate, func(ctx context.Context, obj client.Object, _ ...client.SubResourceUpdateOption) error {
		return cl.c.Update(ctx, obj)
	})
}

// retryPodUpdate reads the pod, mutates it and writes it with write, again on a conflict.
func (cl *cluster) retryPodUpdate(t *testing.T, ns, name string, mutate func(*corev1.Pod),
	write func(context.Context, client.Object, ...client.SubResourceUpdateOption) error) {
	t.Helper()
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		pod := &corev1.Pod{}
		if err := cl.get(t, ns, name, pod); err != nil {
			return err
		}
		mutate(pod)
		return write(context.Background(), pod)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// setPodReady sets the pod's Ready condition, as the kubelet's readiness probe would.
func (cl *cluster) setPodReady(t *testing.T, ns, podName string, ready bool) {
	t.Helper()
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error { // the operator relabels pods meanwhile
		pod := &corev1.Pod{}
		if err := cl.get(t, ns, podName, pod); err != nil {
			return err
		}
		pod.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.244.0.1" + strconv.Itoa(ordinalSuffix(podName)),
			Conditions:        []corev1.PodCondition{{Type: corev1.PodReady, Status: status}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "server", Ready: ready}}}
		return cl.c.Status().Update(context.Background(), pod)
	})
	if err != nil {
		t.Fatal(err)
	}
}

func ordinalSuffix(pod string) int {
	n, _ := strconv.Atoi(pod[strings.LastIndexByte(pod, '-')+1:])
	return n
}

// waitPrimary waits until status.replication names a primary other than not (any when "") and,
// when inSync, the Replicated condition is True; it returns the instance.
func (cl *cluster) waitPrimary(t *testing.T, ns, name, not string, inSync bool) *cachev1alpha1.CacheInstance {
	t.Helper()
	ci := &cachev1alpha1.CacheInstance{}
	eventually(t, "a primary other than "+not+" with its replicas in sync", func() error {
		if err := cl.get(t, ns, name, ci); err != nil {
			return err
		}
		rs := ci.Status.Replication
		c := findCondition(ci.Status.Conditions, cachev1alpha1.ConditionReplicated)
		switch {
		case rs == nil || rs.Primary == "" || rs.Primary == not:
			return fmt.Errorf("replication status %+v, condition %+v", rs, c)
		case inSync && (c == nil || c.Status != metav1.ConditionTrue):
			return fmt.Errorf("primary %s, condition %+v", rs.Primary, c)
		}
		return nil
	})
	return ci
}

func findCondition(cs []metav1.Condition, typ string) *metav1.Condition {
	for i := range cs {
		if cs[i].Type == typ {
			return &cs[i]
		}
	}
	return nil
}

// replicatedInstance creates instance "cache" with three pods in a new namespace, auth from a
// Secret, no validation runs, and a real server standing in for each pod (started as a replica
// without a primary, as the rendered config says). mutate adjusts the spec. It returns once the
// pods serve and the StatefulSet's rollout is complete.
func (cl *cluster) replicatedInstance(t *testing.T, password string, mutate func(*cachev1alpha1.CacheInstance)) (ns string, servers []*podServer, sts *appsv1.StatefulSet) {
	t.Helper()
	ns = cl.namespace(t)
	ctx := context.Background()
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cache-auth", Namespace: ns}, Data: map[string][]byte{"password": []byte(password)}}
	if err := cl.c.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	servers = []*podServer{newPodServer(t, password), newPodServer(t, password), newPodServer(t, password)}
	ci := instanceIn(ns, "cache", 1, func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.Replicas = ptr.To[int32](3)
		ci.Spec.Auth = &cachev1alpha1.AuthSpec{ExistingSecret: "cache-auth"}
		ci.Spec.Benchmark.ValidateOnChange = ptr.To(false)
		if mutate != nil {
			mutate(ci)
		}
	})
	if err := cl.c.Create(ctx, ci); err != nil {
		t.Fatal(err)
	}
	cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionReady, metav1.ConditionFalse, "RollingOut")
	sts = &appsv1.StatefulSet{}
	if err := cl.get(t, ns, "cache", sts); err != nil {
		t.Fatal(err)
	}
	for i, ps := range servers {
		cl.servePodAt(t, ns, "cache", i, fmt.Sprintf("cache-%d", sts.Generation), ps)
	}
	cl.simulateRollout(t, ns, "cache")
	return ns, servers, sts
}

// A replicated instance with real servers for its three pods: the operator chooses a primary,
// points the others at it and labels the roles the Services select; when the primary's pod stops
// being ready it promotes the replica with the most data after failoverAfterSeconds, and the old
// primary comes back as a replica; when a primary restarts in place (empty, as a container restart
// leaves it) the operator promotes a replica at once and no replica was emptied.
func TestReplicasFailoverKeepsTheData(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three servers")
	}
	cl := startEnv(t)
	ctx := context.Background()
	const password = "replication-password"
	ns, servers, sts := cl.replicatedInstance(t, password, func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.Replication.FailoverAfterSeconds = 2
	})
	if *sts.Spec.Replicas != 3 || sts.Spec.UpdateStrategy.Type != appsv1.OnDeleteStatefulSetStrategyType {
		t.Fatalf("StatefulSet replicas %d, update strategy %s: want 3 pods replaced by the operator (OnDelete)", *sts.Spec.Replicas, sts.Spec.UpdateStrategy.Type)
	}
	// A pod being deleted holds its SIGTERM while it is a primary with replicas (the server's own
	// preStop hook), so that the operator can switch over while it still serves.
	if lc := sts.Spec.Template.Spec.Containers[0].Lifecycle; lc == nil || lc.PreStop == nil || lc.PreStop.Exec == nil ||
		!strings.Contains(strings.Join(lc.PreStop.Exec.Command, " "), "--pre-stop --port 6379 --wait 20s --password-file") ||
		ptr.Deref(sts.Spec.Template.Spec.TerminationGracePeriodSeconds, 0) < 50 {
		t.Fatalf("preStop %+v, grace %v: want iocache-server --pre-stop with the password file and 50 s to stop", lc, sts.Spec.Template.Spec.TerminationGracePeriodSeconds)
	}
	cm := &corev1.ConfigMap{}
	if err := cl.get(t, ns, "cache-config", cm); err != nil {
		t.Fatal(err)
	}
	if conf := cm.Data["iocache.conf"]; !strings.Contains(conf, "\nstart-as-replica yes\n") || strings.Contains(conf, password) {
		t.Fatalf("the config of a replicated instance starts every pod as a replica, and holds no password:\n%s", conf)
	}
	revision := fmt.Sprintf("cache-%d", sts.Generation)

	ci := cl.waitPrimary(t, ns, "cache", "", true)
	first := ci.Status.Replication.Primary
	if first != "cache-0" || ci.Status.Replication.LastFailover.Reason != "Initial" {
		t.Fatalf("first primary %s (%+v): want cache-0, the lowest ordinal among equals", first, ci.Status.Replication.LastFailover)
	}
	cl.checkRoles(t, ns, "cache", first)

	// Writes on the primary reach both replicas; WAIT counts their acknowledgements.
	primary := servers[0].client()
	defer primary.Close()
	pipe := primary.Pipeline()
	for i := range 1000 {
		pipe.Set(ctx, fmt.Sprintf("user:%04d", i), i, 0)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	if n, err := primary.Do(ctx, "WAIT", 2, 5000).Int64(); err != nil || n != 2 {
		t.Fatalf("WAIT 2 on the primary: %d %v", n, err)
	}

	// The primary's pod stops being ready (its node is gone): after failoverAfterSeconds a replica
	// with every acknowledged write is promoted, and the other follows it.
	servers[0].kill()
	cl.setPodReady(t, ns, "cache-0", false)
	ci = cl.waitPrimary(t, ns, "cache", first, false)
	second := ci.Status.Replication.Primary
	if lf := ci.Status.Replication.LastFailover; lf.Reason != "PrimaryUnavailable" || lf.From != first || ci.Status.Replication.Failovers != 1 {
		t.Fatalf("last failover %+v, failovers %d", lf, ci.Status.Replication.Failovers)
	}
	cl.waitEventSaying(t, ns, "cache", "Failover", "promoting "+second)
	promoted := servers[ordinalSuffix(second)].client()
	defer promoted.Close()
	if n := promoted.DBSize(ctx).Val(); n != 1000 {
		t.Fatalf("the promoted replica %s holds %d keys, want the 1000 acknowledged", second, n)
	}
	if err := promoted.Set(ctx, "after:failover", "1", 0).Err(); err != nil {
		t.Fatalf("a write on the promoted replica: %v", err)
	}

	// The old primary's container comes back empty: it becomes a replica of the new primary and
	// gets the data, never the other way round.
	servers[0].start()
	cl.setPodReady(t, ns, "cache-0", true)
	ci = cl.waitPrimary(t, ns, "cache", first, true)
	eventually(t, "cache-0 synced from the new primary", func() error {
		c := servers[0].client()
		defer c.Close()
		if n := c.DBSize(ctx).Val(); n != 1001 {
			return fmt.Errorf("cache-0 holds %d keys", n)
		}
		return nil
	})
	cl.checkRoles(t, ns, "cache", ci.Status.Replication.Primary)

	// The primary's container restarts in place, empty, before anyone notices: it comes back as a
	// replica without a primary, which the replicas refuse to sync from, and the operator promotes
	// the replica with the most data at once.
	if n, err := promoted.Do(ctx, "WAIT", 2, 5000).Int64(); err != nil || n != 2 {
		t.Fatalf("WAIT 2 on %s: %d %v", second, n, err)
	}
	servers[ordinalSuffix(second)].kill()
	servers[ordinalSuffix(second)].start()
	ci = cl.waitPrimary(t, ns, "cache", second, false)
	third := ci.Status.Replication.Primary
	if lf := ci.Status.Replication.LastFailover; lf.Reason != "PrimaryRestarted" || lf.From != second {
		t.Fatalf("last failover %+v", lf)
	}
	for i, ps := range servers {
		eventually(t, fmt.Sprintf("cache-%d holds every acknowledged write", i), func() error {
			c := ps.client()
			defer c.Close()
			if n := c.DBSize(ctx).Val(); n != 1001 {
				return fmt.Errorf("cache-%d holds %d keys (primary %s)", i, n, third)
			}
			return nil
		})
	}
	cl.checkRoles(t, ns, "cache", third)

	// The primary's pod is deleted gracefully (a node drain): it serves out its grace period, which
	// a finalizer stands in for here, and the operator switches over at once instead of waiting for
	// it to go.
	pod := &corev1.Pod{}
	cl.updatePod(t, ns, third, func(p *corev1.Pod) { p.Finalizers = append(p.Finalizers, "test.iocache.dev/grace-period") })
	if err := cl.get(t, ns, third, pod); err != nil {
		t.Fatal(err)
	}
	if err := cl.c.Delete(ctx, pod); err != nil {
		t.Fatal(err)
	}
	drained := time.Now()
	ci = cl.waitPrimary(t, ns, "cache", third, false)
	if lf := ci.Status.Replication.LastFailover; lf.Reason != "Switchover" || lf.From != third || time.Since(drained) > 10*time.Second {
		t.Fatalf("after the primary's pod began to terminate: last failover %+v, %s later", lf, time.Since(drained))
	}
	fourth := servers[ordinalSuffix(ci.Status.Replication.Primary)].client()
	defer fourth.Close()
	if n := fourth.DBSize(ctx).Val(); n != 1001 {
		t.Fatalf("the new primary holds %d keys after the switchover, want 1001", n)
	}
	cl.updatePod(t, ns, third, func(p *corev1.Pod) { p.Finalizers = nil })
	eventually(t, "the drained pod gone", func() error {
		if err := cl.get(t, ns, third, pod); !apierrors.IsNotFound(err) {
			return fmt.Errorf("pod %s still there (%v)", third, err)
		}
		return nil
	})
	servers[ordinalSuffix(third)].kill()
	servers[ordinalSuffix(third)].start()
	cl.servePodAt(t, ns, "cache", ordinalSuffix(third), revision, servers[ordinalSuffix(third)])
	ci = cl.waitPrimary(t, ns, "cache", "", true)
	cl.checkRoles(t, ns, "cache", ci.Status.Replication.Primary)
}

// checkRoles checks the pods' role labels and the Services' selectors for the primary.
func (cl *cluster) checkRoles(t *testing.T, ns, name, primary string) {
	t.Helper()
	eventually(t, "role labels and Service selectors", func() error {
		for i := range 3 {
			pod := &corev1.Pod{}
			podName := fmt.Sprintf("%s-%d", name, i)
			if err := cl.get(t, ns, podName, pod); err != nil {
				return err
			}
			want := "replica"
			if podName == primary {
				want = "primary"
			}
			if got := pod.Labels["cache.iocache.dev/role"]; got != want {
				return fmt.Errorf("pod %s has role %q, want %q", podName, got, want)
			}
		}
		svc := &corev1.Service{}
		if err := cl.get(t, ns, name, svc); err != nil {
			return err
		}
		if svc.Spec.Selector["cache.iocache.dev/role"] != "primary" {
			return fmt.Errorf("client Service selector %v", svc.Spec.Selector)
		}
		if err := cl.get(t, ns, name+"-replicas", svc); err != nil {
			if apierrors.IsNotFound(err) {
				return fmt.Errorf("no replicas Service")
			}
			return err
		}
		if svc.Spec.Selector["cache.iocache.dev/role"] != "replica" {
			return fmt.Errorf("replicas Service selector %v", svc.Spec.Selector)
		}
		return nil
	})
}

// A change that needs new pods, on a replicated instance under a write load: the operator replaces
// the replicas first, one at a time once each is back in sync, then switches the primary over to an
// updated replica and replaces the old primary last. Every write that WAIT acknowledged is on the
// final primary, and the pods all run the new revision.
func TestReplicatedRolloutSwitchesOverLast(t *testing.T) {
	if testing.Short() {
		t.Skip("runs three servers")
	}
	cl := startEnv(t)
	ctx := context.Background()
	ns, servers, sts := cl.replicatedInstance(t, "rollout-password", nil)
	first := cl.waitPrimary(t, ns, "cache", "", true).Status.Replication.Primary

	// A writer that tries each server until one takes the write (replicas answer READONLY), and
	// counts a write as acknowledged once WAIT says a replica has it.
	stop := make(chan struct{})
	var acked []string
	var failed int
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		clients := make([]*redis.Client, len(servers))
		for i, ps := range servers {
			clients[i] = ps.client()
			defer clients[i].Close()
		}
		for n := 0; ; n++ {
			select {
			case <-stop:
				return
			default:
			}
			key := fmt.Sprintf("w:%06d", n)
			ok := false
			for _, c := range clients {
				if c.Set(ctx, key, n, 0).Err() != nil {
					continue
				}
				if got, err := c.Do(ctx, "WAIT", 1, 200).Int64(); err == nil && got >= 1 {
					acked = append(acked, key)
				}
				ok = true
				break
			}
			if !ok {
				failed++
				time.Sleep(10 * time.Millisecond)
			}
		}
	}()

	// A change of the pod template: every pod must be replaced.
	cl.update(t, ns, "cache", func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.PodAnnotations = map[string]string{"example.com/rollout": "2"}
	})
	before := sts.Generation
	eventually(t, "the new pod template", func() error {
		if err := cl.get(t, ns, "cache", sts); err != nil {
			return err
		}
		if sts.Generation == before {
			return fmt.Errorf("StatefulSet generation still %d", before)
		}
		return nil
	})
	deadline := time.Now().Add(60 * time.Second)
	var order []string
	for {
		if err := cl.get(t, ns, "cache", sts); err != nil {
			t.Fatal(err)
		}
		rev := fmt.Sprintf("cache-%d", sts.Generation)
		updated := int32(0)
		for i, ps := range servers {
			pod := &corev1.Pod{}
			podName := fmt.Sprintf("cache-%d", i)
			if err := cl.get(t, ns, podName, pod); apierrors.IsNotFound(err) {
				// The StatefulSet controller and the kubelet: a new pod, a new (empty) container.
				order = append(order, podName)
				ps.kill()
				ps.start()
				cl.servePodAt(t, ns, "cache", i, rev, ps)
				updated++
			} else if pod.Labels[appsv1.ControllerRevisionHashLabelKey] == rev {
				updated++
			}
		}
		sts.Status = appsv1.StatefulSetStatus{ObservedGeneration: sts.Generation, Replicas: 3, ReadyReplicas: 3, AvailableReplicas: 3,
			UpdatedReplicas: updated, CurrentReplicas: 3 - updated, CurrentRevision: fmt.Sprintf("cache-%d", sts.Generation-1), UpdateRevision: rev}
		if err := cl.c.Status().Update(ctx, sts); err != nil && !apierrors.IsConflict(err) {
			t.Fatal(err)
		}
		if updated == 3 {
			break
		}
		if time.Now().After(deadline) {
			close(stop)
			wg.Wait()
			t.Fatalf("after 60s %d of 3 pods run the new revision; replaced so far: %v", updated, order)
		}
		time.Sleep(100 * time.Millisecond)
	}
	ci := cl.waitPrimary(t, ns, "cache", first, true)
	close(stop)
	wg.Wait()

	final := ci.Status.Replication.Primary
	if len(order) != 3 || order[2] != first {
		t.Errorf("pods replaced in the order %v: the primary %s must go last", order, first)
	}
	if lf := ci.Status.Replication.LastFailover; lf.Reason != "Switchover" || lf.From != first || lf.To != final {
		t.Errorf("last change of primary %+v", lf)
	}
	cl.waitEventSaying(t, ns, "cache", "Switchover", "from "+first+" to "+final)
	c := servers[ordinalSuffix(final)].client()
	defer c.Close()
	missing := 0
	for _, k := range acked {
		if c.Exists(ctx, k).Val() != 1 {
			missing++
		}
	}
	t.Logf("rollout under load: %d writes acknowledged by WAIT, %d attempts found no server taking writes, pods replaced %v, primary %s -> %s",
		len(acked), failed, order, first, final)
	if len(acked) == 0 || missing > 0 {
		t.Fatalf("%d of %d acknowledged writes missing on the final primary %s", missing, len(acked), final)
	}

	// Back to one pod while the primary is cache-2: the primary moves to cache-0 before the
	// StatefulSet may remove the others, and the instance ends as a single pod with the data.
	keys := c.DBSize(ctx).Val()
	cl.update(t, ns, "cache", func(ci *cachev1alpha1.CacheInstance) { ci.Spec.Replicas = ptr.To[int32](1) })
	// The StatefulSet controller's part: it removes the pods above the replica count the operator
	// sets, which stays above the primary's ordinal until the primary has moved.
	eventually(t, "the StatefulSet scaled to one pod once the primary moved", func() error {
		if err := cl.get(t, ns, "cache", sts); err != nil {
			return err
		}
		for i := int(*sts.Spec.Replicas); i < 3; i++ {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("cache-%d", i)}}
			if err := cl.c.Delete(ctx, pod); err != nil && !apierrors.IsNotFound(err) {
				return err
			}
		}
		if *sts.Spec.Replicas != 1 {
			return fmt.Errorf("StatefulSet replicas %d", *sts.Spec.Replicas)
		}
		return nil
	})
	eventually(t, "a single-pod instance again", func() error {
		if err := cl.get(t, ns, "cache", ci); err != nil {
			return err
		}
		svc := &corev1.Service{}
		if err := cl.get(t, ns, "cache", svc); err != nil {
			return err
		}
		switch {
		case ci.Status.Replication != nil || findCondition(ci.Status.Conditions, cachev1alpha1.ConditionReplicated) != nil:
			return fmt.Errorf("replication status %+v", ci.Status.Replication)
		case svc.Spec.Selector["cache.iocache.dev/role"] != "":
			return fmt.Errorf("client Service selector %v", svc.Spec.Selector)
		case cl.get(t, ns, "cache-replicas", svc) == nil:
			return fmt.Errorf("the replicas Service is still there")
		}
		return nil
	})
	only := servers[0].client()
	defer only.Close()
	if role := only.Do(ctx, "ROLE").Val(); fmt.Sprint(role) == "" || fmt.Sprint(role)[:7] != "[master" {
		t.Fatalf("cache-0 after the scale-down: ROLE %v", role)
	}
	if n := only.DBSize(ctx).Val(); n != keys {
		t.Fatalf("cache-0 holds %d keys after the scale-down, the primary held %d", n, keys)
	}
}
