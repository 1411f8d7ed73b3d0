package controllers

import (
	"context"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
)

// conflictRetry is how soon a pass that lost a write race runs again, with the newer object.
const conflictRetry = time.Second

// CacheInstanceReconciler turns a CacheInstance into a rendered config, its ConfigMap, an auth
// Secret when asked, Services, a StatefulSet, a PodDisruptionBudget and, where prometheus-operator
// is installed, a ServiceMonitor; and reports what it resolved and how the rollout goes.
type CacheInstanceReconciler struct {
	client.Client
	// APIReader settles what the cache may not know yet: whether a benchmark that holds an
	// instance, or whose failure it records, still exists, and the instance as stored when a status
	// write conflicts.
	APIReader client.Reader
	Recorder  events.EventRecorder
	// Image runs the server when spec.image is empty: the operator's own image.
	Image string
	// OperatorNamespace is where the operator runs, which the instances' NetworkPolicies admit; ""
	// when it runs outside the cluster.
	OperatorNamespace string
	// ServerAddress is where the operator reaches a pod's server (host:port); nil means the pod IP.
	// Tests point it at a server of their own.
	ServerAddress func(pod *corev1.Pod) string
	// ValidationRetryBackoff is how long a failed validation waits for its one retry; 0 means
	// validationRetryBackoff. Tests shorten it.
	ValidationRetryBackoff time.Duration
	// SecretPollInterval is how often the Secrets the operator may not watch are read again (a
	// missing auth Secret, the users' passwords); 0 means secretPollInterval. Tests shorten it.
	SecretPollInterval time.Duration
}

// secretPoll is SecretPollInterval or its default.
func (r *CacheInstanceReconciler) secretPoll() time.Duration {
	if r.SecretPollInterval > 0 {
		return r.SecretPollInterval
	}
	return secretPollInterval
}

// instance is a CacheInstance during one pass, with what the steps have learned so far.
type instance struct {
	*cachev1alpha1.CacheInstance
	config  *serverConfig
	rollout *rollout
	blocked *blocker
	// podProblem is why a server pod does not serve, as the scheduler or kubelet said, or nil.
	podProblem *podProblem
	// image is the server image the pods run; pendingImage the operator's, when upgradePolicy
	// Manual keeps another.
	image, pendingImage string
	// password is the auth Secret's password, for the operator's own connections to the pods; it
	// is never logged or recorded.
	password string
	// previousConfig is the rendered config the ConfigMap held before this pass ("" when new).
	previousConfig string
	// surge is the instance's surge pod, as the Services step found it (cacheinstance_surge.go),
	// or nil.
	surge *corev1.Pod
	// rolloutDecision is how the rollout step decided the outdated pods reach the update revision
	// (the Rollout condition), or nil when it did not decide this pass.
	rolloutDecision *rolloutDecision
	// change is how this pass brought a new config to the pods, or nil.
	change *configChange
	// podConfigs is the config each ready pod runs, once the live step has looked (nil before).
	podConfigs []cachev1alpha1.PodConfigStatus
	// liveInEffect is true when every pod of the current template is ready and verified with the
	// current config.
	liveInEffect bool
	// liveFailure says why a live change did not reach a pod, or "".
	liveFailure string
	// releaseHold is the UID of a benchmark whose hold on the instance ends: it is gone or finished.
	releaseHold string
	// forgetTuning names the deleted CacheBenchmark of a failed tuning, which is then dropped so that
	// the sweep runs again.
	forgetTuning string
	// claimTemplateSize is the data claim size the existing StatefulSet was made with (nil without
	// one); the claims are expanded from it when persistence.size grows.
	claimTemplateSize *resource.Quantity
	// tls is what the TLS step found, with spec.tls (else nil).
	tls *tlsState
	// replication is what the replication step found, for a replicated instance (else nil).
	replication *replicationState
	// users are the ACL users the servers must have: the bench user, then spec.users with their
	// password hashes, in the order of the users file.
	users []aclUser
	// usersHash stands for users' rules: status.pods[].usersHash of a pod that has them.
	usersHash string
	// backups is status.backups as the backup step left it, or nil when it did not look.
	backups *cachev1alpha1.BackupsStatus
	// bootstrap is status.bootstrap as the bootstrap step left it, or nil when it did not look.
	bootstrap *cachev1alpha1.BootstrapStatus
	// persistence is the snapshots' status as the snapshot step left it, or nil when it did not
	// look (the status keeps what it had).
	persistence *cachev1alpha1.PersistenceStatus
	// recheck is how soon the instance must be looked at again though nothing it watches changes
	// (a retry waiting out its backoff), or 0.
	recheck time.Duration
}

