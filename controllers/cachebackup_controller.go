package controllers

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
	"github.com/iocache/iocache/server/backup"
)

// backupWait is how often a CacheBackup that waits for its instance (no spec.backup yet, or no
// instance) looks again, besides the instance's own changes.
const backupWait = 30 * time.Second

// backupInstanceField indexes CacheBackups by the instance they back up.
const backupInstanceField = "spec.instanceRef.name"

// CacheBackupReconciler runs a CacheBackup: it creates its Job once the instance has
// spec.backup, and when the Job ends reads the manifest from the pod's termination message into
// the status (or the last attempt's error, with a Warning event).
type CacheBackupReconciler struct {
	client.Client
	// APIReader reads the backup itself and the Jobs' pods straight from the API server.
	APIReader client.Reader
	Recorder  events.EventRecorder
	// Image runs the backup when the instance names no image: the operator's own.
	Image string
}

// +kubebuilder:rbac:groups=cache.iocache.dev,resources=cachebackups,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=cache.iocache.dev,resources=cachebackups/status,verbs=update
// +kubebuilder:rbac:groups=cache.iocache.dev,resources=cachebackups/finalizers,verbs=update

// Reconcile moves one CacheBackup as far as it can go now.
func (r *CacheBackupReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	cbk := &cachev1alpha1.CacheBackup{}
	if err := r.APIReader.Get(ctx, req.NamespacedName, cbk); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("fetching CacheBackup: %w", err)
	}
	if !cbk.DeletionTimestamp.IsZero() || backupFinished(cbk) {
		return ctrl.Result{}, nil
	}
	cbk.SetDefaults()
	res, err := r.run(ctx, cbk)
	if apierrors.IsConflict(err) {
		logf.FromContext(ctx).V(1).Info("write conflict, running again", "error", err.Error())
		return ctrl.Result{RequeueAfter: conflictRetry}, nil
	}
	return res, err
}

// backupFinished is true once a backup completed or failed.
func backupFinished(cbk *cachev1alpha1.CacheBackup) bool {
	return cbk.Status.Phase == cachev1alpha1.BackupCompleted || cbk.Status.Phase == cachev1alpha1.BackupFailed
}

