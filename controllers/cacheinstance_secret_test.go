package controllers

import (
	"regexp"
	"testing"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
)

func TestGeneratePassword(t *testing.T) {
	seen := map[string]bool{}
	base32 := regexp.MustCompile(`^[A-Z2-7]{52}$`)
	for range 100 {
		p := generatePassword()
		if !base32.MatchString(p) {
			t.Fatalf("password %q is not 52 base32 characters", p)
		}
		if seen[p] {
			t.Fatalf("password repeated after %d draws", len(seen))
		}
		seen[p] = true
	}
}

func TestDesiredSecret(t *testing.T) {
	ci := newInstance(2, func(ci *cachev1alpha1.CacheInstance) { ci.Spec.Auth = &cachev1alpha1.AuthSpec{Generate: true} })
	s := desiredSecret(ci, "pw")
	if s.Name != "cache-auth" || string(s.Data["password"]) != "pw" || len(s.Data) != 1 {
		t.Errorf("Secret %s with keys %v, want cache-auth with the password under the default key", s.Name, s.Data)
	}
	if len(s.OwnerReferences) != 1 || s.OwnerReferences[0].UID != ci.UID || !*s.OwnerReferences[0].Controller {
		t.Errorf("owner references %+v, want the instance as controller", s.OwnerReferences)
	}
}
