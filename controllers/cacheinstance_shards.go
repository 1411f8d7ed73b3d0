package controllers

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	logf "sigs.k8s.io/controller-runtime/pkg/log"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
	"github.com/iocache/iocache/server/cluster"
)

// A sharded instance (spec.shards above 1) is one Redis Cluster whose coordinator is this
// operator: the instance owns no pods of its own but one CacheInstance per shard,
// <name>-shard-<i>, made from its spec (so each shard has its replicas, failover, rollouts,
// persistence and PodDisruptionBudget as any instance), a Service <name> in front of every node
// (a seed for cluster clients), and the slot map. The map's truth is status.cluster, written
// before it is pushed: each pass reads every node's ID and role, builds the map, and when a node
// serves another one (a new pod, a failover, a restart) writes the map with a higher epoch and
// pushes it to every node (CLUSTERMAP SET). Nodes refuse a map older than theirs, so a push from
// a pass that lost a race cannot undo a newer one. docs/cluster.md says more.

const (
	// labelShardOf names, on a shard and on its pods, the sharded instance it belongs to.
	labelShardOf = "cache.iocache.dev/shard-of"
	// shardRecheck is how often a sharded instance checks that every node serves its map (a pod
	// replaced or failed over changes an address or a role without changing a shard's spec).
	shardRecheck = 15 * time.Second
	// moveRetry is how soon a failed step of the map's life is tried again.
	moveRetry               = 2 * time.Second
	reasonClusterServing    = "ClusterServing"
	reasonClusterForming    = "ClusterForming"
	reasonClusterResharding = "Resharding"
)

func shardName(ci *cachev1alpha1.CacheInstance, i int) string {
	return ci.Name + "-shard-" + strconv.Itoa(i)
}

// evenSlots splits the 16,384 slots into n contiguous ranges, the first ones a slot larger when
// they do not divide evenly, as the resharding's shares are (targetCounts).
func evenSlots(n int) [][2]int {
	out := make([][2]int, n)
	next := 0
	for i, c := range targetCounts(n, n) {
		out[i] = [2]int{next, next + c - 1}
		next += c
	}
	return out
}

// desiredShard is shard i: the instance's spec without shards, its password from the instance's
// Secret (one password for the whole cluster), its pods labelled with the instance for the seed
// Service.
func desiredShard(ci *cachev1alpha1.CacheInstance, i int) *cachev1alpha1.CacheInstance {
	sh := &cachev1alpha1.CacheInstance{
		ObjectMeta: metav1.ObjectMeta{
			Name: shardName(ci, i), Namespace: ci.Namespace,
			Labels:          map[string]string{labelShardOf: ci.Name, LabelManagedBy: ManagedBy},
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ci, cachev1alpha1.GroupVersion.WithKind("CacheInstance"))},
		},
		Spec: *ci.Spec.DeepCopy(),
	}
	sh.Spec.Shards = nil
	if a := sh.Spec.Auth; a != nil {
		a.Generate = false // the instance made the Secret; the shard reads it
	}
	if sh.Spec.PodLabels == nil {
		sh.Spec.PodLabels = map[string]string{}
	}
	sh.Spec.PodLabels[labelShardOf] = ci.Name
	sh.SetDefaults()
	return sh
}

