package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// PersistenceMode is None, RDB, AOF or RDBAndAOF.
// +kubebuilder:validation:Enum=None;RDB;AOF;RDBAndAOF
type PersistenceMode string

const (
	// PersistenceNone keeps the data in memory only: /data is an emptyDir and the server takes no
	// snapshots (save ""), so a replaced pod starts empty. For caches whose data can be rebuilt.
	PersistenceNone PersistenceMode = "None"
	// PersistenceRDB keeps Redis-format RDB snapshots on a PersistentVolumeClaim per pod: taken at
	// the save points, and on every shutdown (the server saves on SIGTERM), and loaded at start. A
	// pod the operator or the cluster replaces (a change that needs a restart, an upgrade, a node
	// drain) comes back with the data it had when it stopped.
	PersistenceRDB PersistenceMode = "RDB"
	// PersistenceAOF keeps Redis 7's append-only file on the claim: every write is logged
	// (appendfsync says how often it reaches the disk), so a crash or an OOM kill, not only a
	// shutdown, loses at most the last second (everysec) or nothing acknowledged (always). The
	// server rewrites the log in the background; no RDB snapshots besides the log's base.
	PersistenceAOF PersistenceMode = "AOF"
	// PersistenceRDBAndAOF is both: the append-only file, and RDB snapshots at the save points
	// (for backups and copies).
	PersistenceRDBAndAOF PersistenceMode = "RDBAndAOF"
)

// AppendFsync is Redis's appendfsync: always, everysec or no.
// +kubebuilder:validation:Enum=always;everysec;no
type AppendFsync string

// Persistent is true for every mode that keeps data on a volume claim.
func (m PersistenceMode) Persistent() bool { return m != "" && m != PersistenceNone }

// Snapshots is true for the modes that take RDB snapshots at the save points.
func (m PersistenceMode) Snapshots() bool { return m == PersistenceRDB || m == PersistenceRDBAndAOF }

// AppendOnly is true for the modes that keep an append-only file.
func (m PersistenceMode) AppendOnly() bool { return m == PersistenceAOF || m == PersistenceRDBAndAOF }

// VolumeClaimRetention is Retain or Delete.
// +kubebuilder:validation:Enum=Retain;Delete
type VolumeClaimRetention string

const (
	// RetainVolumeClaims keeps the claims, and the snapshots on them, when the instance is deleted:
	// an instance created again under the same name starts from them.
	RetainVolumeClaims VolumeClaimRetention = "Retain"
	// DeleteVolumeClaims deletes the claims with the instance.
	DeleteVolumeClaims VolumeClaimRetention = "Delete"
)

// DefaultSavePoints are redis-server's own save points: after 3600 s if one key changed, 300 s if
// 100 did, 60 s if 10000 did.
const DefaultSavePoints = "3600 1 300 100 60 10000"

