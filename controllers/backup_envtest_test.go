package controllers_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
	"github.com/iocache/iocache/server/backup"
	"github.com/iocache/iocache/server/testpeer"
)

// envtest runs no kubelet: the tests below run the containers the operator describes (a backup
// Job's, a server pod's restore init container) as local processes, with the command, flags and
// Secret-sourced environment the operator wrote, against a real iocache-server and a real S3
// server (versitygw). Only what a kubelet would change is changed: the binary's path, the
// server's address (the Service's name does not resolve here), and the mounted files' paths.

// localRun is one container run here: its exit code and its termination message, as the kubelet
// would report it (the file at /dev/termination-log, else the output's tail on failure).
type localRun struct {
	exitCode int32
	message  string
}

// runContainer runs c with flags rewritten (flag → new value) and files (a mounted path → the
// content to put there), its environment resolved from the namespace's Secrets.
func (cl *cluster) runContainer(t *testing.T, ns string, c *corev1.Container, flags map[string]string, files map[string]string) localRun {
	t.Helper()
	bin, err := serverBinary()
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	local := func(path string) string {
		return filepath.Join(dir, strings.ReplaceAll(strings.TrimPrefix(path, "/"), "/", "_"))
	}
	for path, content := range files {
		if err := os.WriteFile(local(path), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	termination := local("/dev/termination-log")
	args := slices.Clone(c.Command[1:])
	for i := 0; i < len(args); i++ {
		if v, ok := flags[args[i]]; ok && i+1 < len(args) {
			args[i+1] = v
		}
		if i > 0 && strings.HasPrefix(args[i], "/") && args[i-1] != "--to" {
			if args[i] == "/dev/termination-log" {
				args[i] = termination
			} else if _, ok := files[args[i]]; ok {
				args[i] = local(args[i])
			}
		}
	}
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + dir}
	for _, e := range c.Env {
		ref := e.ValueFrom.SecretKeyRef
		var sec corev1.Secret
		if err := cl.get(t, ns, ref.Name, &sec); err != nil {
			t.Fatalf("the container's Secret %s: %v", ref.Name, err)
		}
		if v, ok := sec.Data[ref.Key]; ok {
			env = append(env, e.Name+"="+string(v))
		} else if ref.Optional == nil || !*ref.Optional {
			t.Fatalf("Secret %s has no key %s", ref.Name, ref.Key)
		}
	}
	cmd := exec.Command(bin, args...)
	cmd.Env = env
	out, err := cmd.CombinedOutput()
	run := localRun{}
	if err != nil {
		run.exitCode = 1
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		run.message = strings.Join(lines[max(0, len(lines)-5):], "\n")
		return run
	}
	b, _ := os.ReadFile(termination)
	run.message = string(b)
	return run
}

// backupStorage is spec.backup.storage for the test's S3 server, with its keys in a Secret.
func (cl *cluster) backupStorage(t *testing.T, ns string, s3 *testpeer.S3Server, prefix string) cachev1alpha1.BackupStorage {
	t.Helper()
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "s3-keys", Namespace: ns}, Data: map[string][]byte{
		"AWS_ACCESS_KEY_ID": []byte(s3.AccessKey), "AWS_SECRET_ACCESS_KEY": []byte(s3.SecretKey)}}
	if err := cl.c.Create(context.Background(), sec); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	return cachev1alpha1.BackupStorage{Endpoint: s3.Endpoint, Bucket: s3.Bucket, Prefix: prefix, Region: "us-east-1",
		PathStyle: true, CredentialsSecret: "s3-keys"}
}