// reconcileSharded is the whole pass of a sharded instance: the shards, the seed Service, then
// one step of the map's life: finish a batch of slots in flight, push a map a node does not serve
// yet, start the next batch toward the shards asked for, or retire shards emptied by a scale-in.
func (r *CacheInstanceReconciler) reconcileSharded(ctx context.Context, ci *cachev1alpha1.CacheInstance) (ctrl.Result, error) {
	inst := &instance{CacheInstance: ci}
	if res, err := r.reconcileSecret(ctx, inst); err != nil || res != nil {
		if err != nil {
			return ctrl.Result{}, err
		}
		return *res, nil
	}
	creds := inst.creds()
	want := int(ci.ShardCount())
	st := initialClusterStatus(ci)
	for i := range st.Shards {
		if err := r.applyShard(ctx, desiredShard(ci, i)); err != nil {
			return ctrl.Result{}, err
		}
	}
	if err := r.applySeedService(ctx, ci); err != nil {
		return ctrl.Result{}, err
	}
	requeue := shardRecheck
	formed, err := false, error(nil)
	v, err := r.readCluster(ctx, ci, st, creds)
	if err == nil && (ci.Status.Cluster == nil || len(ci.Status.Cluster.Shards) == 0) {
		adoptServedMap(ctx, st, v)
	}
	if err == nil {
		switch {
		case st.Moving != nil:
			err = r.finishMove(ctx, ci, st, v, creds)
			requeue = time.Millisecond
		case v.stale(st):
			err = r.pushClusterMap(ctx, ci, st, v, creds)
		default:
			if mv := nextMove(st, want); mv != nil {
				st.Moving = mv
				if err = r.updateStatus(ctx, ci, func(s *cachev1alpha1.CacheInstanceStatus) { s.Cluster = st }); err == nil {
					err = r.finishMove(ctx, ci, st, v, creds)
				}
				requeue = time.Millisecond
			} else if len(st.Shards) > want {
				err = r.retireShards(ctx, ci, st, v, creds, want)
				requeue = time.Millisecond
			} else {
				formed = st.SlotsCovered == cluster.Slots
			}
		}
	}
	if err != nil {
		logf.FromContext(ctx).Info("cluster map not in step yet", "reason", err.Error())
		// A move that fails (a target out of memory, a node gone) is retried, not hammered.
		requeue = max(requeue, moveRetry)
	}
	st.SlotsToMove = int32(slotsToMove(st, want))
	serr := r.updateStatus(ctx, ci, func(s *cachev1alpha1.CacheInstanceStatus) {
		s.Cluster = st
		s.ObservedGeneration = ci.Generation
		s.Endpoint = fmt.Sprintf("%s.%s.svc:%d", ci.Name, ci.Namespace, serverPort)
		cond := metav1.Condition{Type: cachev1alpha1.ConditionReady, Status: metav1.ConditionFalse, Reason: reasonClusterForming,
			ObservedGeneration: ci.Generation}
		switch {
		case formed:
			cond.Status, cond.Reason = metav1.ConditionTrue, reasonClusterServing
			cond.Message = fmt.Sprintf("%d shards serve all %d slots; every node serves map epoch %d", want, cluster.Slots, st.Epoch)
			s.Phase = cachev1alpha1.PhaseReady
		case st.SlotsToMove > 0 || st.Moving != nil:
			cond.Reason = reasonClusterResharding
			cond.Message = fmt.Sprintf("moving slots online: %d to go", st.SlotsToMove)
			if err != nil {
				cond.Message = truncateMessage(cond.Message + "; the last step failed, retrying: " + err.Error())
			}
			s.Phase = cachev1alpha1.PhaseProgressing
		case err != nil:
			cond.Message = truncateMessage(err.Error())
			s.Phase = cachev1alpha1.PhaseProgressing
		default:
			cond.Message = "waiting for every shard's pods to serve the map"
			s.Phase = cachev1alpha1.PhaseProgressing
		}
		meta.SetStatusCondition(&s.Conditions, cond)
	})
	if serr != nil && !apierrors.IsNotFound(serr) {
		return ctrl.Result{}, serr
	}
	return ctrl.Result{RequeueAfter: requeue}, nil
}

