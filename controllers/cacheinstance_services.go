package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
)

// desiredClientService is what clients and Prometheus connect to: a Service named after the
// instance with the Redis port and the metrics port; ClusterIP unless spec.service asks for a
// NodePort or LoadBalancer, for clients outside the cluster.
func desiredClientService(ci *cachev1alpha1.CacheInstance) *corev1ac.ServiceApplyConfiguration {
	labels := objectLabels(ci)
	labels[labelService] = "client"
	want := ci.Spec.Service
	if want == nil {
		want = &cachev1alpha1.ServiceSpec{}
	}
	typ := want.Type
	if typ == "" {
		typ = corev1.ServiceTypeClusterIP
	}
	redisPort := corev1ac.ServicePort().WithName(portNameRedis).WithProtocol(corev1.ProtocolTCP).
		WithPort(serverPort).WithTargetPort(intstr.FromString(portNameRedis))
	if want.NodePort != nil && typ != corev1.ServiceTypeClusterIP {
		redisPort.WithNodePort(*want.NodePort)
	}
	spec := corev1ac.ServiceSpec().
		WithType(typ).
		WithSelector(selectorLabels(ci)).
		WithPorts(redisPort,
			corev1ac.ServicePort().WithName(portNameMetrics).WithProtocol(corev1.ProtocolTCP).
				WithPort(ci.Spec.Metrics.Port).WithTargetPort(intstr.FromString(portNameMetrics)),
		)
	if typ == corev1.ServiceTypeLoadBalancer && len(want.LoadBalancerSourceRanges) > 0 {
		spec.WithLoadBalancerSourceRanges(want.LoadBalancerSourceRanges...)
	}
	if want.ExternalTrafficPolicy != "" && typ != corev1.ServiceTypeClusterIP {
		spec.WithExternalTrafficPolicy(want.ExternalTrafficPolicy)
	}
	svc := corev1ac.Service(ci.Name, ci.Namespace).
		WithLabels(labels).
		WithOwnerReferences(ownerReference(ci)).
		WithSpec(spec)
	if len(want.Annotations) > 0 {
		svc.WithAnnotations(want.Annotations)
	}
	return svc
}

// desiredHeadlessService gives each StatefulSet pod a stable DNS name. It lists pods before they
// are ready, because the names must resolve while a pod starts.
func desiredHeadlessService(ci *cachev1alpha1.CacheInstance) *corev1ac.ServiceApplyConfiguration {
	labels := objectLabels(ci)
	labels[labelService] = "headless"
	return corev1ac.Service(headlessName(ci), ci.Namespace).
		WithLabels(labels).
		WithOwnerReferences(ownerReference(ci)).
		WithSpec(corev1ac.ServiceSpec().
			WithClusterIP(corev1.ClusterIPNone).
			WithPublishNotReadyAddresses(true).
			WithSelector(selectorLabels(ci)).
			WithPorts(corev1ac.ServicePort().WithName(portNameRedis).WithProtocol(corev1.ProtocolTCP).
				WithPort(serverPort).WithTargetPort(intstr.FromString(portNameRedis))))
}

// endpoint is the client Service's address as other pods in the cluster reach it.
func endpoint(ci *cachev1alpha1.CacheInstance) string {
	return fmt.Sprintf("%s.%s.svc:%d", ci.Name, ci.Namespace, serverPort)
}

// reconcileServices applies the client and the headless Service.
func (r *CacheInstanceReconciler) reconcileServices(ctx context.Context, inst *instance) (*ctrl.Result, error) {
	for _, svc := range []*corev1ac.ServiceApplyConfiguration{desiredClientService(inst.CacheInstance), desiredHeadlessService(inst.CacheInstance)} {
		if err := r.Apply(ctx, svc, client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
			return nil, fmt.Errorf("applying Service %s: %w", *svc.Name, err)
		}
	}
	return nil, nil
}
