package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CacheBackupSpec is one backup of an instance, to the storage its spec.backup names.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="a CacheBackup's spec is immutable: create a new CacheBackup to back up again"
type CacheBackupSpec struct {
	// InstanceRef names the CacheInstance in the same namespace; it must have spec.backup.
	InstanceRef corev1.LocalObjectReference `json:"instanceRef"`
	// Target says which pod the snapshot is read from.
	// +kubebuilder:default=PreferReplica
	// +optional
	Target BackupTarget `json:"target,omitempty"`
	// Trigger says what asked for it; users create Manual backups.
	// +kubebuilder:default=Manual
	// +optional
	Trigger BackupTrigger `json:"trigger,omitempty"`
}

// BackupPhase is where a CacheBackup is in its life.
type BackupPhase string

const (
	// BackupPending: waiting for the instance (its spec.backup, its pods).
	BackupPending BackupPhase = "Pending"
	// BackupRunning: the Job streams the snapshot to the storage (and retries with backoff).
	BackupRunning BackupPhase = "Running"
	// BackupCompleted: the data and its manifest are stored; the status has its figures.
	BackupCompleted BackupPhase = "Completed"
	// BackupFailed: every attempt failed; the Complete condition has the storage's or server's
	// own error. Nothing is stored under the backup's name.
	BackupFailed BackupPhase = "Failed"
)

// Reasons of a CacheBackup's Complete condition.
const (
	// BackupReasonCompleted: the backup is stored.
	BackupReasonCompleted = "Completed"
	// BackupReasonNoStorage: the instance has no spec.backup.
	BackupReasonNoStorage = "NoStorage"
	// BackupReasonInstanceNotFound: the CacheInstance does not exist.
	BackupReasonInstanceNotFound = "InstanceNotFound"
	// BackupReasonRunning: the Job runs.
	BackupReasonRunning = "Running"
	// BackupReasonJobFailed: every attempt of the Job failed; the message quotes the last one.
	BackupReasonJobFailed = "JobFailed"
	// BackupReasonInvalidResult: the Job succeeded but did not report a manifest.
	BackupReasonInvalidResult = "InvalidResult"
)

// CacheBackupStatus is what the backup stored, as its manifest says.
type CacheBackupStatus struct {
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Phase is Pending, Running, Completed or Failed.
	// +optional
	Phase BackupPhase `json:"phase,omitempty"`
	// Conditions: Complete is True once stored, False when failed (reason and the error in the
	// message), Unknown while waiting or running.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Job runs the backup.
	// +optional
	Job string `json:"job,omitempty"`
	// BackupName is the backup's name in the storage: restore it with spec.bootstrap.backup.name.
	// +optional
	BackupName string `json:"backupName,omitempty"`
	// Endpoint and Bucket are the storage's; Object the data object's key. The manifest is next to
	// it, <prefix>/<backupName>.json.
	// +optional
	Endpoint string `json:"endpoint,omitempty"`
	// +optional
	Bucket string `json:"bucket,omitempty"`
	// +optional
	Object string `json:"object,omitempty"`
	// Size is SizeBytes for people ("4.8 MiB").
	// +optional
	Size string `json:"size,omitempty"`
	// SizeBytes is the stored (compressed) object's size; RDBSizeBytes the snapshot's.
	// +optional
	SizeBytes int64 `json:"sizeBytes,omitempty"`
	// +optional
	RDBSizeBytes int64 `json:"rdbSizeBytes,omitempty"`
	// Keys is how many keys the snapshot holds.
	// +optional
	Keys int64 `json:"keys,omitempty"`
	// SHA256 of the stored object.
	// +optional
	SHA256 string `json:"sha256,omitempty"`
	// RDBVersion of the snapshot's format.
	// +optional
	RDBVersion int32 `json:"rdbVersion,omitempty"`
	// ServerVersion is the version of the server that took it.
	// +optional
	ServerVersion string `json:"serverVersion,omitempty"`
	// ConfigHash is the instance's config when the backup began.
	// +optional
	ConfigHash string `json:"configHash,omitempty"`
	// Source is the address the snapshot was read from: the replicas Service or the client
	// Service.
	// +optional
	Source string `json:"source,omitempty"`
	// ReplicationID and ReplicationOffset name the snapshot's point in the primary's history.
	// +optional
	ReplicationID string `json:"replicationID,omitempty"`
	// +optional
	ReplicationOffset int64 `json:"replicationOffset,omitempty"`
	// StartTime is when the Job was created; CompletionTime when the backup completed or failed.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// DurationSeconds is how long the snapshot took to stream and store.
	// +optional
	DurationSeconds int64 `json:"durationSeconds,omitempty"`
}

// CacheBackup is one backup of a CacheInstance to object storage: a Job reads a consistent
// snapshot from a replica (or the primary), compresses it and streams it to the instance's
// spec.backup.storage, with a manifest written last.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=cbk,categories=iocache
// +kubebuilder:printcolumn:name="Instance",type=string,JSONPath=`.spec.instanceRef.name`
// +kubebuilder:printcolumn:name="Phase",type=string,JSONPath=`.status.phase`
// +kubebuilder:printcolumn:name="Size",type=string,JSONPath=`.status.size`
// +kubebuilder:printcolumn:name="Keys",type=integer,JSONPath=`.status.keys`
// +kubebuilder:printcolumn:name="Trigger",type=string,JSONPath=`.spec.trigger`,priority=1
// +kubebuilder:printcolumn:name="Backup",type=string,JSONPath=`.status.backupName`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type CacheBackup struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	// +required
	Spec CacheBackupSpec `json:"spec"`
	// +optional
	Status CacheBackupStatus `json:"status,omitempty"`
}

// CacheBackupList is a list of CacheBackups.
// +kubebuilder:object:root=true
type CacheBackupList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []CacheBackup `json:"items"`
}

func init() {
	SchemeBuilder.Register(&CacheBackup{}, &CacheBackupList{})
}
