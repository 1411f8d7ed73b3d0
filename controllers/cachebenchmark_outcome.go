package controllers

import (
	"fmt"
	"time"
	"unicode/utf8"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
)

// Reasons of the ThroughputValidated condition that a finished validation sets; api/v1alpha1
// documents them.
const (
	reasonMinimumMet      = "MinimumMet"
	reasonMeasured        = "Measured"
	reasonBelowMinimum    = "BelowMinimum"
	reasonBenchmarkFailed = "BenchmarkFailed"
	reasonRetryScheduled  = "RetryScheduled"
)

// noteLimit is the most an event's note may hold; the API server refuses longer ones.
const noteLimit = 1024

// outcomeNote is what to tell the user about the instance when a benchmark settles.
type outcomeNote struct{ eventType, reason, message string }

// settle writes into an instance's status what a finished benchmark means for it, and returns what
// to tell the user, or nil. cb's hold ends. A Validation run sets lastBenchmark, and
// ThroughputValidated when the instance still runs the config it measured (a later config waits for
// its own validation); when the operator's first validation of a config fails, ThroughputValidated
// waits for its retry (Unknown, RetryScheduled) instead of turning False. A Tuning run records its
// decision in status.tuning when the instance still has the cores it measured (new cores are tuned
// anew). best indexes cb's results, why explains the choice; f is the failure of a benchmark that
// did not measure everything.
func settle(st *cachev1alpha1.CacheInstanceStatus, spec *cachev1alpha1.CacheInstanceSpec, generation int64,
	cb *cachev1alpha1.CacheBenchmark, best int, why string, f *failure, now time.Time) *outcomeNote {
	if ab := st.ActiveBenchmark; ab != nil && ab.UID == string(cb.UID) {
		st.ActiveBenchmark = nil
	}
	validated := func(status metav1.ConditionStatus, reason, format string, args ...any) string {
		msg := fmt.Sprintf(format, args...)
		meta.SetStatusCondition(&st.Conditions, metav1.Condition{
			Type: cachev1alpha1.ConditionThroughputValidated, Status: status, Reason: reason, Message: msg,
			ObservedGeneration: generation, LastTransitionTime: metav1.NewTime(now),
		})
		return msg
	}
	var summaries []cachev1alpha1.BenchmarkSummary
	for _, r := range cb.Status.Results {
		summaries = append(summaries, r.BenchmarkSummary)
	}

	switch cb.Spec.Purpose {
	case cachev1alpha1.PurposeValidation:
		if f != nil {
			if cur := cb.Status.Current; cur != nil && cur.ConfigHash != st.ConfigHash {
				return nil
			}
			var msg string
			switch first := validationName(cb.Spec.InstanceRef.Name, st.ConfigHash); cb.Name {
			case first:
				msg = validated(metav1.ConditionUnknown, reasonRetryScheduled,
					"Validation CacheBenchmark %s failed (%s): %s. It runs once more after a backoff, as CacheBenchmark %s",
					cb.Name, f.reason, f.message, first+retrySuffix)
			case first + retrySuffix:
				msg = validated(metav1.ConditionFalse, reasonBenchmarkFailed,
					"Validation CacheBenchmark %s, the retry of %s, failed too (%s): %s. The next rollout validates again",
					cb.Name, first, f.reason, f.message)
			default:
				msg = validated(metav1.ConditionFalse, reasonBenchmarkFailed, "Validation CacheBenchmark %s failed (%s): %s", cb.Name, f.reason, f.message)
			}
			return &outcomeNote{corev1.EventTypeWarning, "ValidationFailed", msg}
		}
		r := summaries[best]
		st.LastBenchmark = &r
		if r.ConfigHash != st.ConfigHash {
			return nil
		}
		measured := fmt.Sprintf("%s with io-threads %d on %d cores (config %s, CacheBenchmark %s)",
			figures(&r), r.IOThreads, r.Cores, r.ConfigHash, cb.Name)
		switch limit := spec.Benchmark.MinOpsPerSecond; {
		case limit == nil:
			msg := validated(metav1.ConditionTrue, reasonMeasured, "Measured %s; no minOpsPerSecond is set", measured)
			return &outcomeNote{corev1.EventTypeNormal, "ThroughputValidated", msg}
		case r.OpsPerSecond >= *limit:
			msg := validated(metav1.ConditionTrue, reasonMinimumMet, "Measured %s: at least spec.benchmark.minOpsPerSecond %d", measured, *limit)
			return &outcomeNote{corev1.EventTypeNormal, "ThroughputValidated", msg}
		default:
			msg := validated(metav1.ConditionFalse, reasonBelowMinimum, "Measured %s: below spec.benchmark.minOpsPerSecond %d", measured, *limit)
			return &outcomeNote{corev1.EventTypeWarning, "ThroughputBelowMinimum", msg}
		}

	case cachev1alpha1.PurposeTuning:
		if f != nil {
			cores := spec.Cores
			if cur := cb.Status.Current; cur != nil {
				cores = cur.Cores
			}
			if cores != spec.Cores {
				return nil
			}
			st.Tuning = &cachev1alpha1.TuningStatus{
				Cores: cores, Benchmark: cb.Name, Results: summaries,
				Explanation: fmt.Sprintf("The sweep failed (%s): %s. The instance runs the Auto value; delete CacheBenchmark %s to tune again.",
					f.reason, f.message, cb.Name),
			}
			return &outcomeNote{corev1.EventTypeWarning, "TuningFailed", st.Tuning.Explanation}
		}
		for _, r := range summaries {
			if r.Cores != spec.Cores {
				return nil
			}
		}
		w := summaries[best]
		st.Tuning = &cachev1alpha1.TuningStatus{
			Cores: spec.Cores, Benchmark: cb.Name, ChosenIOThreads: ptr.To(w.IOThreads), Explanation: why, Results: summaries,
		}
		// The chosen setting's figure is the latest the operator measured; purpose says so.
		st.LastBenchmark = w.DeepCopy()
		return &outcomeNote{corev1.EventTypeNormal, "Tuned", fmt.Sprintf(
			"io-threads %d chosen for %d cores (%s) among %d candidates by CacheBenchmark %s; status.tuning has the figures",
			w.IOThreads, spec.Cores, figures(&w), len(summaries), cb.Name)}
	}
	return nil
}

// eventNote shortens s to what an event may hold.
func eventNote(s string) string {
	if len(s) <= noteLimit {
		return s
	}
	cut := noteLimit - len("…")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "…"
}
