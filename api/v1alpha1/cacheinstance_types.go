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
	// IOThreadsTuned measures candidate settings with benchmark Jobs and applies the best one. Once
	// the pods are ready the operator creates a Tuning CacheBenchmark that sweeps 1, half, the Auto
	// value (about 3/4) and all of the cores (deduplicated, and no more than the CPUs of
	// cpuAffinity.server when that is set) with spec.benchmark.workload, and applies the setting with
	// the highest throughput whose p99 latency is at most 1.5 times the lowest p99 of the sweep (more
	// threads must win by more than 5%). status.tuning records the figures and the decision; a change
	// of cores tunes again. Each candidate, and then the winner, is applied to the running pods
	// with CONFIG SET: no pod is replaced and the cache stays warm (benchmarks work in the server's
	// bench space, apart from the user's keys). Until a measurement exists the instance
	// runs with the Auto value, and the Progressing condition says so (reason TuningPending).
	IOThreadsTuned IOThreadsPolicy = "Tuned"
)

// IOThreadsSpec chooses how many threads (main thread included, as Redis counts them) serve sockets.
// +kubebuilder:validation:XValidation:rule="self.policy != 'Fixed' || has(self.count)",message="ioThreads.count is required when ioThreads.policy is Fixed"
// +kubebuilder:validation:XValidation:rule="self.policy == 'Fixed' || !has(self.count)",message="ioThreads.count is only used with ioThreads.policy Fixed; remove it or set policy: Fixed"
type IOThreadsSpec struct {
	// Policy is Auto (about ¾ of the cores, and no more than the CPUs in cpuAffinity.server when that
	// is set), Fixed (count) or Tuned (measured by benchmark Jobs; Auto until measured).
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
// +kubebuilder:validation:XValidation:rule="self.split(',').all(r, !r.contains('-') || int(r.split('-')[0]) <= int(r.split('-')[1]))",message="a CPU range runs upwards, such as 2-5"
type CPUList string

// CPUAffinitySpec pins each kind of server work to positions within the instance's cores. Lists left
// out are computed: main and I/O threads on the first cores, background work on the cores the
// server list leaves free (with none free, it shares the last server core). A background list
// must not overlap the server list, whether that one is given or computed.
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

// CPUMode is Exclusive or Shared.
// +kubebuilder:validation:Enum=Exclusive;Shared
type CPUMode string

const (
	// CPUExclusive gives the instance whole cores of its own (Guaranteed QoS, integer CPUs).
	CPUExclusive CPUMode = "Exclusive"
	// CPUShared gives it a fraction of a core from the node's shared pool: io-threads 1, no pinning.
	CPUShared CPUMode = "Shared"
)

// ServiceSpec shapes the client Service.
// +kubebuilder:validation:XValidation:rule="!has(self.loadBalancerSourceRanges) || self.type == 'LoadBalancer'",message="service.loadBalancerSourceRanges only applies to service.type LoadBalancer"
// +kubebuilder:validation:XValidation:rule="!has(self.nodePort) || self.type != 'ClusterIP'",message="service.nodePort needs service.type NodePort or LoadBalancer"
type ServiceSpec struct {
	// Type of the client Service: ClusterIP (the default, in-cluster only), NodePort or
	// LoadBalancer for clients outside the cluster. Use auth with either: the port is then
	// reachable from outside.
	// +kubebuilder:default=ClusterIP
	// +kubebuilder:validation:Enum=ClusterIP;NodePort;LoadBalancer
	// +optional
	Type corev1.ServiceType `json:"type,omitempty"`
	// Annotations of the client Service, for the cloud's load balancer (internal, TLS, ...).
	// +optional
	Annotations map[string]string `json:"annotations,omitempty"`
	// LoadBalancerSourceRanges limits who may connect through a LoadBalancer: CIDRs such as
	// 203.0.113.0/24.
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:Pattern=`^[0-9a-fA-F:.]+/[0-9]{1,3}$`
	// +optional
	LoadBalancerSourceRanges []string `json:"loadBalancerSourceRanges,omitempty"`
	// NodePort of the Redis port, for NodePort and LoadBalancer; the cluster picks one without it.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=65535
	// +optional
	NodePort *int32 `json:"nodePort,omitempty"`
	// ExternalTrafficPolicy Local keeps the client's source address (and the cloud's health check
	// skips nodes without the pod); Cluster is Kubernetes' default.
	// +kubebuilder:validation:Enum=Cluster;Local
	// +optional
	ExternalTrafficPolicy corev1.ServiceExternalTrafficPolicy `json:"externalTrafficPolicy,omitempty"`
}

// MaxMemoryPolicy is Redis's maxmemory-policy.
// +kubebuilder:validation:Enum=noeviction;allkeys-lru;allkeys-lfu;allkeys-random;volatile-lru;volatile-lfu;volatile-random;volatile-ttl
type MaxMemoryPolicy string

// UpgradePolicy is Manual or Rolling.
// +kubebuilder:validation:Enum=Manual;Rolling
type UpgradePolicy string

const (
	// UpgradeManual keeps the image an instance runs when the operator is upgraded.
	UpgradeManual UpgradePolicy = "Manual"
	// UpgradeRolling follows the operator's image.
	UpgradeRolling UpgradePolicy = "Rolling"
)

// ConfigValue is the value of one redis.conf directive: one line, written after the name as is.
// +kubebuilder:validation:MinLength=1
// +kubebuilder:validation:MaxLength=1024
// +kubebuilder:validation:Pattern=`^[^\r\n]+$`
type ConfigValue string

// AuthSpec protects the instance with a password (requirepass) kept in a Secret.
// +kubebuilder:validation:XValidation:rule="has(self.existingSecret) || (has(self.generate) && self.generate)",message="auth needs existingSecret, or generate: true to let the operator create a Secret with a random password"
type AuthSpec struct {
	// ExistingSecret names a Secret in the instance's namespace that holds the password. With
	// generate: true it names the Secret the operator creates when it is missing.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	ExistingSecret string `json:"existingSecret,omitempty"`
	// Key is the Secret's key that holds the password. The server reads it from a file of that name,
	// so the password never appears in the ConfigMap, the command line or the logs.
	// +kubebuilder:default=password
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[-._a-zA-Z0-9]+$`
	// +optional
	Key string `json:"key,omitempty"`
	// Generate asks the operator to create the Secret with a random password when it does not exist.
	// The default name is <instance>-auth. The operator never changes a Secret that exists.
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
	// change of its config, rolled or applied live: a CacheBenchmark named after the instance and the config hash it
	// measures. The instance keeps its three most recently finished validations, the one
	// status.lastBenchmark names and those of the config it runs, and deletes older ones.
	// +kubebuilder:default=true
	// +optional
	ValidateOnChange *bool `json:"validateOnChange,omitempty"`
	// Workload is the load the validation and tuning runs send.
	// +kubebuilder:default={}
	// +optional
	Workload WorkloadSpec `json:"workload,omitempty"`
	// MinOpsPerSecond makes ThroughputValidated False when a validation run measures less. Without
	// it a validation run that succeeds makes ThroughputValidated True.
	// +kubebuilder:validation:Minimum=1
	// +optional
	MinOpsPerSecond *int64 `json:"minOpsPerSecond,omitempty"`
	// Resources of the validation and tuning benchmark Jobs' client container. By default the
	// client gets one whole CPU per client thread, requests equal to limits, so that it measures
	// the server rather than its own CPU throttling; a small cluster whose nodes have no whole CPUs
	// to spare can ask for less here (the figures then bound the server's throughput from below).
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
}

// CacheInstanceSpec is what a user wants from a cache instance.
// +kubebuilder:validation:XValidation:rule="!has(self.ioThreads) || !has(self.ioThreads.count) || self.ioThreads.count <= self.cores",message="ioThreads.count must not exceed cores: every thread needs a core of its own"
// +kubebuilder:validation:XValidation:rule="!has(self.cpuAffinity) || [?self.cpuAffinity.?server, ?self.cpuAffinity.?bio, ?self.cpuAffinity.?aofRewrite, ?self.cpuAffinity.?bgsave].all(l, l.split(',').all(r, r.split('-').all(n, int(n) < self.cores)))",message="cpuAffinity lists are positions within the instance's cores: every CPU must be below spec.cores"
// +kubebuilder:validation:XValidation:rule="!has(self.cpuAffinity) || !has(self.cpuAffinity.server) || [?self.cpuAffinity.?bio, ?self.cpuAffinity.?aofRewrite, ?self.cpuAffinity.?bgsave].all(l, l.split(',').all(b, self.cpuAffinity.server.split(',').all(s, int(s.split('-')[s.split('-').size()-1]) < int(b.split('-')[0]) || int(b.split('-')[b.split('-').size()-1]) < int(s.split('-')[0]))))",message="cpuAffinity.server must not overlap bio, aofRewrite or bgsave: background work on the server's cores steals time from the threads that serve clients"
// +kubebuilder:validation:XValidation:rule="!has(self.cpuMode) || self.cpuMode != 'Shared' || has(self.cpu)",message="cpuMode Shared needs cpu: the fraction of a core the instance gets, such as cpu: 500m"
// +kubebuilder:validation:XValidation:rule="!has(self.cpu) || (has(self.cpuMode) && self.cpuMode == 'Shared')",message="cpu is only for cpuMode Shared; an Exclusive instance gets whole cores: set cores instead"
// +kubebuilder:validation:XValidation:rule="!has(self.cpu) || (quantity(string(self.cpu)).compareTo(quantity('10m')) >= 0 && quantity(string(self.cpu)).compareTo(quantity('64')) <= 0)",message="cpu must be between 10m and 64"
// +kubebuilder:validation:XValidation:rule="!has(self.cpuMode) || self.cpuMode != 'Shared' || (self.cores == 1 && !has(self.cpuAffinity) && (!has(self.ioThreads) || !has(self.ioThreads.policy) || self.ioThreads.policy == 'Auto'))",message="cpuMode Shared runs one unpinned thread on part of a core: leave cores at 1, remove cpuAffinity and use ioThreads policy Auto"
// +kubebuilder:validation:XValidation:rule="!has(self.users) || size(self.users) == 0 || has(self.auth)",message="users need auth: without a password the default user lets every client in with every permission"
// +kubebuilder:validation:XValidation:rule="quantity(string(self.memory)).compareTo(quantity('32Mi')) >= 0",message="memory must be at least 32Mi: the server needs room for its runtime and buffers besides the data"
// +kubebuilder:validation:XValidation:rule="!has(self.maxMemory) || quantity(string(self.maxMemory)).compareTo(quantity(string(self.memory))) < 0",message="maxMemory must be less than memory: the data may not fill the whole pod, or the kernel kills it before eviction starts"
// +kubebuilder:validation:XValidation:rule="!has(self.shards) || self.shards == 1 || !has(self.tls)",message="spec.tls is not supported with shards above 1 yet"
// +kubebuilder:validation:XValidation:rule="(has(self.shards) && self.shards > 1) == (has(oldSelf.shards) && oldSelf.shards > 1)",message="spec.shards cannot change between 1 and more than 1: a standalone instance's pods are not cluster nodes; create a sharded instance instead (shards can change freely above 1)"
// +kubebuilder:validation:XValidation:rule="has(self.bootstrap) == has(oldSelf.bootstrap) && (!has(self.bootstrap) || self.bootstrap == oldSelf.bootstrap)",message="spec.bootstrap is set when an instance is created and cannot change: it says where the first data came from"
// +kubebuilder:validation:XValidation:rule="!has(self.bootstrap) || !has(self.shards) || self.shards == 1",message="spec.bootstrap is not supported with shards above 1 yet: restore into a single-shard instance"
// +kubebuilder:validation:XValidation:rule="(!has(self.replicas) || self.replicas <= 1) || has(self.tls) == has(oldSelf.tls)",message="spec.tls cannot be added or removed while replicas is above 1: the pods are replaced one at a time, and a replica cannot follow a primary that speaks the other protocol; scale to 1 replica first, or create a new instance"
type CacheInstanceSpec struct {
	// Cores is the number of CPUs the instance gets under cpuMode Exclusive; requests equal limits
	// (Guaranteed QoS), so a kubelet with the static CPU manager policy gives the pod exclusive
	// cores. Under cpuMode Shared it stays 1 and cpu says how much of a core the instance gets.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=256
	// +optional
	Cores int32 `json:"cores,omitempty"`

	// CPUMode is Exclusive (the default: whole cores of its own, threads pinned to them) or Shared:
	// a fraction of a core from the node's shared pool (spec.cpu, such as 500m), io-threads 1 and
	// no pinning. Shared is for small and development instances, and lets several fit on a small
	// node; it measures and pins nothing it cannot own.
	// +kubebuilder:default=Exclusive
	// +optional
	CPUMode CPUMode `json:"cpuMode,omitempty"`

	// CPU is the CPU request and limit under cpuMode Shared, from 10m to 64 (such as 500m).
	// +optional
	CPU *resource.Quantity `json:"cpu,omitempty"`

	// Memory is the pod's memory request and limit. maxmemory defaults to 90% of it, leaving at least
	// 64Mi (a quarter, below 256Mi) for the runtime, client buffers and the bench space.
	Memory resource.Quantity `json:"memory"`

	// MaxMemory overrides the derived maxmemory (90% of memory, leaving at least 64Mi). It must leave
	// room for the runtime and buffers.
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

	// TLS serves the instance over TLS only, with a certificate from a Secret or from cert-manager.
	// +optional
	TLS *TLSSpec `json:"tls,omitempty"`

	// Users are ACL users besides the default one, each with passwords from a Secret and the
	// commands, keys and channels it may use: an application gets what it needs and no more.
	// Changes, and new passwords in the Secrets, are applied to the running servers live; the
	// first users of an instance replace its pods once (they mount the users' file).
	// +listType=map
	// +listMapKey=name
	// +kubebuilder:validation:MaxItems=64
	// +optional
	Users []UserSpec `json:"users,omitempty"`

	// Config holds extra redis.conf directives (name to value), written as "name value" lines after
	// the operator's own, so a value may hold several arguments ("client-output-buffer-limit": "pubsub 64mb 16mb 60"). Directives
	// the operator owns (port, io-threads, the cpulists, maxmemory, requirepass, ...) are refused;
	// an unknown directive stops the server at startup, as it would stop redis-server.
	// +kubebuilder:validation:MaxProperties=64
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^[a-zA-Z][-_a-zA-Z0-9]{0,63}$'))",message="spec.config keys are directive names: a letter, then letters, digits, '-' or '_' (at most 64)"
	// +kubebuilder:validation:XValidation:rule="self.all(k, !(k.lowerAscii() in ['port','bind','unixsocket','io-threads','io-threads-do-reads','server_cpulist','server-cpulist','bio_cpulist','bio-cpulist','aof_rewrite_cpulist','aof-rewrite-cpulist','bgsave_cpulist','bgsave-cpulist','cpulist-mode','maxmemory','maxmemory-policy','benchspace-maxmemory','requirepass','requirepass-file','masterauth','masteruser','replicaof','slaveof','start-as-replica','user','aclfile','protected-mode','metrics-port','dir','logfile','daemonize','supervised','include','pidfile','save','appendonly','appendfsync','tls-port','tls-cert-file','tls-key-file','tls-ca-cert-file','tls-ca-cert-dir','tls-auth-clients','tls-replication','tls-client-cert-file','tls-client-key-file','cluster-enabled','cluster-config-file']))",messageExpression="'spec.config must not set ' + self.filter(k, k.lowerAscii() in ['port','bind','unixsocket','io-threads','io-threads-do-reads','server_cpulist','server-cpulist','bio_cpulist','bio-cpulist','aof_rewrite_cpulist','aof-rewrite-cpulist','bgsave_cpulist','bgsave-cpulist','cpulist-mode','maxmemory','maxmemory-policy','benchspace-maxmemory','requirepass','requirepass-file','masterauth','masteruser','replicaof','slaveof','start-as-replica','user','aclfile','protected-mode','metrics-port','dir','logfile','daemonize','supervised','include','pidfile','save','appendonly','appendfsync','tls-port','tls-cert-file','tls-key-file','tls-ca-cert-file','tls-ca-cert-dir','tls-auth-clients','tls-replication','tls-client-cert-file','tls-client-key-file','cluster-enabled','cluster-config-file'])[0] + ': the operator sets it from the other spec fields'"
	// +optional
	Config map[string]ConfigValue `json:"config,omitempty"`

	// Image runs the server (and the benchmark client). Without it the instance runs the operator's
	// own image, as chosen by upgradePolicy.
	// +optional
	Image string `json:"image,omitempty"`

	// UpgradePolicy says whether an instance without spec.image follows the operator's version.
	// Manual (the default) keeps the image it runs (status.image) when the operator is upgraded:
	// status.pendingImage and an UpgradeAvailable event name the operator's image, and the pods are
	// replaced only when you switch to Rolling or set spec.image. Rolling replaces the pods with the
	// operator's image as soon as the operator is upgraded.
	// +kubebuilder:default=Manual
	// +optional
	UpgradePolicy UpgradePolicy `json:"upgradePolicy,omitempty"`

	// ImagePullPolicy for the server and benchmark containers.
	// +optional
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`

	// Replicas is the number of server pods: one primary, and replicas-1 replicas that follow it with
	// Redis's replication protocol. With more than one, the client Service sends clients to the
	// primary, the <name>-replicas Service to the replicas (for reads), and the operator promotes a
	// replica when the primary is lost (see replication), and replaces pods replicas first, then
	// switches over, so that a change that needs new pods keeps the data and keeps serving.
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=9
	// +optional
	Replicas *int32 `json:"replicas,omitempty"`

	// Shards splits the keys over this many primaries, each with spec.replicas pods, as one Redis
	// Cluster: clients that speak Redis Cluster (go-redis's ClusterClient, rueidis, redis-cli -c,
	// Jedis, Lettuce) reach every shard through any node. 1, the default, is one primary as
	// before. Above 1 the operator makes one CacheInstance per shard, <name>-shard-<i>, with this
	// spec (so each shard has replicas, failover, rollouts and persistence as any instance),
	// assigns the 16,384 hash slots evenly, keeps the slot map in status.cluster and pushes it to
	// every node with an epoch. Changing it (between 2 and 16) moves slots online: batches of
	// slots go from shard to shard with Redis's own slot-moving commands while clients keep
	// running, a new shard first joins the map empty, and a shard being removed is emptied before
	// its instance is deleted.
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=16
	// +optional
	Shards *int32 `json:"shards,omitempty"`

	// Replication says when the operator fails over, for replicas above 1.
	// +kubebuilder:default={}
	// +optional
	Replication ReplicationSpec `json:"replication,omitempty"`

	// Rollout says what the operator may do when a change needs new pods: by default it never
	// replaces a pod whose data would not survive (see allowColdRestart and the Rollout condition).
	// +optional
	Rollout RolloutSpec `json:"rollout,omitempty"`

	// Persistence keeps the data across pod restarts: mode RDB puts Redis-format snapshots on a
	// volume claim, so a replaced pod comes back warm. None (the default) keeps it in memory only.
	// +kubebuilder:default={mode: None}
	// +optional
	Persistence PersistenceSpec `json:"persistence,omitempty"`

	// Backup sends backups of the instance to S3-compatible object storage, on a schedule and on
	// demand (CacheBackup objects), and applies a retention policy. The schedule lives with the
	// instance, next to the storage it writes to, so one object says where and when; each run is a
	// CacheBackup with its own status.
	// +optional
	Backup *BackupSpec `json:"backup,omitempty"`

	// Bootstrap fills a new instance from a backup before it serves. Set at creation only.
	// +optional
	Bootstrap *BootstrapSpec `json:"bootstrap,omitempty"`

	// Metrics configures the Prometheus endpoint.
	// +kubebuilder:default={port: 9121}
	// +optional
	Metrics MetricsSpec `json:"metrics,omitempty"`

	// Benchmark configures throughput validation after rollouts and the workload used for tuning.
	// +kubebuilder:default={}
	// +optional
	Benchmark CacheInstanceBenchmarkSpec `json:"benchmark,omitempty"`

	// Service shapes the client Service: its type (ClusterIP, NodePort, LoadBalancer), annotations
	// and, for a LoadBalancer, the source ranges allowed in.
	// +optional
	Service *ServiceSpec `json:"service,omitempty"`

	// NetworkPolicy closes the instance to pods it does not name: on by default, every pod of the
	// instance's namespace admitted unless clients are listed.
	// +kubebuilder:default={enabled: true}
	// +optional
	NetworkPolicy NetworkPolicySpec `json:"networkPolicy,omitempty"`

	// ImagePullSecrets name Secrets in the instance's namespace for pulling the image from a private
	// registry; the server and benchmark pods use them.
	// +kubebuilder:validation:MaxItems=16
	// +optional
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`

	// TopologySpreadConstraints of the server pods, such as spreading replicas over zones. Their
	// labelSelector may be left out: it then selects the instance's own pods.
	// +kubebuilder:validation:MaxItems=8
	// +optional
	TopologySpreadConstraints []corev1.TopologySpreadConstraint `json:"topologySpreadConstraints,omitempty"`

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
	// ConditionReady is True (reason PodsReady) when every server pod is ready and runs the current
	// StatefulSet revision, hence the current config. False while pods start, roll or fail (reasons
	// RollingOut, PodsNotReady). Unknown (reason NotApplied) until the operator has applied a
	// StatefulSet, for instance while the first spec cannot be rendered or its Secret is missing.
	ConditionReady = "Ready"
	// ConditionProgressing is True while the StatefulSet rolls pods to the current config or cores
	// (reason RollingOut), while the pods run it but are not ready yet (reason PodsNotReady), and
	// while ioThreads.policy is Tuned and no measurement has chosen the setting yet (reason
	// TuningPending: the instance runs with the Auto value meanwhile). False (reason
	// RolloutComplete) once the pods run the current config and are ready; False with the pod's own
	// reason (as in Degraded) when a pod cannot become ready without someone acting. Unknown (reason
	// NotApplied) until the operator has applied a StatefulSet.
	ConditionProgressing = "Progressing"
	// ConditionDegraded is True when the operator cannot bring the instance to its spec; the reason
	// says why: InvalidSpec (a rule the schema cannot check, such as a background cpulist that
	// overlaps the computed server list), SecretMissing (the auth Secret or its key), ReconcileError
	// (an API call failed; retried with backoff), RolloutStuck (pods not ready with the current
	// config ten minutes after the rollout began), WaitingForRoom or WaitingForConsent (a change
	// needs a new pod and cannot keep the data; see the Rollout condition and
	// spec.rollout.allowColdRestart); or a server pod's trouble, with the scheduler's or
	// kubelet's reason and message: Unschedulable (no node has the cores or memory), ErrImagePull,
	// ImagePullBackOff, InvalidImageName, ErrImageNeverPull, CrashLoopBackOff,
	// CreateContainerConfigError, CreateContainerError, RunContainerError, and OOMKilled (while the
	// container is down, and for ten minutes after it came back: it lost its data). Each new pod
	// trouble is also a Warning event on the instance. False (reason AsExpected) otherwise.
	ConditionDegraded = "Degraded"
	// ConditionThroughputValidated says whether the validation benchmark that follows each rollout
	// (spec.benchmark.validateOnChange) found the throughput expected of the current config. True:
	// reason MinimumMet (it measured at least spec.benchmark.minOpsPerSecond) or Measured (no minimum
	// is set and the run succeeded). False: reason BelowMinimum (it measured less than the minimum;
	// the message has the figures) or BenchmarkFailed (the run failed, and so did its retry; the
	// message has the CacheBenchmark's reason). Unknown while no validation has measured the current
	// config: reason NotMeasured when the instance is new, ConfigChanged whenever the rendered config
	// changes, RetryScheduled when the validation failed: a failure is often passing (node pressure,
	// an image pull), so the operator runs it once more five minutes after it failed, as a
	// CacheBenchmark of the same name with "-retry" appended, and the message says why the first
	// failed. The instance controller sets Unknown and starts the validation once the pods are ready
	// with the new config; the benchmark controller sets True, False and RetryScheduled, and only for
	// the config it measured.
	ConditionThroughputValidated = "ThroughputValidated"
	// ConditionConfigApplied says whether every ready server pod runs the rendered config
	// (status.configHash), and how the last change got there. The operator splits the config: what
	// the server takes through CONFIG SET (maxmemory, maxmemory-policy, most of spec.config, and
	// io-threads and the cpulists where the server can change them live) is applied to each running
	// pod over an authenticated connection and read back with CONFIG GET; the rest (the image, cores
	// or memory, volumes, directives the server reads only at start) replaces the pods. True: reason
	// AppliedLive (the last change was applied to the running pods, which kept their data; the
	// message lists the directives) or Rolled (it replaced the pods; the message says because of
	// what). False: reason ApplyingLive or RollingOut while a change is on its way, WaitingForConsent
	// while a change that needs a new pod waits (see the Rollout condition), LiveChangeFailed
	// when a pod refused it or could not be reached (the message says which and why; retried). Unknown
	// (reason NotApplied) until the operator has applied a StatefulSet.
	ConditionConfigApplied = "ConfigApplied"
	// ConditionReplicated is present when spec.replicas is above 1. True (reason InSync) when the
	// primary serves and every other pod is its replica with its link up and at most
	// maxReplicationLagBytes behind. False: NoPrimary (no pod could be made the primary yet: none
	// ready), Syncing (a replica is not linked or still catching up; the message names it),
	// FailingOver (the primary's pod has been gone or not ready for less than
	// replication.failoverAfterSeconds), NoReplicaToPromote (the primary is lost and no ready
	// replica can take over).
	ConditionReplicated = "Replicated"
	// ConditionRollout says, before any pod is replaced, how the pods reach the current pod
	// template and whether their data survives. True: reason Live (no pod needs replacing: changes
	// are applied to the running pods with CONFIG SET, memory is resized in place), Warm (pods are
	// replaced and the data survives: a replicated instance switches the primary over to an updated
	// replica, a persistent one saves at shutdown and loads at start), NoDataToKeep (the pods to
	// replace never started, so they hold no data) or ColdRestart (the pod is replaced and starts
	// empty, as spec.rollout.allowColdRestart allows). Warm includes the surge of a single pod
	// without persistence: a temporary pod <instance>-surge syncs as its replica, takes the writes
	// over while the pod is replaced, and hands them back. False: reason WaitingForRoom (the surge
	// pod cannot be scheduled: no room for one more pod of the instance's size) or
	// WaitingForConsent (no warm way: the operator cannot reach the running server with the spec's
	// auth or TLS); nothing is replaced until there is room, allowColdRestart is set or the
	// instance gets a replica; the message says what changed. A Rollout event says the same
	// when a decision is first made; the operator acts only once the decision is in the status.
	ConditionRollout = "Rollout"
)

// BenchmarkSummary is the figures of one measured run, and what they measured.
type BenchmarkSummary struct {
	// Benchmark names the CacheBenchmark that measured these figures.
	Benchmark string `json:"benchmark,omitempty"`
	// Purpose is the kind of run that measured them: Validation (after a rollout), Tuning (one
	// candidate of the Tuned policy's sweep) or Manual.
	// +optional
	Purpose BenchmarkPurpose `json:"purpose,omitempty"`
	// Measured says in words what the figures measured: the workload, the io-threads setting, where
	// the client ran, the CPU it had and used, the CPU the server used, and for how long. Two
	// figures are comparable only when this reads the same.
	// +optional
	Measured string `json:"measured,omitempty"`
	// Client is where the load generator ran and the CPU it had and used.
	// +optional
	Client *BenchmarkClient `json:"client,omitempty"`
	// ServerCPU is the CPU the server process used over the measured part, in cores (from INFO cpu
	// before and after).
	// +optional
	ServerCPU *resource.Quantity `json:"serverCPU,omitempty"`
	// IOThreads is the io-threads setting the server ran with.
	IOThreads int32 `json:"ioThreads,omitempty"`
	// Cores is the instance's cores during the run.
	// +optional
	Cores int32 `json:"cores,omitempty"`
	// ConfigHash is the config the server ran with.
	// +optional
	ConfigHash string `json:"configHash,omitempty"`
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

// BenchmarkClient is where a run's load generator ran and the CPU it had: a figure is the server's
// only when the client had CPU to spare.
type BenchmarkClient struct {
	// Node the client pod ran on.
	// +optional
	Node string `json:"node,omitempty"`
	// Threads is the number of client threads; each can keep at most one core busy.
	// +optional
	Threads int32 `json:"threads,omitempty"`
	// CPURequest and CPULimit are the client container's. Without a limit the client may use any
	// idle CPU of the node's shared pool; with requests equal to whole-CPU limits and the static CPU
	// manager it has CPUs of its own.
	// +optional
	CPURequest *resource.Quantity `json:"cpuRequest,omitempty"`
	// +optional
	CPULimit *resource.Quantity `json:"cpuLimit,omitempty"`
	// CPUUsed is the CPU the client used over the measured part, in cores (getrusage). Close to its
	// threads or its limit, the client, not the server, set the figure.
	// +optional
	CPUUsed *resource.Quantity `json:"cpuUsed,omitempty"`
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
	// ChosenIOThreads is the setting applied. It is absent when the sweep failed: the instance then
	// runs the Auto value, and deleting the CacheBenchmark named in benchmark tunes again.
	// +optional
	ChosenIOThreads *int32 `json:"chosenIOThreads,omitempty"`
	// Explanation says why, in words.
	// +optional
	Explanation string `json:"explanation,omitempty"`
	// Results are the figures of each candidate, the evidence for the choice.
	// +optional
	Results []BenchmarkSummary `json:"results,omitempty"`
}

// ActiveBenchmark is the CacheBenchmark that holds an instance: one benchmark measures an instance
// at a time, and while one sweeps io-threads it chooses the setting here rather than in the spec.
type ActiveBenchmark struct {
	// Name of the CacheBenchmark in the instance's namespace.
	Name string `json:"name"`
	// UID of that CacheBenchmark, so a new object of the same name does not inherit the hold.
	UID string `json:"uid"`
	// IOThreads, when set, is the setting the benchmark measures now: the operator renders the
	// config with it in place of what the spec resolves to, and goes back when the hold ends.
	// +optional
	IOThreads *int32 `json:"ioThreads,omitempty"`
}

// InstancePhase sums an instance's conditions up in one word.
// +kubebuilder:validation:Enum=Pending;Progressing;Ready;Degraded
type InstancePhase string

const (
	// PhasePending: no StatefulSet has been applied yet.
	PhasePending InstancePhase = "Pending"
	// PhaseProgressing: pods start or roll (Ready is False, Degraded is not True).
	PhaseProgressing InstancePhase = "Progressing"
	// PhaseReady: every pod serves the current config (Ready is True, Degraded is not True).
	PhaseReady InstancePhase = "Ready"
	// PhaseDegraded: Degraded is True; its reason and message say what needs attention.
	PhaseDegraded InstancePhase = "Degraded"
)

// PodConfigStatus is the config one server pod runs.
type PodConfigStatus struct {
	// Name of the pod.
	Name string `json:"name"`
	// UID of the pod; a new pod of the same name is checked again.
	UID string `json:"uid"`
	// Restarts counts the server container's restarts when the config was checked: a restarted
	// container reads its config file again, so it is checked again.
	// +optional
	Restarts int32 `json:"restarts,omitempty"`
	// ConfigHash is the config the pod runs, verified with CONFIG GET.
	ConfigHash string `json:"configHash"`
	// UsersHash stands for the ACL users the operator set on the pod (the benchmark Jobs' user and
	// spec.users): a hash of their rules, kept apart from configHash so that a new password is
	// applied live without counting as a new config (no new validation benchmark for it).
	// +optional
	UsersHash string `json:"usersHash,omitempty"`
	// Live names the directives of configHash that the server takes live (CONFIG SET), by their
	// canonical names: one that a later config no longer has (a key taken out of spec.config) is
	// set back to the server's default on the running pod instead of replacing it.
	// +listType=set
	// +optional
	Live []string `json:"live,omitempty"`
}

// CacheInstanceStatus is what the operator resolved and observed.
type CacheInstanceStatus struct {
	// ObservedGeneration is the spec generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Phase sums the conditions up for `kubectl get`: Pending, Progressing, Ready or Degraded. The
	// conditions say more; tools should read them.
	// +optional
	Phase InstancePhase `json:"phase,omitempty"`
	// Conditions: Ready, Progressing, Degraded, ThroughputValidated, ConfigApplied, Rollout and,
	// with replicas, Replicated.
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
	// ConfigHash is the hash of the rendered server config. Only the hash of the part the server
	// cannot change live is on the pod template: a change of the rest is applied to the running pods.
	// +optional
	ConfigHash string `json:"configHash,omitempty"`
	// Image is the server image the pods run (spec.image, or the operator's image as upgradePolicy
	// chose it). Under upgradePolicy Manual it stays when the operator is upgraded.
	// +optional
	Image string `json:"image,omitempty"`
	// PendingImage is the operator's image when the instance runs another one under upgradePolicy
	// Manual: the version an upgrade would bring.
	// +optional
	PendingImage string `json:"pendingImage,omitempty"`
	// RestartHash is the hash of the part of the config the server reads only at start; it is on the
	// pod template, so a change of it replaces the pods.
	// +optional
	RestartHash string `json:"restartHash,omitempty"`
	// AppliedConfigHash is the config every ready server pod runs, configHash once a change has
	// reached them all (see the ConfigApplied condition).
	// +optional
	AppliedConfigHash string `json:"appliedConfigHash,omitempty"`
	// Pods is the config each ready server pod runs: the one it started with or, since then, the
	// one the operator applied to it live and read back.
	// +listType=map
	// +listMapKey=name
	// +optional
	Pods []PodConfigStatus `json:"pods,omitempty"`
	// CPU says how the instance uses CPUs, in words: whole exclusive cores with pinned threads, or a
	// share of the node's pool without pinning.
	// +optional
	CPU string `json:"cpu,omitempty"`
	// Endpoint is the client Service's host:port.
	// +optional
	Endpoint string `json:"endpoint,omitempty"`
	// ReadyReplicas counts server pods ready with the current config.
	// +optional
	ReadyReplicas int32 `json:"readyReplicas,omitempty"`
	// Replicas counts the instance's server pods that exist, ready or not: the scale subresource's
	// status, which a HorizontalPodAutoscaler or KEDA reads.
	// +optional
	Replicas int32 `json:"replicas,omitempty"`
	// Selector is the label selector of the instance's server pods, as a string: the scale
	// subresource's, by which an autoscaler finds the pods whose metrics it averages.
	// +optional
	Selector string `json:"selector,omitempty"`
	// LastBenchmark holds the figures the operator measured last: of the last Validation run, or of
	// the setting a Tuning sweep chose. Its purpose and measured fields say which and what.
	// +optional
	LastBenchmark *BenchmarkSummary `json:"lastBenchmark,omitempty"`
	// ActiveBenchmark is the CacheBenchmark measuring the instance now, if any. The benchmark
	// controller sets and clears it; the instance controller clears it when that benchmark is gone.
	// +optional
	ActiveBenchmark *ActiveBenchmark `json:"activeBenchmark,omitempty"`
	// Tuning records the Tuned policy's decision.
	// +optional
	Tuning *TuningStatus `json:"tuning,omitempty"`
	// Replication is which pod is the primary and how far each replica is, for replicas above 1.
	// +optional
	Replication *ReplicationStatus `json:"replication,omitempty"`
	// Persistence reports the snapshots of a persistent instance: the last save, and the last one
	// the operator took on schedule or on request.
	// +optional
	Persistence *PersistenceStatus `json:"persistence,omitempty"`
	// Backups reports the instance's backups: the last successful and failed ones, and the
	// schedule.
	// +optional
	Backups *BackupsStatus `json:"backups,omitempty"`
	// Bootstrap reports how the data of spec.bootstrap was loaded.
	// +optional
	Bootstrap *BootstrapStatus `json:"bootstrap,omitempty"`
	// TLS is the certificate the instance serves, with spec.tls.
	// +optional
	TLS *TLSStatus `json:"tls,omitempty"`
	// Cluster is the slot map of a sharded instance (spec.shards above 1): the truth the operator
	// writes first and then pushes to every node.
	// +optional
	Cluster *ClusterStatus `json:"cluster,omitempty"`
}

// ClusterStatus is a sharded instance's slot map and how far the nodes serve it.
type ClusterStatus struct {
	// Epoch orders the maps: each new map gets a higher one, and a node refuses a map older than
	// the one it serves, so a late push cannot undo a newer one.
	Epoch int64 `json:"epoch"`
	// Shards are the shards in order, with their slots.
	// +listType=atomic
	// +optional
	Shards []ShardStatus `json:"shards,omitempty"`
	// SlotsCovered counts the slots whose primary is known and serving the current map.
	// +optional
	SlotsCovered int32 `json:"slotsCovered,omitempty"`
	// Nodes counts the server pods serving the current map.
	// +optional
	Nodes int32 `json:"nodes,omitempty"`
	// Moving is the batch of slots being moved now, written before the move starts, so that an
	// operator restarted in the middle finishes it before anything else.
	// +optional
	Moving *SlotMove `json:"moving,omitempty"`
	// SlotsToMove counts the slots still to move to reach the shards asked for.
	// +optional
	SlotsToMove int32 `json:"slotsToMove,omitempty"`
}

// SlotMove is a batch of slots moving from one shard to another.
type SlotMove struct {
	// Slots are the slots of the batch, as Redis writes them.
	Slots string `json:"slots"`
	// From and To are the shards' indexes in status.cluster.shards.
	From int32 `json:"from"`
	To   int32 `json:"to"`
}

// ShardStatus is one shard of the slot map.
type ShardStatus struct {
	// Instance is the shard's CacheInstance.
	Instance string `json:"instance"`
	// Slots are the hash slots the shard serves, as Redis writes them: "0-5460" or
	// "0-100,200-300".
	// +optional
	Slots string `json:"slots,omitempty"`
	// Primary is the pod that serves the shard's slots, as the last map said.
	// +optional
	Primary string `json:"primary,omitempty"`
}

// CacheInstance is a Redis-compatible cache (iocache-server) with a given number of cores, its
// io-threads and cpulists resolved by the operator and its throughput validated by benchmark Jobs.
// +kubebuilder:object:root=true
// +kubebuilder:validation:XValidation:rule="self.metadata.name.size() <= 52 && self.metadata.name.matches('^[a-z]([-a-z0-9]*[a-z0-9])?$')",message="a CacheInstance name is a DNS label of at most 52 characters starting with a letter: it names the Services and the StatefulSet, whose pods add a suffix"
// +kubebuilder:validation:XValidation:rule="!has(self.spec.shards) || self.spec.shards == 1 || self.metadata.name.size() <= 43",message="a sharded CacheInstance's name is at most 43 characters: each shard is an instance named <name>-shard-<i>"
// +kubebuilder:subresource:status
// +kubebuilder:subresource:scale:specpath=.spec.replicas,statuspath=.status.replicas,selectorpath=.status.selector
// +kubebuilder:resource:shortName=ci;cache,categories=iocache
// +kubebuilder:printcolumn:name="Cores",type=integer,JSONPath=`.spec.cores`
// +kubebuilder:printcolumn:name="IO-Threads",type=integer,JSONPath=`.status.ioThreads`
// +kubebuilder:printcolumn:name="Shards",type=integer,priority=1,JSONPath=`.spec.shards`
// +kubebuilder:printcolumn:name="Slots",type=integer,priority=1,JSONPath=`.status.cluster.slotsCovered`
// +kubebuilder:printcolumn:name="Moving",type=integer,priority=1,JSONPath=`.status.cluster.slotsToMove`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Primary",type=string,priority=1,JSONPath=`.status.replication.primary`
// +kubebuilder:printcolumn:name="Ops/s",type=integer,JSONPath=`.status.lastBenchmark.opsPerSecond`
// +kubebuilder:printcolumn:name="Measured-By",type=string,JSONPath=`.status.lastBenchmark.purpose`
// +kubebuilder:printcolumn:name="Reason",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Degraded")].reason`
// +kubebuilder:printcolumn:name="Rollout",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Rollout")].reason`
// +kubebuilder:printcolumn:name="TLS-Until",type=string,priority=1,JSONPath=`.status.tls.notAfter`
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