// runBackupJob waits for the backup's Job, runs its container here against addr and finishes the
// Job as the Job controller would.
func (cl *cluster) runBackupJob(t *testing.T, ns, name, addr string) localRun {
	t.Helper()
	job := cl.waitJob(t, ns, name)
	spec := job.Spec.Template.Spec
	var password []byte
	for _, v := range spec.Volumes {
		if v.Name == "auth" {
			var sec corev1.Secret
			if err := cl.get(t, ns, v.Secret.SecretName, &sec); err != nil {
				t.Fatal(err)
			}
			password = sec.Data["password"]
		}
	}
	const pwPath = "/etc/iocache-backup/auth/password"
	run := cl.runContainer(t, ns, &spec.Containers[0], map[string]string{"--source": addr}, map[string]string{pwPath: string(password)})
	reason := ""
	if run.exitCode != 0 {
		reason = "BackoffLimitExceeded"
	}
	cl.finishJob(t, job, run.exitCode, run.message, reason)
	return run
}

func (cl *cluster) waitBackup(t *testing.T, ns, name string, phase cachev1alpha1.BackupPhase) *cachev1alpha1.CacheBackup {
	t.Helper()
	cbk := &cachev1alpha1.CacheBackup{}
	eventually(t, fmt.Sprintf("CacheBackup %s %s", name, phase), func() error {
		if err := cl.get(t, ns, name, cbk); err != nil {
			return err
		}
		if cbk.Status.Phase != phase {
			return fmt.Errorf("phase %q, conditions %+v", cbk.Status.Phase, cbk.Status.Conditions)
		}
		return nil
	})
	return cbk
}

func backupOf(ns, name, instance string) *cachev1alpha1.CacheBackup {
	return &cachev1alpha1.CacheBackup{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: cachev1alpha1.CacheBackupSpec{InstanceRef: corev1.LocalObjectReference{Name: instance}}}
}