// adoptServedMap replaces a new status's even split with the map the nodes already serve, when
// they serve one that covers every slot: the status is the truth, but one that lost its map (an
// object restored without its status) must not push an even split over slots that moved, which
// would send their clients to nodes without their keys. The highest epoch any node serves wins.
func adoptServedMap(ctx context.Context, st *cachev1alpha1.ClusterStatus, v *clusterView) {
	var served *cluster.Map
	for _, nd := range v.all() {
		if nd.serving.Epoch > 0 && (served == nil || nd.serving.Epoch > served.Epoch) {
			served = &nd.serving
		}
	}
	if served == nil {
		return // a new cluster: the even split stands
	}
	slots := make([][][2]int, len(v.shards))
	covered := 0
	for i, nodes := range v.shards {
		for _, mn := range served.Nodes {
			if slices.ContainsFunc(nodes, func(nd *shardNode) bool { return nd.id == mn.ID }) {
				slots[i] = append(slots[i], mn.Slots...)
				for _, r := range mn.Slots {
					covered += r[1] - r[0] + 1
				}
			}
		}
	}
	if covered != cluster.Slots {
		logf.FromContext(ctx).Info("the nodes serve a map that does not cover every slot; the even split stands",
			"epoch", served.Epoch, "covered", covered)
		return
	}
	for i := range v.shards {
		st.Shards[i].Slots = cluster.FormatRanges(slots[i], ",")
	}
	st.Epoch = int64(served.Epoch)
	logf.FromContext(ctx).Info("the status had no map: took the one the nodes serve", "epoch", served.Epoch)
}

// initialClusterStatus is the status's map, or for a new cluster the shards asked for with the
// slots split evenly; shards added to the spec join with no slots.
func initialClusterStatus(ci *cachev1alpha1.CacheInstance) *cachev1alpha1.ClusterStatus {
	want := int(ci.ShardCount())
	st := ci.Status.Cluster.DeepCopy()
	if st == nil || len(st.Shards) == 0 {
		st = &cachev1alpha1.ClusterStatus{}
		for i, rg := range evenSlots(want) {
			st.Shards = append(st.Shards, cachev1alpha1.ShardStatus{Instance: shardName(ci, i), Slots: cluster.FormatRanges([][2]int{rg}, ",")})
		}
	}
	for len(st.Shards) < want {
		st.Shards = append(st.Shards, cachev1alpha1.ShardStatus{Instance: shardName(ci, len(st.Shards))})
	}
	return st
}

func truncateMessage(s string) string {
	if len(s) > 1000 {
		return s[:1000]
	}
	return s
}

// applyShard creates a shard or brings its spec, labels and owner in step with the instance's.
func (r *CacheInstanceReconciler) applyShard(ctx context.Context, want *cachev1alpha1.CacheInstance) error {
	cur := &cachev1alpha1.CacheInstance{}
	err := r.Get(ctx, client.ObjectKeyFromObject(want), cur)
	if apierrors.IsNotFound(err) {
		if err := r.Create(ctx, want); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating shard %s: %w", want.Name, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading shard %s: %w", want.Name, err)
	}
	if !metav1.IsControlledBy(cur, &metav1.ObjectMeta{UID: want.OwnerReferences[0].UID}) {
		return fmt.Errorf("CacheInstance %s exists and is not a shard of this instance: rename one of them", want.Name)
	}
	cur.SetDefaults()
	if equality.Semantic.DeepEqual(cur.Spec, want.Spec) && cur.Labels[labelShardOf] == want.Labels[labelShardOf] {
		return nil
	}
	cur.Spec = want.Spec
	if cur.Labels == nil {
		cur.Labels = map[string]string{}
	}
	cur.Labels[labelShardOf] = want.Labels[labelShardOf]
	if err := r.Update(ctx, cur); err != nil {
		return fmt.Errorf("updating shard %s: %w", want.Name, err)
	}
	return nil
}

// applySeedService is the Service <name> in front of every node of every shard: a cluster
// client needs one reachable node to learn the map.
func (r *CacheInstanceReconciler) applySeedService(ctx context.Context, ci *cachev1alpha1.CacheInstance) error {
	svc := &corev1.Service{}
	err := r.Get(ctx, client.ObjectKey{Namespace: ci.Namespace, Name: ci.Name}, svc)
	if err == nil || !apierrors.IsNotFound(err) {
		return err
	}
	svc = &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: ci.Name, Namespace: ci.Namespace, Labels: objectLabels(ci),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ci, cachev1alpha1.GroupVersion.WithKind("CacheInstance"))}},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{labelShardOf: ci.Name},
			Ports:    []corev1.ServicePort{{Name: "redis", Port: serverPort, TargetPort: intstr.FromInt32(serverPort)}},
		},
	}
	if err := r.Create(ctx, svc); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating Service %s: %w", ci.Name, err)
	}
	return nil
}

