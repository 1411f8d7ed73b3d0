package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// ReplicationSpec says when the operator replaces a lost primary.
type ReplicationSpec struct {
	// FailoverAfterSeconds is how long the primary's pod may be gone or not ready before the
	// operator promotes the replica with the highest replication offset. A primary that restarted
	// (and so came back as a replica without a primary, empty unless it loaded a snapshot) is
	// replaced at once.
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=3600
	// +optional
	FailoverAfterSeconds int32 `json:"failoverAfterSeconds,omitempty"`
}

// ReplicationRole is a server pod's role; the operator writes it on the pod as the
// cache.iocache.dev/role label, which the Services select.
type ReplicationRole string

const (
	// RolePrimary takes writes; the client Service selects it.
	RolePrimary ReplicationRole = "primary"
	// RoleReplica follows the primary; the <name>-replicas Service selects it.
	RoleReplica ReplicationRole = "replica"
)

// ReplicationStatus is the operator's record of a replicated instance. The primary it names is
// the decision the operator acts on: it is written before the operator promotes a pod, so that an
// operator that restarts mid-failover finishes the same failover.
type ReplicationStatus struct {
	// Primary names the pod that is, or is being made, the primary.
	// +optional
	Primary string `json:"primary,omitempty"`
	// PrimaryUnavailableSince is when the operator first found the primary's pod gone or not
	// ready; a failover follows replication.failoverAfterSeconds later.
	// +optional
	PrimaryUnavailableSince *metav1.Time `json:"primaryUnavailableSince,omitempty"`
	// Pods is each ready server pod's role and replication progress, as its server reports it.
	// +listType=map
	// +listMapKey=name
	// +optional
	Pods []ReplicationPodStatus `json:"pods,omitempty"`
	// Failovers counts the primaries the operator replaced: failovers and switchovers.
	// +optional
	Failovers int32 `json:"failovers,omitempty"`
	// LastFailover is the last change of primary and why.
	// +optional
	LastFailover *FailoverRecord `json:"lastFailover,omitempty"`
}

// ReplicationPodStatus is one server pod's role and replication progress.
type ReplicationPodStatus struct {
	// Name of the pod.
	Name string `json:"name"`
	// Role the server reports: primary or replica.
	// +optional
	Role ReplicationRole `json:"role,omitempty"`
	// Offset is the server's replication offset: for the primary what it has sent, for a replica
	// what it has applied.
	// +optional
	Offset int64 `json:"offset,omitempty"`
	// LagBytes is how far a replica's offset is behind the primary's.
	// +optional
	LagBytes int64 `json:"lagBytes,omitempty"`
	// Link is a replica's link to the primary: up, or down (connecting, syncing, or not pointed at
	// the primary yet).
	// +optional
	Link string `json:"link,omitempty"`
}

// FailoverRecord is one change of primary.
type FailoverRecord struct {
	// Time the operator decided it.
	Time metav1.Time `json:"time"`
	// From is the pod that was the primary ("" for the first choice).
	// +optional
	From string `json:"from,omitempty"`
	// To is the pod promoted.
	To string `json:"to"`
	// Reason: Initial, PrimaryUnavailable (gone or not ready past failoverAfterSeconds),
	// PrimaryRestarted (it came back as a replica without a primary), Switchover (a rollout or a
	// scale-down moves the primary off a pod the operator is about to replace or remove).
	Reason string `json:"reason"`
	// Offset is the promoted pod's replication offset when it was chosen.
	// +optional
	Offset int64 `json:"offset,omitempty"`
}
