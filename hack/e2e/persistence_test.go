//go:build e2e

package e2e

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
	"github.com/iocache/iocache/hack/e2e/e2eutil"
)

// e2eStorageClass is the class of the volume this test provides on the local node, which has no
// provisioner: a hostPath PersistentVolume that only the test's claim can bind.
const e2eStorageClass = "iocache-e2e-hostpath"

// testWarmRestart shows persistence RDB end to end: keys written to an instance survive a change
// that needs a new pod (more CPU: the static CPU manager resizes no CPU in place, while a memory
// change is made in place and keeps the pod), because the server saves on SIGTERM to its volume claim and
// loads the snapshot at start. The instance has an ACL user, whose file the new pod mounts and
// loads at start.
func testWarmRestart(ctx context.Context, t *testing.T, e *e2eutil.Env, local bool) {
	const appPassword = "e2e-app-password"
	appSecret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "warm-app"}, StringData: map[string]string{"pw": appPassword}}
	if err := e.Client.Create(ctx, appSecret); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = e.Client.Delete(ctx, appSecret) }()
	ci, cleanup := persistentInstance(ctx, t, e, local, "warm", cachev1alpha1.PersistenceSpec{Mode: cachev1alpha1.PersistenceRDB},
		func(ci *cachev1alpha1.CacheInstance) {
			ci.Spec.Users = []cachev1alpha1.UserSpec{{Name: "app", PasswordSecret: "warm-app", Permissions: "~e2e:* +@read +@write -@dangerous"}}
		})
	defer cleanup()
	got, err := e.WaitInstance(ctx, client.ObjectKeyFromObject(ci), 3*time.Minute, e2eutil.Ready)
	if err != nil {
		t.Fatalf("not Ready: %v\n%s", err, e.Describe(ctx, ci))
	}
	before, err := writeAndRead(ctx, e, got)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("  before the roll: %s\n", before)

	// A snapshot on demand, through the annotation: the status reports it on the real node.
	if err := e.Client.Get(ctx, client.ObjectKeyFromObject(ci), got); err != nil {
		t.Fatal(err)
	}
	if got.Annotations == nil {
		got.Annotations = map[string]string{}
	}
	got.Annotations[cachev1alpha1.AnnotationSnapshotRequest] = "e2e-before-the-roll"
	if err := e.Client.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	snapshotted := func(c *cachev1alpha1.CacheInstance) bool {
		p := c.Status.Persistence
		return p != nil && p.LastSnapshot != nil && p.LastSnapshot.Request == "e2e-before-the-roll"
	}
	requestedAt := time.Now()
	got, err = e.WaitInstance(ctx, client.ObjectKeyFromObject(ci), time.Minute, snapshotted)
	if err != nil {
		t.Fatalf("no snapshot on request: %v\n%s", err, e.Describe(ctx, ci))
	}
	if ls := got.Status.Persistence.LastSnapshot; ls.Result != cachev1alpha1.SnapshotSucceeded || ls.Saved == nil || ls.Saved.SizeBytes <= 0 {
		t.Errorf("the requested snapshot: %+v", ls)
	} else {
		fmt.Printf("  snapshot on request: %d bytes written in %d ms, reported %.1f s after the annotation\n",
			ls.Saved.SizeBytes, ls.Saved.DurationMilliseconds, time.Since(requestedAt).Seconds())
	}
	oldPod, err := e.ServerPod(ctx, got)
	if err != nil {
		t.Fatal(err)
	}

	// More CPU needs a new pod: the operator replaces it, the server saves on SIGTERM.
	if err := e.Client.Get(ctx, client.ObjectKeyFromObject(ci), got); err != nil {
		t.Fatal(err)
	}
	got.Spec.CPU = ptr.To(resource.MustParse("300m"))
	if err := e.Client.Update(ctx, got); err != nil {
		t.Fatal(err)
	}
	rolled := func(c *cachev1alpha1.CacheInstance) bool {
		return e2eutil.Ready(c) && len(c.Status.Pods) == 1 && c.Status.Pods[0].UID != string(oldPod.UID)
	}
	got, err = e.WaitInstance(ctx, client.ObjectKeyFromObject(ci), 3*time.Minute, rolled)
	if err != nil {
		t.Fatalf("the pod was not replaced: %v\n%s", err, e.Describe(ctx, ci))
	}
	rdb, _, closeFn, err := e.Redis(ctx, got)
	if err != nil {
		t.Fatal(err)
	}
	defer closeFn()
	after, err := e2eutil.ReadKeyspace(ctx, rdb)
	if err != nil {
		t.Fatal(err)
	}
	fmt.Printf("  after the roll (new pod %s): %s\n", got.Status.Pods[0].Name, after)
	if after.DBSize != before.DBSize || after.Digest != before.Digest {
		t.Errorf("the new pod did not come back with the data: %s before, %s after", before, after)
	}
	info, err := e2eutil.Info(ctx, rdb, "persistence")
	if err != nil {
		t.Fatal(err)
	}
	if info["rdb_last_bgsave_status"] != "ok" {
		t.Errorf("INFO persistence after the restart: %v", info)
	}

	// The ACL user on the new pod: its password works, its permissions hold.
	app := redis.NewClient(&redis.Options{Addr: rdb.Options().Addr, Username: "app", Password: appPassword, PoolSize: 1,
		Protocol: 2, DisableIdentity: true, DialTimeout: 3 * time.Second, ReadTimeout: 5 * time.Second})
	defer app.Close()
	if err := app.Set(ctx, "e2e:app", "x", 0).Err(); err != nil {
		t.Errorf("app SET e2e:app on the new pod: %v", err)
	} else if err := app.Set(ctx, "elsewhere", "x", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
		t.Errorf("app SET elsewhere: %v, want NOPERM", err)
	} else {
		fmt.Printf("  ACL user app on the new pod: authenticates, and is refused outside ~e2e:* (%v)\n", err)
	}
}

