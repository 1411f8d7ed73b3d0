package controllers

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
	"github.com/iocache/iocache/server/backup"
)

// Backups on schedule and on request: the instance controller creates a CacheBackup when
// spec.backup.schedule's time comes or the backup-request annotation changes (the backup
// controller runs it), sums its instance's CacheBackups up in status.backups, and applies the
// retention to the CacheBackup objects as the backup Job applied it to the storage: a backup
// whose data retention deleted is no longer listed. Like CronJob, a missed time is caught up
// once; unlike CronJob, the newest complete backup is never deleted, whatever its age.

// Event and condition reasons of backups.
const (
	reasonInvalidBackupSchedule = "InvalidBackupSchedule"
	reasonBackupScheduled       = "BackupScheduled"
)

// failedBackupsKept is how many failed scheduled or requested CacheBackups stay listed, newest
// first, as CronJob's failedJobsHistoryLimit: enough to see a pattern, not a pile.
const failedBackupsKept = 3

// backupUser reads, or creates once, the backup user's Secret <instance>-backup: the backup Jobs
// authenticate as backup.UserName, whose rules let them take a snapshot and nothing else.
func (r *CacheInstanceReconciler) backupUser(ctx context.Context, ci *cachev1alpha1.CacheInstance) (aclUser, bool, error) {
	return r.jobUser(ctx, ci, backupSecretName(ci), backup.UserName, backup.ACLRules())
}

// scheduledBackupName names the CacheBackup of a scheduled or requested run at t.
func scheduledBackupName(ci *cachev1alpha1.CacheInstance, t time.Time, trigger cachev1alpha1.BackupTrigger) string {
	stamp := strings.ToLower(t.UTC().Format("20060102t150405z"))
	if trigger == cachev1alpha1.BackupOnRequest {
		return ci.Name + "-req-" + stamp
	}
	return ci.Name + "-" + stamp
}

// reconcileBackups creates the backups the schedule and the request annotation ask for, writes
// status.backups and applies retention to the instance's CacheBackups. It never ends the pass.
func (r *CacheInstanceReconciler) reconcileBackups(ctx context.Context, inst *instance) (*ctrl.Result, error) {
	spec := inst.Spec.Backup
	if spec == nil {
		// setStatus drops status.backups without spec.backup.
		forgetBackupMetrics(inst.Namespace, inst.Name)
		return nil, nil
	}
	st := &cachev1alpha1.BackupsStatus{}
	if inst.Status.Backups != nil {
		st = inst.Status.Backups.DeepCopy()
	}
	inst.backups = st
	now := time.Now()

	var list cachev1alpha1.CacheBackupList
	if err := r.List(ctx, &list, client.InNamespace(inst.Namespace)); err != nil {
		return nil, fmt.Errorf("listing CacheBackups: %w", err)
	}
	var own []*cachev1alpha1.CacheBackup
	for i := range list.Items {
		if list.Items[i].Spec.InstanceRef.Name == inst.Name && list.Items[i].DeletionTimestamp.IsZero() {
			own = append(own, &list.Items[i])
		}
	}

	// The schedule.
	var sched cron.Schedule
	st.NextScheduleTime = nil
	if spec.Schedule != "" && !spec.Suspend {
		var err error
		if sched, err = cron.ParseStandard(spec.Schedule); err != nil {
			inst.block(reasonInvalidBackupSchedule, fmt.Sprintf(
				"backup.schedule %q is not a schedule: %v. Use cron syntax, as a CronJob's: \"0 3 * * *\", \"@hourly\", \"@every 6h\"",
				spec.Schedule, err))
			sched = nil
		}
	}
	if sched == nil {
		st.ScheduleSince = nil
	} else if st.ScheduleSince == nil {
		st.ScheduleSince = &metav1.Time{Time: now}
	}
	due := map[cachev1alpha1.BackupTrigger]bool{}
	if sched != nil {
		base := st.ScheduleSince.Time
		if st.LastScheduleTime != nil && st.LastScheduleTime.After(base) {
			base = st.LastScheduleTime.Time
		}
		next := sched.Next(base)
		if due[cachev1alpha1.BackupOnSchedule] = !next.After(now); due[cachev1alpha1.BackupOnSchedule] {
			next = sched.Next(now)
		}
		st.NextScheduleTime = &metav1.Time{Time: next}
		inst.recheckIn(time.Until(next) + time.Second)
	}
	request := inst.Annotations[cachev1alpha1.AnnotationBackupRequest]
	due[cachev1alpha1.BackupOnRequest] = request != "" && request != st.LastRequest
	for _, trigger := range []cachev1alpha1.BackupTrigger{cachev1alpha1.BackupOnSchedule, cachev1alpha1.BackupOnRequest} {
		if !due[trigger] {
			continue
		}
		cbk := &cachev1alpha1.CacheBackup{
			ObjectMeta: metav1.ObjectMeta{
				Name:      scheduledBackupName(inst.CacheInstance, now, trigger),
				Namespace: inst.Namespace,
				Labels:    objectLabels(inst.CacheInstance),
			},
			Spec: cachev1alpha1.CacheBackupSpec{
				InstanceRef: corev1.LocalObjectReference{Name: inst.Name},
				Target:      spec.Target,
				Trigger:     trigger,
			},
		}
		// Not owned by the instance: a backup outlives it (an instance deleted by mistake is
		// restored from its backups, which the garbage collector would otherwise list as gone).
		if err := r.Create(ctx, cbk); err != nil && !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("creating CacheBackup %s: %w", cbk.Name, err)
		}
		r.Recorder.Eventf(inst.CacheInstance, cbk, corev1.EventTypeNormal, reasonBackupScheduled, "Backup", "created CacheBackup %s (%s)", cbk.Name, trigger)
		own = append(own, cbk)
		if trigger == cachev1alpha1.BackupOnSchedule {
			st.LastScheduleTime = &metav1.Time{Time: now}
		} else {
			st.LastRequest = request
		}
	}

	// What the backups say, then retention.
	st.LastSuccessful, st.LastFailed = nil, nil
	var completed, failed []*cachev1alpha1.CacheBackup
	for _, b := range own {
		if b.Status.CompletionTime == nil {
			continue
		}
		ref := &cachev1alpha1.BackupRef{Name: b.Name, Time: *b.Status.CompletionTime}
		switch b.Status.Phase {
		case cachev1alpha1.BackupCompleted:
			completed = append(completed, b)
			ref.SizeBytes, ref.Keys = b.Status.SizeBytes, b.Status.Keys
			if st.LastSuccessful == nil || ref.Time.After(st.LastSuccessful.Time.Time) {
				st.LastSuccessful = ref
			}
		case cachev1alpha1.BackupFailed:
			failed = append(failed, b)
			if st.LastFailed == nil || ref.Time.After(st.LastFailed.Time.Time) {
				st.LastFailed = ref
			}
		}
	}
	for _, b := range expiredBackups(spec.Retention, completed, failed, now) {
		if err := r.Delete(ctx, b, client.Preconditions{UID: &b.UID}); err != nil && !apierrors.IsNotFound(err) {
			return nil, fmt.Errorf("deleting expired CacheBackup %s: %w", b.Name, err)
		}
	}
	recordBackups(inst.CacheInstance, st, sched, completed)
	return nil, nil
}