func (r *CacheBackupReconciler) run(ctx context.Context, cbk *cachev1alpha1.CacheBackup) (ctrl.Result, error) {
	ci := &cachev1alpha1.CacheInstance{}
	err := r.Get(ctx, client.ObjectKey{Namespace: cbk.Namespace, Name: cbk.Spec.InstanceRef.Name}, ci)
	switch {
	case apierrors.IsNotFound(err):
		return ctrl.Result{RequeueAfter: backupWait}, r.write(ctx, cbk, func(st *cachev1alpha1.CacheBackupStatus) {
			st.Phase = cachev1alpha1.BackupPending
			setBackupComplete(st, cbk, metav1.ConditionUnknown, cachev1alpha1.BackupReasonInstanceNotFound,
				fmt.Sprintf("CacheInstance %s does not exist in namespace %s", cbk.Spec.InstanceRef.Name, cbk.Namespace))
		})
	case err != nil:
		return ctrl.Result{}, fmt.Errorf("fetching CacheInstance: %w", err)
	}
	ci.SetDefaults()

	job := &batchv1.Job{}
	jobKey := client.ObjectKey{Namespace: cbk.Namespace, Name: backupJobName(cbk)}
	err = r.Get(ctx, jobKey, job)
	if apierrors.IsNotFound(err) && cbk.Status.Job != "" {
		// The cache may not hold the Job this controller just created yet: only the API server can
		// say it is gone (deleted by hand, or its TTL passed, before the result was read).
		if err = r.APIReader.Get(ctx, jobKey, job); apierrors.IsNotFound(err) {
			return ctrl.Result{}, r.fail(ctx, cbk, ci, cachev1alpha1.BackupReasonJobFailed, fmt.Sprintf("Job %s is gone before it reported", cbk.Status.Job))
		}
	}
	if apierrors.IsNotFound(err) {
		if ci.Spec.Backup == nil {
			return ctrl.Result{RequeueAfter: backupWait}, r.write(ctx, cbk, func(st *cachev1alpha1.CacheBackupStatus) {
				st.Phase = cachev1alpha1.BackupPending
				setBackupComplete(st, cbk, metav1.ConditionUnknown, cachev1alpha1.BackupReasonNoStorage,
					fmt.Sprintf("CacheInstance %s has no spec.backup: set spec.backup.storage to say where its backups go", ci.Name))
			})
		}
		// The backup from the image the server runs, as upgradePolicy chose it.
		image := ci.Spec.Image
		if image == "" {
			image = ci.Status.Image
		}
		if image == "" {
			image = r.Image
		}
		job = desiredBackupJob(cbk, ci, ci.Status.ConfigHash, image)
		if err := r.Create(ctx, job); err != nil && !apierrors.IsAlreadyExists(err) {
			return ctrl.Result{}, fmt.Errorf("creating Job %s: %w", job.Name, err)
		}
		storage := &ci.Spec.Backup.Storage
		now := metav1.Now()
		return ctrl.Result{}, r.write(ctx, cbk, func(st *cachev1alpha1.CacheBackupStatus) {
			st.Phase = cachev1alpha1.BackupRunning
			st.Job = job.Name
			st.StartTime = &now
			st.Source = backupSource(ci, cbk.Spec.Target)
			st.Endpoint, st.Bucket = storage.Endpoint, storage.Bucket
			st.ConfigHash = ci.Status.ConfigHash
			setBackupComplete(st, cbk, metav1.ConditionUnknown, cachev1alpha1.BackupReasonRunning,
				fmt.Sprintf("Job %s streams a snapshot from %s to %s/%s", job.Name, st.Source, storage.Endpoint, storage.Bucket))
		})
	}
	if err != nil {
		return ctrl.Result{}, fmt.Errorf("fetching Job: %w", err)
	}
	done, succeeded, reason, message := jobFinished(job)
	if !done {
		return ctrl.Result{}, nil
	}
	msg, at, _, err := jobTerminationMessage(ctx, r.APIReader, job, backupContainerName, succeeded)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !succeeded {
		why := fmt.Sprintf("Job %s failed (%s: %s)", job.Name, reason, message)
		if last := lastLine(msg); last != "" {
			why += "; the last attempt said: " + last
		}
		return ctrl.Result{}, r.fail(ctx, cbk, ci, cachev1alpha1.BackupReasonJobFailed, why)
	}
	m, err := parseManifest(msg)
	if err != nil {
		return ctrl.Result{}, r.fail(ctx, cbk, ci, cachev1alpha1.BackupReasonInvalidResult, fmt.Sprintf("Job %s succeeded, but %v", job.Name, err))
	}
	if err := r.write(ctx, cbk, func(st *cachev1alpha1.CacheBackupStatus) { completeBackup(st, cbk, m, at) }); err != nil {
		return ctrl.Result{}, err
	}
	r.Recorder.Eventf(cbk, ci, corev1.EventTypeNormal, cachev1alpha1.BackupReasonCompleted, "Backup",
		"stored %d keys in %s (%s) as %s", m.Keys, m.Object, humanBytes(m.Size), m.Name)
	return ctrl.Result{}, nil
}

// parseManifest reads the manifest the backup wrote as its termination message.
func parseManifest(message string) (*backup.Manifest, error) {
	var m backup.Manifest
	if err := json.Unmarshal(bytes.TrimSpace([]byte(message)), &m); err != nil {
		return nil, fmt.Errorf("its termination message is not a manifest: %w", err)
	}
	switch {
	case m.Format != backup.Format:
		return nil, fmt.Errorf("its manifest is of format %q, not %q", m.Format, backup.Format)
	case m.Object == "" || m.SHA256 == "" || m.Size <= 0 || m.RDBSize <= 0:
		return nil, errors.New("its manifest lacks the object, its checksum or its sizes")
	}
	return &m, nil
}

// completeBackup records a stored backup's manifest.
func completeBackup(st *cachev1alpha1.CacheBackupStatus, cbk *cachev1alpha1.CacheBackup, m *backup.Manifest, at time.Time) {
	st.Phase = cachev1alpha1.BackupCompleted
	st.BackupName = m.Name
	st.Object = m.Object
	st.SizeBytes, st.RDBSizeBytes, st.Size = m.Size, m.RDBSize, humanBytes(m.Size)
	st.Keys = m.Keys
	st.SHA256 = m.SHA256
	st.RDBVersion = int32(m.RDBVersion)
	st.ServerVersion = m.Server + " " + m.ServerVersion
	st.ReplicationID, st.ReplicationOffset = m.ReplID, m.ReplOffset
	if h := m.Labels["configHash"]; h != "" {
		st.ConfigHash = h
	}
	completed := m.Completed
	if completed.IsZero() {
		completed = at
	}
	st.CompletionTime = &metav1.Time{Time: completed}
	if !m.Started.IsZero() {
		st.DurationSeconds = int64(completed.Sub(m.Started).Round(time.Second) / time.Second)
	}
	setBackupComplete(st, cbk, metav1.ConditionTrue, cachev1alpha1.BackupReasonCompleted,
		fmt.Sprintf("%d keys, %s of RDB stored as %s (zstd), sha256 %s", m.Keys, humanBytes(m.RDBSize), humanBytes(m.Size), m.SHA256))
}