// PersistenceSpec says whether and where the instance keeps its data across pod restarts. Between
// RDB, AOF and RDBAndAOF the mode changes live; turning persistence on or off recreates the
// StatefulSet (its volume claims are fixed when it is created) around the running pods, which are
// then replaced warm, their data handed over by replication. A persistent instance's
// storageClassName cannot change and its size can only grow (the claims are expanded in place);
// the save points and the retention can change.
// +kubebuilder:validation:XValidation:rule="self.mode != 'None' || (!has(self.size) && !has(self.storageClassName))",message="persistence.size and persistence.storageClassName need a persistence.mode other than None"
// +kubebuilder:validation:XValidation:rule="self.mode == 'None' || has(self.size)",message="persistence.mode RDB, AOF and RDBAndAOF need persistence.size: the volume for the data, such as 2Gi (at least the memory, for a full snapshot and the one being written)"
// +kubebuilder:validation:XValidation:rule="(self.mode == 'None') != (oldSelf.mode == 'None') || (has(self.size) == has(oldSelf.size) && (!has(self.size) || quantity(string(self.size)).compareTo(quantity(string(oldSelf.size))) >= 0))",message="persistence.size can only grow: the operator expands the data claims in place where the StorageClass allows it, and no volume can shrink"
// +kubebuilder:validation:XValidation:rule="self.mode != 'None' || !has(self.snapshotSchedule)",message="persistence.snapshotSchedule needs a persistence.mode other than None: snapshots are written to the instance's volume claims"
// +kubebuilder:validation:XValidation:rule="(self.mode == 'None') != (oldSelf.mode == 'None') || (has(self.storageClassName) == has(oldSelf.storageClassName) && (!has(self.storageClassName) || self.storageClassName == oldSelf.storageClassName))",message="persistence.storageClassName cannot change on an existing instance: a StatefulSet's volume claims are fixed when it is created (it may be chosen anew when persistence is turned on)"
type PersistenceSpec struct {
	// Mode is None (the default: memory only, a replaced pod starts empty), RDB (snapshots on a
	// PersistentVolumeClaim, taken at the save points and at every shutdown, loaded at start), AOF
	// (Redis 7's append-only file on the claim: a crash loses at most what appendfsync allows) or
	// RDBAndAOF (both). Between RDB, AOF and RDBAndAOF it changes live (CONFIG SET appendonly, save).
	// From None to a persistent mode, or back, the StatefulSet is recreated with or without volume
	// claims while its pods keep running, and each pod is then replaced warm: a replica (or, for a
	// single pod, a temporary surge pod) takes the data over first, so the data is kept.
	// +kubebuilder:default=None
	// +optional
	Mode PersistenceMode `json:"mode,omitempty"`

	// Size of each pod's volume claim, for the persistent modes. A snapshot takes less room than the
	// data takes in memory; while one is written the previous one stays, so give at least the
	// memory. It can grow later: the operator expands the claims under the running pods where the
	// StorageClass allows it (allowVolumeExpansion).
	// +optional
	Size *resource.Quantity `json:"size,omitempty"`

	// StorageClassName of the volume claims; the cluster's default class without it.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	StorageClassName *string `json:"storageClassName,omitempty"`

	// SavePoints are Redis's save points for mode RDB, "<seconds> <changes>" pairs: a snapshot is taken when at
	// least <changes> keys changed within <seconds>. Redis's own by default. The server also saves
	// at every shutdown, whatever they say. Applied to the running pods without a restart.
	// +kubebuilder:default="3600 1 300 100 60 10000"
	// +kubebuilder:validation:Pattern=`^[1-9][0-9]{0,8} [0-9]{1,12}( [1-9][0-9]{0,8} [0-9]{1,12}){0,15}$`
	// +kubebuilder:validation:MaxLength=400
	// +optional
	SavePoints string `json:"savePoints,omitempty"`

	// AppendFsync is Redis's appendfsync for modes AOF and RDBAndAOF: everysec (the default: the log
	// reaches the disk every second, a crash loses at most about a second), always (a write is
	// acknowledged once it is on the disk; writes from many clients share each flush) or no (the
	// kernel decides). Applied to the running pods without a restart.
	// +kubebuilder:default=everysec
	// +optional
	AppendFsync AppendFsync `json:"appendFsync,omitempty"`

	// SnapshotSchedule takes a snapshot (BGSAVE on the primary, dump.rdb on its volume) on a
	// schedule in cron syntax, as a CronJob's: "0 3 * * *" every day at 03:00 UTC, "@hourly",
	// "@every 6h"; a "CRON_TZ=Europe/Paris " prefix chooses the time zone. In addition to the save
	// points, in every persistent mode (with AOF it is a copy besides the log). A missed time (the
	// operator was down) is caught up once. A snapshot on demand: set the annotation
	// cache.iocache.dev/snapshot-request on the instance to a new value, such as the time
	// (`kubectl annotate cacheinstance NAME cache.iocache.dev/snapshot-request="$(date -u +%FT%TZ)" --overwrite`).
	// status.persistence reports both, and the last save of any kind.
	// +kubebuilder:validation:MaxLength=200
	// +optional
	SnapshotSchedule string `json:"snapshotSchedule,omitempty"`

	// WhenDeleted says what happens to the volume claims when the instance is deleted: Retain (the
	// default: the snapshots stay, and an instance created again under the same name starts from
	// them) or Delete.
	// +kubebuilder:default=Retain
	// +optional
	WhenDeleted VolumeClaimRetention `json:"whenDeleted,omitempty"`
}

// AnnotationSnapshotRequest asks for a snapshot on demand: the operator takes one each time the
// annotation's value changes, and records the value in status.persistence.lastRequest.
const AnnotationSnapshotRequest = "cache.iocache.dev/snapshot-request"

