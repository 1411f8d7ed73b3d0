package v1alpha1

import networkingv1 "k8s.io/api/networking/v1"

// NetworkPolicySpec closes an instance's pods to every pod it does not name. It takes effect where
// the cluster's network plugin enforces NetworkPolicies (Calico, Cilium, ...); elsewhere the
// policy is kept but nothing enforces it.
type NetworkPolicySpec struct {
	// Enabled keeps a NetworkPolicy named after the instance that admits, and nothing else: the
	// clients below to the Redis port, the instance's own pods (replication), its benchmark Jobs
	// and the operator's namespace; and the metrics scrapers below to the metrics port. Default
	// true.
	// +kubebuilder:default=true
	// +optional
	Enabled *bool `json:"enabled,omitempty"`

	// Clients may reach the Redis port: pods by label, namespaces by label, or address blocks. Empty
	// admits every pod in the instance's namespace. A client Service of type NodePort or
	// LoadBalancer also admits its loadBalancerSourceRanges (every address without them): exposing
	// the instance asks for it.
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:XValidation:rule="self.all(p, !has(p.ipBlock) || isCIDR(p.ipBlock.cidr))",message="networkPolicy.clients: ipBlock.cidr must be an address block such as 10.0.0.0/8"
	// +optional
	Clients []networkingv1.NetworkPolicyPeer `json:"clients,omitempty"`

	// MetricsScrapers may reach the metrics port. Empty admits every pod in every namespace: the
	// metrics hold no key, value or secret.
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:XValidation:rule="self.all(p, !has(p.ipBlock) || isCIDR(p.ipBlock.cidr))",message="networkPolicy.metricsScrapers: ipBlock.cidr must be an address block such as 10.0.0.0/8"
	// +optional
	MetricsScrapers []networkingv1.NetworkPolicyPeer `json:"metricsScrapers,omitempty"`
}

// SetDefaults fills what the schema defaults.
func (n *NetworkPolicySpec) SetDefaults() {
	if n.Enabled == nil {
		t := true
		n.Enabled = &t
	}
}
