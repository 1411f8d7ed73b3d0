package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// IOThreadsPolicy says how the operator chooses the server's io-threads setting.
// +kubebuilder:validation:Enum=Auto;Fixed;Tuned
type IOThreadsPolicy string

const (
	// IOThreadsAuto uses about three quarters of the cores (main thread included): 1 for 1–2 cores,
	// 3 for 4, 6 for 8, capped where more threads stop helping.
	IOThreadsAuto IOThreadsPolicy = "Auto"
	// IOThreadsFixed uses spec.ioThreads.count.
	IOThreadsFixed IOThreadsPolicy = "Fixed"
	// IOThreadsTuned measures candidate settings with benchmark Jobs and applies the best one.
	IOThreadsTuned IOThreadsPolicy = "Tuned"
)

// IOThreadsSpec chooses how many threads (main thread included, as Redis counts them) serve sockets.
// +kubebuilder:validation:XValidation:rule="self.policy != 'Fixed' || has(self.count)",message="ioThreads.count is required when ioThreads.policy is Fixed"
// +kubebuilder:validation:XValidation:rule="self.policy == 'Fixed' || !has(self.count)",message="ioThreads.count is only used with ioThreads.policy Fixed; remove it or set policy: Fixed"
type IOThreadsSpec struct {
	// Policy is Auto (about ¾ of the cores), Fixed (count) or Tuned (measured by benchmark Jobs).
	// +kubebuilder:default=Auto
	// +optional
	Policy IOThreadsPolicy `json:"policy,omitempty"`

	// Count is the io-threads setting for policy Fixed, the main thread included (1 = no I/O threads).
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=128
	// +optional
	Count *int32 `json:"count,omitempty"`
}

// CPUList is a list of CPU positions in taskset syntax without steps, such as "0-2" or "0,3-4".
// Positions count within the instance's own cores (0 is the first CPU the kubelet gives the pod).
// +kubebuilder:validation:Pattern=`^[0-9]{1,3}(-[0-9]{1,3})?(,[0-9]{1,3}(-[0-9]{1,3})?){0,15}$`
// +kubebuilder:validation:MaxLength=64
type CPUList string

// CPUAffinitySpec pins each kind of server work to positions within the instance's cores. Lists left
// out are computed: main and I/O threads on the first cores, background work on the rest.
type CPUAffinitySpec struct {
	// Server holds the main thread and the I/O threads (server_cpulist).
	// +optional
	Server CPUList `json:"server,omitempty"`
	// Bio holds background work: lazy free, closing files, AOF fsync (bio_cpulist).
	// +optional
	Bio CPUList `json:"bio,omitempty"`
	// AOFRewrite holds AOF rewriting (aof_rewrite_cpulist).
	// +optional
	AOFRewrite CPUList `json:"aofRewrite,omitempty"`
	// BGSave holds snapshot writing (bgsave_cpulist).
	// +optional
	BGSave CPUList `json:"bgsave,omitempty"`
}

// MaxMemoryPolicy is Redis's maxmemory-policy.
// +kubebuilder:validation:Enum=noeviction;allkeys-lru;allkeys-lfu;allkeys-random;volatile-lru;volatile-lfu;volatile-random;volatile-ttl
type MaxMemoryPolicy string

// AuthSpec protects the instance with a password (requirepass) kept in a Secret.
// +kubebuilder:validation:XValidation:rule="has(self.existingSecret) || (has(self.generate) && self.generate)",message="auth needs existingSecret, or generate: true to let the operator create a Secret with a random password"
type AuthSpec struct {
	// ExistingSecret names a Secret in the instance's namespace that holds the password. With
	// generate: true it names the Secret the operator creates when it is missing.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	ExistingSecret string `json:"existingSecret,omitempty"`
	// Key is the Secret's key that holds the password.
	// +kubebuilder:default=password
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Key string `json:"key,omitempty"`
	// Generate asks the operator to create the Secret with a random password when it does not exist.
	// The default name is <instance>-auth.
	// +optional
	Generate bool `json:"generate,omitempty"`
}

