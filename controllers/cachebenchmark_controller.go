package controllers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	logf "sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
)

// Reasons of a CacheBenchmark's Complete condition; api/v1alpha1 documents them.
const (
	reasonSucceeded        = "Succeeded"
	reasonJobFailed        = "JobFailed"
	reasonDeadlineExceeded = "DeadlineExceeded"
	reasonInvalidResult    = "InvalidResult"
	reasonInstanceNotFound = "InstanceNotFound"
	reasonInstanceNotReady = "InstanceNotReady"
	reasonQueued           = "Queued"
	reasonMeasuring        = "Measuring"
	reasonSettling         = "Settling"
	reasonAwaitingCert     = "AwaitingCertificate"
)

// settleTime is how long an instance's pods must have been ready before a benchmark Job starts.
// A client without CPUs of its own measures the CPU it gets (on a 2-core machine, identical runs
// gave 38k to 65k ops/s, in step with the client's CPU use), and right after a rollout the node's
// shared CPUs are busy with its aftermath: the kubelet, the API server, the controllers, the old
// pod's teardown. A validation started at that instant while a sweep step found the pods long
// ready; every run now starts on a settled instance.
const settleTime = 20 * time.Second

// awaitDeadline is how long a step waits for the instance's pods to be ready with the setting it
// measures: as long as a rollout may take before the instance counts as Degraded.
const awaitDeadline = rolloutDeadline

// instanceRefField indexes CacheBenchmarks by the instance they measure.
const instanceRefField = "spec.instanceRef.name"

// CacheBenchmarkReconciler runs a CacheBenchmark: it holds its instance (one benchmark at a time),
// for each io-threads setting waits until the pods run it, runs iocache-bench in a Job, reads the
// result from the pod's termination message into status and metrics, and finally lets the instance
// go back to its own setting (or, for Tuning, to the winner) and reports the outcome on it.
type CacheBenchmarkReconciler struct {
	client.Client
	// APIReader reads the benchmark itself, the instance again when a status write conflicts, and
	// the pods of finished Jobs, straight from the API server: the operator needs a handful of pods'
	// termination messages, not a cache of every pod of the cluster.
	APIReader client.Reader
	Recorder  events.EventRecorder
	// Image runs iocache-bench when the instance names no image: the operator's own.
	Image string
	// SettleTime is how long the pods must have been ready before a Job starts; 0 means
	// settleTime. Tests shorten it.
	SettleTime time.Duration
}

// heldError says another benchmark holds the instance.
type heldError struct{ holder string }

func (e *heldError) Error() string { return "CacheBenchmark " + e.holder + " holds the instance" }

// failure is why a benchmark stops without measuring every setting.
type failure struct{ reason, message string }

// Benchmarks create and delete Jobs and read their pods (list only, uncached) for the termination
// message; Jobs get blockOwnerDeletion, hence the finalizers permission.
// +kubebuilder:rbac:groups=cache.iocache.dev,resources=cachebenchmarks/status,verbs=update
// +kubebuilder:rbac:groups=cache.iocache.dev,resources=cachebenchmarks/finalizers,verbs=update
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=list

// Reconcile moves one CacheBenchmark as far as it can go now.
func (r *CacheBenchmarkReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	// Read past the cache: a pass that started from a copy older than the last one's writes would
	// hold the instance again for a benchmark that has finished, and roll its pods for nothing.
	cb := &cachev1alpha1.CacheBenchmark{}
	if err := r.APIReader.Get(ctx, req.NamespacedName, cb); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("fetching CacheBenchmark: %w", err)
	}
	if !cb.DeletionTimestamp.IsZero() || finished(cb) {
		// Owner references hand the Jobs to the garbage collector; the instance controller ends a
		// hold whose benchmark is gone.
		return ctrl.Result{}, nil
	}
	cb.SetDefaults()
	result, err := r.run(ctx, cb)
	if apierrors.IsConflict(err) {
		logf.FromContext(ctx).V(1).Info("write conflict, running again", "error", err.Error())
		return ctrl.Result{RequeueAfter: conflictRetry}, nil
	}
	return result, err
}

