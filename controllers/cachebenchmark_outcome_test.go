package controllers

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/utils/ptr"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
)

func TestSettle(t *testing.T) {
	const hash = "abc"
	purpose := func(p cachev1alpha1.BenchmarkPurpose) func(*cachev1alpha1.CacheBenchmark) {
		return func(cb *cachev1alpha1.CacheBenchmark) { cb.Spec.Purpose = p }
	}
	measured := func(results ...cachev1alpha1.BenchmarkResult) func(*cachev1alpha1.CacheBenchmark) {
		return func(cb *cachev1alpha1.CacheBenchmark) {
			for _, r := range results {
				r.ConfigHash = hash
				cb.Status.Results = append(cb.Status.Results, r)
			}
		}
	}
	midStep := func(cores int32, hash string) func(*cachev1alpha1.CacheBenchmark) {
		return func(cb *cachev1alpha1.CacheBenchmark) {
			cb.Status.Current = &cachev1alpha1.BenchmarkStep{IOThreads: 2, Cores: cores, ConfigHash: hash}
		}
	}
	named := func(name string) func(*cachev1alpha1.CacheBenchmark) {
		return func(cb *cachev1alpha1.CacheBenchmark) { cb.Name = name }
	}
	minimum := func(n int64) func(*cachev1alpha1.CacheInstance) {
		return func(ci *cachev1alpha1.CacheInstance) { ci.Spec.Benchmark.MinOpsPerSecond = ptr.To(n) }
	}
	for _, tc := range []struct {
		name      string
		ci        *cachev1alpha1.CacheInstance
		cb        *cachev1alpha1.CacheBenchmark
		best      int
		f         *failure
		validated *want // nil: left alone
		last      bool
		chosen    *int32
		tuning    bool // status.tuning written
		event     string
	}{
		{name: "manual run only lets go", ci: newInstance(4), cb: newBenchmark(measured(run(3, 1000, 900)))},
		{name: "validation without minimum", ci: newInstance(4), cb: newBenchmark(purpose(cachev1alpha1.PurposeValidation), measured(run(3, 1000, 900))),
			validated: &want{"True", reasonMeasured}, last: true, event: "ThroughputValidated"},
		{name: "validation meets the minimum", ci: newInstance(4, minimum(1000)), cb: newBenchmark(purpose(cachev1alpha1.PurposeValidation), measured(run(3, 1000, 900))),
			validated: &want{"True", reasonMinimumMet}, last: true, event: "ThroughputValidated"},
		{name: "validation below the minimum", ci: newInstance(4, minimum(1001)), cb: newBenchmark(purpose(cachev1alpha1.PurposeValidation), measured(run(3, 1000, 900))),
			validated: &want{"False", reasonBelowMinimum}, last: true, event: "ThroughputBelowMinimum"},
		{name: "validation of a config no longer running", ci: newInstance(4, func(ci *cachev1alpha1.CacheInstance) { ci.Status.ConfigHash = "new" }),
			cb: newBenchmark(purpose(cachev1alpha1.PurposeValidation), measured(run(3, 1000, 900))), last: true},
		{name: "a user's validation failed", ci: newInstance(4), cb: newBenchmark(purpose(cachev1alpha1.PurposeValidation), midStep(4, hash)),
			f: &failure{reasonJobFailed, "Job x failed"}, validated: &want{"False", reasonBenchmarkFailed}, event: "ValidationFailed"},
		{name: "the operator's validation failed: it is retried", ci: newInstance(4),
			cb: newBenchmark(named("cache-validate-"+hash), purpose(cachev1alpha1.PurposeValidation), midStep(4, hash)),
			f:  &failure{reasonJobFailed, "Job x failed"}, validated: &want{"Unknown", reasonRetryScheduled}, event: "ValidationFailed"},
		{name: "the retry failed too", ci: newInstance(4),
			cb: newBenchmark(named("cache-validate-"+hash+"-retry"), purpose(cachev1alpha1.PurposeValidation), midStep(4, hash)),
			f:  &failure{reasonJobFailed, "Job x failed"}, validated: &want{"False", reasonBenchmarkFailed}, event: "ValidationFailed"},
		{name: "the retry succeeded", ci: newInstance(4),
			cb:        newBenchmark(named("cache-validate-"+hash+"-retry"), purpose(cachev1alpha1.PurposeValidation), measured(run(3, 1000, 900))),
			validated: &want{"True", reasonMeasured}, last: true, event: "ThroughputValidated"},
		{name: "validation failed on an older config", ci: newInstance(4), cb: newBenchmark(purpose(cachev1alpha1.PurposeValidation), midStep(4, "old")),
			f: &failure{reasonJobFailed, "Job x failed"}},
		{name: "tuning applies the winner", ci: newInstance(4), cb: newBenchmark(purpose(cachev1alpha1.PurposeTuning), measured(run(1, 1000, 900), run(2, 2000, 900))),
			best: 1, chosen: ptr.To[int32](2), tuning: true, last: true, event: "Tuned"},
		{name: "tuning of other cores is dropped", ci: newInstance(8), cb: newBenchmark(purpose(cachev1alpha1.PurposeTuning), measured(run(1, 1000, 900), run(2, 2000, 900))),
			best: 1},
		{name: "failed tuning is recorded without a choice", ci: newInstance(4), cb: newBenchmark(purpose(cachev1alpha1.PurposeTuning), measured(run(1, 1000, 900)), midStep(4, hash)),
			f: &failure{reasonDeadlineExceeded, "Job y ran too long"}, tuning: true, event: "TuningFailed"},
		{name: "failed tuning of other cores is dropped", ci: newInstance(8), cb: newBenchmark(purpose(cachev1alpha1.PurposeTuning), midStep(4, hash)),
			f: &failure{reasonDeadlineExceeded, "Job y ran too long"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			st := &cachev1alpha1.CacheInstanceStatus{ConfigHash: hash, ActiveBenchmark: &cachev1alpha1.ActiveBenchmark{Name: "bench", UID: string(tc.cb.UID)}}
			if tc.ci.Status.ConfigHash != "" {
				st.ConfigHash = tc.ci.Status.ConfigHash
			}
			why := "because"
			note := settle(st, &tc.ci.Spec, 7, tc.cb, tc.best, why, tc.f, t0)
			if st.ActiveBenchmark != nil {
				t.Error("the hold did not end")
			}
			c := meta.FindStatusCondition(st.Conditions, cachev1alpha1.ConditionThroughputValidated)
			switch {
			case tc.validated == nil && c != nil:
				t.Errorf("ThroughputValidated set to %+v", c)
			case tc.validated != nil && (c == nil || c.Status != tc.validated.status || c.Reason != tc.validated.reason || c.ObservedGeneration != 7):
				t.Errorf("ThroughputValidated = %+v, want %v", c, tc.validated)
			}
			if tc.validated != nil && tc.f == nil && !strings.Contains(c.Message, "1000 ops/s") {
				t.Errorf("message %q lacks the figures", c.Message)
			}
			if tc.validated != nil && tc.f != nil && !strings.Contains(c.Message, "CacheBenchmark "+tc.cb.Name) {
				t.Errorf("message %q does not name the benchmark that failed", c.Message)
			}
			if tc.validated != nil && tc.validated.reason == reasonRetryScheduled && !strings.Contains(c.Message, "as CacheBenchmark "+tc.cb.Name+"-retry") {
				t.Errorf("message %q does not name the retry", c.Message)
			}
			if (st.LastBenchmark != nil) != tc.last {
				t.Errorf("lastBenchmark %+v", st.LastBenchmark)
			}
			if tc.chosen != nil && (st.LastBenchmark == nil || st.LastBenchmark.IOThreads != *tc.chosen || st.LastBenchmark.OpsPerSecond != 2000) {
				t.Errorf("lastBenchmark %+v, want the chosen setting's figures", st.LastBenchmark)
			}
			if (st.Tuning != nil) != tc.tuning {
				t.Fatalf("tuning %+v", st.Tuning)
			}
			if tc.tuning && (st.Tuning.Cores != 4 || st.Tuning.Benchmark != "bench" || len(st.Tuning.Results) != len(tc.cb.Status.Results) ||
				!ptr.Equal(st.Tuning.ChosenIOThreads, tc.chosen)) {
				t.Errorf("tuning %+v, want chosen %v", st.Tuning, tc.chosen)
			}
			if tc.tuning && tc.f == nil && st.Tuning.Explanation != why {
				t.Errorf("tuning explanation %q", st.Tuning.Explanation)
			}
			got := ""
			if note != nil {
				got = note.reason
			}
			if got != tc.event {
				t.Errorf("event %q, want %q", got, tc.event)
			}
		})
	}

	// Another benchmark's hold stays.
	st := &cachev1alpha1.CacheInstanceStatus{ActiveBenchmark: &cachev1alpha1.ActiveBenchmark{Name: "other", UID: "x"}}
	settle(st, &newInstance(4).Spec, 1, newBenchmark(), 0, "", &failure{reasonQueued, ""}, t0)
	if st.ActiveBenchmark == nil {
		t.Error("settling one benchmark ended another's hold")
	}
}

func TestEventNote(t *testing.T) {
	long := strings.Repeat("µ", 600)
	got := eventNote(long)
	if len(got) > noteLimit || !strings.HasSuffix(got, "…") || !strings.HasPrefix(got, "µµ") {
		t.Errorf("eventNote kept %d bytes", len(got))
	}
	if eventNote("short") != "short" {
		t.Error("a short note was changed")
	}
}
