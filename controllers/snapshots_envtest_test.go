package controllers_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
)

// Snapshots on demand and on a schedule, taken by a real iocache-server standing in for the pod:
// a new value of the snapshot-request annotation makes the primary BGSAVE, and the status records
// the request, the result and the file's size (the size of dump.rdb in the server's directory) and
// duration; persistence.snapshotSchedule takes one when its time comes and says when the next is
// due; a save that fails on the server is reported Failed with an event; a schedule that is not
// cron syntax degrades the instance with a message, and a schedule without a volume is refused.
func TestSnapshotsOnRequestAndOnSchedule(t *testing.T) {
	cl := startEnv(t)
	ns := cl.namespace(t)
	ctx := context.Background()

	// Without a volume there is nowhere to write a snapshot: the API server says so.
	none := instanceIn(ns, "volatile", 2, func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.Persistence = cachev1alpha1.PersistenceSpec{Mode: cachev1alpha1.PersistenceNone, SnapshotSchedule: "@daily"}
	})
	if err := cl.c.Create(ctx, none); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "persistence.snapshotSchedule needs a persistence.mode other than None") {
		t.Fatalf("a schedule without persistence: %v, want Invalid with the reason", err)
	}

	const password = "snapshot-password"
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cache-auth", Namespace: ns}, Data: map[string][]byte{"password": []byte(password)}}
	if err := cl.c.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	ci := instanceIn(ns, "cache", 2, func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.Auth = &cachev1alpha1.AuthSpec{ExistingSecret: "cache-auth"}
		ci.Spec.Persistence = cachev1alpha1.PersistenceSpec{Mode: cachev1alpha1.PersistenceRDB, Size: ptr.To(resource.MustParse("2Gi"))}
		ci.Spec.Benchmark.ValidateOnChange = ptr.To(false)
	})
	if err := cl.c.Create(ctx, ci); err != nil {
		t.Fatal(err)
	}
	cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionReady, metav1.ConditionFalse, "RollingOut")
	addr := startTestServer(t, password)
	cl.servePod(t, ns, "cache", addr)
	cl.simulateRollout(t, ns, "cache")
	cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionConfigApplied, metav1.ConditionTrue, "AppliedLive")
	rdb := redis.NewClient(&redis.Options{Addr: addr, Password: password, Protocol: 2})
	defer rdb.Close()
	fill := func(from, to int) {
		t.Helper()
		pipe := rdb.Pipeline()
		for i := from; i < to; i++ {
			pipe.Set(ctx, fmt.Sprintf("user:%d", i), "a value of some thirty bytes...", 0)
		}
		if _, err := pipe.Exec(ctx); err != nil {
			t.Fatal(err)
		}
	}
	fill(0, 20000)
	dir := rdb.ConfigGet(ctx, "dir").Val()["dir"]
	dumpSize := func() int64 {
		fi, err := os.Stat(filepath.Join(dir, "dump.rdb"))
		if err != nil {
			t.Fatal(err)
		}
		return fi.Size()
	}

	// On request.
	requestSnapshot := func(value string) {
		cl.update(t, ns, "cache", func(ci *cachev1alpha1.CacheInstance) {
			if ci.Annotations == nil {
				ci.Annotations = map[string]string{}
			}
			ci.Annotations[cachev1alpha1.AnnotationSnapshotRequest] = value
		})
	}
	waitSnapshot := func(what string, done func(*cachev1alpha1.OperatorSnapshot) bool) *cachev1alpha1.CacheInstance {
		t.Helper()
		got := &cachev1alpha1.CacheInstance{}
		eventually(t, what, func() error {
			if err := cl.get(t, ns, "cache", got); err != nil {
				return err
			}
			if p := got.Status.Persistence; p == nil || p.LastSnapshot == nil || !done(p.LastSnapshot) {
				if p != nil && p.LastSnapshot != nil {
					return fmt.Errorf("last snapshot %+v", *p.LastSnapshot)
				}
				return fmt.Errorf("status.persistence %+v", p)
			}
			return nil
		})
		return got
	}
	requestSnapshot("before-upgrade")
	got := waitSnapshot("the requested snapshot", func(s *cachev1alpha1.OperatorSnapshot) bool {
		return s.Request == "before-upgrade"
	})
	ls, p := got.Status.Persistence.LastSnapshot, got.Status.Persistence
	if ls.Result != cachev1alpha1.SnapshotSucceeded || ls.Trigger != cachev1alpha1.SnapshotOnRequest || ls.Pod != "cache-0" ||
		ls.Saved == nil || ls.Saved.SizeBytes != dumpSize() || ls.CompletionTime == nil || p.LastRequest != "before-upgrade" {
		t.Fatalf("after the request: %+v (saved %+v), dump.rdb %d bytes", ls, ls.Saved, dumpSize())
	}
	if p.LastSave == nil || p.LastSave.SizeBytes != ls.Saved.SizeBytes || p.LastSave.Pod != "cache-0" {
		t.Errorf("lastSave %+v, want the requested snapshot's", p.LastSave)
	}
	if keys := rdb.DBSize(ctx).Val(); keys != 20000 {
		t.Errorf("%d keys after the snapshot, want the 20000 written", keys)
	}
	cl.waitEventSaying(t, ns, "cache", "SnapshotSaved", `Pod cache-0 saved a snapshot (Request "before-upgrade")`)

	// On a schedule: every 3 seconds here, so that the test sees one.
	firstSize := ls.Saved.SizeBytes
	fill(20000, 40000)
	cl.update(t, ns, "cache", func(ci *cachev1alpha1.CacheInstance) { ci.Spec.Persistence.SnapshotSchedule = "@every 3s" })
	got = waitSnapshot("a scheduled snapshot", func(s *cachev1alpha1.OperatorSnapshot) bool {
		return s.Trigger == cachev1alpha1.SnapshotOnSchedule && s.Result == cachev1alpha1.SnapshotSucceeded
	})
	p = got.Status.Persistence
	if p.LastScheduleTime == nil || p.NextScheduleTime == nil || !p.NextScheduleTime.After(p.LastScheduleTime.Time) ||
		p.LastSnapshot.Saved.SizeBytes <= firstSize {
		t.Errorf("after a scheduled snapshot: %+v, saved %+v (the first was %d bytes, with half the keys)", p, p.LastSnapshot.Saved, firstSize)
	}

	// A save that fails on the server: where dump.rdb goes stands a directory, which the new file
	// cannot replace (a root test process cannot make a directory unwritable).
	cl.update(t, ns, "cache", func(ci *cachev1alpha1.CacheInstance) { ci.Spec.Persistence.SnapshotSchedule = "" })
	dump := filepath.Join(dir, "dump.rdb")
	if err := os.Remove(dump); err != nil {
		t.Fatal(err)
	}
	if err := os.MkdirAll(filepath.Join(dump, "in-the-way"), 0o755); err != nil {
		t.Fatal(err)
	}
	requestSnapshot("disk-gone")
	got = waitSnapshot("the failed snapshot", func(s *cachev1alpha1.OperatorSnapshot) bool {
		return s.Request == "disk-gone"
	})
	if ls := got.Status.Persistence.LastSnapshot; ls.Result != cachev1alpha1.SnapshotFailed || !strings.Contains(ls.Message, "rdb_last_bgsave_status:err") {
		t.Errorf("a save into a removed directory: %+v", ls)
	}
	if got.Status.Persistence.NextScheduleTime != nil {
		t.Errorf("nextScheduleTime %v without a schedule", got.Status.Persistence.NextScheduleTime)
	}
	cl.waitEventSaying(t, ns, "cache", "SnapshotFailed", "Snapshot on pod cache-0 (Request \"disk-gone\") failed")
	if err := os.RemoveAll(dump); err != nil {
		t.Fatal(err)
	}

	// A schedule that is not one.
	cl.update(t, ns, "cache", func(ci *cachev1alpha1.CacheInstance) { ci.Spec.Persistence.SnapshotSchedule = "every night" })
	deg := cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionDegraded, metav1.ConditionTrue, "InvalidSnapshotSchedule")
	if c := meta.FindStatusCondition(deg.Status.Conditions, cachev1alpha1.ConditionDegraded); !strings.Contains(c.Message, `persistence.snapshotSchedule "every night" is not a schedule`) {
		t.Errorf("Degraded says %q", c.Message)
	}
}
