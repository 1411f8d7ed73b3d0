package controllers

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/robfig/cron/v3"
	"sigs.k8s.io/controller-runtime/pkg/metrics"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
)

// Backup metrics per instance, from status.backups and the completed CacheBackups: what the
// IOCacheBackupMissed alert and the dashboard read. The schedule's interval lets the alert say
// "two runs missed" for any schedule; the schedule's start stands in for the last success until
// there is one, so a schedule that never succeeded alerts too.
var (
	backupLastSuccess = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "iocache_backup_last_success_timestamp_seconds",
		Help: "When the newest complete backup of a CacheInstance completed (Unix time).",
	}, []string{"namespace", "instance"})
	backupLastDuration = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "iocache_backup_last_duration_seconds",
		Help: "How long the newest complete backup of a CacheInstance took to stream and store.",
	}, []string{"namespace", "instance"})
	backupLastSize = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "iocache_backup_last_size_bytes",
		Help: "Stored (compressed) size of the newest complete backup of a CacheInstance.",
	}, []string{"namespace", "instance"})
	backupLastKeys = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "iocache_backup_last_keys",
		Help: "Keys in the newest complete backup of a CacheInstance.",
	}, []string{"namespace", "instance"})
	backupScheduleInterval = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "iocache_backup_schedule_interval_seconds",
		Help: "Time between two runs of a CacheInstance's backup schedule (absent without a schedule, or while it is suspended).",
	}, []string{"namespace", "instance"})
	backupScheduleStart = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "iocache_backup_schedule_start_timestamp_seconds",
		Help: "When a CacheInstance's backup schedule began (Unix time).",
	}, []string{"namespace", "instance"})
)

func init() {
	metrics.Registry.MustRegister(backupLastSuccess, backupLastDuration, backupLastSize, backupLastKeys,
		backupScheduleInterval, backupScheduleStart)
}

var backupGauges = []*prometheus.GaugeVec{backupLastSuccess, backupLastDuration, backupLastSize, backupLastKeys,
	backupScheduleInterval, backupScheduleStart}

// recordBackups exports an instance's backup state.
func recordBackups(ci *cachev1alpha1.CacheInstance, st *cachev1alpha1.BackupsStatus, sched cron.Schedule, completed []*cachev1alpha1.CacheBackup) {
	labels := prometheus.Labels{"namespace": ci.Namespace, "instance": ci.Name}
	var newest *cachev1alpha1.CacheBackup
	for _, b := range completed {
		if newest == nil || b.Status.CompletionTime.After(newest.Status.CompletionTime.Time) {
			newest = b
		}
	}
	if newest != nil {
		backupLastSuccess.With(labels).Set(float64(newest.Status.CompletionTime.Unix()))
		backupLastDuration.With(labels).Set(float64(newest.Status.DurationSeconds))
		backupLastSize.With(labels).Set(float64(newest.Status.SizeBytes))
		backupLastKeys.With(labels).Set(float64(newest.Status.Keys))
	}
	if sched == nil || st.ScheduleSince == nil {
		backupScheduleInterval.Delete(labels)
		backupScheduleStart.Delete(labels)
		return
	}
	next := sched.Next(time.Now())
	backupScheduleInterval.With(labels).Set(sched.Next(next).Sub(next).Seconds())
	backupScheduleStart.With(labels).Set(float64(st.ScheduleSince.Unix()))
}

// forgetBackupMetrics drops an instance's backup series.
func forgetBackupMetrics(namespace, name string) {
	for _, g := range backupGauges {
		g.DeletePartialMatch(prometheus.Labels{"namespace": namespace, "instance": name})
	}
}