// finished is true once a benchmark succeeded or failed.
func finished(cb *cachev1alpha1.CacheBenchmark) bool {
	return cb.Status.State == cachev1alpha1.BenchmarkSucceeded || cb.Status.State == cachev1alpha1.BenchmarkFailed
}

// plan is the settings a benchmark measures in order; 0 measures the instance as it runs.
func plan(cb *cachev1alpha1.CacheBenchmark) []int32 {
	if len(cb.Spec.IOThreads) == 0 {
		return []int32{0}
	}
	return cb.Spec.IOThreads
}

// run measures the settings left, one after another, until one has to wait.
func (r *CacheBenchmarkReconciler) run(ctx context.Context, cb *cachev1alpha1.CacheBenchmark) (ctrl.Result, error) {
	ci := &cachev1alpha1.CacheInstance{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: cb.Namespace, Name: cb.Spec.InstanceRef.Name}, ci); err != nil {
		if apierrors.IsNotFound(err) {
			return ctrl.Result{}, r.fail(ctx, cb, nil, failure{reasonInstanceNotFound,
				fmt.Sprintf("CacheInstance %s does not exist in namespace %s", cb.Spec.InstanceRef.Name, cb.Namespace)})
		}
		return ctrl.Result{}, fmt.Errorf("fetching CacheInstance: %w", err)
	}
	ci.SetDefaults()
	settings := plan(cb)
	for {
		i := len(cb.Status.Results)
		if i >= len(settings) {
			return ctrl.Result{}, r.succeed(ctx, cb, ci)
		}
		// A sweep that cannot finish is refused before it moves the instance.
		if n := slices.Max(settings[i:]); n > ci.Spec.Cores {
			return ctrl.Result{}, r.fail(ctx, cb, ci, failure{reasonInvalidSpec,
				fmt.Sprintf("io-threads %d exceeds the %d cores of CacheInstance %s: every thread needs a core of its own", n, ci.Spec.Cores, ci.Name)})
		}
		held, err := r.hold(ctx, cb, ci, settings[i])
		var other *heldError
		if errors.As(err, &other) {
			return ctrl.Result{}, r.queue(ctx, cb, ci, other.holder)
		}
		if err != nil {
			return ctrl.Result{}, fmt.Errorf("holding CacheInstance %s: %w", ci.Name, err)
		}
		ci = held
		measured, result, err := r.step(ctx, cb, ci, settings[i])
		if err != nil || !measured {
			return result, err
		}
	}
}

// ownIOThreads is the setting the instance runs without a benchmark's hold, or nil when its spec
// cannot be rendered.
func ownIOThreads(ci *cachev1alpha1.CacheInstance) *int32 {
	own := ci.DeepCopy()
	own.Status.ActiveBenchmark = nil
	cfg, err := renderConfig(own)
	if err != nil {
		return nil
	}
	return ptr.To(cfg.IOThreads)
}

// hold makes cb the instance's benchmark, measuring ioThreads (0: as the spec resolves it), unless
// another benchmark holds it. Writing the hold with the instance's resourceVersion is the lock: of
// two benchmarks that try at once, one write conflicts and finds the other holding.
func (r *CacheBenchmarkReconciler) hold(ctx context.Context, cb *cachev1alpha1.CacheBenchmark, ci *cachev1alpha1.CacheInstance, ioThreads int32) (*cachev1alpha1.CacheInstance, error) {
	want := &cachev1alpha1.ActiveBenchmark{Name: cb.Name, UID: string(cb.UID)}
	if ioThreads > 0 {
		want.IOThreads = ptr.To(ioThreads)
	}
	latest, err := writeStatus(ctx, r.Client, r.APIReader, ci, func(c *cachev1alpha1.CacheInstance) error {
		if ab := c.Status.ActiveBenchmark; ab != nil && ab.UID != want.UID {
			return &heldError{holder: ab.Name}
		}
		c.Status.ActiveBenchmark = want
		return nil
	})
	if err != nil {
		return nil, err
	}
	latest.SetDefaults()
	return latest, nil
}

