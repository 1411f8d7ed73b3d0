package controllers

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/robfig/cron/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
)

// Snapshots on schedule and on demand: a persistent instance's primary takes a BGSAVE when
// persistence.snapshotSchedule's time comes or the snapshot-request annotation changes. The
// operator starts it, records it in status.persistence.runningSnapshot, and reads the server's
// INFO persistence on later passes until the save count moved (Succeeded) or the save ended
// without (Failed), when it becomes lastSnapshot. status.persistence.lastSave is the last save of any kind, as the primary
// reports it. Nothing of this replaces a pod or touches the keyspace: a snapshot is the server's
// own forkless BGSAVE.

// Condition reasons and event reasons of snapshots.
const (
	reasonInvalidSnapshotSchedule = "InvalidSnapshotSchedule"
	reasonSnapshotStarted         = "SnapshotStarted"
	reasonSnapshotSaved           = "SnapshotSaved"
	reasonSnapshotFailed          = "SnapshotFailed"
)

// How often a running snapshot is looked at, how soon a snapshot that could not start is tried
// again, and how often the last save of a persistent instance is read from its primary.
const (
	snapshotPoll      = 2 * time.Second
	snapshotRetry     = 10 * time.Second
	lastSaveRefresh   = 5 * time.Minute
	snapshotWaitLimit = time.Hour
)

// lastSaveRead is when the operator last read each instance's last save ("namespace/name" →
// time.Time): the refresh needs no status field of its own, which would be a write every few
// minutes per instance.
var lastSaveRead sync.Map

// snapshotRequested lets through a CacheInstance whose snapshot-request annotation changed: an
// annotation does not change the generation.
var snapshotRequested = predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
	return e.ObjectOld.GetAnnotations()[cachev1alpha1.AnnotationSnapshotRequest] !=
		e.ObjectNew.GetAnnotations()[cachev1alpha1.AnnotationSnapshotRequest]
}}

// parseSnapshotSchedule parses persistence.snapshotSchedule as a CronJob's schedule is parsed.
func parseSnapshotSchedule(spec string) (cron.Schedule, error) {
	return cron.ParseStandard(spec)
}

// serverPersistence is what INFO persistence says of the server's snapshots.
type serverPersistence struct {
	saves             int64
	bgsaveRunning     bool
	aofRewriteRunning bool
	lastOK            bool
	lastSaveUnix      int64
	lastBytes, lastMs int64
}

// readPersistence reads INFO persistence from a server.
func readPersistence(ctx context.Context, addr string, creds serverCreds) (serverPersistence, error) {
	rdb := serverClient(addr, creds)
	defer func() { _ = rdb.Close() }()
	info, err := rdb.Info(ctx, "persistence").Result()
	if err != nil {
		return serverPersistence{}, fmt.Errorf("INFO persistence: %w", err)
	}
	var sp serverPersistence
	fields := map[string]func(string){
		"rdb_saves":                 func(v string) { sp.saves, _ = strconv.ParseInt(v, 10, 64) },
		"rdb_bgsave_in_progress":    func(v string) { sp.bgsaveRunning = v == "1" },
		"aof_rewrite_in_progress":   func(v string) { sp.aofRewriteRunning = v == "1" },
		"rdb_last_bgsave_status":    func(v string) { sp.lastOK = v == "ok" },
		"rdb_last_save_time":        func(v string) { sp.lastSaveUnix, _ = strconv.ParseInt(v, 10, 64) },
		"rdb_last_save_bytes":       func(v string) { sp.lastBytes, _ = strconv.ParseInt(v, 10, 64) },
		"rdb_last_save_duration_ms": func(v string) { sp.lastMs, _ = strconv.ParseInt(v, 10, 64) },
	}
	seen := 0
	for _, line := range strings.Split(info, "\n") {
		k, v, ok := strings.Cut(strings.TrimSpace(line), ":")
		if set := fields[k]; ok && set != nil {
			set(v)
			seen++
		}
	}
	if seen < len(fields) {
		return sp, errors.New("INFO persistence lacks the fields of iocache-server's snapshots")
	}
	return sp, nil
}

// saved is the last save a server reported, or nil before any.
func (sp serverPersistence) saved(pod string) *cachev1alpha1.SavedSnapshot {
	if sp.saves == 0 || sp.lastBytes < 0 {
		return nil
	}
	return &cachev1alpha1.SavedSnapshot{Pod: pod, Time: metav1.Unix(sp.lastSaveUnix, 0),
		SizeBytes: sp.lastBytes, DurationMilliseconds: max(sp.lastMs, 0)}
}

