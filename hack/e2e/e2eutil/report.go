package e2eutil

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
)

// FieldOwner is the server-side apply manager of what the demo and the test create.
const FieldOwner = "iocache-e2e"

// EnsureNamespace creates the namespace if it is missing.
func (e *Env) EnsureNamespace(ctx context.Context, name string) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
	if err := e.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		return err
	}
	return nil
}

// ApplyFile server-side-applies the single object in a YAML file into namespace ns and returns its
// name. Applying again changes nothing, so the demo can run twice.
func (e *Env) ApplyFile(ctx context.Context, path, ns string) (*unstructured.Unstructured, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	u := &unstructured.Unstructured{}
	if err := yaml.Unmarshal(raw, &u.Object); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	u.SetNamespace(ns)
	//nolint:staticcheck // client.Apply with an unstructured object is what we need here.
	if err := e.Client.Patch(ctx, u, client.Apply, client.FieldOwner(FieldOwner), client.ForceOwnership); err != nil {
		return nil, fmt.Errorf("apply %s: %w", path, err)
	}
	return u, nil
}

// BenchmarkSupport says whether the installed operator runs validation benchmarks: its ClusterRole
// (Helm release <release>, so <release>-manager) must let it create batch Jobs. The benchmark
// controller brings that permission with it.
func (e *Env) BenchmarkSupport(ctx context.Context, release string) (bool, string, error) {
	var role rbacv1.ClusterRole
	name := release + "-manager"
	if err := e.Client.Get(ctx, client.ObjectKey{Name: name}, &role); err != nil {
		return false, "", fmt.Errorf("ClusterRole %s: %w", name, err)
	}
	for _, r := range role.Rules {
		if has(r.APIGroups, "batch") && has(r.Resources, "jobs") && has(r.Verbs, "create") {
			return true, fmt.Sprintf("ClusterRole %s lets the operator create batch Jobs", name), nil
		}
	}
	return false, fmt.Sprintf("the installed operator has no benchmark controller yet (ClusterRole %s grants no batch/jobs create)", name), nil
}

func has(list []string, v string) bool {
	for _, x := range list {
		if x == v || x == "*" {
			return true
		}
	}
	return false
}

// Benchmarked is true when a validation benchmark result is in status.
func Benchmarked(ci *cachev1alpha1.CacheInstance) bool {
	c := apimeta.FindStatusCondition(ci.Status.Conditions, cachev1alpha1.ConditionThroughputValidated)
	return ci.Status.LastBenchmark != nil && c != nil && c.Status != metav1.ConditionUnknown
}

// BenchmarkLine describes status.lastBenchmark in one line.
func BenchmarkLine(ci *cachev1alpha1.CacheInstance) string {
	b := ci.Status.LastBenchmark
	if b == nil {
		return "no result in status"
	}
	d := func(x *metav1.Duration) string {
		if x == nil {
			return "-"
		}
		return x.Duration.Round(time.Microsecond).String()
	}
	s := fmt.Sprintf("%d ops/s with io-threads %d, latency p50 %s p99 %s p99.9 %s max %s, %d errors (benchmark %s)",
		b.OpsPerSecond, b.IOThreads, d(b.Latency.P50), d(b.Latency.P99), d(b.Latency.P999), d(b.Latency.Max), b.Errors, b.Benchmark)
	if c := apimeta.FindStatusCondition(ci.Status.Conditions, cachev1alpha1.ConditionThroughputValidated); c != nil {
		s += fmt.Sprintf("; ThroughputValidated=%s (%s)", c.Status, c.Reason)
	}
	if b.Measured != "" {
		s += "\n  what it measured: " + b.Measured
	}
	return s
}

// KV formats INFO fields as k=v in the given order.
func KV(info map[string]string, keys ...string) string {
	var parts []string
	for _, k := range keys {
		parts = append(parts, k+"="+info[k])
	}
	return strings.Join(parts, " ")
}