// blocker says why a pass stopped short of applying the spec, as Degraded's reason and message.
type blocker struct{ reason, message string }

func (i *instance) block(reason, message string) {
	i.blocked = &blocker{reason: reason, message: message}
}

// recheckIn asks for another pass within d.
func (i *instance) recheckIn(d time.Duration) {
	if d > 0 && (i.recheck == 0 || d < i.recheck) {
		i.recheck = d
	}
}

// The operator's permissions, and nothing more: it reads CacheInstances and writes their status;
// applies (patch, create) the objects it owns and watches them; may only get and create Secrets (no
// list or watch: it never sees Secrets it was not told about); and handles ServiceMonitors one by
// one without a watch, because their CRD may be missing.
// +kubebuilder:rbac:groups=cache.iocache.dev,resources=cacheinstances,verbs=get;list;watch
// A sharded instance's shards are CacheInstances it creates, keeps in step with its spec, and
// deletes once emptied when shards go down.
// +kubebuilder:rbac:groups=cache.iocache.dev,resources=cacheinstances,verbs=create;update;delete
// +kubebuilder:rbac:groups=cache.iocache.dev,resources=cacheinstances/status,verbs=update
// +kubebuilder:rbac:groups=cache.iocache.dev,resources=cacheinstances/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=configmaps;services,verbs=get;list;watch;create;patch
// It deletes the replicas Service of an instance scaled back to one pod.
// +kubebuilder:rbac:groups="",resources=services,verbs=delete
// It deletes the ConfigMap <instance>-bootstrap once a bootstrapped instance serves its data.
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=delete
// It writes the Secret <instance>-users with the users' password hashes (spec.users), and gives
// the bench user's Secret <instance>-bench a new password when it was emptied: patch.
// +kubebuilder:rbac:groups="",resources=secrets,verbs=get;create;patch
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get;list;watch;create;patch
// It deletes a StatefulSet, orphaning its pods, when persistence is turned on or off (its claim
// templates cannot change; cacheinstance_claims.go).
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=delete
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets,verbs=get;list;watch;create;patch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=networkpolicies,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups=monitoring.coreos.com,resources=servicemonitors,verbs=get;create;patch;delete
// With spec.tls.certManager it applies a cert-manager Certificate (server-side apply: patch), one by
// one without a watch, because cert-manager's CRD may be missing; cert-manager writes the Secret.
// +kubebuilder:rbac:groups=cert-manager.io,resources=certificates,verbs=get;create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// It watches the server pods (only those: the cache selects them by label) to report why one does
// not serve; labels them with their replication role, which the Services select; and deletes the
// outdated pods (OnDelete StatefulSets), a replicated instance's replicas first
// (cacheinstance_replica_rollout.go). A pod whose template changed only in memory is resized in
// place instead (pods/resize) and relabelled with its new revision; to know that, the operator
// reads the two ControllerRevisions, by name only (cacheinstance_resize.go).
// It creates the surge pod that carries a single pod's data through its replacement
// (cacheinstance_surge.go).
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch;create;patch;delete
// +kubebuilder:rbac:groups="",resources=pods/resize,verbs=patch
// +kubebuilder:rbac:groups=apps,resources=controllerrevisions,verbs=get
// When persistence.size grows it expands the data claims (list, read from the API server; patch).
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=list;patch
// A switchover waits for the client Service's EndpointSlices to name the new primary before the
// old one drops its clients (cacheinstance_endpoints.go).
// +kubebuilder:rbac:groups=discovery.k8s.io,resources=endpointslices,verbs=list
// It creates the Validation and Tuning CacheBenchmarks an instance needs, and deletes an outdated
// one of the same name and the validations it no longer keeps; the benchmark controller reads and
// watches them all.
// +kubebuilder:rbac:groups=cache.iocache.dev,resources=cachebenchmarks,verbs=get;list;watch;create;delete

