package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WorkloadSpec is the load one benchmark run sends (iocache-bench's flags). Each run sends the
// mixed test (SET and GET at ratio) for warmup plus duration.
// +kubebuilder:validation:XValidation:rule="!has(self.duration) || (duration(self.duration) >= duration('1s') && duration(self.duration) <= duration('1h'))",message="workload.duration must be between 1s and 1h"
// +kubebuilder:validation:XValidation:rule="!has(self.warmup) || (duration(self.warmup) >= duration('0s') && duration(self.warmup) <= duration('1h'))",message="workload.warmup must be between 0s and 1h"
type WorkloadSpec struct {
	// Clients is the number of connections.
	// +kubebuilder:default=50
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=10000
	// +optional
	Clients int32 `json:"clients,omitempty"`
	// Threads is the number of client threads that drive the connections.
	// +kubebuilder:default=2
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=256
	// +optional
	Threads int32 `json:"threads,omitempty"`
	// Pipeline is the number of requests each connection keeps in flight.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1024
	// +optional
	Pipeline int32 `json:"pipeline,omitempty"`
	// DataSize is the value size in bytes for SET.
	// +kubebuilder:default=256
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1048576
	// +optional
	DataSize int32 `json:"dataSize,omitempty"`
	// Keyspace is the number of distinct keys requests pick from at random.
	// +kubebuilder:default=100000
	// +kubebuilder:validation:Minimum=1
	// +optional
	Keyspace int64 `json:"keyspace,omitempty"`
	// Ratio is SET:GET, as memtier writes it.
	// +kubebuilder:default="1:10"
	// +kubebuilder:validation:Pattern=`^[0-9]{1,4}:[0-9]{1,4}$`
	// +optional
	Ratio string `json:"ratio,omitempty"`
	// Duration of the measured part of each run.
	// +kubebuilder:default="30s"
	// +optional
	Duration *metav1.Duration `json:"duration,omitempty"`
	// Warmup runs before measuring, to fill the keyspace and warm connections.
	// +kubebuilder:default="5s"
	// +optional
	Warmup *metav1.Duration `json:"warmup,omitempty"`
}

// BenchmarkPurpose says why a CacheBenchmark exists.
// +kubebuilder:validation:Enum=Manual;Validation;Tuning
type BenchmarkPurpose string

const (
	// PurposeManual is a run a user asked for.
	PurposeManual BenchmarkPurpose = "Manual"
	// PurposeValidation is the operator's run after a rollout; it sets ThroughputValidated.
	PurposeValidation BenchmarkPurpose = "Validation"
	// PurposeTuning is the operator's sweep for the Tuned io-threads policy.
	PurposeTuning BenchmarkPurpose = "Tuning"
)

// CacheBenchmarkSpec is one measured load run against an instance, or a sweep over io-threads.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="a CacheBenchmark's spec is immutable: create a new CacheBenchmark to measure again"
type CacheBenchmarkSpec struct {
	// InstanceRef names the CacheInstance in the same namespace.
	InstanceRef corev1.LocalObjectReference `json:"instanceRef"`
	// Workload is the load to send.
	// +kubebuilder:default={}
	// +optional
	Workload WorkloadSpec `json:"workload,omitempty"`
	// IOThreads, when set, sweeps these io-threads settings in the order given: the instance runs
	// each in turn (status.activeBenchmark on the instance overrides what its spec resolves to; the
	// spec is never changed), is measured once the pods are ready with it, and afterwards returns to
	// what its spec says (or, for Tuning, runs the best setting). Each must not exceed the instance's
	// cores. io-threads changes live (CONFIG SET): no pod is replaced and the cache stays warm.
	// Without it the instance is measured as it runs.
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:Minimum=1
	// +kubebuilder:validation:items:Maximum=128
	// +listType=set
	// +optional
	IOThreads []int32 `json:"ioThreads,omitempty"`
	// Purpose says why the run exists; users create Manual runs.
	// +kubebuilder:default=Manual
	// +optional
	Purpose BenchmarkPurpose `json:"purpose,omitempty"`
	// Resources of the benchmark Job's container. By default it asks for as many CPUs as the client
	// threads, so the client is not the bottleneck.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
}

// BenchmarkState is where a CacheBenchmark is in its life.
type BenchmarkState string

const (
	// BenchmarkPending waits for another benchmark of the same instance to finish: an instance is
	// measured by one benchmark at a time.
	BenchmarkPending BenchmarkState = "Pending"
	// BenchmarkRunning holds the instance: it waits for the pods to run a setting, or measures it.
	BenchmarkRunning BenchmarkState = "Running"
	// BenchmarkSucceeded measured every setting.
	BenchmarkSucceeded BenchmarkState = "Succeeded"
	// BenchmarkFailed stopped without measuring every setting; the Complete condition says why. The
	// instance went back to its own setting and kept serving.
	BenchmarkFailed BenchmarkState = "Failed"
)

// Condition types of a CacheBenchmark.
const (
	// ConditionComplete is True (reason Succeeded) when every setting was measured. It is False when
	// the benchmark failed, with the reason: JobFailed (the Job failed: the pod exited non-zero, could
	// not start, or iocache-bench reported ok=false), DeadlineExceeded (the Job ran past its
	// activeDeadlineSeconds, warmup plus duration plus a margin), InvalidResult (the Job succeeded
	// but its termination message is not a valid iocache-bench result: wrong schema version, ok
	// false, no throughput, unordered percentiles, or not JSON), InstanceNotFound (the CacheInstance
	// does not exist), InstanceNotReady (the instance's pods were not ready with the setting to
	// measure within ten minutes), InvalidSpec (an io-threads setting exceeds the instance's cores).
	// It is Unknown while the benchmark waits or runs: reasons Queued (another benchmark holds the
	// instance), RollingOut (waiting for the pods to run the setting), Settling (the pods are ready
	// but became so only moments ago: every run starts on a settled instance, never in a rollout's
	// aftermath, so that validation and sweep figures measure the same state), AwaitingCertificate
	// (cert-manager has not yet issued the Job's client certificate), Measuring (the Job runs).
	ConditionComplete = "Complete"
)

// BenchmarkStep is the setting a running benchmark is on.
type BenchmarkStep struct {
	// IOThreads is the io-threads setting measured in this step.
	IOThreads int32 `json:"ioThreads"`
	// Cores is the instance's cores when the step began.
	Cores int32 `json:"cores"`
	// ConfigHash is the config the instance's pods must run before the Job starts.
	ConfigHash string `json:"configHash"`
	// Job names the Job of this step, once created.
	// +optional
	Job string `json:"job,omitempty"`
	// Since is when the step began; the pods must be ready with the setting within ten minutes.
	Since metav1.Time `json:"since"`
}

// ThreadCounts is one server thread's share of the work during a run (from INFO threads).
type ThreadCounts struct {
	Thread int32 `json:"thread"`
	Reads  int64 `json:"reads"`
	Writes int64 `json:"writes"`
	// CPUs the thread was pinned to, physical ids.
	// +optional
	CPUs string `json:"cpus,omitempty"`
}

// BenchmarkResult is one measured run at one io-threads setting.
type BenchmarkResult struct {
	BenchmarkSummary `json:",inline"`
	// Threads is how the work spread over the server's threads.
	// +optional
	Threads []ThreadCounts `json:"threads,omitempty"`
	// Job names the Job that ran it.
	// +optional
	Job string `json:"job,omitempty"`
}

// CacheBenchmarkStatus reports the runs and the best setting.
type CacheBenchmarkStatus struct {
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// State is Pending, Running, Succeeded or Failed.
	// +optional
	State BenchmarkState `json:"state,omitempty"`
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// Current is the step in progress; absent before the first and after the last.
	// +optional
	Current *BenchmarkStep `json:"current,omitempty"`
	// Results holds one entry per io-threads setting measured, in the order measured.
	// +optional
	Results []BenchmarkResult `json:"results,omitempty"`
	// BestIOThreads is the setting with the highest throughput among those whose p99 latency is at
	// most 1.5 times the lowest p99 measured; a setting with more threads must beat one with fewer
	// by more than 5% to win, because threads cost CPU.
	// +optional
	BestIOThreads *int32 `json:"bestIOThreads,omitempty"`
	// BestOpsPerSecond is the throughput measured at BestIOThreads.
	// +optional
	BestOpsPerSecond int64 `json:"bestOpsPerSecond,omitempty"`
	// Explanation says in words what was measured and why the best setting won.
	// +optional
	Explanation string `json:"explanation,omitempty"`
	// OriginalIOThreads is the instance's setting when the benchmark began. A sweep does not write
	// it back: clearing the instance's status.activeBenchmark returns it to what its spec resolves to.
	// +optional
	OriginalIOThreads *int32 `json:"originalIOThreads,omitempty"`
}

// CacheBenchmark runs iocache-bench in a Job against a CacheInstance and records ops/s and latency,
// optionally for several io-threads settings in turn.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=cb,categories=iocache
// +kubebuilder:printcolumn:name="Instance",type=string,JSONPath=`.spec.instanceRef.name`
// +kubebuilder:printcolumn:name="State",type=string,JSONPath=`.status.state`
// +kubebuilder:printcolumn:name="Best-IO-Threads",type=integer,JSONPath=`.status.bestIOThreads`
// +kubebuilder:printcolumn:name="Ops/s",type=integer,JSONPath=`.status.bestOpsPerSecond`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type CacheBenchmark struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec CacheBenchmarkSpec `json:"spec"`
	// +optional
	Status CacheBenchmarkStatus `json:"status,omitempty"`
}

// CacheBenchmarkList is a list of CacheBenchmarks.
// +kubebuilder:object:root=true
type CacheBenchmarkList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CacheBenchmark `json:"items"`
}

func init() {
	SchemeBuilder.Register(&CacheBenchmark{}, &CacheBenchmarkList{})
}
