package controllers

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
)

// Persistence RDB: each pod's /data is a PersistentVolumeClaim from the StatefulSet's claim
// template (data-<instance>-<ordinal>), where the server keeps dump.rdb. The server saves at its
// save points and on SIGTERM, and loads the file at start, so a pod that is replaced comes back
// with its data. The claim template is fixed when the StatefulSet is created; the CRD refuses a
// change of mode or class, or a smaller size, rather than let the operator replace the StatefulSet
// and its data; a larger size expands the claims themselves (cacheinstance_volumes.go).

// dataClaimTemplate is the claim template of the data volume.
func dataClaimTemplate(ci *cachev1alpha1.CacheInstance) *corev1ac.PersistentVolumeClaimApplyConfiguration {
	p := &ci.Spec.Persistence
	spec := corev1ac.PersistentVolumeClaimSpec().
		WithAccessModes(corev1.ReadWriteOnce).
		WithResources(corev1ac.VolumeResourceRequirements().
			WithRequests(corev1.ResourceList{corev1.ResourceStorage: *p.Size}))
	if p.StorageClassName != nil {
		spec.WithStorageClassName(*p.StorageClassName)
	}
	return corev1ac.PersistentVolumeClaim("data", "").
		WithLabels(selectorLabels(ci)).
		WithSpec(spec)
}

// claimRetention maps spec.persistence.whenDeleted onto the StatefulSet's retention policy.
func claimRetention(r cachev1alpha1.VolumeClaimRetention) appsv1.PersistentVolumeClaimRetentionPolicyType {
	if r == cachev1alpha1.DeleteVolumeClaims {
		return appsv1.DeletePersistentVolumeClaimRetentionPolicyType
	}
	return appsv1.RetainPersistentVolumeClaimRetentionPolicyType
}

// Snapshot rates the pod's timings assume: conservative for a network disk, so that a save at
// shutdown finishes before the kubelet's SIGKILL and a load at start before liveness gives up.
const (
	snapshotBytesPerSecond = 50 << 20
	minShutdownGrace       = 30 // seconds, Kubernetes' default
	minLoadSeconds         = 300
)

// shutdownGraceSeconds is how long the kubelet waits after SIGTERM: long enough to write a
// snapshot of maxmemory at snapshotBytesPerSecond.
func shutdownGraceSeconds(ci *cachev1alpha1.CacheInstance) int64 {
	return minShutdownGrace + ci.Spec.Memory.Value()/snapshotBytesPerSecond
}

// loadProbeFailures is the startup probe's failure threshold at a 5-second period: time to read a
// snapshot of the whole memory back at snapshotBytesPerSecond, and at least minLoadSeconds.
func loadProbeFailures(ci *cachev1alpha1.CacheInstance) int32 {
	seconds := max(minLoadSeconds, 2*ci.Spec.Memory.Value()/snapshotBytesPerSecond)
	return int32(min(seconds/5, 1<<20))
}
