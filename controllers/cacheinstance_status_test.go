package controllers

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
)

var t0 = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

var (
	notObserved   = &rollout{generation: 1, replicas: 1}
	podsReady     = &rollout{generation: 1, observedGeneration: 1, replicas: 1, readyReplicas: 1, updatedReplicas: 1, currentRevision: "a", updateRevision: "a"}
	unschedulable = &podProblem{pod: "x-0", reason: "Unschedulable", message: "pod x-0 cannot be scheduled: 0/1 nodes are available: 1 Insufficient cpu."}
	podsFailing   = &rollout{generation: 1, observedGeneration: 1, replicas: 1, updatedReplicas: 1, currentRevision: "a", updateRevision: "a"}
)

// want is one condition's expected status and reason.
type want struct {
	status metav1.ConditionStatus
	reason string
}

func cond(status metav1.ConditionStatus, reason string) want { return want{status, reason} }

func TestSetStatus(t *testing.T) {
	tuned := func(ci *cachev1alpha1.CacheInstance) { ci.Spec.IOThreads.Policy = cachev1alpha1.IOThreadsTuned }
	readySince := func(status metav1.ConditionStatus, since time.Time) []metav1.Condition {
		return []metav1.Condition{{Type: cachev1alpha1.ConditionReady, Status: status, Reason: "x", LastTransitionTime: metav1.NewTime(since)}}
	}
	for _, tc := range []struct {
		name        string
		ci          *cachev1alpha1.CacheInstance
		before      cachev1alpha1.CacheInstanceStatus
		rollout     *rollout
		blocked     *blocker
		problem     *podProblem
		err         error
		ready       want
		progressing want
		degraded    want
		validated   want
		recheck     time.Duration
		phase       cachev1alpha1.InstancePhase
	}{
		{name: "first pass, spec cannot be rendered", ci: newInstance(2), blocked: &blocker{reasonInvalidSpec, "bad"},
			ready: cond("Unknown", reasonNotApplied), progressing: cond("Unknown", reasonNotApplied),
			degraded: cond("True", reasonInvalidSpec), validated: cond("Unknown", reasonNotMeasured)},
		{name: "bad edit of a running instance keeps Ready", ci: newInstance(2),
			before:  cachev1alpha1.CacheInstanceStatus{Conditions: readySince("True", t0)},
			blocked: &blocker{reasonSecretMissing, "no Secret"},
			ready:   cond("True", "x"), degraded: cond("True", reasonSecretMissing), validated: cond("Unknown", reasonNotMeasured)},
		{name: "StatefulSet just applied", ci: newInstance(2), rollout: notObserved,
			ready: cond("False", reasonRollingOut), progressing: cond("True", reasonRollingOut),
			degraded: cond("False", reasonAsExpected), validated: cond("Unknown", reasonNotMeasured), recheck: rolloutDeadline},
		{name: "pods ready", ci: newInstance(2), rollout: podsReady,
			ready: cond("True", reasonPodsReady), progressing: cond("False", reasonRolloutComplete),
			degraded: cond("False", reasonAsExpected), validated: cond("Unknown", reasonNotMeasured)},
		{name: "Tuned says it runs the Auto value", ci: newInstance(8, tuned), rollout: podsReady,
			ready: cond("True", reasonPodsReady), progressing: cond("True", reasonTuningPending),
			degraded: cond("False", reasonAsExpected), validated: cond("Unknown", reasonNotMeasured)},
		{name: "pods not ready for a while", ci: newInstance(2), rollout: podsFailing,
			before: cachev1alpha1.CacheInstanceStatus{Conditions: readySince("False", t0.Add(-4*time.Minute))},
			ready:  cond("False", reasonPodsNotReady), progressing: cond("True", reasonPodsNotReady),
			degraded: cond("False", reasonAsExpected), validated: cond("Unknown", reasonNotMeasured), recheck: 6 * time.Minute},
		{name: "pods not ready past the deadline", ci: newInstance(2), rollout: podsFailing,
			before: cachev1alpha1.CacheInstanceStatus{Conditions: readySince("False", t0.Add(-11*time.Minute))},
			ready:  cond("False", reasonPodsNotReady), progressing: cond("True", reasonPodsNotReady),
			degraded: cond("True", reasonRolloutStuck), validated: cond("Unknown", reasonNotMeasured)},
		{name: "a pod the scheduler cannot place", ci: newInstance(2), rollout: podsFailing, problem: unschedulable,
			ready: cond("False", reasonPodsNotReady), progressing: cond("False", "Unschedulable"),
			degraded: cond("True", "Unschedulable"), validated: cond("Unknown", reasonNotMeasured), phase: cachev1alpha1.PhaseDegraded},
		{name: "a pod stuck during a roll", ci: newInstance(2), rollout: notObserved, problem: unschedulable,
			ready: cond("False", reasonRollingOut), progressing: cond("True", reasonRollingOut),
			degraded: cond("True", "Unschedulable"), validated: cond("Unknown", reasonNotMeasured), phase: cachev1alpha1.PhaseDegraded},
		{name: "serving again after an OOM kill", ci: newInstance(2), rollout: podsReady, problem: &podProblem{pod: "x-0", reason: "OOMKilled", message: "killed"},
			ready: cond("True", reasonPodsReady), progressing: cond("False", reasonRolloutComplete),
			degraded: cond("True", "OOMKilled"), validated: cond("Unknown", reasonNotMeasured), phase: cachev1alpha1.PhaseDegraded},
		{name: "API error", ci: newInstance(2), rollout: podsReady, err: errors.New("applying PodDisruptionBudget: boom"),
			ready: cond("True", reasonPodsReady), progressing: cond("False", reasonRolloutComplete),
			degraded: cond("True", reasonReconcileError), validated: cond("Unknown", reasonNotMeasured)},
		{name: "a measured validation survives an unchanged config", ci: newInstance(2), rollout: podsReady,
			before: cachev1alpha1.CacheInstanceStatus{ConfigHash: hashOf(t, newInstance(2)), Conditions: []metav1.Condition{
				{Type: cachev1alpha1.ConditionThroughputValidated, Status: "True", Reason: "Measured"}}},
			ready: cond("True", reasonPodsReady), progressing: cond("False", reasonRolloutComplete),
			degraded: cond("False", reasonAsExpected), validated: cond("True", "Measured")},
		{name: "a config change voids the validation", ci: newInstance(4), rollout: notObserved,
			before: cachev1alpha1.CacheInstanceStatus{ConfigHash: hashOf(t, newInstance(2)), Conditions: []metav1.Condition{
				{Type: cachev1alpha1.ConditionThroughputValidated, Status: "True", Reason: "Measured"}}},
			ready: cond("False", reasonRollingOut), progressing: cond("True", reasonRollingOut),
			degraded: cond("False", reasonAsExpected), validated: cond("Unknown", reasonConfigChanged), recheck: rolloutDeadline},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inst := &instance{CacheInstance: tc.ci, rollout: tc.rollout, blocked: tc.blocked, podProblem: tc.problem}
			if tc.blocked == nil {
				cfg, err := renderConfig(tc.ci)
				if err != nil {
					t.Fatal(err)
				}
				inst.config = cfg
			}
			st := tc.before
			recheck := setStatus(&st, inst, tc.err, t0)
			for typ, w := range map[string]want{
				cachev1alpha1.ConditionReady:               tc.ready,
				cachev1alpha1.ConditionProgressing:         tc.progressing,
				cachev1alpha1.ConditionDegraded:            tc.degraded,
				cachev1alpha1.ConditionThroughputValidated: tc.validated,
			} {
				c := meta.FindStatusCondition(st.Conditions, typ)
				switch {
				case w == want{} && c != nil:
					t.Errorf("%s is %s/%s, want it absent", typ, c.Status, c.Reason)
				case w == want{}:
				case c == nil:
					t.Errorf("%s missing, want %s/%s", typ, w.status, w.reason)
				case c.Status != w.status || c.Reason != w.reason:
					t.Errorf("%s is %s/%s (%s), want %s/%s", typ, c.Status, c.Reason, c.Message, w.status, w.reason)
				}
			}
			if tc.phase != "" && st.Phase != tc.phase {
				t.Errorf("phase %q, want %q", st.Phase, tc.phase)
			}
			if recheck != tc.recheck {
				t.Errorf("recheck after %s, want %s", recheck, tc.recheck)
			}
			if st.ObservedGeneration != tc.ci.Generation {
				t.Errorf("observedGeneration %d, want %d", st.ObservedGeneration, tc.ci.Generation)
			}
			if inst.config != nil && (st.ConfigHash != inst.config.Hash || st.IOThreads != inst.config.IOThreads || st.CPULists != inst.config.CPULists) {
				t.Errorf("status does not report the resolved config: %+v", st)
			}
			if (tc.rollout != nil) != (st.Endpoint != "") {
				t.Errorf("endpoint %q with rollout %v: it is reported once the Services are applied", st.Endpoint, tc.rollout)
			}
		})
	}
}