// SnapshotTrigger says what asked for a snapshot the operator took: Schedule or Request.
type SnapshotTrigger string

const (
	// SnapshotOnSchedule: persistence.snapshotSchedule's time came.
	SnapshotOnSchedule SnapshotTrigger = "Schedule"
	// SnapshotOnRequest: the snapshot-request annotation changed.
	SnapshotOnRequest SnapshotTrigger = "Request"
)

// SnapshotResult is Running, Succeeded or Failed.
type SnapshotResult string

const (
	// SnapshotRunning: the server is writing it.
	SnapshotRunning SnapshotResult = "Running"
	// SnapshotSucceeded: the file is on the volume.
	SnapshotSucceeded SnapshotResult = "Succeeded"
	// SnapshotFailed: the save failed or was cut short (the message says why); the previous
	// snapshot is intact.
	SnapshotFailed SnapshotResult = "Failed"
)

// PersistenceStatus is what the operator knows of the instance's snapshots.
type PersistenceStatus struct {
	// LastSave is the last snapshot the primary wrote, whatever asked for it (a save point, the
	// schedule, a request), as its server reports it; refreshed every few minutes.
	// +optional
	LastSave *SavedSnapshot `json:"lastSave,omitempty"`
	// LastSnapshot is the last snapshot the operator took, on schedule or on request, that ended,
	// and how it went.
	// +optional
	LastSnapshot *OperatorSnapshot `json:"lastSnapshot,omitempty"`
	// RunningSnapshot is the snapshot the operator started that is being written now.
	// +optional
	RunningSnapshot *OperatorSnapshot `json:"runningSnapshot,omitempty"`
	// LastRequest is the value of the snapshot-request annotation the operator last acted on.
	// +optional
	LastRequest string `json:"lastRequest,omitempty"`
	// LastScheduleTime is when persistence.snapshotSchedule last took a snapshot.
	// +optional
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`
	// NextScheduleTime is when persistence.snapshotSchedule takes the next one.
	// +optional
	NextScheduleTime *metav1.Time `json:"nextScheduleTime,omitempty"`
}

// SavedSnapshot is a snapshot on a pod's volume.
type SavedSnapshot struct {
	// Pod whose volume holds it.
	Pod string `json:"pod"`
	// Time is the point in time the snapshot holds: when the save began (iocache's snapshot is a
	// cut at that instant, while clients go on writing).
	Time metav1.Time `json:"time"`
	// SizeBytes is the size of the file.
	// +optional
	SizeBytes int64 `json:"sizeBytes,omitempty"`
	// DurationMilliseconds is how long writing it took.
	// +optional
	DurationMilliseconds int64 `json:"durationMilliseconds,omitempty"`
}

// OperatorSnapshot is a snapshot the operator asked a server for.
type OperatorSnapshot struct {
	// Trigger is Schedule or Request.
	Trigger SnapshotTrigger `json:"trigger"`
	// Request is the snapshot-request annotation's value, for a Request.
	// +optional
	Request string `json:"request,omitempty"`
	// Pod that takes it: the primary.
	Pod string `json:"pod"`
	// PodUID tells a pod replaced mid-save from the one that started it.
	PodUID string `json:"podUID"`
	// SavesBefore is the server's count of saves (INFO persistence rdb_saves) before it began: one
	// more means it succeeded.
	SavesBefore int64 `json:"savesBefore"`
	// StartTime is when the operator started it.
	StartTime metav1.Time `json:"startTime"`
	// CompletionTime is when the operator saw it end.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	// Result is Running, Succeeded or Failed.
	Result SnapshotResult `json:"result"`
	// Message says why it failed, or what it saved.
	// +optional
	Message string `json:"message,omitempty"`
	// Saved is the snapshot written, once it succeeded.
	// +optional
	Saved *SavedSnapshot `json:"saved,omitempty"`
}

// SetDefaults fills what the schema defaults.
func (p *PersistenceSpec) SetDefaults() {
	if p.Mode == "" {
		p.Mode = PersistenceNone
	}
	if p.SavePoints == "" {
		p.SavePoints = DefaultSavePoints
	}
	if p.AppendFsync == "" {
		p.AppendFsync = "everysec"
	}
	if p.WhenDeleted == "" {
		p.WhenDeleted = RetainVolumeClaims
	}
}
