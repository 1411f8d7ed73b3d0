package v1alpha1

import "k8s.io/utils/ptr"

// Defaults that the schema markers also apply. The reconciler applies them in Go too, so an object
// stored before a default existed, or written without the API server's defaulting (a unit test, a
// client that bypasses it), reconciles the same way.
const (
	DefaultMaxMemoryPolicy MaxMemoryPolicy = "allkeys-lru"
	DefaultMetricsPort     int32           = 9121
	DefaultAuthKey                         = "password"
	DefaultReplicas        int32           = 1
	// DefaultFailoverAfterSeconds is how long a primary may be lost before a replica replaces it.
	DefaultFailoverAfterSeconds int32 = 10
)

// SetDefaults fills the fields the schema defaults, and names the generated auth Secret. It only
// fills what is empty, so applying it twice changes nothing.
func (c *CacheInstance) SetDefaults() {
	s := &c.Spec
	if s.IOThreads.Policy == "" {
		s.IOThreads.Policy = IOThreadsAuto
	}
	if s.Cores == 0 {
		s.Cores = 1
	}
	if s.CPUMode == "" {
		s.CPUMode = CPUExclusive
	}
	if s.UpgradePolicy == "" {
		s.UpgradePolicy = UpgradeManual
	}
	if s.MaxMemoryPolicy == "" {
		s.MaxMemoryPolicy = DefaultMaxMemoryPolicy
	}
	if s.Replicas == nil {
		s.Replicas = ptr.To(DefaultReplicas)
	}
	if s.Replication.FailoverAfterSeconds == 0 {
		s.Replication.FailoverAfterSeconds = DefaultFailoverAfterSeconds
	}
	if s.Metrics.Port == 0 {
		s.Metrics.Port = DefaultMetricsPort
	}
	if s.Benchmark.ValidateOnChange == nil {
		s.Benchmark.ValidateOnChange = ptr.To(true)
	}
	s.Benchmark.Workload.SetDefaults()
	s.Persistence.SetDefaults()
	if s.Backup != nil {
		s.Backup.SetDefaults()
	}
	s.NetworkPolicy.SetDefaults()
	if s.TLS != nil {
		s.TLS.SetDefaults()
	}
	if s.Auth != nil {
		if s.Auth.Key == "" {
			s.Auth.Key = DefaultAuthKey
		}
		if s.Auth.ExistingSecret == "" {
			s.Auth.ExistingSecret = c.Name + "-auth"
		}
	}
}

// ShardCount is spec.shards, 1 when unset.
func (c *CacheInstance) ShardCount() int32 {
	if c.Spec.Shards == nil {
		return 1
	}
	return *c.Spec.Shards
}
