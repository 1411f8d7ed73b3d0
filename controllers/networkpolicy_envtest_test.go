package controllers_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
)

// waitNetworkPolicy waits until the instance's NetworkPolicy satisfies ok.
func (cl *cluster) waitNetworkPolicy(t *testing.T, ns, name string, ok func(*networkingv1.NetworkPolicy, error) bool) *networkingv1.NetworkPolicy {
	t.Helper()
	np := &networkingv1.NetworkPolicy{}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		np = &networkingv1.NetworkPolicy{}
		err := cl.get(t, ns, name, np)
		if ok(np, err) {
			return np
		}
		if time.Now().After(deadline) {
			b, _ := json.MarshalIndent(np.Spec, "", "  ")
			t.Fatalf("NetworkPolicy %s/%s never got as expected (last: %v)\n%s", ns, name, err, b)
		}
	}
}

// peersJSON renders a rule's peers for comparison, one JSON object per peer.
func peersJSON(rule networkingv1.NetworkPolicyIngressRule) []string {
	var out []string
	for _, p := range rule.From {
		b, _ := json.Marshal(p)
		out = append(out, string(b))
	}
	return out
}

// An instance is closed to strangers by default: its NetworkPolicy admits to the Redis port the
// pods of its namespace, its own pods, its benchmark Jobs and the operator's namespace, and any pod
// to the metrics port; listed clients replace the namespace default, an exposed Service admits its
// source ranges, a bad address block is refused with a sentence, and disabling removes the policy.
func TestNetworkPolicyClosesTheInstance(t *testing.T) {
	cl := startEnv(t)
	ns := cl.namespace(t)
	ctx := context.Background()
	ci := instanceIn(ns, "cache", 1)
	if err := cl.c.Create(ctx, ci); err != nil {
		t.Fatal(err)
	}
	np := cl.waitNetworkPolicy(t, ns, "cache", func(np *networkingv1.NetworkPolicy, err error) bool { return err == nil })
	if got := np.Spec.PodSelector.MatchLabels; got["app.kubernetes.io/instance"] != "cache" || got["app.kubernetes.io/name"] != "iocache" {
		t.Errorf("the policy selects %v, want the instance's server pods", got)
	}
	if len(np.Spec.PolicyTypes) != 1 || np.Spec.PolicyTypes[0] != networkingv1.PolicyTypeIngress || len(np.Spec.Ingress) != 2 {
		t.Fatalf("policy types %v, %d ingress rules: want Ingress only, two rules", np.Spec.PolicyTypes, len(np.Spec.Ingress))
	}
	redisRule, metricsRule := np.Spec.Ingress[0], np.Spec.Ingress[1]
	if p := redisRule.Ports; len(p) != 1 || p[0].Port.IntValue() != 6379 || *p[0].Protocol != corev1.ProtocolTCP {
		t.Errorf("first rule's ports %v, want TCP 6379", p)
	}
	if p := metricsRule.Ports; len(p) != 1 || p[0].Port.IntValue() != 9121 {
		t.Errorf("second rule's ports %v, want the metrics port 9121", p)
	}
	want := []string{
		`{"podSelector":{}}`, // every pod of the namespace
		`{"podSelector":{"matchLabels":{"app.kubernetes.io/instance":"cache","app.kubernetes.io/name":"iocache"}}}`,
		`{"podSelector":{"matchLabels":{"app.kubernetes.io/component":"benchmark","app.kubernetes.io/instance":"cache","app.kubernetes.io/managed-by":"iocache-operator","app.kubernetes.io/name":"iocache-bench"}}}`,
		`{"podSelector":{"matchLabels":{"app.kubernetes.io/component":"backup","app.kubernetes.io/instance":"cache","app.kubernetes.io/managed-by":"iocache-operator","app.kubernetes.io/name":"iocache-backup"}}}`,
		`{"namespaceSelector":{"matchLabels":{"kubernetes.io/metadata.name":"iocache-system"}}}`,
	}
	if got := peersJSON(redisRule); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("Redis port admits\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if got := peersJSON(metricsRule); len(got) != 1 || got[0] != `{"namespaceSelector":{}}` {
		t.Errorf("metrics port admits %v, want every namespace", got)
	}

	// Clients by namespace label replace "the whole namespace"; a LoadBalancer admits its ranges.
	cl.update(t, ns, "cache", func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.NetworkPolicy.Clients = []networkingv1.NetworkPolicyPeer{{NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "web"}}}}
		ci.Spec.Service = &cachev1alpha1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, LoadBalancerSourceRanges: []string{"203.0.113.0/24"}}
	})
	np = cl.waitNetworkPolicy(t, ns, "cache", func(np *networkingv1.NetworkPolicy, err error) bool {
		return err == nil && len(np.Spec.Ingress) == 2 && len(np.Spec.Ingress[0].From) == 6
	})
	got := peersJSON(np.Spec.Ingress[0])
	if got[0] != `{"namespaceSelector":{"matchLabels":{"team":"web"}}}` || got[5] != `{"ipBlock":{"cidr":"203.0.113.0/24"}}` {
		t.Errorf("Redis port admits\n%s\nwant the team=web namespaces first and the LoadBalancer's range last", strings.Join(got, "\n"))
	}
	for _, p := range got {
		if p == `{"podSelector":{}}` {
			t.Errorf("with clients listed the whole namespace must not be admitted: %v", got)
		}
	}

	// A bad address block is refused by the API server with a sentence, before the operator sees it.
	// Again on a conflict: the operator writes the status at any time.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		cur := &cachev1alpha1.CacheInstance{}
		if err := cl.get(t, ns, "cache", cur); err != nil {
			return err
		}
		cur.Spec.NetworkPolicy.Clients = []networkingv1.NetworkPolicyPeer{{IPBlock: &networkingv1.IPBlock{CIDR: "10.0.0.300/8"}}}
		return cl.c.Update(ctx, cur)
	})
	if err == nil || !strings.Contains(err.Error(), "ipBlock.cidr must be an address block such as 10.0.0.0/8") {
		t.Errorf("a bad CIDR: %v, want the schema's sentence", err)
	}

	// Disabled: the policy goes.
	cl.update(t, ns, "cache", func(ci *cachev1alpha1.CacheInstance) { ci.Spec.NetworkPolicy.Enabled = ptr.To(false) })
	cl.waitNetworkPolicy(t, ns, "cache", func(np *networkingv1.NetworkPolicy, err error) bool {
		return apierrors.IsNotFound(err) || (err == nil && !np.DeletionTimestamp.IsZero())
	})
}