// Reconcile brings one CacheInstance's objects to its spec, then writes its status.
func (r *CacheInstanceReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ci := &cachev1alpha1.CacheInstance{}
	if err := r.Get(ctx, req.NamespacedName, ci); err != nil {
		if apierrors.IsNotFound(err) {
			forgetInstance(req.Namespace, req.Name)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("fetching CacheInstance: %w", err)
	}
	if !ci.DeletionTimestamp.IsZero() {
		// Owner references hand the owned objects to the garbage collector; nothing to do here.
		return ctrl.Result{}, nil
	}
	ci.SetDefaults()
	if ci.ShardCount() > 1 {
		return r.reconcileSharded(ctx, ci)
	}
	inst := &instance{CacheInstance: ci}

	result, err := r.reconcileSteps(ctx, inst)
	if apierrors.IsConflict(err) {
		// Someone wrote between this pass's read and its write: not a failure, run again.
		logf.FromContext(ctx).V(1).Info("write conflict, running again", "error", err.Error())
		result, err = ctrl.Result{RequeueAfter: conflictRetry}, nil
	}

	var statusRecheck time.Duration
	wasDegraded := meta.FindStatusCondition(ci.Status.Conditions, cachev1alpha1.ConditionDegraded)
	var expiring string
	serr := r.updateStatus(ctx, ci, func(st *cachev1alpha1.CacheInstanceStatus) {
		was := meta.IsStatusConditionTrue(st.Conditions, cachev1alpha1.ConditionCertificateExpiring)
		statusRecheck = setStatus(st, inst, err, time.Now())
		expiring = newlyExpiring(was, st.Conditions)
	})
	switch {
	case serr == nil || apierrors.IsNotFound(serr):
		if expiring != "" {
			r.Recorder.Eventf(ci, nil, corev1.EventTypeWarning, reasonCertificateExpiring, "CheckCertificate", "%s", expiring)
		}
		if p := inst.podProblem; p != nil && (wasDegraded == nil || wasDegraded.Status != metav1.ConditionTrue || wasDegraded.Reason != p.reason) {
			r.Recorder.Eventf(ci, nil, corev1.EventTypeWarning, p.reason, "ReadPodStatus", "%s", eventNote(p.message))
		}
	case err == nil:
		err = serr
	default:
		logf.FromContext(ctx).Error(serr, "status not written")
	}
	inst.recheckIn(statusRecheck)
	if d := inst.recheck; d > 0 && (result.RequeueAfter == 0 || d < result.RequeueAfter) {
		result.RequeueAfter = d
	}

	switch {
	case err != nil:
		countReconcile(ci.Namespace, ci.Name, resultError)
		return ctrl.Result{}, err
	case inst.blocked != nil:
		countReconcile(ci.Namespace, ci.Name, resultBlocked)
	default:
		countReconcile(ci.Namespace, ci.Name, resultOK)
	}
	return result, nil
}

// reconcileSteps runs the steps in order. A step returns a non-nil result to end the pass (blocked,
// or waiting) and an error when an API call failed.
func (r *CacheInstanceReconciler) reconcileSteps(ctx context.Context, inst *instance) (ctrl.Result, error) {
	for _, step := range []func(context.Context, *instance) (*ctrl.Result, error){
		r.reconcileConfig,
		r.reconcileSecret,
		r.reconcileTLS,
		r.reconcileUsers,
		r.reconcileConfigMap,
		r.reconcileBootstrap,
		r.reconcileServices,
		r.reconcileStatefulSet,
		r.reconcilePods,
		r.reconcileReplication,
		r.reconcileLiveConfig,
		r.reconcileTLSRotation,
		r.reconcileRollout,
		r.reconcilePDB,
		r.reconcileNetworkPolicy,
		r.reconcileVolumes,
		r.reconcileSnapshots,
		r.reconcileBackups,
		r.reconcileBenchmarks,
		r.pruneValidations,
		r.reconcileServiceMonitor,
	} {
		res, err := step(ctx, inst)
		if err != nil {
			return ctrl.Result{}, err
		}
		if res != nil {
			return *res, nil
		}
	}
	return ctrl.Result{}, nil
}

// SetupWithManager watches CacheInstances (spec changes, and the status fields benchmarks write
// that change what is rendered: the operator's own status writes need no pass), the objects they
// own, whose changes are brought back to the spec, their server pods, whose troubles the status
// reports, and the end of their benchmarks, after which the next may start.
func (r *CacheInstanceReconciler) SetupWithManager(mgr ctrl.Manager, maxConcurrent int) error {
	return ctrl.NewControllerManagedBy(mgr).
		For(&cachev1alpha1.CacheInstance{}, builder.WithPredicates(predicate.Or[client.Object](
			predicate.GenerationChangedPredicate{}, benchmarkInputsChanged, snapshotRequested, backupRequested))).
		Owns(&corev1.ConfigMap{}).
		Owns(&corev1.Service{}).
		Owns(&appsv1.StatefulSet{}).
		Owns(&policyv1.PodDisruptionBudget{}).
		Owns(&networkingv1.NetworkPolicy{}).
		Owns(&cachev1alpha1.CacheInstance{}). // a sharded instance's shards
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(instanceOfPod)).
		Watches(&cachev1alpha1.CacheBenchmark{}, handler.EnqueueRequestsFromMapFunc(instanceOfBenchmark),
			builder.WithPredicates(benchmarkEnded)).
		Watches(&cachev1alpha1.CacheBackup{}, handler.EnqueueRequestsFromMapFunc(instanceOfBackup),
			builder.WithPredicates(backupFinishedPredicate)).
		WithOptions(controller.Options{MaxConcurrentReconciles: maxConcurrent}).
		Named("cacheinstance").
		Complete(r)
}