// queue records that cb waits for another benchmark; the instance's status change when that one
// lets go brings cb back.
func (r *CacheBenchmarkReconciler) queue(ctx context.Context, cb *cachev1alpha1.CacheBenchmark, ci *cachev1alpha1.CacheInstance, holder string) error {
	return r.writeBenchmark(ctx, cb, func(st *cachev1alpha1.CacheBenchmarkStatus) {
		st.State = cachev1alpha1.BenchmarkPending
		setComplete(st, cb, metav1.ConditionUnknown, reasonQueued,
			fmt.Sprintf("CacheBenchmark %s is measuring CacheInstance %s; this one starts when it ends", holder, ci.Name))
	})
}

// step measures one setting of a held instance: it waits until the pods are ready with it, runs
// the Job, and reads the result. It returns true once the result is stored.
func (r *CacheBenchmarkReconciler) step(ctx context.Context, cb *cachev1alpha1.CacheBenchmark, ci *cachev1alpha1.CacheInstance, setting int32) (bool, ctrl.Result, error) {
	now := time.Now()
	name := jobName(cb, setting)
	job := &batchv1.Job{}
	switch err := r.Get(ctx, client.ObjectKey{Namespace: cb.Namespace, Name: name}, job); {
	case apierrors.IsNotFound(err):
		job = nil
	case err != nil:
		return false, ctrl.Result{}, fmt.Errorf("reading Job %s: %w", name, err)
	case !metav1.IsControlledBy(job, cb):
		return false, ctrl.Result{}, r.fail(ctx, cb, ci, failure{reasonInvalidSpec,
			fmt.Sprintf("Job %s exists but does not belong to this CacheBenchmark", name)})
	}

	cur := cb.Status.Current
	if cur == nil || cur.Job != name {
		cur = &cachev1alpha1.BenchmarkStep{Job: name, Since: metav1.NewTime(now)}
	} else {
		cur = cur.DeepCopy()
	}
	if job == nil {
		// Until the Job starts, the step follows the instance: a spec edit meanwhile changes the
		// config the pods must run first.
		cfg, err := renderConfig(ci)
		if err != nil {
			return false, ctrl.Result{}, r.fail(ctx, cb, ci, failure{reasonInstanceNotReady,
				fmt.Sprintf("CacheInstance %s cannot be rendered: %v", ci.Name, err)})
		}
		cur.IOThreads, cur.Cores, cur.ConfigHash = cfg.IOThreads, ci.Spec.Cores, cfg.Hash
		if !readyWith(ci, cfg.Hash) {
			waited := now.Sub(cur.Since.Time)
			if waited >= awaitDeadline {
				return false, ctrl.Result{}, r.fail(ctx, cb, ci, failure{reasonInstanceNotReady,
					fmt.Sprintf("the pods of CacheInstance %s were not ready with io-threads %d (config %s) within %s",
						ci.Name, cur.IOThreads, cur.ConfigHash, awaitDeadline)})
			}
			err := r.writeBenchmark(ctx, cb, func(st *cachev1alpha1.CacheBenchmarkStatus) {
				running(st, cur, ci, now)
				setComplete(st, cb, metav1.ConditionUnknown, reasonRollingOut,
					fmt.Sprintf("Waiting for the pods of CacheInstance %s to be ready with io-threads %d (config %s)", ci.Name, cur.IOThreads, cur.ConfigHash))
			})
			return false, ctrl.Result{RequeueAfter: awaitDeadline - waited}, err
		}
		if wait := r.settleWait(ci, now); wait > 0 {
			err := r.writeBenchmark(ctx, cb, func(st *cachev1alpha1.CacheBenchmarkStatus) {
				running(st, cur, ci, now)
				setComplete(st, cb, metav1.ConditionUnknown, reasonSettling,
					fmt.Sprintf("The pods of CacheInstance %s are ready with io-threads %d; measuring starts once they have been for %s, not in the rollout's aftermath",
						ci.Name, cur.IOThreads, r.settle()))
			})
			return false, ctrl.Result{RequeueAfter: wait}, err
		}
		if waiting, res, err := r.awaitBenchCertificate(ctx, cb, ci, cur, now); waiting || err != nil {
			return false, res, err
		}
		// The client from the image the server runs, as upgradePolicy chose it.
		image := ci.Spec.Image
		if image == "" {
			image = ci.Status.Image
		}
		if image == "" {
			image = r.Image
		}
		switch err := r.Create(ctx, desiredJob(cb, ci, cur.IOThreads, image)); {
		case apierrors.IsAlreadyExists(err):
			// Not in the cache, which holds only the operator's Jobs: whose is it?
			other := &batchv1.Job{}
			if err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: cb.Namespace, Name: name}, other); err != nil {
				return false, ctrl.Result{}, fmt.Errorf("reading Job %s: %w", name, err)
			}
			if !metav1.IsControlledBy(other, cb) {
				return false, ctrl.Result{}, r.fail(ctx, cb, ci, failure{reasonInvalidSpec,
					fmt.Sprintf("Job %s exists but does not belong to this CacheBenchmark", name)})
			}
		case err != nil:
			return false, ctrl.Result{}, fmt.Errorf("creating Job %s: %w", name, err)
		}
		return false, ctrl.Result{}, r.writeBenchmark(ctx, cb, func(st *cachev1alpha1.CacheBenchmarkStatus) {
			running(st, cur, ci, now)
			setComplete(st, cb, metav1.ConditionUnknown, reasonMeasuring,
				fmt.Sprintf("Job %s measures CacheInstance %s with io-threads %d", name, ci.Name, cur.IOThreads))
		})
	}

	done, succeeded, jobReason, jobMessage := jobFinished(job)
	if !done {
		return false, ctrl.Result{}, r.writeBenchmark(ctx, cb, func(st *cachev1alpha1.CacheBenchmarkStatus) {
			running(st, cur, ci, now)
			setComplete(st, cb, metav1.ConditionUnknown, reasonMeasuring,
				fmt.Sprintf("Job %s measures CacheInstance %s with io-threads %d", name, ci.Name, cur.IOThreads))
		})
	}
	message, at, pod, err := r.terminationMessage(ctx, job, succeeded)
	if err != nil {
		return false, ctrl.Result{}, err
	}
	if !succeeded {
		f := failure{reasonJobFailed, fmt.Sprintf("Job %s failed (%s: %s)", name, jobReason, jobMessage)}
		if jobReason == batchv1.JobReasonDeadlineExceeded {
			f = failure{reasonDeadlineExceeded, fmt.Sprintf("Job %s ran longer than its deadline of %s and was stopped", name, jobDeadline(&cb.Spec.Workload))}
		}
		if why := failureOf(message); why != "" {
			f.message += "; " + why
		}
		return false, ctrl.Result{}, r.fail(ctx, cb, ci, f)
	}
	res, err := parseResult(message)
	if err != nil {
		return false, ctrl.Result{}, r.fail(ctx, cb, ci, failure{reasonInvalidResult, fmt.Sprintf("Job %s succeeded, but %v", name, err)})
	}
	entry := summarize(res, cb, cur, at, pod)
	if err := r.writeBenchmark(ctx, cb, func(st *cachev1alpha1.CacheBenchmarkStatus) {
		st.Results = append(st.Results, entry)
		st.Current = nil
	}); err != nil {
		return false, ctrl.Result{}, err
	}
	recordRun(cb.Namespace, ci.Name, &entry.BenchmarkSummary)
	return true, ctrl.Result{}, nil
}

