package v1alpha1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BackupStorage is an S3-compatible bucket where an instance's backups live: AWS S3, MinIO,
// Ceph RGW, SeaweedFS, versitygw, GCS's S3 API. The backup and restore containers reach it with
// minio-go; nothing of it is stored in a ConfigMap or in the status but the endpoint, bucket and
// keys of the objects.
type BackupStorage struct {
	// Endpoint is the storage's URL: "https://s3.eu-west-1.amazonaws.com",
	// "http://minio.storage.svc:9000". https unless the storage is inside the cluster.
	// +kubebuilder:validation:Pattern=`^https?://[^\s/?#]+/?$`
	// +kubebuilder:validation:MaxLength=253
	Endpoint string `json:"endpoint"`
	// Bucket holds the backups; it must exist.
	// +kubebuilder:validation:Pattern=`^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$`
	Bucket string `json:"bucket"`
	// Prefix is the folder of this instance's backups in the bucket: each backup is
	// <prefix>/<name>.rdb.zst and its manifest <prefix>/<name>.json. By default
	// <namespace>/<instance>. Retention applies to what is under it.
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9!_.*'()/-]*$`
	// +kubebuilder:validation:MaxLength=400
	// +optional
	Prefix string `json:"prefix,omitempty"`
	// Region of the bucket, when the storage needs one.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	Region string `json:"region,omitempty"`
	// PathStyle addresses the bucket as a path (http://host/bucket/key), as most self-hosted
	// storage wants; otherwise as a host name (http://bucket.host/key), as AWS prefers.
	// +optional
	PathStyle bool `json:"pathStyle,omitempty"`
	// CredentialsSecret names a Secret in the instance's namespace with the keys
	// AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (and, optionally, AWS_SESSION_TOKEN). They reach
	// the backup and restore containers as environment from the Secret, never through the operator.
	// Without it the containers use their pod's identity (serviceAccountName): EKS IRSA or Pod
	// Identity, or an instance profile.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	CredentialsSecret string `json:"credentialsSecret,omitempty"`
	// ServiceAccountName runs the backup Jobs (and, with spec.bootstrap, the server pods, whose
	// init container restores) under this ServiceAccount, for workload identity. By default they
	// run under the namespace's default account with no API token mounted.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`
	// CA is a Secret key holding a PEM bundle to trust for the endpoint: a private CA.
	// +optional
	CA *corev1.SecretKeySelector `json:"ca,omitempty"`
	// Encryption asks the storage to encrypt the objects it stores (server-side encryption).
	// +optional
	Encryption *BackupEncryption `json:"encryption,omitempty"`
}

// BackupEncryption is server-side encryption, passed through to the storage.
// +kubebuilder:validation:XValidation:rule="self.type == 'aws:kms' || !has(self.kmsKeyID)",message="encryption.kmsKeyID needs encryption.type aws:kms"
type BackupEncryption struct {
	// Type is AES256 (keys the storage manages) or aws:kms.
	// +kubebuilder:validation:Enum=AES256;"aws:kms"
	Type string `json:"type"`
	// KMSKeyID is the KMS key for aws:kms; without it the storage's default key.
	// +kubebuilder:validation:MaxLength=2048
	// +optional
	KMSKeyID string `json:"kmsKeyID,omitempty"`
}

// BackupTarget says which pod a backup reads from.
// +kubebuilder:validation:Enum=PreferReplica;Primary
type BackupTarget string

const (
	// BackupPreferReplica reads from a ready replica when the instance has one, so that the
	// primary does no extra work; from the primary otherwise.
	BackupPreferReplica BackupTarget = "PreferReplica"
	// BackupPrimary reads from the primary: the snapshot holds every acknowledged write up to its
	// start.
	BackupPrimary BackupTarget = "Primary"
)

// BackupRetention says which complete backups to keep. It is applied after a successful backup
// only, to the storage (by the backup Job) and to the CacheBackup objects of the instance (by the
// operator), and it never deletes the newest complete backup.
type BackupRetention struct {
	// Keep is how many complete backups to keep; 0 keeps any number.
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10000
	// +optional
	Keep int32 `json:"keep,omitempty"`
	// MaxAge deletes complete backups older than this ("168h" for a week).
	// +optional
	MaxAge *metav1.Duration `json:"maxAge,omitempty"`
}

// BackupSpec is where an instance's backups go, and when they are taken.
// +kubebuilder:validation:XValidation:rule="!has(self.retention) || !has(self.retention.maxAge) || duration(self.retention.maxAge) >= duration('1h')",message="backup.retention.maxAge must be at least 1h"
type BackupSpec struct {
	// Storage is the bucket.
	Storage BackupStorage `json:"storage"`
	// Schedule takes a backup on a schedule in cron syntax, as a CronJob's: "0 3 * * *" every day
	// at 03:00 UTC, "@hourly", "@every 6h"; a "CRON_TZ=Europe/Paris " prefix chooses the time zone.
	// Each run is a CacheBackup named <instance>-<time>. A time missed while the operator was down
	// is caught up once. A backup on demand: a CacheBackup object, or the annotation
	// cache.iocache.dev/backup-request set to a new value.
	// +kubebuilder:validation:MaxLength=200
	// +optional
	Schedule string `json:"schedule,omitempty"`
	// Suspend stops the schedule; backups on demand still run.
	// +optional
	Suspend bool `json:"suspend,omitempty"`
	// Retention of complete backups.
	// +optional
	Retention BackupRetention `json:"retention,omitempty"`
	// Target says which pod scheduled backups read from.
	// +kubebuilder:default=PreferReplica
	// +optional
	Target BackupTarget `json:"target,omitempty"`
	// Resources of the backup container. By default it asks for a tenth of a core and 128Mi, and
	// may use up to 2 cores (compression) and 512Mi: it streams, so its memory does not grow with
	// the dataset.
	// +optional
	Resources *corev1.ResourceRequirements `json:"resources,omitempty"`
}

