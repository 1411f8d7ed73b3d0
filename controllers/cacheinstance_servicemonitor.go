package controllers

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
)

// serviceMonitorGVK is prometheus-operator's ServiceMonitor. It is handled as unstructured data, so
// the operator neither imports prometheus-operator nor needs its CRD to start.
var serviceMonitorGVK = schema.GroupVersionKind{Group: "monitoring.coreos.com", Version: "v1", Kind: "ServiceMonitor"}

// serviceMonitorRecheck is how often an instance that asks for a ServiceMonitor looks again for the
// CRD; nothing watches CRDs, so installing prometheus-operator later is noticed this way.
const serviceMonitorRecheck = 10 * time.Minute

// desiredServiceMonitor scrapes the metrics port of the client Service (not the headless one, which
// would scrape every pod twice).
func desiredServiceMonitor(ci *cachev1alpha1.CacheInstance) *unstructured.Unstructured {
	match := map[string]any{labelService: "client"}
	for k, v := range selectorLabels(ci) {
		match[k] = v
	}
	labels := map[string]any{}
	for k, v := range objectLabels(ci) {
		labels[k] = v
	}
	ref := metav1.NewControllerRef(ci, cachev1alpha1.GroupVersion.WithKind("CacheInstance"))
	u := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{
			"name":      ci.Name,
			"namespace": ci.Namespace,
			"labels":    labels,
			"ownerReferences": []any{map[string]any{
				"apiVersion":         ref.APIVersion,
				"kind":               ref.Kind,
				"name":               ref.Name,
				"uid":                string(ref.UID),
				"controller":         true,
				"blockOwnerDeletion": true,
			}},
		},
		"spec": map[string]any{
			"selector":  map[string]any{"matchLabels": match},
			"endpoints": []any{map[string]any{"port": portNameMetrics, "path": "/metrics"}},
		},
	}}
	u.SetGroupVersionKind(serviceMonitorGVK)
	return u
}

// reconcileServiceMonitor applies the ServiceMonitor when asked for and its CRD is installed, and
// removes the one it made when no longer asked for.
func (r *CacheInstanceReconciler) reconcileServiceMonitor(ctx context.Context, inst *instance) (*ctrl.Result, error) {
	installed, err := r.serviceMonitorInstalled()
	if err != nil {
		return nil, fmt.Errorf("looking up the ServiceMonitor API: %w", err)
	}
	want := inst.Spec.Metrics.ServiceMonitor
	switch {
	case want && installed:
		sm := desiredServiceMonitor(inst.CacheInstance)
		if err := r.Apply(ctx, client.ApplyConfigurationFromUnstructured(sm), client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
			return nil, fmt.Errorf("applying ServiceMonitor: %w", err)
		}
	case want:
		r.Recorder.Eventf(inst.CacheInstance, nil, corev1.EventTypeWarning, "ServiceMonitorUnavailable", "ApplyServiceMonitor",
			"spec.metrics.serviceMonitor is true, but the ServiceMonitor CRD (monitoring.coreos.com/v1) is not installed; the server still serves /metrics on port %d",
			inst.Spec.Metrics.Port)
		return &ctrl.Result{RequeueAfter: serviceMonitorRecheck}, nil
	case installed:
		return nil, r.deleteServiceMonitor(ctx, inst)
	}
	return nil, nil
}

// deleteServiceMonitor removes the instance's ServiceMonitor, but only one this instance controls:
// a ServiceMonitor of the same name that someone else made stays.
func (r *CacheInstanceReconciler) deleteServiceMonitor(ctx context.Context, inst *instance) error {
	sm := &unstructured.Unstructured{}
	sm.SetGroupVersionKind(serviceMonitorGVK)
	err := r.Get(ctx, client.ObjectKey{Namespace: inst.Namespace, Name: inst.Name}, sm)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading ServiceMonitor: %w", err)
	}
	if ref := metav1.GetControllerOf(sm); ref == nil || ref.UID != inst.UID {
		return nil
	}
	uid := sm.GetUID()
	if err := r.Delete(ctx, sm, client.Preconditions{UID: &uid}); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("deleting ServiceMonitor: %w", err)
	}
	return nil
}

// serviceMonitorInstalled asks the RESTMapper, which asks discovery again on a miss, so a CRD
// installed after the operator started is found.
func (r *CacheInstanceReconciler) serviceMonitorInstalled() (bool, error) {
	_, err := r.RESTMapper().RESTMapping(serviceMonitorGVK.GroupKind(), serviceMonitorGVK.Version)
	if meta.IsNoMatchError(err) {
		return false, nil
	}
	return err == nil, err
}
