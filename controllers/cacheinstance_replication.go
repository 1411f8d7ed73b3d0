package controllers

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
)

// Replication: with spec.replicas above 1 one pod is the primary and the others replicate it
// with Redis's protocol. The operator, not a consensus protocol of its own, chooses the primary,
// and the Kubernetes API holds that choice: status.replication.primary is written before a pod is
// promoted, and the role label the Services select is on the pods. Every pod starts as a replica
// without a primary (the server's start-as-replica), so a restarted primary cannot hand its empty
// dataset to the replicas; the operator then promotes whichever pod has the most data.

// labelRole is the pod's replication role (cachev1alpha1.ReplicationRole); the client Service of
// a replicated instance selects role primary, the replicas Service role replica.
const labelRole = "cache.iocache.dev/role"

// Condition reasons of Replicated; api/v1alpha1 documents them.
const (
	reasonInSync             = "InSync"
	reasonNoPrimary          = "NoPrimary"
	reasonSyncing            = "Syncing"
	reasonFailingOver        = "FailingOver"
	reasonNoReplicaToPromote = "NoReplicaToPromote"
)

// Reasons of a change of primary (status.replication.lastFailover.reason, and the events).
const (
	failoverInitial     = "Initial"
	failoverUnavailable = "PrimaryUnavailable"
	failoverRestarted   = "PrimaryRestarted"
	failoverSwitchover  = "Switchover"
)

// maxReplicationLagBytes is how far behind a replica may be and still count as in sync: a rollout
// waits for every replica to be this close before it replaces the next pod.
const maxReplicationLagBytes = 1 << 20

// replicationRecheck is how often a replicated instance is looked at while something is on its way
// (a replica syncing, a primary missing): pod events do not report a link coming up.
const replicationRecheck = 5 * time.Second

// replicationState is what the replication step found, for the status.
type replicationState struct {
	status          *cachev1alpha1.ReplicationStatus
	condition       metav1.ConditionStatus
	reason, message string
}

// replicated is true when the instance runs, or still winds down from, a primary with replicas.
func replicated(ci *cachev1alpha1.CacheInstance) bool {
	if ci.Spec.Replicas != nil && *ci.Spec.Replicas > 1 {
		return true
	}
	rs := ci.Status.Replication
	return rs != nil && rs.Primary != "" && ordinalOf(rs.Primary) > 0
}

// ordinalOf is a StatefulSet pod's ordinal, the number after its last dash (-1 if none).
func ordinalOf(pod string) int {
	i := strings.LastIndexByte(pod, '-')
	if i < 0 {
		return -1
	}
	n, err := strconv.Atoi(pod[i+1:])
	if err != nil {
		return -1
	}
	return n
}

// serverView is one server pod as the operator found it this pass.
type serverView struct {
	pod     *corev1.Pod
	ordinal int
	ready   bool
	addr    string
	// reached is true when the server answered ROLE; the rest is what it said.
	reached bool
	err     error
	role    cachev1alpha1.ReplicationRole
	offset  int64
	// primaryAddr is a replica's primary as host:port ("" for a replica without a primary: a
	// server started as a replica, which the operator has not pointed anywhere yet).
	primaryAddr string
	linkUp      bool
}

func (v *serverView) name() string { return v.pod.Name }

// detached is a replica without a primary: a server that (re)started and waits for the operator.
func (v *serverView) detached() bool {
	return v.role == cachev1alpha1.RoleReplica && v.primaryAddr == ""
}

// observeServers asks each ready pod's server its role and offset.
func (r *CacheInstanceReconciler) observeServers(ctx context.Context, inst *instance, pods []corev1.Pod) []*serverView {
	views := make([]*serverView, 0, len(pods))
	for i := range pods {
		pod := &pods[i]
		v := &serverView{pod: pod, ordinal: ordinalOf(pod.Name), ready: podReady(pod)}
		views = append(views, v)
		if !v.ready {
			continue
		}
		v.addr = r.serverAddress(pod)
		v.role, v.offset, v.primaryAddr, v.linkUp, v.err = readRole(ctx, v.addr, inst.creds())
		v.reached = v.err == nil
	}
	return views
}