// readyWith is true when every pod of the instance is ready with the config of that hash, as the
// instance controller last found for the current spec: rolled out, and its live part applied.
func readyWith(ci *cachev1alpha1.CacheInstance, hash string) bool {
	c := meta.FindStatusCondition(ci.Status.Conditions, cachev1alpha1.ConditionReady)
	return ci.Status.ConfigHash == hash && ci.Status.AppliedConfigHash == hash && ci.Status.ObservedGeneration == ci.Generation &&
		c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == ci.Generation
}

// awaitBenchCertificate holds a Job back until cert-manager has issued its client certificate
// (benchClientCertificate): a pod mounting a Secret that does not exist would wait at
// ContainerCreating until its deadline and fail for a reason the Job does not tell.
func (r *CacheBenchmarkReconciler) awaitBenchCertificate(ctx context.Context, cb *cachev1alpha1.CacheBenchmark, ci *cachev1alpha1.CacheInstance,
	cur *cachev1alpha1.BenchmarkStep, now time.Time) (bool, ctrl.Result, error) {
	if !benchClientCertificate(ci) {
		return false, ctrl.Result{}, nil
	}
	name := benchCertificateName(ci)
	switch err := r.Get(ctx, client.ObjectKey{Namespace: ci.Namespace, Name: name}, &corev1.Secret{}); {
	case err == nil:
		return false, ctrl.Result{}, nil
	case !apierrors.IsNotFound(err):
		return true, ctrl.Result{}, fmt.Errorf("reading Secret %s: %w", name, err)
	}
	waited := now.Sub(cur.Since.Time)
	if waited >= awaitDeadline {
		return true, ctrl.Result{}, r.fail(ctx, cb, ci, failure{reasonInstanceNotReady,
			fmt.Sprintf("cert-manager did not issue the benchmark client certificate %s within %s (kubectl describe certificate %s -n %s says why)",
				name, awaitDeadline, name, ci.Namespace)})
	}
	err := r.writeBenchmark(ctx, cb, func(st *cachev1alpha1.CacheBenchmarkStatus) {
		running(st, cur, ci, now)
		setComplete(st, cb, metav1.ConditionUnknown, reasonAwaitingCert,
			fmt.Sprintf("Waiting for cert-manager to issue the benchmark Job's client certificate into Secret %s", name))
	})
	return true, ctrl.Result{RequeueAfter: certificateIssueWait}, err
}