// The messages users read for Tuned and for a stuck rollout say what is going on.
func TestSetStatusMessages(t *testing.T) {
	inst := &instance{CacheInstance: newInstance(8, func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.IOThreads.Policy = cachev1alpha1.IOThreadsTuned
	}), rollout: podsReady}
	inst.config, _ = renderConfig(inst.CacheInstance)
	var st cachev1alpha1.CacheInstanceStatus
	setStatus(&st, inst, nil, t0)
	msg := meta.FindStatusCondition(st.Conditions, cachev1alpha1.ConditionProgressing).Message
	if !strings.Contains(msg, "Tuned") || !strings.Contains(msg, "Auto value: io-threads 6 for 8 cores") {
		t.Errorf("Progressing message %q does not say Tuned runs the Auto value", msg)
	}
}

func hashOf(t *testing.T, ci *cachev1alpha1.CacheInstance) string {
	t.Helper()
	cfg, err := renderConfig(ci)
	if err != nil {
		t.Fatal(err)
	}
	return cfg.Hash
}

// Once tuned, TuningPending is gone; a failed sweep says how to try again; a hold or a failed tuning
// the pass found gone ends, and another's stays.
func TestSetStatusTuningAndHolds(t *testing.T) {
	tuned := func(ci *cachev1alpha1.CacheInstance) { ci.Spec.IOThreads.Policy = cachev1alpha1.IOThreadsTuned }
	for _, tc := range []struct {
		name        string
		ci          *cachev1alpha1.CacheInstance
		progressing want
		message     string
	}{
		{"tuned", newInstance(8, tuned, tunedFor(8, ptr.To[int32](4))), cond("False", reasonRolloutComplete), "io-threads 4"},
		{"sweep failed", newInstance(8, tuned, tunedFor(8, nil)), cond("True", reasonTuningPending), "the sweep of CacheBenchmark cache-tuning failed"},
		{"sweep running", newInstance(8, tuned, func(ci *cachev1alpha1.CacheInstance) {
			ci.Status.ActiveBenchmark = &cachev1alpha1.ActiveBenchmark{Name: "cache-tuning-8c", UID: "u", IOThreads: ptr.To[int32](1)}
		}), cond("True", reasonTuningPending), "CacheBenchmark cache-tuning-8c is measuring this instance"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inst := &instance{CacheInstance: tc.ci, rollout: podsReady}
			inst.config, _ = renderConfig(tc.ci)
			st := *tc.ci.Status.DeepCopy()
			setStatus(&st, inst, nil, t0)
			c := meta.FindStatusCondition(st.Conditions, cachev1alpha1.ConditionProgressing)
			if c.Status != tc.progressing.status || c.Reason != tc.progressing.reason || !strings.Contains(c.Message, tc.message) {
				t.Errorf("Progressing %s/%s %q, want %v with %q", c.Status, c.Reason, c.Message, tc.progressing, tc.message)
			}
		})
	}

	held := func(uid, tuning string) *instance {
		ci := newInstance(2, func(ci *cachev1alpha1.CacheInstance) {
			ci.Status.ActiveBenchmark = &cachev1alpha1.ActiveBenchmark{Name: "b", UID: uid}
			ci.Status.Tuning = &cachev1alpha1.TuningStatus{Cores: 2, Benchmark: tuning}
		})
		inst := &instance{CacheInstance: ci, rollout: podsReady, releaseHold: "stale", forgetTuning: "gone"}
		inst.config, _ = renderConfig(ci)
		return inst
	}
	for _, tc := range []struct {
		uid, tuning        string
		holdKept, tuneKept bool
	}{{"stale", "gone", false, false}, {"live", "gone", true, false}, {"live", "newer", true, true}} {
		inst := held(tc.uid, tc.tuning)
		st := *inst.Status.DeepCopy()
		setStatus(&st, inst, nil, t0)
		if (st.ActiveBenchmark != nil) != tc.holdKept || (st.Tuning != nil) != tc.tuneKept {
			t.Errorf("hold of %s, tuning by %s: activeBenchmark %+v (want kept: %v), tuning %+v (want kept: %v)",
				tc.uid, tc.tuning, st.ActiveBenchmark, tc.holdKept, st.Tuning, tc.tuneKept)
		}
	}
}