// AnnotationBackupRequest asks for a backup on demand: the operator creates a CacheBackup each
// time the annotation's value changes, and records the value in status.backups.lastRequest.
const AnnotationBackupRequest = "cache.iocache.dev/backup-request"

// BootstrapSpec is where a new instance's data comes from. It is set when the instance is
// created and never changes afterwards.
// +kubebuilder:validation:XValidation:rule="has(self.backup)",message="bootstrap needs backup"
type BootstrapSpec struct {
	// Backup restores a backup: each pod's init container downloads it, checks it against its
	// manifest (SHA-256, sizes, key count, a valid RDB) and puts it in place as dump.rdb before the
	// server starts, so a pod is ready only with the data loaded; the replicas then sync from the
	// primary as usual. A backup that does not match its manifest stops the pod with the reason in
	// status.bootstrap, and nothing is served. Only while the instance is bootstrapping: a pod
	// replaced later comes back as any pod does, from its volume or its primary.
	// +optional
	Backup *BootstrapBackup `json:"backup,omitempty"`
}

// BootstrapBackup names a backup in a bucket: one of this instance's namespace or any other's.
type BootstrapBackup struct {
	// Storage is the bucket, as the instance that took the backup names it (its prefix included).
	// The credentials Secret must be in this instance's namespace.
	Storage BackupStorage `json:"storage"`
	// Name is the backup's name: the CacheBackup's status.backupName.
	// +kubebuilder:validation:Pattern=`^[A-Za-z0-9][A-Za-z0-9._-]{0,252}$`
	Name string `json:"name"`
}

// BackupTrigger says what started a backup.
// +kubebuilder:validation:Enum=Manual;Schedule;Request
type BackupTrigger string

const (
	// BackupManual: a CacheBackup someone created.
	BackupManual BackupTrigger = "Manual"
	// BackupOnSchedule: spec.backup.schedule's time came.
	BackupOnSchedule BackupTrigger = "Schedule"
	// BackupOnRequest: the backup-request annotation changed.
	BackupOnRequest BackupTrigger = "Request"
)

// BackupsStatus is what the operator knows of an instance's backups.
type BackupsStatus struct {
	// LastSuccessful is the newest backup that completed.
	// +optional
	LastSuccessful *BackupRef `json:"lastSuccessful,omitempty"`
	// LastFailed is the newest backup that failed.
	// +optional
	LastFailed *BackupRef `json:"lastFailed,omitempty"`
	// LastRequest is the value of the backup-request annotation the operator last acted on.
	// +optional
	LastRequest string `json:"lastRequest,omitempty"`
	// ScheduleSince is when the current schedule began: the age of the last backup counts from it
	// until one succeeds.
	// +optional
	ScheduleSince *metav1.Time `json:"scheduleSince,omitempty"`
	// LastScheduleTime is when the schedule last created a backup.
	// +optional
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`
	// NextScheduleTime is when it creates the next one.
	// +optional
	NextScheduleTime *metav1.Time `json:"nextScheduleTime,omitempty"`
}

// BackupRef points at one CacheBackup.
type BackupRef struct {
	// Name of the CacheBackup.
	Name string `json:"name"`
	// Time it completed or failed.
	Time metav1.Time `json:"time"`
	// SizeBytes stored, for a completed backup.
	// +optional
	SizeBytes int64 `json:"sizeBytes,omitempty"`
	// Keys in it, for a completed backup.
	// +optional
	Keys int64 `json:"keys,omitempty"`
}

// BootstrapPhase is where a bootstrap is.
type BootstrapPhase string

const (
	// BootstrapRestoring: the pods are loading the backup.
	BootstrapRestoring BootstrapPhase = "Restoring"
	// BootstrapRestored: a pod serves the backup's data; the bootstrap is over.
	BootstrapRestored BootstrapPhase = "Restored"
	// BootstrapFailed: the backup could not be restored (missing, not matching its manifest, the
	// storage refused); the message says why. The pods keep retrying and serve nothing.
	BootstrapFailed BootstrapPhase = "Failed"
)

// BootstrapStatus is how the instance's bootstrap went.
type BootstrapStatus struct {
	// Backup is the name of the backup restored.
	Backup string `json:"backup"`
	// Phase is Restoring, Restored or Failed.
	Phase BootstrapPhase `json:"phase"`
	// Message says what the restore reported: the keys loaded, or why it failed.
	// +optional
	Message string `json:"message,omitempty"`
	// CompletionTime is when a pod first served the restored data.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
}
