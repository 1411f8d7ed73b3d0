package v1alpha1

import (
	"k8s.io/apimachinery/pkg/api/resource"
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

// PersistenceSpec says whether and where the instance keeps its data across pod restarts. A
// StatefulSet's volume claims are fixed when it is created, so mode and storageClassName cannot
// change on an existing instance, and size can only grow (the claims are expanded in place); the
// save points and the retention can change.
// +kubebuilder:validation:XValidation:rule="(self.mode == 'None') == (oldSelf.mode == 'None')",message="persistence.mode cannot change between None and a persistent mode on an existing instance: a StatefulSet's volume claims are fixed when it is created. Create a new instance with the mode you want and move the data (DUMP/RESTORE, or its dump.rdb); between RDB, AOF and RDBAndAOF it changes live"
// +kubebuilder:validation:XValidation:rule="self.mode != 'None' || (!has(self.size) && !has(self.storageClassName))",message="persistence.size and persistence.storageClassName need a persistence.mode other than None"
// +kubebuilder:validation:XValidation:rule="self.mode == 'None' || has(self.size)",message="persistence.mode RDB, AOF and RDBAndAOF need persistence.size: the volume for the data, such as 2Gi (at least the memory, for a full snapshot and the one being written)"
// +kubebuilder:validation:XValidation:rule="has(self.size) == has(oldSelf.size) && (!has(self.size) || quantity(string(self.size)).compareTo(quantity(string(oldSelf.size))) >= 0)",message="persistence.size can only grow: the operator expands the data claims in place where the StorageClass allows it, and no volume can shrink"
// +kubebuilder:validation:XValidation:rule="has(self.storageClassName) == has(oldSelf.storageClassName) && (!has(self.storageClassName) || self.storageClassName == oldSelf.storageClassName)",message="persistence.storageClassName cannot change on an existing instance: a StatefulSet's volume claims are fixed when it is created"
type PersistenceSpec struct {
	// Mode is None (the default: memory only, a replaced pod starts empty), RDB (snapshots on a
	// PersistentVolumeClaim, taken at the save points and at every shutdown, loaded at start), AOF
	// (Redis 7's append-only file on the claim: a crash loses at most what appendfsync allows) or
	// RDBAndAOF (both). Between RDB, AOF and RDBAndAOF it changes live (CONFIG SET appendonly, save).
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

	// WhenDeleted says what happens to the volume claims when the instance is deleted: Retain (the
	// default: the snapshots stay, and an instance created again under the same name starts from
	// them) or Delete.
	// +kubebuilder:default=Retain
	// +optional
	WhenDeleted VolumeClaimRetention `json:"whenDeleted,omitempty"`
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