func (r *CacheBenchmarkReconciler) settle() time.Duration {
	if r.SettleTime > 0 {
		return r.SettleTime
	}
	return settleTime
}

// settleWait is how much longer the instance's pods must stay ready before a Job may start.
func (r *CacheBenchmarkReconciler) settleWait(ci *cachev1alpha1.CacheInstance, now time.Time) time.Duration {
	c := meta.FindStatusCondition(ci.Status.Conditions, cachev1alpha1.ConditionReady)
	if c == nil {
		return 0
	}
	return c.LastTransitionTime.Add(r.settle()).Sub(now)
}

// terminationMessage is the termination message of the Job's bench container, and its pod: of a
// pod that exited 0 for a Job that succeeded, else of the pod that failed last. No pod gives "".
func (r *CacheBenchmarkReconciler) terminationMessage(ctx context.Context, job *batchv1.Job, succeeded bool) (string, time.Time, *corev1.Pod, error) {
	return jobTerminationMessage(ctx, r.APIReader, job, benchContainerName, succeeded)
}

// jobTerminationMessage is the termination message of a Job's container, and its pod: of a pod
// that exited 0 when succeeded, else of the pod that failed last. No pod gives "". The pods are
// listed from reader, the API server: the operator caches no pods but the servers'.
func jobTerminationMessage(ctx context.Context, reader client.Reader, job *batchv1.Job, container string, succeeded bool) (string, time.Time, *corev1.Pod, error) {
	var pods corev1.PodList
	if err := reader.List(ctx, &pods, client.InNamespace(job.Namespace), client.MatchingLabels{batchv1.JobNameLabel: job.Name}); err != nil {
		return "", time.Time{}, nil, fmt.Errorf("listing the pods of Job %s: %w", job.Name, err)
	}
	var msg string
	var at time.Time
	var from *corev1.Pod
	for i := range pods.Items {
		pod := &pods.Items[i]
		if !metav1.IsControlledBy(pod, job) {
			continue
		}
		for _, cs := range pod.Status.ContainerStatuses {
			t := cs.State.Terminated
			if cs.Name != container || t == nil || (t.ExitCode == 0) != succeeded {
				continue
			}
			if msg == "" || t.FinishedAt.After(at) {
				msg, at, from = t.Message, t.FinishedAt.Time, pod
			}
		}
	}
	if at.IsZero() {
		at = time.Now()
	}
	return msg, at, from, nil
}

