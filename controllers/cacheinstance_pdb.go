package controllers

import (
	"context"
	"fmt"

	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	policyv1ac "k8s.io/client-go/applyconfigurations/policy/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
)

// desiredPDB lets voluntary disruptions (node drains) take one server pod at a time. With a single
// replica a minAvailable of 1 would block every drain forever, so the budget is maxUnavailable 1;
// and a pod that is not ready serves nobody, so it may always be evicted.
func desiredPDB(ci *cachev1alpha1.CacheInstance) *policyv1ac.PodDisruptionBudgetApplyConfiguration {
	return policyv1ac.PodDisruptionBudget(ci.Name, ci.Namespace).
		WithLabels(objectLabels(ci)).
		WithOwnerReferences(ownerReference(ci)).
		WithSpec(policyv1ac.PodDisruptionBudgetSpec().
			WithMaxUnavailable(intstr.FromInt32(1)).
			WithSelector(metav1ac.LabelSelector().WithMatchLabels(selectorLabels(ci))).
			WithUnhealthyPodEvictionPolicy(policyv1.AlwaysAllow))
}

// reconcilePDB applies the PodDisruptionBudget.
func (r *CacheInstanceReconciler) reconcilePDB(ctx context.Context, inst *instance) (*ctrl.Result, error) {
	if err := r.Apply(ctx, desiredPDB(inst.CacheInstance), client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
		return nil, fmt.Errorf("applying PodDisruptionBudget: %w", err)
	}
	return nil, nil
}