// persistentInstance creates a small Shared instance with auth and the persistence given, on a
// 128Mi claim that goes with the instance (on the local node, a hostPath volume of its own).
// cleanup deletes the instance and waits for its claim to go, so that the volume is free.
func persistentInstance(ctx context.Context, t *testing.T, e *e2eutil.Env, local bool, name string, persistence cachev1alpha1.PersistenceSpec, mutate ...func(*cachev1alpha1.CacheInstance)) (*cachev1alpha1.CacheInstance, func()) {
	t.Helper()
	persistence.Size = ptr.To(resource.MustParse("128Mi"))
	persistence.WhenDeleted = cachev1alpha1.DeleteVolumeClaims
	var undo []func()
	cleanup := func() {
		for i := len(undo) - 1; i >= 0; i-- {
			undo[i]()
		}
	}
	if local {
		persistence.StorageClassName = ptr.To(e2eStorageClass)
		pv, removeDir := hostPathVolume(t, "iocache-e2e-"+name, "128Mi")
		undo = append(undo, removeDir)
		if err := e.Client.Create(ctx, pv); err != nil {
			cleanup()
			t.Fatal(err)
		}
		undo = append(undo, func() { _ = e.Client.Delete(ctx, pv) })
	}
	ci := &cachev1alpha1.CacheInstance{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: cachev1alpha1.CacheInstanceSpec{
			CPUMode: cachev1alpha1.CPUShared, CPU: ptr.To(resource.MustParse("250m")),
			Memory: resource.MustParse("64Mi"), Auth: &cachev1alpha1.AuthSpec{Generate: true},
			Persistence: persistence,
			Benchmark:   cachev1alpha1.CacheInstanceBenchmarkSpec{ValidateOnChange: ptr.To(false)},
		},
	}
	for _, m := range mutate {
		m(ci)
	}
	if err := e.Client.Create(ctx, ci); err != nil {
		cleanup()
		t.Fatal(err)
	}
	undo = append(undo, func() {
		if err := e.Client.Delete(ctx, ci); err != nil && !apierrors.IsNotFound(err) {
			t.Error(err)
		}
		// whenDeleted Delete: the claim goes with the instance; wait, so that the volume is free.
		claim := &corev1.PersistentVolumeClaim{}
		_ = e2eutil.Poll(ctx, time.Second, 2*time.Minute, func(ctx context.Context) (bool, error) {
			err := e.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: "data-" + name + "-0"}, claim)
			return apierrors.IsNotFound(err), nil
		})
	})
	return ci, cleanup
}

// writeAndRead writes string keys, a quarter with a TTL, and reads the keyspace back (its digest
// covers strings: each key's value and absolute expiry time).
func writeAndRead(ctx context.Context, e *e2eutil.Env, ci *cachev1alpha1.CacheInstance) (e2eutil.Keyspace, error) {
	rdb, how, closeFn, err := e.Redis(ctx, ci)
	if err != nil {
		return e2eutil.Keyspace{}, err
	}
	defer closeFn()
	fmt.Printf("  writing through %s\n", how)
	pipe := rdb.Pipeline()
	for i := range 2000 {
		ttl := time.Duration(0)
		if i%4 == 0 {
			ttl = time.Hour
		}
		pipe.Set(ctx, fmt.Sprintf("session:%05d", i), fmt.Sprintf("user-%d", i*7), ttl)
	}
	if cmds, err := pipe.Exec(ctx); err != nil {
		for _, c := range cmds {
			if c.Err() != nil {
				info, _ := rdb.Info(ctx, "server", "keyspace", "persistence").Result()
				return e2eutil.Keyspace{}, fmt.Errorf("%v through %s: %w\n%s", c.Args(), how, c.Err(), info)
			}
		}
		return e2eutil.Keyspace{}, err
	}
	return e2eutil.ReadKeyspace(ctx, rdb)
}

// hostPathVolume is a PersistentVolume on a fresh directory of this machine (the node), owned by
// the server's user; cleanup removes the directory.
func hostPathVolume(t *testing.T, name, size string) (*corev1.PersistentVolume, func()) {
	t.Helper()
	dir, err := os.MkdirTemp("", "iocache-e2e-pv-")
	if err != nil {
		t.Fatal(err)
	}
	// The server runs as 65532, and fsGroup does not apply to hostPath volumes.
	if err := os.Chown(dir, 65532, 65532); err != nil {
		t.Fatal(err)
	}
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)},
			AccessModes:                   []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimRetain,
			StorageClassName:              e2eStorageClass,
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{
				Path: dir, Type: ptr.To(corev1.HostPathDirectory)}},
		},
	}
	return pv, func() { _ = os.RemoveAll(dir) }
}
