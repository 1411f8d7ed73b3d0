package v1alpha1

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Workload defaults the schema markers also apply; they are iocache-bench's own defaults, with a
// duration and warmup added because a Job measures for a time rather than a request count.
const (
	DefaultClients  int32  = 50
	DefaultThreads  int32  = 2
	DefaultPipeline int32  = 1
	DefaultDataSize int32  = 256
	DefaultKeyspace int64  = 100000
	DefaultRatio    string = "1:10"
	DefaultDuration        = 30 * time.Second
	DefaultWarmup          = 5 * time.Second
)

// SetDefaults fills the workload fields the schema defaults; it only fills what is empty.
func (w *WorkloadSpec) SetDefaults() {
	if w.Clients == 0 {
		w.Clients = DefaultClients
	}
	if w.Threads == 0 {
		w.Threads = DefaultThreads
	}
	if w.Pipeline == 0 {
		w.Pipeline = DefaultPipeline
	}
	if w.DataSize == 0 {
		w.DataSize = DefaultDataSize
	}
	if w.Keyspace == 0 {
		w.Keyspace = DefaultKeyspace
	}
	if w.Ratio == "" {
		w.Ratio = DefaultRatio
	}
	if w.Duration == nil {
		w.Duration = &metav1.Duration{Duration: DefaultDuration}
	}
	if w.Warmup == nil {
		w.Warmup = &metav1.Duration{Duration: DefaultWarmup}
	}
}

// SetDefaults fills the fields the schema defaults.
func (b *CacheBenchmark) SetDefaults() {
	if b.Spec.Purpose == "" {
		b.Spec.Purpose = PurposeManual
	}
	b.Spec.Workload.SetDefaults()
}