// MetricsSpec configures the server's Prometheus endpoint.
type MetricsSpec struct {
	// Port serves /metrics (the server's metrics-port directive). 9121 is redis_exporter's port.
	// +kubebuilder:default=9121
	// +kubebuilder:validation:Minimum=1024
	// +kubebuilder:validation:Maximum=65535
	// +optional
	Port int32 `json:"port,omitempty"`
	// ServiceMonitor creates a prometheus-operator ServiceMonitor when its CRD is installed.
	// +optional
	ServiceMonitor bool `json:"serviceMonitor,omitempty"`
}

// CacheInstanceBenchmarkSpec says how the operator validates throughput after each rollout.
type CacheInstanceBenchmarkSpec struct {
	// ValidateOnChange runs a validation benchmark after the instance becomes ready and after every
	// change that rolls it.
	// +kubebuilder:default=true
	// +optional
	ValidateOnChange *bool `json:"validateOnChange,omitempty"`
	// Workload is the load the validation and tuning runs send.
	// +optional
	Workload WorkloadSpec `json:"workload,omitempty"`
	// MinOpsPerSecond makes ThroughputValidated False when a validation run measures less.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MinOpsPerSecond *int64 `json:"minOpsPerSecond,omitempty"`
}

// CacheInstanceSpec is what a user wants from a cache instance.
// +kubebuilder:validation:XValidation:rule="!has(self.ioThreads) || !has(self.ioThreads.count) || self.ioThreads.count <= self.cores",message="ioThreads.count must not exceed cores: every thread needs a core of its own"
// +kubebuilder:validation:XValidation:rule="!has(self.cpuAffinity) || [self.cpuAffinity.?server.orValue(''), self.cpuAffinity.?bio.orValue(''), self.cpuAffinity.?aofRewrite.orValue(''), self.cpuAffinity.?bgsave.orValue('')].all(l, l == '' || l.split(',').all(r, r.split('-').all(n, int(n) < self.cores)))",message="cpuAffinity lists are positions within the instance's cores: every CPU must be below spec.cores"
// +kubebuilder:validation:XValidation:rule="!has(self.cpuAffinity) || !has(self.cpuAffinity.server) || [self.cpuAffinity.?bio.orValue(''), self.cpuAffinity.?aofRewrite.orValue(''), self.cpuAffinity.?bgsave.orValue('')].all(l, l == '' || l.split(',').all(b, self.cpuAffinity.server.split(',').all(s, int(s.split('-')[s.split('-').size()-1]) < int(b.split('-')[0]) || int(b.split('-')[b.split('-').size()-1]) < int(s.split('-')[0]))))",message="cpuAffinity.server must not overlap bio, aofRewrite or bgsave: background work on the server's cores steals time from the threads that serve clients"
type CacheInstanceSpec struct {
	// Cores is the number of CPUs the instance gets; requests equal limits (Guaranteed QoS), so a
	// kubelet with the static CPU manager policy gives the pod exclusive cores.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=256
	Cores int32 `json:"cores"`

	// Memory is the pod's memory request and limit. maxmemory defaults to 90% of it.
	Memory resource.Quantity `json:"memory"`

	// MaxMemory overrides the derived maxmemory (90% of memory). It must leave room for buffers.
	// +optional
	MaxMemory *resource.Quantity `json:"maxMemory,omitempty"`

	// MaxMemoryPolicy is what happens at maxmemory. A cache evicts: allkeys-lru by default.
	// +kubebuilder:default=allkeys-lru
	// +optional
	MaxMemoryPolicy MaxMemoryPolicy `json:"maxMemoryPolicy,omitempty"`

	// IOThreads chooses the io-threads setting.
	// +kubebuilder:default={policy: Auto}
	// +optional
	IOThreads IOThreadsSpec `json:"ioThreads,omitempty"`

	// CPUAffinity optionally pins each kind of work to positions within the instance's cores.
	// +optional
	CPUAffinity *CPUAffinitySpec `json:"cpuAffinity,omitempty"`

	// Auth protects the instance with a password from a Secret.
	// +optional
	Auth *AuthSpec `json:"auth,omitempty"`

	// Config holds extra redis.conf directives (name to value). Directives the operator owns
	// (port, io-threads, the cpulists, maxmemory, requirepass, ...) are refused.
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, !(k.lowerAscii() in ['port','bind','unixsocket','io-threads','io-threads-do-reads','server_cpulist','server-cpulist','bio_cpulist','bio-cpulist','aof_rewrite_cpulist','aof-rewrite-cpulist','bgsave_cpulist','bgsave-cpulist','cpulist-mode','maxmemory','maxmemory-policy','requirepass','masterauth','metrics-port','dir','logfile','daemonize','include','pidfile']))",messageExpression="'spec.config must not set ' + self.filter(k, k.lowerAscii() in ['port','bind','unixsocket','io-threads','io-threads-do-reads','server_cpulist','server-cpulist','bio_cpulist','bio-cpulist','aof_rewrite_cpulist','aof-rewrite-cpulist','bgsave_cpulist','bgsave-cpulist','cpulist-mode','maxmemory','maxmemory-policy','requirepass','masterauth','metrics-port','dir','logfile','daemonize','include','pidfile'])[0] + ': the operator sets it from the other spec fields'"
	// +optional
	Config map[string]string `json:"config,omitempty"`

	// Image runs the server; it defaults to the operator's own image, so the two never drift apart.
	// +optional
	Image string `json:"image,omitempty"`

	// ImagePullPolicy for the server and benchmark containers.
	// +optional
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`

	// Replicas is the number of server pods. Replication is not implemented yet, so it is 1.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// Metrics configures the Prometheus endpoint.
	// +kubebuilder:default={port: 9121}
	// +optional
	Metrics MetricsSpec `json:"metrics,omitempty"`

	// Benchmark configures throughput validation after rollouts and the workload used for tuning.
	// +optional
	Benchmark CacheInstanceBenchmarkSpec `json:"benchmark,omitempty"`

	// NodeSelector constrains the nodes the server pod runs on.
	// +optional
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`
	// Tolerations of the server pod.
	// +optional
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`
	// Affinity of the server pod.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`
	// PriorityClassName of the server pod.
	// +optional
	PriorityClassName string `json:"priorityClassName,omitempty"`
	// PodAnnotations are added to the server pod.
	// +optional
	PodAnnotations map[string]string `json:"podAnnotations,omitempty"`
	// PodLabels are added to the server pod.
	// +optional
	PodLabels map[string]string `json:"podLabels,omitempty"`
}

