package controllers

import (
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

// A Job starts only once the pods have been ready for the settle time.
func TestSettleWait(t *testing.T) {
	r := &CacheBenchmarkReconciler{}
	readySince := func(d time.Duration) *cachev1alpha1.CacheInstance {
		ci := newInstance(1)
		ci.Status.Conditions = []metav1.Condition{{Type: cachev1alpha1.ConditionReady, Status: metav1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(t0.Add(-d))}}
		return ci
	}
	for _, tc := range []struct {
		since, want time.Duration
	}{{0, settleTime}, {5 * time.Second, settleTime - 5*time.Second}, {settleTime, 0}, {time.Hour, -time.Hour + settleTime}} {
		if got := r.settleWait(readySince(tc.since), t0); got != tc.want {
			t.Errorf("ready for %s: wait %s, want %s", tc.since, got, tc.want)
		}
	}
	r.SettleTime = time.Second
	if got := r.settleWait(readySince(0), t0); got != time.Second {
		t.Errorf("with SettleTime 1s: wait %s", got)
	}
}