// laggingCache reads an instance as a cache that has not yet seen the latest write would.
type laggingCache struct {
	client.Client
	old *cachev1alpha1.CacheInstance
}

func (l laggingCache) Get(_ context.Context, _ client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	l.old.DeepCopyInto(obj.(*cachev1alpha1.CacheInstance))
	return nil
}

// A status write that conflicts reads the stored object again rather than the cache, which may still
// hold the copy that conflicted: the retry succeeds and keeps what the other writer wrote.
func TestWriteStatusRereadsPastTheCache(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	if err := cachev1alpha1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	api := fake.NewClientBuilder().WithScheme(scheme).WithObjects(newInstance(4)).WithStatusSubresource(&cachev1alpha1.CacheInstance{}).Build()
	key := client.ObjectKey{Namespace: "ns", Name: "cache"}
	old := &cachev1alpha1.CacheInstance{}
	if err := api.Get(ctx, key, old); err != nil {
		t.Fatal(err)
	}
	// Another writer (a benchmark settling) moves the stored status on.
	other := old.DeepCopy()
	other.Status.LastBenchmark = &cachev1alpha1.BenchmarkSummary{Benchmark: "other"}
	if err := api.Status().Update(ctx, other); err != nil {
		t.Fatal(err)
	}

	_, err := writeStatus(ctx, laggingCache{Client: api, old: old}, api, old, func(ci *cachev1alpha1.CacheInstance) error {
		ci.Status.IOThreads = 9
		return nil
	})
	if err != nil {
		t.Fatalf("writeStatus: %v", err)
	}
	stored := &cachev1alpha1.CacheInstance{}
	if err := api.Get(ctx, key, stored); err != nil {
		t.Fatal(err)
	}
	if stored.Status.IOThreads != 9 || stored.Status.LastBenchmark == nil || stored.Status.LastBenchmark.Benchmark != "other" {
		t.Errorf("stored status %+v: want both writes", stored.Status)
	}
}
