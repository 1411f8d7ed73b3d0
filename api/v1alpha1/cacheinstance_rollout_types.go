package v1alpha1

// RolloutSpec says what the operator may do when a change needs new pods.
type RolloutSpec struct {
	// AllowColdRestart lets the operator replace the pod of an instance whose data would not
	// survive it: no persistence and one pod, so the new pod starts empty (a miss storm on whatever
	// the cache fronts). Without it (the default) such a change waits: the Rollout condition is
	// False with reason WaitingForConsent, the instance is Degraded with the same reason, the pod
	// keeps serving with its data, and the change is made once you set this field or give the
	// instance a second pod (spec.replicas: 2, whose replica takes over with a switchover). Changes
	// the server takes live, memory resizes in place, replicated instances (switchover) and
	// persistent ones (the pod saves at shutdown and loads at start) never need it.
	// +optional
	AllowColdRestart bool `json:"allowColdRestart,omitempty"`
}

// Reasons of the Rollout condition.
const (
	// RolloutLive: no pod needs replacing; changes reach the running pods (CONFIG SET, memory
	// resized in place).
	RolloutLive = "Live"
	// RolloutWarm: pods are replaced and the data survives (a switchover to an updated replica,
	// or persistence).
	RolloutWarm = "Warm"
	// RolloutNoDataToKeep: the pods to replace hold no data (they never started: Pending, or
	// their server is not running).
	RolloutNoDataToKeep = "NoDataToKeep"
	// RolloutColdRestart: the pod is replaced and starts empty, as spec.rollout.allowColdRestart
	// allows.
	RolloutColdRestart = "ColdRestart"
	// RolloutWaitingForConsent: a change needs a new pod that would start empty, and
	// spec.rollout.allowColdRestart is not set: nothing is replaced.
	RolloutWaitingForConsent = "WaitingForConsent"
)