// succeed ends a benchmark that measured every setting: the instance goes back to its own setting
// (or the winner) and learns the outcome, then the benchmark records the best setting.
func (r *CacheBenchmarkReconciler) succeed(ctx context.Context, cb *cachev1alpha1.CacheBenchmark, ci *cachev1alpha1.CacheInstance) error {
	best, why := chooseBest(cb.Status.Results)
	if err := r.settleInstance(ctx, cb, ci, best, why, nil); err != nil {
		return err
	}
	w := cb.Status.Results[best]
	now := time.Now()
	if err := r.writeBenchmark(ctx, cb, func(st *cachev1alpha1.CacheBenchmarkStatus) {
		st.State = cachev1alpha1.BenchmarkSucceeded
		st.Current = nil
		st.CompletionTime = ptrTime(now)
		st.BestIOThreads = ptr.To(w.IOThreads)
		st.BestOpsPerSecond = w.OpsPerSecond
		st.Explanation = why
		setComplete(st, cb, metav1.ConditionTrue, reasonSucceeded,
			fmt.Sprintf("Measured %d setting(s); the best is io-threads %d with %d ops/s", len(st.Results), w.IOThreads, w.OpsPerSecond))
	}); err != nil {
		return err
	}
	r.Recorder.Eventf(cb, ci, corev1.EventTypeNormal, reasonSucceeded, "Benchmark", "%s", eventNote(why))
	return nil
}

// fail ends a benchmark that cannot measure every setting. It stops a Job still running, lets the
// instance go back to its own setting (it keeps serving), reports the outcome on the instance for
// Validation and Tuning runs, and says why in the Complete condition.
func (r *CacheBenchmarkReconciler) fail(ctx context.Context, cb *cachev1alpha1.CacheBenchmark, ci *cachev1alpha1.CacheInstance, f failure) error {
	if cur := cb.Status.Current; cur != nil {
		if err := r.stopJob(ctx, cb, cur.Job); err != nil {
			return err
		}
	}
	if ci != nil {
		if err := r.settleInstance(ctx, cb, ci, -1, "", &f); err != nil {
			return err
		}
	}
	now := time.Now()
	if err := r.writeBenchmark(ctx, cb, func(st *cachev1alpha1.CacheBenchmarkStatus) {
		st.State = cachev1alpha1.BenchmarkFailed
		st.CompletionTime = ptrTime(now)
		st.Explanation = fmt.Sprintf("The benchmark failed after %d of %d setting(s): %s.", len(st.Results), len(plan(cb)), f.message)
		setComplete(st, cb, metav1.ConditionFalse, f.reason, f.message)
		st.Current = nil
	}); err != nil {
		return err
	}
	if f.reason != reasonInstanceNotFound {
		recordFailedRun(cb.Namespace, cb.Spec.InstanceRef.Name)
	}
	var related runtime.Object // a nil *CacheInstance in the interface would not read as none
	if ci != nil {
		related = ci
	}
	r.Recorder.Eventf(cb, related, corev1.EventTypeWarning, f.reason, "Benchmark", "%s", eventNote(f.message))
	return nil
}

// stopJob deletes a Job that still runs, with its pods: its load would hit an instance that nobody
// measures any more. A finished Job stays for its logs until its TTL.
func (r *CacheBenchmarkReconciler) stopJob(ctx context.Context, cb *cachev1alpha1.CacheBenchmark, name string) error {
	job := &batchv1.Job{}
	if err := r.Get(ctx, client.ObjectKey{Namespace: cb.Namespace, Name: name}, job); err != nil {
		return client.IgnoreNotFound(err)
	}
	if done, _, _, _ := jobFinished(job); done || !metav1.IsControlledBy(job, cb) {
		return nil
	}
	uid := job.UID
	err := r.Delete(ctx, job, client.PropagationPolicy(metav1.DeletePropagationBackground), client.Preconditions{UID: &uid})
	if err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("stopping Job %s: %w", name, err)
	}
	return nil
}

