package controllers

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
		WithSelector(clientSelector(ci)).
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

// clientSelector picks the pods the client Service sends clients to: every server pod of a
// single-pod instance; the primary of a replicated one, once the operator has chosen and labelled
// it (until then, as before replication, the pods themselves).
func clientSelector(ci *cachev1alpha1.CacheInstance) map[string]string {
	sel := selectorLabels(ci)
	if replicated(ci) && ci.Status.Replication != nil && ci.Status.Replication.Primary != "" {
		sel[labelRole] = string(cachev1alpha1.RolePrimary)
	}
	return sel
}

// replicasServiceName names the Service of a replicated instance's replicas.
func replicasServiceName(ci *cachev1alpha1.CacheInstance) string { return ci.Name + "-replicas" }

// desiredReplicasService sends clients that may read slightly stale data to the replicas, and so
// off the primary. Replicas refuse writes (READONLY).
func desiredReplicasService(ci *cachev1alpha1.CacheInstance) *corev1ac.ServiceApplyConfiguration {
	labels := objectLabels(ci)
	labels[labelService] = "replicas"
	sel := selectorLabels(ci)
	sel[labelRole] = string(cachev1alpha1.RoleReplica)
	return corev1ac.Service(replicasServiceName(ci), ci.Namespace).
		WithLabels(labels).
		WithOwnerReferences(ownerReference(ci)).
		WithSpec(corev1ac.ServiceSpec().
			WithSelector(sel).
			WithPorts(corev1ac.ServicePort().WithName(portNameRedis).WithProtocol(corev1.ProtocolTCP).
				WithPort(serverPort).WithTargetPort(intstr.FromString(portNameRedis))))
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

// reconcileServices applies the client and the headless Service and, for a replicated instance,
// the replicas Service, which it deletes when the instance is back to one pod. While a surge pod
// exists the client Service selects the pod labelled primary (cacheinstance_surge.go).
func (r *CacheInstanceReconciler) reconcileServices(ctx context.Context, inst *instance) (*ctrl.Result, error) {
	ci := inst.CacheInstance
	surge, err := r.surgeOf(ctx, ci)
	if err != nil {
		return nil, err
	}
	inst.surge = surge
	clientService := desiredClientService(ci)
	if surge != nil {
		clientService = clientServiceDuringSurge(ci)
	}
	services := []*corev1ac.ServiceApplyConfiguration{clientService, desiredHeadlessService(ci)}
	if replicated(ci) {
		services = append(services, desiredReplicasService(ci))
	}
	for _, svc := range services {
		if err := r.Apply(ctx, svc, client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
			return nil, fmt.Errorf("applying Service %s: %w", *svc.Name, err)
		}
	}
	if !replicated(ci) {
		old := &corev1.Service{}
		err := r.Get(ctx, client.ObjectKey{Namespace: ci.Namespace, Name: replicasServiceName(ci)}, old)
		if err == nil && metav1.IsControlledBy(old, ci) {
			if err := r.Delete(ctx, old); client.IgnoreNotFound(err) != nil {
				return nil, fmt.Errorf("deleting Service %s: %w", old.Name, err)
			}
		} else if client.IgnoreNotFound(err) != nil {
			return nil, fmt.Errorf("reading Service %s: %w", replicasServiceName(ci), err)
		}
	}
	return nil, nil
}