// A CacheBackup runs as a Job that authenticates as the backup user (whose password the operator
// generated and put on the server live), streams the server's snapshot to the S3 server and
// reports the manifest: the status has the keys, sizes, checksum and version; a backup whose
// storage refuses it fails with the storage's own error in the condition and an event; the
// schedule creates backups and the request annotation one more; retention keeps the two newest
// complete backups in the storage and as objects; the metrics say when the last one completed.
func TestBackupsRunOnDemandOnScheduleAndExpire(t *testing.T) {
	cl := startEnv(t)
	ns := cl.namespace(t)
	ctx := context.Background()
	s3 := testpeer.StartS3(t, "../bin")

	// A backup of an instance without spec.backup waits and says why.
	if err := cl.c.Create(ctx, instanceIn(ns, "plain", 1, noValidation)); err != nil {
		t.Fatal(err)
	}
	if err := cl.c.Create(ctx, backupOf(ns, "nowhere", "plain")); err != nil {
		t.Fatal(err)
	}
	pending := cl.waitBackup(t, ns, "nowhere", cachev1alpha1.BackupPending)
	if c := pending.Status.Conditions; len(c) != 1 || c[0].Reason != cachev1alpha1.BackupReasonNoStorage || !strings.Contains(c[0].Message, "spec.backup.storage") {
		t.Fatalf("a backup without storage: %+v", c)
	}

	const password = "backup-test-password"
	if err := cl.c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cache-auth", Namespace: ns},
		Data: map[string][]byte{"password": []byte(password)}}); err != nil {
		t.Fatal(err)
	}
	storage := cl.backupStorage(t, ns, s3, "")
	ci := instanceIn(ns, "cache", 2, noValidation, func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.Auth = &cachev1alpha1.AuthSpec{ExistingSecret: "cache-auth"}
		ci.Spec.Backup = &cachev1alpha1.BackupSpec{Storage: storage, Retention: cachev1alpha1.BackupRetention{Keep: 2}}
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
	pipe := rdb.Pipeline()
	for i := range 3000 {
		pipe.Set(ctx, fmt.Sprintf("user:%d", i), "a value of some thirty bytes...", 0)
		pipe.HSet(ctx, fmt.Sprintf("h:%d", i%50), fmt.Sprint(i), i)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatal(err)
	}
	keys := rdb.DBSize(ctx).Val()

	// On demand.
	if err := cl.c.Create(ctx, backupOf(ns, "first", "cache")); err != nil {
		t.Fatal(err)
	}
	job := cl.waitJob(t, ns, "first")
	if err := cl.noSecretsInJob(job, password, s3.SecretKey); err != nil {
		t.Fatal(err)
	}
	if run := cl.runBackupJob(t, ns, "first", addr); run.exitCode != 0 {
		t.Fatalf("the backup Job failed: %s", run.message)
	}
	first := cl.waitBackup(t, ns, "first", cachev1alpha1.BackupCompleted)
	st := first.Status
	if st.Keys != keys || st.SizeBytes <= 0 || st.RDBSizeBytes <= st.SizeBytes || len(st.SHA256) != 64 || st.BackupName != "first" ||
		st.Object != ns+"/cache/first.rdb.zst" || !strings.HasPrefix(st.ServerVersion, "iocache ") || st.Size == "" || st.ConfigHash == "" {
		t.Fatalf("the completed backup's status: %+v (the server has %d keys)", st, keys)
	}
	store, err := backup.Open(backup.Location{Endpoint: s3.Endpoint, Bucket: s3.Bucket, Prefix: ns + "/cache", PathStyle: true, Region: "us-east-1"})
	if err != nil {
		t.Fatal(err)
	}
	m, err := store.Manifest(ctx, "first")
	if err != nil || m.SHA256 != st.SHA256 || m.Keys != keys || m.Labels["configHash"] != st.ConfigHash {
		t.Fatalf("the stored manifest %+v (%v) does not match the status %+v", m, err, st)
	}
	eventually(t, "status.backups.lastSuccessful and the metric", func() error {
		var got cachev1alpha1.CacheInstance
		if err := cl.get(t, ns, "cache", &got); err != nil {
			return err
		}
		if b := got.Status.Backups; b == nil || b.LastSuccessful == nil || b.LastSuccessful.Name != "first" || b.LastSuccessful.Keys != keys {
			return fmt.Errorf("status.backups %+v", got.Status.Backups)
		}
		if v, ok := gauge(t, "iocache_backup_last_success_timestamp_seconds", map[string]string{"namespace": ns, "instance": "cache"}); !ok || int64(v) != st.CompletionTime.Unix() {
			return fmt.Errorf("iocache_backup_last_success_timestamp_seconds %v %v", v, ok)
		}
		return nil
	})

	// Refused by the storage: the storage's words in the condition and an event; nothing stored.
	if err := cl.c.Create(ctx, backupOf(ns, "refused", "cache")); err != nil {
		t.Fatal(err)
	}
	var keysSecret corev1.Secret
	if err := cl.get(t, ns, "s3-keys", &keysSecret); err != nil {
		t.Fatal(err)
	}
	keysSecret.Data["AWS_SECRET_ACCESS_KEY"] = []byte("not-the-key")
	if err := cl.c.Update(ctx, &keysSecret); err != nil {
		t.Fatal(err)
	}
	if run := cl.runBackupJob(t, ns, "refused", addr); run.exitCode == 0 {
		t.Fatal("a backup with a wrong key succeeded")
	}
	refused := cl.waitBackup(t, ns, "refused", cachev1alpha1.BackupFailed)
	if c := refused.Status.Conditions[0]; c.Reason != cachev1alpha1.BackupReasonJobFailed || !strings.Contains(c.Message, "AccessDenied") {
		t.Fatalf("the failed backup's condition does not quote the storage: %+v", c)
	}
	cl.waitBackupEvent(t, ns, "refused", cachev1alpha1.BackupReasonJobFailed, "AccessDenied")
	if _, err := store.Manifest(ctx, "refused"); err == nil {
		t.Fatal("a failed backup has a manifest")
	}
	keysSecret.Data["AWS_SECRET_ACCESS_KEY"] = []byte(s3.SecretKey)
	if err := cl.c.Update(ctx, &keysSecret); err != nil {
		t.Fatal(err)
	}

	// The schedule, then a request; keep 2 leaves the two newest, in the storage and as objects.
	cl.update(t, ns, "cache", func(ci *cachev1alpha1.CacheInstance) { ci.Spec.Backup.Schedule = "@every 2s" })
	var scheduled string
	eventually(t, "a scheduled CacheBackup", func() error {
		var list cachev1alpha1.CacheBackupList
		if err := cl.c.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, b := range list.Items {
			if b.Spec.Trigger == cachev1alpha1.BackupOnSchedule {
				scheduled = b.Name
				return nil
			}
		}
		return fmt.Errorf("none among %d", len(list.Items))
	})
	cl.update(t, ns, "cache", func(ci *cachev1alpha1.CacheInstance) { ci.Spec.Backup.Suspend = true })
	if run := cl.runBackupJob(t, ns, scheduled, addr); run.exitCode != 0 {
		t.Fatalf("the scheduled backup failed: %s", run.message)
	}
	cl.waitBackup(t, ns, scheduled, cachev1alpha1.BackupCompleted)
	var cur cachev1alpha1.CacheInstance
	if err := cl.get(t, ns, "cache", &cur); err != nil {
		t.Fatal(err)
	}
	cur.Annotations = map[string]string{cachev1alpha1.AnnotationBackupRequest: "now"}
	if err := cl.c.Update(ctx, &cur); err != nil {
		t.Fatal(err)
	}
	var requested string
	eventually(t, "the requested CacheBackup", func() error {
		var list cachev1alpha1.CacheBackupList
		if err := cl.c.List(ctx, &list, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, b := range list.Items {
			if b.Spec.Trigger == cachev1alpha1.BackupOnRequest {
				requested = b.Name
				return nil
			}
		}
		return fmt.Errorf("none among %d", len(list.Items))
	})
	time.Sleep(1100 * time.Millisecond) // a completion time after the scheduled one's, to the second
	if run := cl.runBackupJob(t, ns, requested, addr); run.exitCode != 0 {
		t.Fatalf("the requested backup failed: %s", run.message)
	}
	cl.waitBackup(t, ns, requested, cachev1alpha1.BackupCompleted)
	eventually(t, "retention: the oldest complete backup gone", func() error {
		if err := cl.get(t, ns, "first", &cachev1alpha1.CacheBackup{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("CacheBackup first is still there (%v)", err)
		}
		return nil
	})
	list, err := store.List(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, m := range list {
		names = append(names, m.Name)
	}
	if want := []string{scheduled, requested}; !slices.Equal(names, want) {
		t.Fatalf("the storage keeps %v, want %v", names, want)
	}
	// The failed manual backup stays listed for its owner to read.
	if err := cl.get(t, ns, "refused", &cachev1alpha1.CacheBackup{}); err != nil {
		t.Fatalf("the failed manual backup: %v", err)
	}
}

// noSecretsInJob checks that the Job's spec holds no password or key: they come from Secrets.
func (cl *cluster) noSecretsInJob(job *batchv1.Job, secrets ...string) error {
	raw := fmt.Sprintf("%+v", job.Spec)
	for _, s := range secrets {
		if strings.Contains(raw, s) {
			return fmt.Errorf("the Job's spec holds a secret")
		}
	}
	return nil
}

// A new instance bootstrapped from a backup: its pods get the restore init container, which
// restores only while the operator's pending ConfigMap exists; run here, it puts the backup in
// place and a server started on that directory has the source's digest; the status follows the
// pod (Restoring, then Restored with the keys) and the ConfigMap goes once a pod serves. A backup
// that does not exist stops the pods with the storage's reason in status.bootstrap. The field
// cannot change once set.
func TestBootstrapFromBackup(t *testing.T) {
	cl := startEnv(t)
	ns := cl.namespace(t)
	ctx := context.Background()
	s3 := testpeer.StartS3(t, "../bin")
	storage := cl.backupStorage(t, ns, s3, "elsewhere/source")

	// A backup of a filled server, taken with the CLI as another namespace's Job would.
	src := startTestServerWith(t, "--enable-debug-command", "yes")
	rdb := redis.NewClient(&redis.Options{Addr: src, Protocol: 2})
	defer rdb.Close()
	for i := range 2000 {
		rdb.Set(ctx, fmt.Sprintf("k:%d", i), i, 0)
		rdb.RPush(ctx, fmt.Sprintf("l:%d", i%20), i)
	}
	want := rdb.Do(ctx, "DEBUG", "DIGEST").String()
	bin, err := serverBinary()
	if err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(bin, "backup", "--source", src, "--name", "nightly", "--endpoint", s3.Endpoint, "--bucket", s3.Bucket,
		"--prefix", "elsewhere/source", "--path-style", "--region", "us-east-1").CombinedOutput(); err != nil {
		t.Fatalf("backup: %v\n%s", err, out)
	}

	ci := instanceIn(ns, "restored", 1, noValidation, func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.Bootstrap = &cachev1alpha1.BootstrapSpec{Backup: &cachev1alpha1.BootstrapBackup{Storage: storage, Name: "nightly"}}
	})
	if err := cl.c.Create(ctx, ci); err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{}
	eventually(t, "the pending ConfigMap", func() error { return cl.get(t, ns, "restored-bootstrap", cm) })
	sts := &appsv1.StatefulSet{}
	eventually(t, "the StatefulSet", func() error { return cl.get(t, ns, "restored", sts) })
	inits := sts.Spec.Template.Spec.InitContainers
	if len(inits) != 1 || inits[0].Name != "restore" {
		t.Fatalf("init containers %+v", inits)
	}
	if err := cl.noSecretsInJob(&batchv1.Job{Spec: batchv1.JobSpec{Template: sts.Spec.Template}}, s3.SecretKey); err != nil {
		t.Fatal(err)
	}

	// Without the pending file the container restores nothing.
	dataDir := t.TempDir()
	flags := map[string]string{"--to": filepath.Join(dataDir, "dump.rdb")}
	if run := cl.runContainer(t, ns, &inits[0], flags, nil); run.exitCode != 0 || fileExists(filepath.Join(dataDir, "dump.rdb")) {
		t.Fatalf("restore without the pending file: %+v", run)
	}
	run := cl.runContainer(t, ns, &inits[0], flags, map[string]string{"/etc/iocache-bootstrap/pending": cm.Data["pending"]})
	if run.exitCode != 0 {
		t.Fatalf("restore: %s", run.message)
	}
	restored := startTestServerWith(t, "--dir", dataDir, "--enable-debug-command", "yes")
	got := redis.NewClient(&redis.Options{Addr: restored, Protocol: 2})
	defer got.Close()
	if d := got.Do(ctx, "DEBUG", "DIGEST").String(); d != want {
		t.Fatalf("the restored server's digest %s, the source's %s", d, want)
	}
	cl.waitBootstrap(t, ns, "restored", cachev1alpha1.BootstrapRestoring, "")

	// The pod restored and serves: Restored, with the keys; the ConfigMap goes.
	cl.servePod(t, ns, "restored", restored)
	cl.setInitStatus(t, ns, "restored-0", corev1.ContainerStatus{Name: "restore", State: corev1.ContainerState{
		Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Message: run.message, Reason: "Completed"}}}, true)
	cl.waitBootstrap(t, ns, "restored", cachev1alpha1.BootstrapRestored, "2020 keys")
	eventually(t, "the pending ConfigMap deleted", func() error {
		if err := cl.get(t, ns, "restored-bootstrap", &corev1.ConfigMap{}); !apierrors.IsNotFound(err) {
			return fmt.Errorf("still there (%v)", err)
		}
		return nil
	})
	cl.waitEvent(t, ns, "restored", "BackupRestored")

	// bootstrap is set once.
	var cur cachev1alpha1.CacheInstance
	if err := cl.get(t, ns, "restored", &cur); err != nil {
		t.Fatal(err)
	}
	cur.Spec.Bootstrap.Backup.Name = "other"
	if err := cl.c.Update(ctx, &cur); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.bootstrap is set when an instance is created") {
		t.Fatalf("changing spec.bootstrap: %v", err)
	}

	// A backup that is not there: the pod's restore fails with the storage's reason.
	missing := instanceIn(ns, "missing", 1, noValidation, func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.Bootstrap = &cachev1alpha1.BootstrapSpec{Backup: &cachev1alpha1.BootstrapBackup{Storage: storage, Name: "no-such-backup"}}
	})
	if err := cl.c.Create(ctx, missing); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the StatefulSet", func() error { return cl.get(t, ns, "missing", sts) })
	cmMissing := &corev1.ConfigMap{}
	eventually(t, "the pending ConfigMap", func() error { return cl.get(t, ns, "missing-bootstrap", cmMissing) })
	run = cl.runContainer(t, ns, &sts.Spec.Template.Spec.InitContainers[0], map[string]string{"--to": filepath.Join(t.TempDir(), "dump.rdb")},
		map[string]string{"/etc/iocache-bootstrap/pending": cmMissing.Data["pending"]})
	if run.exitCode == 0 {
		t.Fatal("restoring a missing backup succeeded")
	}
	cl.simulatePod(t, ns, "missing", corev1.PodStatus{Phase: corev1.PodPending})
	cl.setInitStatus(t, ns, "missing-0", corev1.ContainerStatus{Name: "restore",
		State:                corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "CrashLoopBackOff"}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Message: run.message, Reason: "Error"}}}, false)
	cl.waitBootstrap(t, ns, "missing", cachev1alpha1.BootstrapFailed, "no-such-backup")
	cl.waitEvent(t, ns, "missing", "RestoreFailed")
}