// fail ends a backup that will not complete, with a Warning event that says why.
func (r *CacheBackupReconciler) fail(ctx context.Context, cbk *cachev1alpha1.CacheBackup, ci *cachev1alpha1.CacheInstance, reason, message string) error {
	now := metav1.Now()
	if err := r.write(ctx, cbk, func(st *cachev1alpha1.CacheBackupStatus) {
		st.Phase = cachev1alpha1.BackupFailed
		st.CompletionTime = &now
		setBackupComplete(st, cbk, metav1.ConditionFalse, reason, message)
	}); err != nil {
		return err
	}
	r.Recorder.Eventf(cbk, ci, corev1.EventTypeWarning, reason, "Backup", "%s", eventNote(message))
	return nil
}

// lastLine is the last non-empty line of a failed container's message (its log's tail): the
// backup's own error, which quotes the storage's or the server's.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return quoteError(lines[len(lines)-1])
}

// write changes the backup's status through writeStatus.
func (r *CacheBackupReconciler) write(ctx context.Context, cbk *cachev1alpha1.CacheBackup, change func(*cachev1alpha1.CacheBackupStatus)) error {
	_, err := writeStatus(ctx, r.Client, r.APIReader, cbk, func(c *cachev1alpha1.CacheBackup) error {
		change(&c.Status)
		c.Status.ObservedGeneration = c.Generation
		return nil
	})
	if err != nil {
		return fmt.Errorf("updating CacheBackup status: %w", err)
	}
	return nil
}

// setBackupComplete sets the Complete condition.
func setBackupComplete(st *cachev1alpha1.CacheBackupStatus, cbk *cachev1alpha1.CacheBackup, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: cachev1alpha1.ConditionComplete, Status: status, Reason: reason, Message: message, ObservedGeneration: cbk.Generation,
	})
}

// humanBytes writes a size the way people read it: "4.8 MiB".
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return fmt.Sprintf("%d B", n)
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit; m /= unit {
		div *= unit
		exp++
	}
	return fmt.Sprintf("%.1f %ciB", float64(n)/float64(div), "KMGTPE"[exp])
}

// SetupWithManager watches CacheBackups (new ones: their spec never changes), the Jobs they own,
// and their instances, whose spec.backup a waiting backup needs.
func (r *CacheBackupReconciler) SetupWithManager(mgr ctrl.Manager, maxConcurrent int) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &cachev1alpha1.CacheBackup{}, backupInstanceField,
		func(o client.Object) []string {
			return []string{o.(*cachev1alpha1.CacheBackup).Spec.InstanceRef.Name}
		}); err != nil {
		return fmt.Errorf("indexing CacheBackups by instance: %w", err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&cachev1alpha1.CacheBackup{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&batchv1.Job{}).
		Watches(&cachev1alpha1.CacheInstance{}, handler.EnqueueRequestsFromMapFunc(r.waitingBackupsOf),
			builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WithOptions(controller.Options{MaxConcurrentReconciles: maxConcurrent}).
		Named("cachebackup").
		Complete(r)
}

// waitingBackupsOf maps an instance to its backups that have no Job yet.
func (r *CacheBackupReconciler) waitingBackupsOf(ctx context.Context, obj client.Object) []reconcile.Request {
	var list cachev1alpha1.CacheBackupList
	if err := r.List(ctx, &list, client.InNamespace(obj.GetNamespace()), client.MatchingFields{backupInstanceField: obj.GetName()}); err != nil {
		logf.FromContext(ctx).Error(err, "listing the backups of an instance", "instance", obj.GetName())
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		if list.Items[i].Status.Phase == "" || list.Items[i].Status.Phase == cachev1alpha1.BackupPending {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return out
}
