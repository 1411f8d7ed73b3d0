// Package v1alpha1 holds the cache.iocache.dev/v1alpha1 API: CacheInstance, a Redis-compatible cache
// whose I/O threads and CPU layout the operator resolves, and CacheBenchmark, one measured load run
// (or a sweep over io-threads settings) against an instance.
//
// +kubebuilder:object:generate=true
// +groupName=cache.iocache.dev
package v1alpha1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the group and version used to register these objects.
	GroupVersion = schema.GroupVersion{Group: "cache.iocache.dev", Version: "v1alpha1"}

	// SchemeBuilder adds the types of this group-version to a scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the types of this group-version to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
