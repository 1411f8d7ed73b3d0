package controllers

import (
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
	"github.com/iocache/iocache/server/bench"
)

// Every figure says what it measured, and whether the client rather than the server was the limit.
func TestDescribeRun(t *testing.T) {
	benchPod := func(request, limit string) *corev1.Pod {
		res := corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(request)}}
		if limit != "" {
			res.Limits = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(limit)}
		}
		return &corev1.Pod{Spec: corev1.PodSpec{NodeName: "node-a", Containers: []corev1.Container{{Name: benchContainerName, Resources: res}}}}
	}
	for _, tc := range []struct {
		name        string
		pod         *corev1.Pod
		clientCores float64
		says        []string
		clientBound bool
	}{
		{"client on a fraction of the shared CPU, busy", benchPod("200m", ""), 0.97,
			[]string{"Validation run: SET:GET 1:10 from 50 connections on 2 client threads", "30s measured after a 5s warm-up",
				"server io-threads 2 on 4 cores, which used 600m CPU", "client on node node-a with CPU request 200m and no limit", "used 970m CPU"}, false},
		{"client at its limit", benchPod("500m", "500m"), 0.48, []string{"CPU request 500m, limit 500m", "used 480m CPU: the client, not the server, was the limit"}, true},
		{"client threads busy all the time", benchPod("2", "2"), 1.95, []string{"used 1950m CPU: the client, not the server, was the limit"}, true},
		{"client with CPU to spare", benchPod("2", "2"), 0.8, []string{"used 800m CPU"}, false},
		{"pod gone", nil, 0.5, []string{"; client (its pod is gone: placement unknown), used 500m CPU"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := sampleResult()
			r.ClientCPU = bench.CPU{Cores: tc.clientCores}
			r.Server.Delta.CPU = &bench.ServerCPU{User: 12, Sys: 6} // over 30s: 0.6 of a core
			cb := newBenchmark(func(cb *cachev1alpha1.CacheBenchmark) { cb.Spec.Purpose = cachev1alpha1.PurposeValidation })
			sum := cachev1alpha1.BenchmarkSummary{IOThreads: 2, Cores: 4}
			describeRun(&sum, r, cb, tc.pod)
			if sum.Purpose != cachev1alpha1.PurposeValidation || sum.ServerCPU.String() != "600m" {
				t.Errorf("purpose %q server CPU %s", sum.Purpose, sum.ServerCPU)
			}
			for _, want := range tc.says {
				if !strings.Contains(sum.Measured, want) {
					t.Errorf("measured %q does not say %q", sum.Measured, want)
				}
			}
			if got := strings.Contains(sum.Measured, "was the limit"); got != tc.clientBound {
				t.Errorf("client named the limit: %v, want %v (%q)", got, tc.clientBound, sum.Measured)
			}
		})
	}
}