// startBGSave asks a server for a BGSAVE; it reports false (and no error) when a save or rewrite
// already runs, which the next pass waits out.
func startBGSave(ctx context.Context, addr string, creds serverCreds) (bool, error) {
	rdb := serverClient(addr, creds)
	defer func() { _ = rdb.Close() }()
	reply, err := rdb.Do(ctx, "BGSAVE").Text()
	switch {
	case err != nil && strings.Contains(err.Error(), "in progress"):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("BGSAVE: %w", err)
	case !strings.HasPrefix(reply, "Background saving started"):
		return false, fmt.Errorf("BGSAVE: unexpected reply %q", reply)
	}
	return true, nil
}

// snapshotPod is the pod whose snapshots count: the primary.
func snapshotPod(inst *instance) string {
	if rep := inst.replication; rep != nil && rep.status != nil {
		return rep.status.Primary
	}
	if rs := inst.Status.Replication; rs != nil && rs.Primary != "" {
		return rs.Primary
	}
	return inst.Name + "-0"
}

// reconcileSnapshots takes the snapshots persistence.snapshotSchedule and the snapshot-request
// annotation ask for, follows the running one, and reads the primary's last save. It never stops
// the pass: a snapshot that cannot start now is tried again.
func (r *CacheInstanceReconciler) reconcileSnapshots(ctx context.Context, inst *instance) (*ctrl.Result, error) {
	key := inst.Namespace + "/" + inst.Name
	p := &inst.Spec.Persistence
	if !p.Mode.Persistent() || inst.rollout == nil {
		return nil, nil
	}
	st := &cachev1alpha1.PersistenceStatus{}
	if inst.Status.Persistence != nil {
		st = inst.Status.Persistence.DeepCopy()
	}
	inst.persistence = st
	now := time.Now()

	var sched cron.Schedule
	st.NextScheduleTime = nil
	if p.SnapshotSchedule != "" {
		var err error
		if sched, err = parseSnapshotSchedule(p.SnapshotSchedule); err != nil {
			inst.block(reasonInvalidSnapshotSchedule, fmt.Sprintf(
				"persistence.snapshotSchedule %q is not a schedule: %v. Use cron syntax, as a CronJob's: \"0 3 * * *\", \"@hourly\", \"@every 6h\"",
				p.SnapshotSchedule, err))
			sched = nil
		}
	}
	// A time missed while the operator was away is caught up once: the next one counts from now.
	scheduleDue := false
	if sched != nil {
		base := inst.CreationTimestamp.Time
		if st.LastScheduleTime != nil {
			base = st.LastScheduleTime.Time
		}
		next := sched.Next(base)
		if scheduleDue = !next.After(now); scheduleDue {
			next = sched.Next(now)
		}
		st.NextScheduleTime = &metav1.Time{Time: next}
		inst.recheckIn(time.Until(next) + time.Second)
	}
	request := inst.Annotations[cachev1alpha1.AnnotationSnapshotRequest]
	requestDue := request != "" && request != st.LastRequest
	var due cachev1alpha1.SnapshotTrigger
	switch {
	case requestDue:
		due = cachev1alpha1.SnapshotOnRequest
	case scheduleDue:
		due = cachev1alpha1.SnapshotOnSchedule
	}
	running := st.RunningSnapshot != nil
	last, _ := lastSaveRead.Load(key)
	stale := last == nil || now.Sub(last.(time.Time)) >= lastSaveRefresh
	inst.recheckIn(lastSaveRefresh)
	if due == "" && !running && !stale {
		return nil, nil
	}

	podName := snapshotPod(inst)
	pod := &corev1.Pod{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: inst.Namespace, Name: podName}, pod); err != nil && !apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("reading pod %s: %w", podName, err)
	}
	if running && (pod.UID == "" || string(pod.UID) != st.RunningSnapshot.PodUID) {
		r.endSnapshot(inst, st, now, nil, fmt.Sprintf(
			"pod %s was replaced, or stopped being the primary, while it saved; a snapshot it took at shutdown, if any, is on its volume", st.RunningSnapshot.Pod))
		running = false
	}
	if pod.UID == "" || !podReady(pod) {
		if due != "" || running {
			inst.recheckIn(snapshotRetry)
		}
		return nil, nil
	}
	addr := r.serverAddress(pod)
	sp, err := readPersistence(ctx, addr, inst.creds())
	if err != nil {
		logf.FromContext(ctx).Info("snapshot state not read; trying again", "pod", pod.Name, "error", err.Error())
		inst.recheckIn(snapshotRetry)
		return nil, nil
	}
	lastSaveRead.Store(key, now)
	if s := sp.saved(pod.Name); s != nil {
		st.LastSave = s
	}

	if running {
		rs := st.RunningSnapshot
		switch {
		case sp.saves > rs.SavesBefore && !sp.bgsaveRunning && sp.saved(pod.Name) != nil:
			r.endSnapshot(inst, st, now, sp.saved(pod.Name), "")
		case sp.saves > rs.SavesBefore, sp.bgsaveRunning:
			if now.Sub(rs.StartTime.Time) > snapshotWaitLimit {
				r.endSnapshot(inst, st, now, nil, fmt.Sprintf("the save was still running after %s", snapshotWaitLimit))
				break
			}
			inst.recheckIn(snapshotPoll)
			return nil, nil
		default:
			r.endSnapshot(inst, st, now, nil, "the server's save failed (INFO persistence rdb_last_bgsave_status:err); see the pod's log. The previous snapshot is intact")
		}
	}
	if due == "" {
		return nil, nil
	}
	if sp.bgsaveRunning || sp.aofRewriteRunning {
		inst.recheckIn(snapshotPoll)
		return nil, nil
	}
	started, err := startBGSave(ctx, addr, inst.creds())
	if err != nil {
		r.Recorder.Eventf(inst.CacheInstance, nil, corev1.EventTypeWarning, reasonSnapshotFailed, "Snapshot",
			"Pod %s did not start a snapshot (tried again in %s): %v", pod.Name, snapshotRetry, err)
		inst.recheckIn(snapshotRetry)
		return nil, nil
	}
	if !started {
		inst.recheckIn(snapshotPoll)
		return nil, nil
	}
	snap := &cachev1alpha1.OperatorSnapshot{Trigger: due, Pod: pod.Name, PodUID: string(pod.UID), SavesBefore: sp.saves,
		StartTime: metav1.Time{Time: now}, Result: cachev1alpha1.SnapshotRunning}
	// One snapshot serves a request and a scheduled time that come together.
	if requestDue {
		snap.Request = request
		st.LastRequest = request
	}
	if scheduleDue {
		st.LastScheduleTime = &metav1.Time{Time: now}
	}
	st.RunningSnapshot = snap
	r.Recorder.Eventf(inst.CacheInstance, nil, corev1.EventTypeNormal, reasonSnapshotStarted, "Snapshot",
		"Pod %s is taking a snapshot (%s%s)", pod.Name, due, requestNote(snap.Request))
	inst.recheckIn(snapshotPoll)
	return nil, nil
}