// shardNode is one server pod of a shard, as the pass found it.
type shardNode struct {
	pod     *corev1.Pod
	addr    string
	id      string
	primary bool
	serving cluster.Map
}

// clusterView is every ready node of every shard listed in the status, as one pass read them.
type clusterView struct {
	shards    [][]*shardNode
	primaries []*shardNode
	maxEpoch  uint64
}

func (v *clusterView) all() []*shardNode { return slices.Concat(v.shards...) }

// readCluster reads the ID, role and served map of every ready node of every shard listed; each
// shard needs a primary.
func (r *CacheInstanceReconciler) readCluster(ctx context.Context, ci *cachev1alpha1.CacheInstance, st *cachev1alpha1.ClusterStatus, creds serverCreds) (*clusterView, error) {
	v := &clusterView{shards: make([][]*shardNode, len(st.Shards)), primaries: make([]*shardNode, len(st.Shards))}
	for i, shs := range st.Shards {
		pods := &corev1.PodList{}
		sh := &cachev1alpha1.CacheInstance{ObjectMeta: metav1.ObjectMeta{Name: shs.Instance}}
		if err := r.List(ctx, pods, client.InNamespace(ci.Namespace), client.MatchingLabels(selectorLabels(sh))); err != nil {
			return nil, fmt.Errorf("listing shard %s's pods: %w", sh.Name, err)
		}
		slices.SortFunc(pods.Items, func(a, b corev1.Pod) int { return strings.Compare(a.Name, b.Name) })
		for j := range pods.Items {
			pod := &pods.Items[j]
			if !podReady(pod) || pod.DeletionTimestamp != nil || isSurgePod(sh, pod) {
				continue
			}
			node, err := r.readNode(ctx, pod, creds)
			if err != nil {
				return nil, fmt.Errorf("pod %s: %w", pod.Name, err)
			}
			v.maxEpoch = max(v.maxEpoch, node.serving.Epoch)
			v.shards[i] = append(v.shards[i], node)
			if node.primary && v.primaries[i] == nil {
				v.primaries[i] = node
			}
		}
		if v.primaries[i] == nil {
			return nil, fmt.Errorf("shard %s has no ready primary yet", sh.Name)
		}
	}
	return v, nil
}

// desiredMap is the status's map with the nodes as they are.
func (v *clusterView) desiredMap(st *cachev1alpha1.ClusterStatus) (cluster.Map, error) {
	m := cluster.Map{Epoch: uint64(st.Epoch)}
	covered := 0
	for i, nodes := range v.shards {
		primary := v.primaries[i]
		st.Shards[i].Primary = primary.pod.Name
		ranges, err := cluster.ParseRanges(st.Shards[i].Slots, ",")
		if err != nil {
			return m, fmt.Errorf("status.cluster.shards[%d].slots: %w", i, err)
		}
		for _, rg := range ranges {
			covered += rg[1] - rg[0] + 1
		}
		for _, nd := range nodes {
			mn := nodeEntry(nd)
			if nd == primary {
				mn.Slots = ranges
			} else {
				mn.Primary = primary.id
			}
			m.Nodes = append(m.Nodes, mn)
		}
	}
	st.SlotsCovered, st.Nodes = int32(covered), int32(len(v.all()))
	return m, nil
}

// stale reports whether some node serves another map than the status's.
func (v *clusterView) stale(st *cachev1alpha1.ClusterStatus) bool {
	m, err := v.desiredMap(st)
	if err != nil {
		return true
	}
	for _, nd := range v.all() {
		if !sameMap(nd.serving, m) {
			return true
		}
	}
	return false
}

