package controllers

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
)

func TestServicesGolden(t *testing.T) {
	ci := newInstance(4)
	goldenYAML(t, "services/client.yaml", desiredClientService(ci))
	goldenYAML(t, "services/headless.yaml", desiredHeadlessService(ci))
	goldenYAML(t, "pdb.yaml", desiredPDB(ci))
	goldenYAML(t, "services/client-loadbalancer.yaml", desiredClientService(newInstance(1, sharedKnobs)))
	goldenYAML(t, "services/client-nodeport.yaml", desiredClientService(newInstance(2, func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.Service = &cachev1alpha1.ServiceSpec{Type: corev1.ServiceTypeNodePort, NodePort: ptr.To[int32](30079)}
	})))
}

// The StatefulSet names the headless Service, and both Services select exactly the StatefulSet's
// pods; a ServiceMonitor must be able to tell them apart.
func TestServicesSelectTheServerPods(t *testing.T) {
	ci := newInstance(4, withEverything)
	_, sts := statefulSetOf(t, ci)
	client, headless := desiredClientService(ci), desiredHeadlessService(ci)
	if sts.Spec.ServiceName != *headless.Name {
		t.Errorf("StatefulSet serviceName %q, headless Service %q", sts.Spec.ServiceName, *headless.Name)
	}
	if *headless.Spec.ClusterIP != corev1.ClusterIPNone || !*headless.Spec.PublishNotReadyAddresses {
		t.Errorf("headless Service spec %+v", headless.Spec)
	}
	for _, svc := range [][2]any{{"client", client.Spec.Selector}, {"headless", headless.Spec.Selector}} {
		for k, v := range svc[1].(map[string]string) {
			if sts.Spec.Template.Labels[k] != v {
				t.Errorf("%s Service selects %s=%s, which the pods do not carry", svc[0], k, v)
			}
		}
	}
	if client.Labels[labelService] == headless.Labels[labelService] {
		t.Errorf("both Services carry %s=%s", labelService, client.Labels[labelService])
	}
	if got := endpoint(ci); got != "cache.ns.svc:6379" {
		t.Errorf("endpoint %q", got)
	}
	ports := map[string]int32{}
	for _, p := range client.Spec.Ports {
		ports[*p.Name] = *p.Port
	}
	if ports[portNameRedis] != 6379 || ports[portNameMetrics] != 9200 {
		t.Errorf("client Service ports %v, want redis 6379 and metrics 9200", ports)
	}
}