// ResolvedCPULists are the cpulists the server is configured with, as positions within its cores.
type ResolvedCPULists struct {
	Server     string `json:"server,omitempty"`
	Bio        string `json:"bio,omitempty"`
	AOFRewrite string `json:"aofRewrite,omitempty"`
	BGSave     string `json:"bgsave,omitempty"`
}

// Condition types of a CacheInstance.
const (
	// ConditionReady is True when every server pod is ready to serve with the current config, False
	// while none is, Unknown before the operator has looked.
	ConditionReady = "Ready"
	// ConditionProgressing is True while a rollout (new config, new cores) is under way, False once
	// the pods run the current config.
	ConditionProgressing = "Progressing"
	// ConditionDegraded is True when the operator cannot bring the instance to its spec (a missing
	// Secret, an API error, a pod that does not become ready); the reason says which. False otherwise.
	ConditionDegraded = "Degraded"
	// ConditionThroughputValidated is True when the last validation benchmark after a rollout
	// succeeded (and met minOpsPerSecond when set), False with the figures when it did not or failed,
	// Unknown while none has run for the current config.
	ConditionThroughputValidated = "ThroughputValidated"
)

// BenchmarkSummary is the figures of one measured run.
type BenchmarkSummary struct {
	// Benchmark names the CacheBenchmark that measured these figures.
	Benchmark string `json:"benchmark,omitempty"`
	// IOThreads is the io-threads setting the server ran with.
	IOThreads int32 `json:"ioThreads,omitempty"`
	// OpsPerSecond is the measured throughput, all tests together.
	OpsPerSecond int64 `json:"opsPerSecond"`
	// Latency holds the measured latency percentiles.
	// +optional
	Latency LatencySummary `json:"latency,omitempty"`
	// Errors counts failed requests.
	// +optional
	Errors int64 `json:"errors,omitempty"`
	// CompletionTime is when the run finished.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
}