// waitBackupEvent waits for an event about the CacheBackup with the reason, whose note has text.
func (cl *cluster) waitBackupEvent(t *testing.T, ns, name, reason, text string) {
	t.Helper()
	eventually(t, "event "+reason, func() error {
		var list eventsv1.EventList
		if err := cl.c.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
			return err
		}
		for _, e := range list.Items {
			if e.Regarding.Kind == "CacheBackup" && e.Regarding.Name == name && e.Reason == reason && strings.Contains(e.Note, text) {
				return nil
			}
		}
		return fmt.Errorf("no %s event about CacheBackup %s among %d", reason, name, len(list.Items))
	})
}

func fileExists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// setInitStatus writes an init container's status into a pod, ready or not.
func (cl *cluster) setInitStatus(t *testing.T, ns, pod string, cs corev1.ContainerStatus, ready bool) {
	t.Helper()
	p := &corev1.Pod{}
	if err := cl.get(t, ns, pod, p); err != nil {
		t.Fatal(err)
	}
	p.Status.InitContainerStatuses = []corev1.ContainerStatus{cs}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.Now()}}
	if err := cl.c.Status().Update(context.Background(), p); err != nil {
		t.Fatal(err)
	}
}

func (cl *cluster) waitBootstrap(t *testing.T, ns, name string, phase cachev1alpha1.BootstrapPhase, saying string) {
	t.Helper()
	eventually(t, fmt.Sprintf("status.bootstrap %s", phase), func() error {
		var ci cachev1alpha1.CacheInstance
		if err := cl.get(t, ns, name, &ci); err != nil {
			return err
		}
		b := ci.Status.Bootstrap
		if b == nil || b.Phase != phase || !strings.Contains(b.Message, saying) {
			return fmt.Errorf("status.bootstrap %+v", b)
		}
		return nil
	})
}
