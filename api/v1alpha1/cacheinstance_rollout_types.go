package v1alpha1

// RolloutSpec says what the operator may do when a change needs new pods.
type RolloutSpec struct {
	// AllowColdRestart lets the operator replace the pod of an instance whose data would not
	// survive it, when no warm way is possible: the new pod starts empty (a miss storm on whatever
	// the cache fronts). A single pod without persistence is replaced warm by a surge: a temporary
	// pod <instance>-surge syncs as its replica and takes the writes over while the pod is
	// replaced, then hands them back; that needs room for one more pod of the same size. Without
	// this field (the default) a replacement that cannot be warm waits: the Rollout condition is
	// False with reason WaitingForRoom (the surge pod cannot be scheduled) or WaitingForConsent
	// (the operator cannot reach the running server with the spec's auth or TLS, as when auth or
	// tls is added), the instance is Degraded with the same reason, the pod keeps serving with its
	// data, and the change is made once there is room, you set this field, or you give the
	// instance a second pod (spec.replicas: 2). Changes the server takes live, memory resizes in
	// place, replicated instances (switchover) and persistent ones (the pod saves at shutdown and
	// loads at start) never need it.
	// +optional
	AllowColdRestart bool `json:"allowColdRestart,omitempty"`
}

// Reasons of the Rollout condition.
const (
	// RolloutLive: no pod needs replacing; changes reach the running pods (CONFIG SET, memory
	// resized in place).
	RolloutLive = "Live"
	// RolloutWarm: pods are replaced and the data survives (a switchover to an updated replica,
	// persistence, or for a single pod without persistence the surge: a temporary replica takes
	// the writes over while the pod is replaced, and hands them back).
	RolloutWarm = "Warm"
	// RolloutNoDataToKeep: the pods to replace hold no data (they never started: Pending, or
	// their server is not running).
	RolloutNoDataToKeep = "NoDataToKeep"
	// RolloutColdRestart: the pod is replaced and starts empty, as spec.rollout.allowColdRestart
	// allows.
	RolloutColdRestart = "ColdRestart"
	// RolloutWaitingForConsent: a change needs a new pod that would start empty, no warm way is
	// possible (the operator cannot reach the running server with the spec's auth or TLS to hand its
	// data over), and spec.rollout.allowColdRestart is not set: nothing is replaced.
	RolloutWaitingForConsent = "WaitingForConsent"
	// RolloutWaitingForRoom: the temporary pod that would carry the data through the replacement
	// (the surge) cannot be scheduled, and spec.rollout.allowColdRestart is not set: nothing is
	// replaced until the cluster has room for one more pod of the instance's size.
	RolloutWaitingForRoom = "WaitingForRoom"
)
