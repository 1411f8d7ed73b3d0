package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	networkingv1ac "k8s.io/client-go/applyconfigurations/networking/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
)

// A cache holds sessions and tokens, so by default an instance is closed to pods it does not name:
// a NetworkPolicy (named after the instance) admits to the Redis port the clients in
// spec.networkPolicy.clients (by default every pod of the instance's namespace), the instance's
// own pods (replicas sync from the primary), its benchmark and backup Jobs and the operator's namespace (the
// live configuration, replication control); and to the metrics port the scrapers listed (by
// default any pod). Egress is not restricted: replicas dial their primary, and the server dials
// nothing else.

// namespaceNameLabel is the label the API server puts on every namespace with its name.
const namespaceNameLabel = "kubernetes.io/metadata.name"

// desiredNetworkPolicy is the instance's NetworkPolicy; operatorNamespace is where the operator
// runs ("" when it runs outside the cluster, where no namespace can name it).
func desiredNetworkPolicy(ci *cachev1alpha1.CacheInstance, operatorNamespace string) *networkingv1ac.NetworkPolicyApplyConfiguration {
	np := ci.Spec.NetworkPolicy
	clients := peers(np.Clients)
	if len(clients) == 0 {
		clients = append(clients, networkingv1ac.NetworkPolicyPeer().WithPodSelector(metav1ac.LabelSelector()))
	}
	clients = append(clients,
		networkingv1ac.NetworkPolicyPeer().WithPodSelector(metav1ac.LabelSelector().WithMatchLabels(selectorLabels(ci))),
		networkingv1ac.NetworkPolicyPeer().WithPodSelector(metav1ac.LabelSelector().WithMatchLabels(benchLabels(ci))),
		networkingv1ac.NetworkPolicyPeer().WithPodSelector(metav1ac.LabelSelector().WithMatchLabels(backupLabels(ci))))
	operator := operatorPeer(operatorNamespace)
	if operator != nil {
		clients = append(clients, operator)
	}
	clients = append(clients, exposedPeers(ci)...)
	scrapers := peers(np.MetricsScrapers)
	if len(scrapers) == 0 {
		scrapers = append(scrapers, networkingv1ac.NetworkPolicyPeer().WithNamespaceSelector(metav1ac.LabelSelector()))
	} else if operator != nil {
		scrapers = append(scrapers, operator)
	}
	return networkingv1ac.NetworkPolicy(ci.Name, ci.Namespace).
		WithLabels(objectLabels(ci)).
		WithOwnerReferences(ownerReference(ci)).
		WithSpec(networkingv1ac.NetworkPolicySpec().
			WithPodSelector(metav1ac.LabelSelector().WithMatchLabels(selectorLabels(ci))).
			WithPolicyTypes(networkingv1.PolicyTypeIngress).
			WithIngress(
				networkingv1ac.NetworkPolicyIngressRule().
					WithPorts(tcpPort(serverPort)).
					WithFrom(clients...),
				networkingv1ac.NetworkPolicyIngressRule().
					WithPorts(tcpPort(ci.Spec.Metrics.Port)).
					WithFrom(scrapers...)))
}

// operatorPeer admits the operator's namespace.
func operatorPeer(ns string) *networkingv1ac.NetworkPolicyPeerApplyConfiguration {
	if ns == "" {
		return nil
	}
	return networkingv1ac.NetworkPolicyPeer().WithNamespaceSelector(
		metav1ac.LabelSelector().WithMatchLabels(map[string]string{namespaceNameLabel: ns}))
}

// exposedPeers admit the addresses a NodePort or LoadBalancer client Service is exposed to: its
// source ranges, or every address.
func exposedPeers(ci *cachev1alpha1.CacheInstance) []*networkingv1ac.NetworkPolicyPeerApplyConfiguration {
	svc := ci.Spec.Service
	if svc == nil || (svc.Type != corev1.ServiceTypeNodePort && svc.Type != corev1.ServiceTypeLoadBalancer) {
		return nil
	}
	ranges := svc.LoadBalancerSourceRanges
	if len(ranges) == 0 {
		ranges = []string{"0.0.0.0/0", "::/0"}
	}
	out := make([]*networkingv1ac.NetworkPolicyPeerApplyConfiguration, 0, len(ranges))
	for _, cidr := range ranges {
		out = append(out, networkingv1ac.NetworkPolicyPeer().WithIPBlock(networkingv1ac.IPBlock().WithCIDR(cidr)))
	}
	return out
}

// peers converts the spec's peers to apply configurations.
func peers(in []networkingv1.NetworkPolicyPeer) []*networkingv1ac.NetworkPolicyPeerApplyConfiguration {
	out := make([]*networkingv1ac.NetworkPolicyPeerApplyConfiguration, 0, len(in)+4)
	for _, p := range in {
		peer := networkingv1ac.NetworkPolicyPeer()
		if p.PodSelector != nil {
			peer.WithPodSelector(labelSelector(p.PodSelector))
		}
		if p.NamespaceSelector != nil {
			peer.WithNamespaceSelector(labelSelector(p.NamespaceSelector))
		}
		if b := p.IPBlock; b != nil {
			peer.WithIPBlock(networkingv1ac.IPBlock().WithCIDR(b.CIDR).WithExcept(b.Except...))
		}
		out = append(out, peer)
	}
	return out
}

// labelSelector converts a label selector to its apply configuration.
func labelSelector(s *metav1.LabelSelector) *metav1ac.LabelSelectorApplyConfiguration {
	out := metav1ac.LabelSelector().WithMatchLabels(s.MatchLabels)
	for _, e := range s.MatchExpressions {
		out.WithMatchExpressions(metav1ac.LabelSelectorRequirement().WithKey(e.Key).WithOperator(e.Operator).WithValues(e.Values...))
	}
	return out
}

func tcpPort(port int32) *networkingv1ac.NetworkPolicyPortApplyConfiguration {
	return networkingv1ac.NetworkPolicyPort().WithProtocol(corev1.ProtocolTCP).WithPort(intstr.FromInt32(port))
}

// reconcileNetworkPolicy applies the instance's NetworkPolicy, or deletes it when disabled.
func (r *CacheInstanceReconciler) reconcileNetworkPolicy(ctx context.Context, inst *instance) (*ctrl.Result, error) {
	ci := inst.CacheInstance
	if !ptr.Deref(ci.Spec.NetworkPolicy.Enabled, true) {
		np := &networkingv1.NetworkPolicy{}
		if err := r.Get(ctx, client.ObjectKeyFromObject(ci), np); err != nil {
			return nil, client.IgnoreNotFound(err)
		}
		if !metav1.IsControlledBy(np, ci) {
			return nil, nil // not ours to delete
		}
		if err := r.Delete(ctx, np, client.Preconditions{UID: &np.UID}); client.IgnoreNotFound(err) != nil {
			return nil, fmt.Errorf("deleting NetworkPolicy: %w", err)
		}
		return nil, nil
	}
	if err := r.Apply(ctx, desiredNetworkPolicy(ci, r.OperatorNamespace), client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
		return nil, fmt.Errorf("applying NetworkPolicy: %w", err)
	}
	return nil, nil
}
