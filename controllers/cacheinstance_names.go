package controllers

import (
	"encoding/json"
	"fmt"

	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
)

// Labels the operator puts on everything it creates for an instance. The selector pair is all the
// StatefulSet, Services and PDB select on, because a StatefulSet's selector can never change.
const (
	labelName     = "app.kubernetes.io/name"
	labelInstance = "app.kubernetes.io/instance"
	// LabelManagedBy is ManagedBy on every owned object; the manager's cache keeps only the
	// ConfigMaps that carry it.
	LabelManagedBy = "app.kubernetes.io/managed-by"
	labelComponent = "app.kubernetes.io/component"
	// labelService tells the client Service from the headless one, so a ServiceMonitor selects
	// exactly one of them and each pod is scraped once.
	labelService = "cache.iocache.dev/service"

	appName = "iocache"
	// ManagedBy is the LabelManagedBy value.
	ManagedBy = "iocache-operator"

	// annotationConfigHash on the pod template rolls the pods when the part of the rendered config
	// that the server reads only at start changes (serverConfig.RestartHash).
	annotationConfigHash = "cache.iocache.dev/config-hash"

	// fieldOwner is the server-side apply field manager: the fields it sets belong to the operator,
	// everything else on the objects stays with whoever set it.
	fieldOwner = "iocache-operator"
)

// Names of the objects an instance owns. The CRD limits instance names to 52 characters, so every
// name here stays a valid DNS label.
func configMapName(ci *cachev1alpha1.CacheInstance) string { return ci.Name + "-config" }
func headlessName(ci *cachev1alpha1.CacheInstance) string  { return ci.Name + "-headless" }

// selectorLabels pick an instance's pods.
func selectorLabels(ci *cachev1alpha1.CacheInstance) map[string]string {
	return map[string]string{labelName: appName, labelInstance: ci.Name}
}

// ServerPodLabels pick the server pods of every instance, and no benchmark pod: the manager's
// cache keeps only these pods.
var ServerPodLabels = map[string]string{labelName: appName, LabelManagedBy: ManagedBy}

// objectLabels go on every owned object.
func objectLabels(ci *cachev1alpha1.CacheInstance) map[string]string {
	l := selectorLabels(ci)
	l[LabelManagedBy] = ManagedBy
	l[labelComponent] = "cache"
	return l
}

// ownerReference makes the instance the controller of an object: garbage collection deletes the
// object with the instance, and the watch on owned objects maps its events back to the instance.
func ownerReference(ci *cachev1alpha1.CacheInstance) *metav1ac.OwnerReferenceApplyConfiguration {
	return metav1ac.OwnerReference().
		WithAPIVersion(cachev1alpha1.GroupVersion.String()).
		WithKind("CacheInstance").
		WithName(ci.Name).
		WithUID(ci.UID).
		WithController(true).
		WithBlockOwnerDeletion(true)
}

// convertJSON copies a Kubernetes API struct into its apply configuration, which has the same JSON
// shape; writing the deep types (Affinity, Toleration) out by hand would only add room for mistakes.
func convertJSON[T any](in any) (*T, error) {
	b, err := json.Marshal(in)
	if err != nil {
		return nil, fmt.Errorf("encoding %T: %w", in, err)
	}
	out := new(T)
	if err := json.Unmarshal(b, out); err != nil {
		return nil, fmt.Errorf("decoding %T: %w", out, err)
	}
	return out, nil
}