// podReady is true for a pod that is ready and not being deleted.
func podReady(pod *corev1.Pod) bool {
	if !pod.DeletionTimestamp.IsZero() || pod.Status.PodIP == "" {
		return false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// reconcileReplication keeps one primary and makes every other pod its replica: it chooses the
// first primary, fails over when the primary is lost, points replicas at the primary, and puts the
// role labels the Services select on the pods.
func (r *CacheInstanceReconciler) reconcileReplication(ctx context.Context, inst *instance) (*ctrl.Result, error) {
	if !replicated(inst.CacheInstance) {
		return nil, nil
	}
	for _, reason := range []string{failoverUnavailable, failoverRestarted, failoverSwitchover} {
		// Series from zero, so that increase() sees the first failover.
		primaryChanges.WithLabelValues(inst.Namespace, inst.Name, reason)
	}
	if inst.rollout == nil {
		return nil, nil
	}
	if inst.surge != nil {
		// replicas grew during a surge, whose pod holds or takes the writes: the surge finishes
		// first (cacheinstance_surge.go), then the primary is chosen among the StatefulSet's pods.
		inst.recheckIn(replicationRecheck)
		return nil, nil
	}
	pods, err := r.serverPods(ctx, inst)
	if err != nil {
		return nil, err
	}
	views := r.observeServers(ctx, inst, pods)
	rs := &cachev1alpha1.ReplicationStatus{}
	if inst.Status.Replication != nil {
		rs = inst.Status.Replication.DeepCopy()
	}
	st := &replicationState{status: rs}
	inst.replication = st
	now := time.Now()

	pv := findView(views, rs.Primary)
	if pv != nil && !pv.pod.DeletionTimestamp.IsZero() {
		// The primary's pod is being deleted (a drain, an eviction, someone's kubectl delete) but
		// runs out its grace period: a switchover now loses nothing, where waiting for the pod to
		// go would cost failoverAfterSeconds of refused writes.
		if moved, err := r.switchAwayFrom(ctx, inst, st, pv, pods); moved || err != nil {
			return nil, err
		}
	}
	switch {
	case rs.Primary == "":
		c := initialPrimary(views)
		if c == nil {
			st.set(metav1.ConditionFalse, reasonNoPrimary, "No server pod is ready to become the primary")
			inst.recheckIn(replicationRecheck)
			return nil, nil
		}
		if err := r.choosePrimary(ctx, inst, st, c, failoverInitial, now); err != nil {
			return nil, err
		}
	case pv == nil || !pv.reached:
		if rs.PrimaryUnavailableSince == nil {
			rs.PrimaryUnavailableSince = &metav1.Time{Time: now}
		}
		after := time.Duration(inst.Spec.Replication.FailoverAfterSeconds) * time.Second
		if waited := now.Sub(rs.PrimaryUnavailableSince.Time); waited < after {
			st.set(metav1.ConditionFalse, reasonFailingOver, "The primary %s is %s; a replica replaces it if it is not back within %s",
				rs.Primary, primaryTrouble(pv), (after - waited).Round(time.Second))
			inst.recheckIn(after - waited)
			return nil, nil
		}
		c := bestCandidate(views)
		if c == nil {
			st.set(metav1.ConditionFalse, reasonNoReplicaToPromote, "The primary %s is %s and no ready replica answers; waiting for one",
				rs.Primary, primaryTrouble(pv))
			inst.recheckIn(replicationRecheck)
			return nil, nil
		}
		if err := r.choosePrimary(ctx, inst, st, c, failoverUnavailable, now); err != nil {
			return nil, err
		}
	case pv.detached():
		// The primary restarted: a restarted server waits as a replica without a primary. Another
		// pod may hold more of the data than whatever it loaded, so the most advanced one wins,
		// itself included.
		c := bestCandidate(views)
		if err := r.choosePrimary(ctx, inst, st, c, failoverRestarted, now); err != nil {
			return nil, err
		}
	default:
		rs.PrimaryUnavailableSince = nil
	}

	if err := r.converge(ctx, inst, st, views); err != nil {
		return nil, err
	}
	return nil, nil
}

// switchAwayFrom switches over from a primary whose pod is being deleted while its server still
// answers, to the most advanced replica that is in sync. It reports whether the primary moved.
func (r *CacheInstanceReconciler) switchAwayFrom(ctx context.Context, inst *instance, st *replicationState, pv *serverView, pods []corev1.Pod) (bool, error) {
	if pv.pod.Status.PodIP == "" {
		return false, nil
	}
	addr := r.serverAddress(pv.pod)
	if role, _, _, _, err := readRole(ctx, addr, inst.creds()); err != nil || role != cachev1alpha1.RolePrimary {
		return false, nil
	}
	before := st.status.Primary
	if _, err := r.switchover(ctx, inst, pods, fmt.Sprintf("its pod %s is being deleted", pv.name()),
		func(p *corev1.Pod) bool { return p.DeletionTimestamp.IsZero() }); err != nil {
		return false, err
	}
	return st.status.Primary != before, nil
}

// primaryTrouble says what is wrong with the primary's pod.
func primaryTrouble(pv *serverView) string {
	switch {
	case pv == nil:
		return "gone"
	case !pv.ready:
		return "not ready"
	}
	return fmt.Sprintf("not answering (%v)", pv.err)
}

// serverPods lists the instance's server pods by ordinal.
func (r *CacheInstanceReconciler) serverPods(ctx context.Context, inst *instance) ([]corev1.Pod, error) {
	pods := &corev1.PodList{}
	if err := r.List(ctx, pods, client.InNamespace(inst.Namespace), client.MatchingLabels(selectorLabels(inst.CacheInstance))); err != nil {
		return nil, fmt.Errorf("listing the instance's pods: %w", err)
	}
	// The surge pod shares the labels; the surge step reads it on its own (cacheinstance_surge.go).
	items := slices.DeleteFunc(pods.Items, func(p corev1.Pod) bool { return isSurgePod(inst.CacheInstance, &p) })
	slices.SortFunc(items, func(a, b corev1.Pod) int { return ordinalOf(a.Name) - ordinalOf(b.Name) })
	return items, nil
}

func findView(views []*serverView, name string) *serverView {
	for _, v := range views {
		if v.name() == name {
			return v
		}
	}
	return nil
}

// initialPrimary is the first primary of an instance: a pod that already serves as a primary
// (an instance that had one pod before it got replicas), the one with the highest offset among
// several; otherwise the most advanced pod.
func initialPrimary(views []*serverView) *serverView {
	var best *serverView
	for _, v := range views {
		if v.reached && v.role == cachev1alpha1.RolePrimary && (best == nil || v.offset > best.offset) {
			best = v
		}
	}
	if best != nil {
		return best
	}
	return bestCandidate(views)
}

// bestCandidate is the answering pod with the highest replication offset, the lowest ordinal among
// equals: the one that holds the most of the primary's writes. A lost primary competes only when it
// answers (it restarted, and may have loaded a snapshot).
func bestCandidate(views []*serverView) *serverView {
	var best *serverView
	for _, v := range views {
		if v.reached && (best == nil || v.offset > best.offset) {
			best = v
		}
	}
	return best
}

// choosePrimary records c as the primary, fencing the old one first: it loses the primary label,
// so the client Service stops sending it clients, before the decision is written to the status and
// c is promoted. An operator that restarts after the status write finishes the same failover.
func (r *CacheInstanceReconciler) choosePrimary(ctx context.Context, inst *instance, st *replicationState, c *serverView, reason string, now time.Time) error {
	rs := st.status
	from := rs.Primary
	if from != "" && from != c.name() {
		if err := r.labelRole(ctx, inst, from, cachev1alpha1.RoleReplica); err != nil {
			return err
		}
	}
	rs.Primary = c.name()
	rs.PrimaryUnavailableSince = nil
	rs.LastFailover = &cachev1alpha1.FailoverRecord{Time: metav1.NewTime(now), From: from, To: c.name(), Reason: reason, Offset: c.offset}
	if reason != failoverInitial {
		rs.Failovers++
		primaryChanges.WithLabelValues(inst.Namespace, inst.Name, reason).Inc()
	}
	if err := r.updateStatus(ctx, inst.CacheInstance, func(st *cachev1alpha1.CacheInstanceStatus) {
		st.Replication = rs.DeepCopy()
	}); err != nil {
		return err
	}
	if reason == failoverInitial {
		r.Recorder.Eventf(inst.CacheInstance, nil, corev1.EventTypeNormal, "PrimaryChosen", "ChoosePrimary",
			"Pod %s is the primary (replication offset %d); the other pods replicate it", c.name(), c.offset)
	} else {
		r.Recorder.Eventf(inst.CacheInstance, nil, corev1.EventTypeWarning, "Failover", "PromoteReplica",
			"%s: promoting %s (replication offset %d) in place of %s", reason, c.name(), c.offset, from)
	}
	return nil
}

// converge makes the recorded primary a primary and every other answering pod its replica, and
// labels the pods with their roles. It records each pod's progress for the status.
func (r *CacheInstanceReconciler) converge(ctx context.Context, inst *instance, st *replicationState, views []*serverView) error {
	rs := st.status
	pv := findView(views, rs.Primary)
	if pv == nil || !pv.reached {
		st.set(metav1.ConditionFalse, reasonNoPrimary, "The primary %s does not answer yet", rs.Primary)
		inst.recheckIn(replicationRecheck)
		return nil
	}
	if pv.role != cachev1alpha1.RolePrimary {
		if err := promote(ctx, pv.addr, inst.creds()); err != nil {
			st.set(metav1.ConditionFalse, reasonNoPrimary, "Promoting %s failed: %v", pv.name(), err)
			inst.recheckIn(replicationRecheck)
			return nil
		}
		pv.role, pv.primaryAddr = cachev1alpha1.RolePrimary, ""
	}
	if err := r.labelRole(ctx, inst, pv.name(), cachev1alpha1.RolePrimary); err != nil {
		return err
	}
	var behind []string
	rs.Pods = rs.Pods[:0]
	rs.Pods = append(rs.Pods, cachev1alpha1.ReplicationPodStatus{Name: pv.name(), Role: cachev1alpha1.RolePrimary, Offset: pv.offset})
	for _, v := range views {
		if v == pv {
			continue
		}
		if v.pod.DeletionTimestamp.IsZero() {
			if err := r.labelRole(ctx, inst, v.name(), cachev1alpha1.RoleReplica); err != nil {
				return err
			}
		}
		if !v.reached {
			behind = append(behind, v.name()+" is not ready")
			continue
		}
		if v.role != cachev1alpha1.RoleReplica || v.primaryAddr != pv.addr {
			if err := replicateFrom(ctx, v.addr, pv.addr, inst.creds(), v.role == cachev1alpha1.RolePrimary); err != nil {
				behind = append(behind, fmt.Sprintf("%s: REPLICAOF %s failed: %v", v.name(), pv.addr, err))
				continue
			}
			v.role, v.primaryAddr, v.linkUp = cachev1alpha1.RoleReplica, pv.addr, false
		}
		lag := max(pv.offset-v.offset, 0)
		link := "down"
		if v.linkUp {
			link = "up"
		}
		rs.Pods = append(rs.Pods, cachev1alpha1.ReplicationPodStatus{Name: v.name(), Role: cachev1alpha1.RoleReplica, Offset: v.offset, LagBytes: lag, Link: link})
		switch {
		case !v.linkUp:
			behind = append(behind, v.name()+" is syncing")
		case lag > maxReplicationLagBytes:
			behind = append(behind, fmt.Sprintf("%s is %d bytes behind", v.name(), lag))
		}
	}
	if len(behind) > 0 {
		st.set(metav1.ConditionFalse, reasonSyncing, "Primary %s; %s", pv.name(), strings.Join(behind, "; "))
		inst.recheckIn(replicationRecheck)
		return nil
	}
	st.set(metav1.ConditionTrue, reasonInSync, "Primary %s with %d replicas in sync", pv.name(), len(rs.Pods)-1)
	return nil
}

func (st *replicationState) set(status metav1.ConditionStatus, reason, format string, args ...any) {
	st.condition, st.reason, st.message = status, reason, fmt.Sprintf(format, args...)
}

// labelRole puts the role label on a pod, if it is not there already.
func (r *CacheInstanceReconciler) labelRole(ctx context.Context, inst *instance, podName string, role cachev1alpha1.ReplicationRole) error {
	pod := &corev1.Pod{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: inst.Namespace, Name: podName}, pod); err != nil {
		return client.IgnoreNotFound(err)
	}
	if pod.Labels[labelRole] == string(role) {
		return nil
	}
	patch := client.MergeFrom(pod.DeepCopy())
	if pod.Labels == nil {
		pod.Labels = map[string]string{}
	}
	pod.Labels[labelRole] = string(role)
	if err := r.Patch(ctx, pod, patch); err != nil {
		return client.IgnoreNotFound(err)
	}
	return nil
}

// setReplicationStatus writes what the replication step found into st.
func setReplicationStatus(st *cachev1alpha1.CacheInstanceStatus, inst *instance, set func(string, metav1.ConditionStatus, string, string, ...any)) {
	if !replicated(inst.CacheInstance) {
		st.Replication = nil
		removeCondition(st, cachev1alpha1.ConditionReplicated)
		return
	}
	rep := inst.replication
	if rep == nil {
		return
	}
	st.Replication = rep.status.DeepCopy()
	if rep.reason != "" {
		set(cachev1alpha1.ConditionReplicated, rep.condition, rep.reason, "%s", rep.message)
	}
}

func removeCondition(st *cachev1alpha1.CacheInstanceStatus, typ string) {
	st.Conditions = slices.DeleteFunc(st.Conditions, func(c metav1.Condition) bool { return c.Type == typ })
}