// settleInstance ends cb's hold on the instance and writes what the benchmark means for it, in one
// status write, then tells the user with an event.
func (r *CacheBenchmarkReconciler) settleInstance(ctx context.Context, cb *cachev1alpha1.CacheBenchmark, ci *cachev1alpha1.CacheInstance, best int, why string, f *failure) error {
	var note *outcomeNote
	latest, err := writeStatus(ctx, r.Client, r.APIReader, ci, func(c *cachev1alpha1.CacheInstance) error {
		note = settle(&c.Status, &c.Spec, c.Generation, cb, best, why, f, time.Now())
		return nil
	})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("updating the status of CacheInstance %s: %w", ci.Name, err)
	}
	exportConditions(latest.Namespace, latest.Name, latest.Status.Conditions)
	if note != nil {
		r.Recorder.Eventf(latest, cb, note.eventType, note.reason, "Benchmark", "%s", eventNote(note.message))
	}
	return nil
}

// writeBenchmark writes cb's status after change, and keeps cb in step with what was written. It
// does not retry a conflict: this controller alone writes the status, and every change follows
// from the status it read, so a conflict means that read was stale (an older copy from the cache)
// and the pass must start again from the stored object, or it could count a run twice or drop a
// result.
func (r *CacheBenchmarkReconciler) writeBenchmark(ctx context.Context, cb *cachev1alpha1.CacheBenchmark, change func(*cachev1alpha1.CacheBenchmarkStatus)) error {
	next := cb.DeepCopy()
	change(&next.Status)
	next.Status.ObservedGeneration = cb.Generation
	if equality.Semantic.DeepEqual(cb.Status, next.Status) {
		return nil
	}
	if err := r.Status().Update(ctx, next); err != nil {
		return fmt.Errorf("updating status: %w", err)
	}
	cb.Status = next.Status
	cb.ResourceVersion = next.ResourceVersion
	return nil
}

// running marks a benchmark as holding its instance on step cur.
func running(st *cachev1alpha1.CacheBenchmarkStatus, cur *cachev1alpha1.BenchmarkStep, ci *cachev1alpha1.CacheInstance, now time.Time) {
	st.State = cachev1alpha1.BenchmarkRunning
	st.Current = cur
	if st.StartTime == nil {
		st.StartTime = ptrTime(now)
	}
	if st.OriginalIOThreads == nil {
		st.OriginalIOThreads = ownIOThreads(ci)
	}
}

func setComplete(st *cachev1alpha1.CacheBenchmarkStatus, cb *cachev1alpha1.CacheBenchmark, status metav1.ConditionStatus, reason, message string) {
	meta.SetStatusCondition(&st.Conditions, metav1.Condition{
		Type: cachev1alpha1.ConditionComplete, Status: status, Reason: reason, Message: message,
		ObservedGeneration: cb.Generation,
	})
}

// SetupWithManager watches CacheBenchmarks (new ones: their spec never changes, and their status
// is this controller's own), the Jobs they own, and their instances, whose rollouts and holds
// decide when a benchmark moves on.
func (r *CacheBenchmarkReconciler) SetupWithManager(mgr ctrl.Manager, maxConcurrent int) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &cachev1alpha1.CacheBenchmark{}, instanceRefField,
		func(o client.Object) []string {
			return []string{o.(*cachev1alpha1.CacheBenchmark).Spec.InstanceRef.Name}
		}); err != nil {
		return fmt.Errorf("indexing CacheBenchmarks by instance: %w", err)
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&cachev1alpha1.CacheBenchmark{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Owns(&batchv1.Job{}).
		Watches(&cachev1alpha1.CacheInstance{}, handler.EnqueueRequestsFromMapFunc(r.benchmarksOf)).
		WithOptions(controller.Options{MaxConcurrentReconciles: maxConcurrent}).
		Named("cachebenchmark").
		Complete(r)
}

// benchmarksOf maps an instance to its unfinished benchmarks.
func (r *CacheBenchmarkReconciler) benchmarksOf(ctx context.Context, obj client.Object) []reconcile.Request {
	var list cachev1alpha1.CacheBenchmarkList
	if err := r.List(ctx, &list, client.InNamespace(obj.GetNamespace()), client.MatchingFields{instanceRefField: obj.GetName()}); err != nil {
		logf.FromContext(ctx).Error(err, "listing the benchmarks of an instance", "instance", obj.GetName())
		return nil
	}
	var out []reconcile.Request
	for i := range list.Items {
		if !finished(&list.Items[i]) {
			out = append(out, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
		}
	}
	return out
}