// benchmarkInputsChanged lets through status changes that change the rendered config: a hold (and
// the setting it measures) and the Tuned policy's decision.
var benchmarkInputsChanged = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	old, oldOK := e.ObjectOld.(*cachev1alpha1.CacheInstance)
	cur, curOK := e.ObjectNew.(*cachev1alpha1.CacheInstance)
	return oldOK && curOK && (!equality.Semantic.DeepEqual(old.Status.ActiveBenchmark, cur.Status.ActiveBenchmark) ||
		!equality.Semantic.DeepEqual(old.Status.Tuning, cur.Status.Tuning))
}}

// benchmarkEnded lets through a benchmark that finished or was deleted.
var benchmarkEnded = predicate.Funcs{
	CreateFunc: func(event.CreateEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		old, oldOK := e.ObjectOld.(*cachev1alpha1.CacheBenchmark)
		cur, curOK := e.ObjectNew.(*cachev1alpha1.CacheBenchmark)
		return oldOK && curOK && !finished(old) && finished(cur)
	},
}

// instanceOfBenchmark maps a benchmark to the instance it measures.
func instanceOfBenchmark(_ context.Context, obj client.Object) []reconcile.Request {
	cb, ok := obj.(*cachev1alpha1.CacheBenchmark)
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: cb.Namespace, Name: cb.Spec.InstanceRef.Name}}}
}
