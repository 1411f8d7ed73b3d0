package controllers

import (
	"context"
	"fmt"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Volume expansion. persistence.size may grow (the CRD refuses a shrink). The StatefulSet's claim
// template cannot change, so it keeps the size it was made with, and the operator asks each data
// claim (data-<instance>-<ordinal>) for the new size itself: the volume grows under the running
// pod where the StorageClass allows expansion (allowVolumeExpansion), no pod is replaced and no
// data moves. A class that does not allow it is reported (Degraded, VolumeExpansionRefused) and
// the claims keep their size.

// Events and the Degraded reason of volume expansion.
const (
	reasonExpandingVolume        = "ExpandingVolume"
	reasonVolumeExpansionRefused = "VolumeExpansionRefused"
)

// volumeRecheck is how often an expansion under way is looked at again.
const volumeRecheck = 30 * time.Second

// claimTemplateSize is the storage request of a StatefulSet's data claim template, or nil.
func claimTemplateSize(sts *appsv1.StatefulSet) *resource.Quantity {
	for _, t := range sts.Spec.VolumeClaimTemplates {
		if t.Name == "data" {
			if q, ok := t.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
				return &q
			}
		}
	}
	return nil
}

// reconcileVolumes expands the data claims to persistence.size once it is larger than the claim
// template. Only then does it read the claims, from the API server: a cache of every claim in the
// cluster would cost the operator memory for a rare change.
func (r *CacheInstanceReconciler) reconcileVolumes(ctx context.Context, inst *instance) (*ctrl.Result, error) {
	want := inst.Spec.Persistence.Size
	if want == nil || inst.claimTemplateSize == nil || want.Cmp(*inst.claimTemplateSize) <= 0 {
		return nil, nil
	}
	claims := &corev1.PersistentVolumeClaimList{}
	if err := r.APIReader.List(ctx, claims, client.InNamespace(inst.Namespace), client.MatchingLabels(selectorLabels(inst.CacheInstance))); err != nil {
		return nil, fmt.Errorf("listing the data claims: %w", err)
	}
	prefix := "data-" + inst.Name + "-"
	growing := 0
	for i := range claims.Items {
		pvc := &claims.Items[i]
		if !strings.HasPrefix(pvc.Name, prefix) {
			continue
		}
		asked := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
		if asked.Cmp(*want) >= 0 {
			if capacity := pvc.Status.Capacity[corev1.ResourceStorage]; capacity.Cmp(*want) < 0 {
				growing++ // the storage driver (and, for some, the kubelet) is still at it
			}
			continue
		}
		patch := client.MergeFrom(pvc.DeepCopy())
		pvc.Spec.Resources.Requests[corev1.ResourceStorage] = *want
		err := r.Patch(ctx, pvc, patch)
		switch {
		case apierrors.IsForbidden(err) || apierrors.IsInvalid(err):
			msg := fmt.Sprintf("Claim %s cannot grow from %s to %s: %v. It keeps its size; a StorageClass with allowVolumeExpansion: true can grow it",
				pvc.Name, asked.String(), want.String(), apierrors.ReasonForError(err))
			if status, ok := err.(apierrors.APIStatus); ok {
				msg = fmt.Sprintf("Claim %s cannot grow from %s to %s: %s. It keeps its size; a StorageClass with allowVolumeExpansion: true can grow it",
					pvc.Name, asked.String(), want.String(), status.Status().Message)
			}
			r.Recorder.Eventf(inst.CacheInstance, pvc, corev1.EventTypeWarning, reasonVolumeExpansionRefused, "ExpandVolume", "%s", msg)
			inst.block(reasonVolumeExpansionRefused, msg)
			return nil, nil
		case apierrors.IsNotFound(err) || apierrors.IsConflict(err):
			growing++
		case err != nil:
			return nil, fmt.Errorf("expanding claim %s: %w", pvc.Name, err)
		default:
			growing++
			r.Recorder.Eventf(inst.CacheInstance, pvc, corev1.EventTypeNormal, reasonExpandingVolume, "ExpandVolume",
				"Expanding claim %s from %s to %s under the running pod", pvc.Name, asked.String(), want.String())
		}
	}
	if growing > 0 {
		inst.recheckIn(volumeRecheck)
	}
	return nil, nil
}