// LatencySummary holds request latency percentiles, written as durations such as "412µs".
type LatencySummary struct {
	P50  *metav1.Duration `json:"p50,omitempty"`
	P90  *metav1.Duration `json:"p90,omitempty"`
	P99  *metav1.Duration `json:"p99,omitempty"`
	P999 *metav1.Duration `json:"p999,omitempty"`
	Max  *metav1.Duration `json:"max,omitempty"`
}

// TuningStatus records how the Tuned policy chose io-threads.
type TuningStatus struct {
	// Cores is the core count the tuning measured; a change of cores tunes again.
	Cores int32 `json:"cores,omitempty"`
	// Benchmark names the CacheBenchmark that swept the candidates.
	Benchmark string `json:"benchmark,omitempty"`
	// ChosenIOThreads is the setting applied.
	// +optional
	ChosenIOThreads *int32 `json:"chosenIOThreads,omitempty"`
	// Explanation says why, in words.
	// +optional
	Explanation string `json:"explanation,omitempty"`
}

// CacheInstanceStatus is what the operator resolved and observed.
type CacheInstanceStatus struct {
	// ObservedGeneration is the spec generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Ready, Progressing, Degraded, ThroughputValidated.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// IOThreads is the resolved io-threads setting, main thread included.
	// +optional
	IOThreads int32 `json:"ioThreads,omitempty"`
	// CPULists are the resolved cpulists, as positions within the pod's cores.
	// +optional
	CPULists ResolvedCPULists `json:"cpuLists,omitempty"`
	// ConfigHash is the hash of the rendered server config; it is on the pod template, so a change
	// rolls the pods.
	// +optional
	ConfigHash string `json:"configHash,omitempty"`
	// Endpoint is the client Service's host:port.
	// +optional
	Endpoint string `json:"endpoint,omitempty"`
	// ReadyReplicas counts server pods ready with the current config.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// LastBenchmark holds the figures of the last validation run.
	// +optional
	LastBenchmark *BenchmarkSummary `json:"lastBenchmark,omitempty"`
	// Tuning records the Tuned policy's decision.
	// +optional
	Tuning *TuningStatus `json:"tuning,omitempty"`
}

// CacheInstance is a Redis-compatible cache (iocache-server) with a given number of cores, its
// io-threads and cpulists resolved by the operator and its throughput validated by benchmark Jobs.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=ci;cache,categories=iocache
// +kubebuilder:printcolumn:name="Cores",type=integer,JSONPath=`.spec.cores`
// +kubebuilder:printcolumn:name="IO-Threads",type=integer,JSONPath=`.status.ioThreads`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Ops/s",type=integer,JSONPath=`.status.lastBenchmark.opsPerSecond`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type CacheInstance struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec CacheInstanceSpec `json:"spec"`
	// +optional
	Status CacheInstanceStatus `json:"status,omitempty"`
}

// CacheInstanceList is a list of CacheInstances.
// +kubebuilder:object:root=true
type CacheInstanceList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CacheInstance `json:"items"`
}

func init() {
	SchemeBuilder.Register(&CacheInstance{}, &CacheInstanceList{})
}
