package controllers

import (
	"context"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A switchover relabels pods, and the client Service follows the labels through its EndpointSlices
// and then kube-proxy. Clients the old primary drops reconnect at once: before the Service routes
// to the new primary they are refused (no endpoint) or sent back to the old one (READONLY), which
// the e2e saw for up to two seconds. So the switchover holds the old primary's writes (they wait,
// they do not fail) until the EndpointSlices list the new primary and not the old one, plus a
// moment for kube-proxy, and only then drops the clients.

// Bounds of that wait. With the catch-up wait before it, they stay inside the pause the
// switchover renews before waiting (switchoverPause).
const (
	endpointsWait  = 3 * time.Second
	kubeProxyGrace = time.Second
	endpointsPoll  = 100 * time.Millisecond
)

// waitServiceRoutesTo waits, bounded, until the Service's EndpointSlices list to's address as
// ready and from's not at all. Without any EndpointSlice for the Service (no controller makes
// them, as under envtest) there is nothing to wait for. It reports whether the Service moved.
func (r *CacheInstanceReconciler) waitServiceRoutesTo(ctx context.Context, ns, service string, to, from *corev1.Pod) bool {
	deadline := time.Now().Add(endpointsWait)
	for {
		list := &discoveryv1.EndpointSliceList{}
		err := r.APIReader.List(ctx, list, client.InNamespace(ns), client.MatchingLabels{discoveryv1.LabelServiceName: service})
		if err != nil || len(list.Items) == 0 {
			return false
		}
		if routes(list.Items, to.Status.PodIP, true) && !routes(list.Items, from.Status.PodIP, false) {
			select {
			case <-ctx.Done():
			case <-time.After(kubeProxyGrace):
			}
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
		select {
		case <-ctx.Done():
			return false
		case <-time.After(endpointsPoll):
		}
	}
}

// routes says whether the slices list ip (as ready, when readyOnly).
func routes(list []discoveryv1.EndpointSlice, ip string, readyOnly bool) bool {
	for _, s := range list {
		for _, ep := range s.Endpoints {
			if slices.Contains(ep.Addresses, ip) && (!readyOnly || ptr.Deref(ep.Conditions.Ready, true)) {
				return true
			}
		}
	}
	return false
}
