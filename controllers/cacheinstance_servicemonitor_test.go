package controllers

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

func TestServiceMonitorGolden(t *testing.T) {
	ci := newInstance(4)
	sm := desiredServiceMonitor(ci)
	goldenYAML(t, "servicemonitor.yaml", sm.Object)

	sel, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	client := desiredClientService(ci)
	for k, v := range sel {
		if client.Labels[k] != v {
			t.Errorf("ServiceMonitor selects %s=%s, which the client Service lacks", k, v)
		}
	}
	if desiredHeadlessService(ci).Labels[labelService] == sel[labelService] {
		t.Error("ServiceMonitor also selects the headless Service: every pod would be scraped twice")
	}
}
