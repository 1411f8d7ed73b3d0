package controllers

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
)

// inPlaceDiff takes a pod template to a newer one in place when they differ in the server's memory,
// in the legacy form of today's config hash (an operator upgrade from before issue #30), or both,
// and in nothing else; any other difference, a config hash that is not the legacy form of today's,
// or no difference at all, is not for it.
func TestInPlaceDiff(t *testing.T) {
	cfg, err := renderConfig(newInstance(2, func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.Config = map[string]cachev1alpha1.ConfigValue{"hz": "20"}
	}))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.LegacyRestartHash == cfg.RestartHash {
		t.Fatal("hz must make the legacy hash differ")
	}
	tmpl := func(hash, memory, image string) *corev1.PodTemplateSpec {
		q := resource.MustParse(memory)
		p := &corev1.PodTemplateSpec{
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: containerName, Image: image, Resources: corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceMemory: q}, Limits: corev1.ResourceList{corev1.ResourceMemory: q}}}}},
		}
		p.Annotations = map[string]string{annotationConfigHash: hash}
		return p
	}
	legacy, now := cfg.LegacyRestartHash, cfg.RestartHash
	for _, tc := range []struct {
		name         string
		old, cur     *corev1.PodTemplateSpec
		ok, resize   bool
		from, to     string
		keepsOldHash bool
	}{
		{"legacy hash only", tmpl(legacy, "1Gi", "a"), tmpl(now, "1Gi", "a"), true, false, "1Gi", "1Gi", true},
		{"memory only", tmpl(now, "1Gi", "a"), tmpl(now, "2Gi", "a"), true, true, "1Gi", "2Gi", false},
		{"legacy hash and memory", tmpl(legacy, "2Gi", "a"), tmpl(now, "1Gi", "a"), true, true, "2Gi", "1Gi", true},
		{"another hash", tmpl("0123456789abcdef", "1Gi", "a"), tmpl(now, "1Gi", "a"), false, false, "", "", false},
		{"legacy hash and image", tmpl(legacy, "1Gi", "a"), tmpl(now, "1Gi", "b"), false, false, "", "", false},
		{"memory and image", tmpl(now, "1Gi", "a"), tmpl(now, "2Gi", "b"), false, false, "", "", false},
		{"legacy hash, the new template not today's", tmpl(legacy, "1Gi", "a"), tmpl("0123456789abcdef", "1Gi", "a"), false, false, "", "", false},
		{"nothing", tmpl(now, "1Gi", "a"), tmpl(now, "1Gi", "a"), false, false, "", "", false},
	} {
		from, to, resize, ok := inPlaceDiff(tc.old, tc.cur, cfg)
		if ok != tc.ok || (ok && (resize != tc.resize || from.String() != tc.from || to.String() != tc.to)) {
			t.Errorf("%s: ok %v resize %v %s -> %s, want ok %v resize %v %s -> %s", tc.name, ok, resize, from.String(), to.String(), tc.ok, tc.resize, tc.from, tc.to)
		}
		if tc.keepsOldHash && tc.old.Annotations[annotationConfigHash] != legacy {
			t.Errorf("%s: inPlaceDiff changed the old template's annotation", tc.name)
		}
	}

	// Without a live spec.config directive both hashes are one: only memory counts.
	plain, err := renderConfig(newInstance(2))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, _, ok := inPlaceDiff(tmpl("0123456789abcdef", "1Gi", "a"), tmpl(plain.RestartHash, "1Gi", "a"), plain); ok {
		t.Error("a config hash change of an instance without live spec.config directives was taken in place")
	}
}