// pushClusterMap gives the status's map a new epoch, above any node's, writes it to the status,
// then pushes it to every node: the API has the truth before any node hears of it.
func (r *CacheInstanceReconciler) pushClusterMap(ctx context.Context, ci *cachev1alpha1.CacheInstance, st *cachev1alpha1.ClusterStatus, v *clusterView, creds serverCreds) error {
	st.Epoch = int64(max(uint64(st.Epoch), v.maxEpoch) + 1)
	m, err := v.desiredMap(st)
	if err != nil {
		return err
	}
	if err := r.updateStatus(ctx, ci, func(s *cachev1alpha1.CacheInstanceStatus) { s.Cluster = st }); err != nil {
		return err
	}
	body, err := json.Marshal(m)
	if err != nil {
		return err
	}
	for _, nd := range v.all() {
		if err := pushMap(ctx, nd.addr, creds, body); err != nil {
			return fmt.Errorf("pushing the map to %s: %w", nd.pod.Name, err)
		}
		nd.serving = m
	}
	v.maxEpoch = m.Epoch
	logf.FromContext(ctx).Info("pushed the cluster map", "epoch", st.Epoch, "nodes", len(v.all()))
	return nil
}

// nodeEntry is how a node is announced: the address the operator reaches it at (the pod IP in
// a cluster), and its name under the shard's headless Service.
func nodeEntry(nd *shardNode) cluster.MapNode {
	host, port, _ := net.SplitHostPort(nd.addr)
	p, _ := strconv.Atoi(port)
	mn := cluster.MapNode{ID: nd.id, IP: host, Port: p}
	if sh := nd.pod.Labels[labelInstance]; sh != "" {
		mn.Hostname = nd.pod.Name + "." + sh + "-headless." + nd.pod.Namespace + ".svc"
	}
	return mn
}

// readNode asks a node its ID, role and the map it serves.
func (r *CacheInstanceReconciler) readNode(ctx context.Context, pod *corev1.Pod, creds serverCreds) (*shardNode, error) {
	nd := &shardNode{pod: pod, addr: r.serverAddress(pod)}
	rdb := serverClient(nd.addr, creds)
	defer func() { _ = rdb.Close() }()
	id, err := rdb.Do(ctx, "CLUSTER", "MYID").Text()
	if err != nil {
		return nil, fmt.Errorf("CLUSTER MYID: %w", err)
	}
	nd.id = id
	role, err := rdb.Do(ctx, "ROLE").Slice()
	if err != nil || len(role) == 0 {
		return nil, fmt.Errorf("ROLE: %v", err)
	}
	nd.primary = role[0] == "master"
	body, err := rdb.Do(ctx, "CLUSTERMAP", "GET").Text()
	if err != nil {
		return nil, fmt.Errorf("CLUSTERMAP GET: %w", err)
	}
	if err := json.Unmarshal([]byte(body), &nd.serving); err != nil {
		return nil, fmt.Errorf("CLUSTERMAP GET: %w", err)
	}
	return nd, nil
}

func pushMap(ctx context.Context, addr string, creds serverCreds, body []byte) error {
	rdb := serverClient(addr, creds)
	defer func() { _ = rdb.Close() }()
	return rdb.Do(ctx, "CLUSTERMAP", "SET", string(body)).Err()
}

// sameMap compares what a node serves with the map wanted, epoch included; the order of nodes
// and of ranges does not matter.
func sameMap(a, b cluster.Map) bool {
	if a.Epoch != b.Epoch || len(a.Nodes) != len(b.Nodes) {
		return false
	}
	key := func(m cluster.Map) []string {
		var out []string
		for _, n := range m.Nodes {
			b, _ := json.Marshal(n)
			out = append(out, string(b))
		}
		slices.Sort(out)
		return out
	}
	return slices.Equal(key(a), key(b))
}