func requestNote(request string) string {
	if request == "" {
		return ""
	}
	return " " + strconv.Quote(request)
}

// endSnapshot records how the running snapshot ended, as the last snapshot, with an event.
func (r *CacheInstanceReconciler) endSnapshot(inst *instance, st *cachev1alpha1.PersistenceStatus, now time.Time, saved *cachev1alpha1.SavedSnapshot, failure string) {
	ls := st.RunningSnapshot
	st.RunningSnapshot, st.LastSnapshot = nil, ls
	ls.CompletionTime = &metav1.Time{Time: now}
	if failure != "" {
		ls.Result, ls.Message = cachev1alpha1.SnapshotFailed, failure
		r.Recorder.Eventf(inst.CacheInstance, nil, corev1.EventTypeWarning, reasonSnapshotFailed, "Snapshot",
			"Snapshot on pod %s (%s%s) failed: %s", ls.Pod, ls.Trigger, requestNote(ls.Request), failure)
		return
	}
	ls.Result, ls.Saved = cachev1alpha1.SnapshotSucceeded, saved
	ls.Message = fmt.Sprintf("%d bytes written in %d ms", saved.SizeBytes, saved.DurationMilliseconds)
	r.Recorder.Eventf(inst.CacheInstance, nil, corev1.EventTypeNormal, reasonSnapshotSaved, "Snapshot",
		"Pod %s saved a snapshot (%s%s): %s", ls.Pod, ls.Trigger, requestNote(ls.Request), ls.Message)
}