// expiredBackups is what retention removes from the listed backups: completed ones as the Job's
// retention removed their data (the same rule, backup.Retention, over the same backups), and
// failed scheduled or requested ones beyond the newest failedBackupsKept. Failed manual backups
// stay until their owner deletes them.
func expiredBackups(ret cachev1alpha1.BackupRetention, completed, failed []*cachev1alpha1.CacheBackup, now time.Time) []*cachev1alpha1.CacheBackup {
	byTime := func(a, b *cachev1alpha1.CacheBackup) int {
		return a.Status.CompletionTime.Compare(b.Status.CompletionTime.Time)
	}
	slices.SortFunc(completed, byTime)
	var out []*cachev1alpha1.CacheBackup
	if ret.Keep > 0 || ret.MaxAge != nil {
		r := backup.Retention{Keep: int(ret.Keep)}
		if ret.MaxAge != nil {
			r.MaxAge = ret.MaxAge.Duration
		}
		manifests := make([]*backup.Manifest, len(completed))
		index := map[*backup.Manifest]*cachev1alpha1.CacheBackup{}
		for i, b := range completed {
			manifests[i] = &backup.Manifest{Name: b.Name, Completed: b.Status.CompletionTime.Time}
			index[manifests[i]] = b
		}
		for _, m := range r.Expired(manifests, now) {
			out = append(out, index[m])
		}
	}
	slices.SortFunc(failed, byTime)
	kept := 0
	for i := len(failed) - 1; i >= 0; i-- {
		if failed[i].Spec.Trigger == cachev1alpha1.BackupManual || failed[i].Spec.Trigger == "" {
			continue
		}
		if kept++; kept > failedBackupsKept {
			out = append(out, failed[i])
		}
	}
	return out
}

// backupFinishedPredicate lets through a CacheBackup that completed, failed or was deleted: the
// instance's status.backups and retention change then.
var backupFinishedPredicate = predicate.Funcs{
	CreateFunc: func(event.CreateEvent) bool { return false },
	UpdateFunc: func(e event.UpdateEvent) bool {
		old, oldOK := e.ObjectOld.(*cachev1alpha1.CacheBackup)
		cur, curOK := e.ObjectNew.(*cachev1alpha1.CacheBackup)
		return oldOK && curOK && old.Status.Phase != cur.Status.Phase && backupFinished(cur)
	},
}

// backupRequested lets through a CacheInstance whose backup-request annotation changed.
var backupRequested = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	return e.ObjectOld.GetAnnotations()[cachev1alpha1.AnnotationBackupRequest] !=
		e.ObjectNew.GetAnnotations()[cachev1alpha1.AnnotationBackupRequest]
}}

// instanceOfBackup maps a backup to its instance.
func instanceOfBackup(_ context.Context, obj client.Object) []reconcile.Request {
	cbk, ok := obj.(*cachev1alpha1.CacheBackup)
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: client.ObjectKey{Namespace: cbk.Namespace, Name: cbk.Spec.InstanceRef.Name}}}
}
