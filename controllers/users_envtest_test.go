package controllers_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
)

// ACL users from Secrets: the API server refuses users without auth, password rules in
// permissions and a user named default, each with the reason; the operator renders the users file
// (password hashes only) into the Secret the pods mount, which a real iocache-server loads at start;
// on a running server (a real one standing in for the pod) the users are applied live and do what
// their permissions say; a second password in the Secret works without a restart while a
// connection of the first stays, removing the first key revokes it, a user taken out of the spec is
// deleted, and a user whose Secret is missing degrades the instance with a message.
func TestUsersFromSecretsAreAppliedLive(t *testing.T) {
	cl := startEnv(t)
	ns := cl.namespace(t)
	ctx := context.Background()

	for _, tc := range []struct {
		name   string
		mutate func(*cachev1alpha1.CacheInstance)
		want   string
	}{
		{"no auth", func(ci *cachev1alpha1.CacheInstance) {
			ci.Spec.Users = []cachev1alpha1.UserSpec{{Name: "app", PasswordSecret: "app-passwords"}}
		}, "users need auth"},
		{"a password rule", func(ci *cachev1alpha1.CacheInstance) {
			ci.Spec.Auth = &cachev1alpha1.AuthSpec{Generate: true}
			ci.Spec.Users = []cachev1alpha1.UserSpec{{Name: "app", PasswordSecret: "app-passwords", Permissions: "~* +@all >sneaky"}}
		}, "passwords come from passwordSecret"},
		{"default", func(ci *cachev1alpha1.CacheInstance) {
			ci.Spec.Auth = &cachev1alpha1.AuthSpec{Generate: true}
			ci.Spec.Users = []cachev1alpha1.UserSpec{{Name: "default", PasswordSecret: "app-passwords"}}
		}, "users[].name cannot be default"},
		{"a name of the operator's", func(ci *cachev1alpha1.CacheInstance) {
			ci.Spec.Auth = &cachev1alpha1.AuthSpec{Generate: true}
			ci.Spec.Users = []cachev1alpha1.UserSpec{{Name: "iocache-bench", PasswordSecret: "app-passwords"}}
		}, "cannot start with iocache-"},
	} {
		bad := instanceIn(ns, "bad", 1, tc.mutate)
		if err := cl.c.Create(ctx, bad); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want Invalid with %q", tc.name, err, tc.want)
		}
	}

	const password = "users-default-password"
	for name, data := range map[string]map[string][]byte{
		"cache-auth":       {"password": []byte(password)},
		"app-passwords":    {"v1": []byte("first-password\n")},
		"reader-passwords": {"only": []byte("reader-password")},
	} {
		if err := cl.c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: data}); err != nil {
			t.Fatal(err)
		}
	}
	ci := instanceIn(ns, "cache", 2, func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.Auth = &cachev1alpha1.AuthSpec{ExistingSecret: "cache-auth"}
		ci.Spec.Users = []cachev1alpha1.UserSpec{{Name: "app", PasswordSecret: "app-passwords", Permissions: "~cache:* +@read +@write -@dangerous"}}
		ci.Spec.Benchmark.ValidateOnChange = ptr.To(false)
	})
	if err := cl.c.Create(ctx, ci); err != nil {
		t.Fatal(err)
	}
	cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionReady, metav1.ConditionFalse, "RollingOut")

	// What the pods get: the config names the users file, which holds hashes, not passwords.
	cm := &corev1.ConfigMap{}
	if err := cl.get(t, ns, "cache-config", cm); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(cm.Data["iocache.conf"], "\naclfile /etc/iocache/users/users.acl\n") {
		t.Errorf("config without the users file:\n%s", cm.Data["iocache.conf"])
	}
	usersFile := &corev1.Secret{}
	if err := cl.get(t, ns, "cache-users", usersFile); err != nil {
		t.Fatal(err)
	}
	acl := string(usersFile.Data["users.acl"])
	sum := sha256.Sum256([]byte("first-password"))
	if !strings.Contains(acl, "user app on #"+hex.EncodeToString(sum[:])+" ~cache:* +@read +@write -@dangerous") ||
		strings.Contains(acl, "first-password") || strings.Contains(acl, password) || !strings.HasPrefix(acl, "user default on #") {
		t.Errorf("users.acl:\n%s", acl)
	}
	sts := &appsv1.StatefulSet{}
	if err := cl.get(t, ns, "cache", sts); err != nil {
		t.Fatal(err)
	}
	mounted := false
	for _, v := range sts.Spec.Template.Spec.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, src := range v.Projected.Sources {
			if src.Secret != nil && src.Secret.Name == "cache-users" && len(src.Secret.Items) == 1 && src.Secret.Items[0].Path == "users/users.acl" {
				mounted = true
			}
		}
	}
	if !mounted {
		t.Errorf("the pod template does not mount users/users.acl: %+v", sts.Spec.Template.Spec.Volumes)
	}

	// A pod that starts reads the file: a real server started with it knows the users.
	fileServer := startServerWithACLFile(t, acl)
	auth := func(addr, user, pass string) error {
		c := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, MaxRetries: -1, DisableIdentity: true})
		defer c.Close()
		return c.Do(ctx, "AUTH", user, pass).Err()
	}
	if err := auth(fileServer, "app", "first-password"); err != nil {
		t.Errorf("a server started with the users file: AUTH app: %v", err)
	}
	if err := auth(fileServer, "default", password); err != nil {
		t.Errorf("a server started with the users file: AUTH default: %v", err)
	}

	// Live, on a running server.
	addr := startTestServer(t, password)
	cl.servePod(t, ns, "cache", addr)
	cl.simulateRollout(t, ns, "cache")
	cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionConfigApplied, metav1.ConditionTrue, "AppliedLive")
	app := redis.NewClient(&redis.Options{Addr: addr, Username: "app", Password: "first-password", Protocol: 2, PoolSize: 1, MaxRetries: -1})
	defer app.Close()
	if err := app.Set(ctx, "cache:1", "v", 0).Err(); err != nil {
		t.Errorf("app SET cache:1: %v", err)
	}
	if err := app.Set(ctx, "other:1", "v", 0).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
		t.Errorf("app SET other:1: %v, want NOPERM", err)
	}
	if err := app.Do(ctx, "FLUSHALL").Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
		t.Errorf("app FLUSHALL: %v, want NOPERM", err)
	}

	// Rotation: a second key is a second password, live; app's connection stays.
	cl.updateSecret(t, ns, "app-passwords", func(s *corev1.Secret) { s.Data["v2"] = []byte("second-password") })
	eventually(t, "the second password", func() error { return auth(addr, "app", "second-password") })
	if err := auth(addr, "app", "first-password"); err != nil {
		t.Errorf("the first password during the rotation: %v", err)
	}
	if err := app.Get(ctx, "cache:1").Err(); err != nil {
		t.Errorf("app's connection after the new password: %v", err)
	}
	cl.updateSecret(t, ns, "app-passwords", func(s *corev1.Secret) { delete(s.Data, "v1") })
	eventually(t, "the first password revoked", func() error {
		if err := auth(addr, "app", "first-password"); err == nil || !strings.HasPrefix(err.Error(), "WRONGPASS") {
			return fmt.Errorf("AUTH app first-password: %v", err)
		}
		return nil
	})

	// A user added, another taken out: deleted on the server, its connection closed.
	cl.update(t, ns, "cache", func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.Users = []cachev1alpha1.UserSpec{{Name: "reader", PasswordSecret: "reader-passwords", Permissions: "~* +@read"}}
	})
	eventually(t, "app removed, reader added", func() error {
		if err := auth(addr, "reader", "reader-password"); err != nil {
			return fmt.Errorf("AUTH reader: %v", err)
		}
		if err := auth(addr, "app", "second-password"); err == nil {
			return fmt.Errorf("app still authenticates")
		}
		return nil
	})
	if err := app.Get(ctx, "cache:1").Err(); err == nil {
		t.Errorf("app's connection still serves after the user was deleted")
	}

	// A user whose Secret is missing: Degraded says which.
	cl.update(t, ns, "cache", func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.Users = append(ci.Spec.Users, cachev1alpha1.UserSpec{Name: "ghost", PasswordSecret: "no-such-secret"})
	})
	deg := cl.waitCondition(t, ns, "cache", cachev1alpha1.ConditionDegraded, metav1.ConditionTrue, "UserSecretMissing")
	for _, c := range deg.Status.Conditions {
		if c.Type == cachev1alpha1.ConditionDegraded && !strings.Contains(c.Message, "Secret no-such-secret of user ghost does not exist") {
			t.Errorf("Degraded says %q", c.Message)
		}
	}
}

// With auth.generate, the users file's default line is the generated password's hash from the
// file's first version on: the pass that creates the password must not render the file with an
// empty one (a pod that started from that version would refuse the real password).
func TestUsersFileHasTheGeneratedPassword(t *testing.T) {
	cl := startEnv(t)
	ns := cl.namespace(t)
	ctx := context.Background()
	if err := cl.c.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "app-passwords", Namespace: ns},
		Data: map[string][]byte{"v1": []byte("app-password")}}); err != nil {
		t.Fatal(err)
	}
	ci := instanceIn(ns, "gen", 1, func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.Auth = &cachev1alpha1.AuthSpec{Generate: true}
		ci.Spec.Users = []cachev1alpha1.UserSpec{{Name: "app", PasswordSecret: "app-passwords", Permissions: "~* +@read"}}
	})
	if err := cl.c.Create(ctx, ci); err != nil {
		t.Fatal(err)
	}
	usersFile := &corev1.Secret{}
	eventually(t, "the users file", func() error { return cl.get(t, ns, "gen-users", usersFile) })
	auth := &corev1.Secret{}
	if err := cl.get(t, ns, "gen-auth", auth); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(auth.Data["password"])
	if want := "user default on #" + hex.EncodeToString(sum[:]) + " "; !strings.HasPrefix(string(usersFile.Data["users.acl"]), want) {
		t.Errorf("the users file's first version:\n%s\nwant it to start with %q", usersFile.Data["users.acl"], want)
	}
}

// Every instance, with or without auth and spec.users, gets the benchmark Jobs' user live: its
// password in a Secret of its own (the one the Jobs mount), and on a real server (standing in for
// the pod) the rules that keep it to the bench space's keys and commands. A user made by hand on
// an instance without spec.users is left alone; a password emptied by hand is replaced.
func TestBenchUserIsSetLiveAndConfined(t *testing.T) {
	cl := startEnv(t)
	ns := cl.namespace(t)
	ctx := context.Background()
	addr := startTestServerWith(t)
	admin := redis.NewClient(&redis.Options{Addr: addr, Protocol: 2, MaxRetries: -1, DisableIdentity: true})
	defer admin.Close()
	if err := admin.Do(ctx, "ACL", "SETUSER", "by-hand", "on", ">hand-pw", "~*", "+@all").Err(); err != nil {
		t.Fatal(err)
	}
	if err := admin.Set(ctx, "user:1", "precious", 0).Err(); err != nil {
		t.Fatal(err)
	}
	ci := instanceIn(ns, "plain", 2, func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.Benchmark.ValidateOnChange = ptr.To(false)
		ci.Spec.Config = map[string]cachev1alpha1.ConfigValue{"hz": "10"}
	})
	if err := cl.c.Create(ctx, ci); err != nil {
		t.Fatal(err)
	}
	cl.waitCondition(t, ns, "plain", cachev1alpha1.ConditionReady, metav1.ConditionFalse, "RollingOut")
	cl.servePod(t, ns, "plain", addr)
	cl.simulateRollout(t, ns, "plain")
	sec := &corev1.Secret{}
	eventually(t, "the bench user's Secret", func() error { return cl.get(t, ns, "plain-bench", sec) })
	password := string(sec.Data["password"])
	if len(password) < 32 {
		t.Fatalf("bench password of %d characters", len(password))
	}
	if ref := metav1.GetControllerOf(sec); ref == nil || ref.Kind != "CacheInstance" || ref.Name != "plain" {
		t.Errorf("the bench Secret's owner %+v: it must go with the instance", sec.OwnerReferences)
	}
	asBench := func(pw string) *redis.Client {
		return redis.NewClient(&redis.Options{Addr: addr, Username: "iocache-bench", Password: pw, Protocol: 2, PoolSize: 1, MaxRetries: -1, DisableIdentity: true})
	}
	eventually(t, "the bench user on the server", func() error {
		c := asBench(password)
		defer c.Close()
		return c.Ping(ctx).Err()
	})
	bc := asBench(password)
	defer bc.Close()
	for _, cmd := range [][]any{{"GET", "user:1"}, {"SET", "user:1", "x"}, {"FLUSHALL"}, {"CONFIG", "SET", "maxmemory", "1"}, {"KEYS", "*"}, {"ACL", "LIST"}, {"SUBSCRIBE", "news"}} {
		if err := bc.Do(ctx, cmd...).Err(); err == nil || !strings.HasPrefix(err.Error(), "NOPERM") {
			t.Errorf("bench user %v: %v, want NOPERM", cmd, err)
		}
	}
	if err := bc.Do(ctx, "BENCHSPACE", "ENTER").Err(); err != nil {
		t.Fatalf("BENCHSPACE ENTER: %v", err)
	}
	if err := bc.Set(ctx, "iocache-bench:key:000000000001", "v", 0).Err(); err != nil {
		t.Errorf("the bench user in the bench space: %v", err)
	}
	if v, err := admin.Get(ctx, "user:1").Result(); v != "precious" || err != nil {
		t.Errorf("user:1 = %q, %v", v, err)
	}
	if n, err := admin.Exists(ctx, "iocache-bench:key:000000000001").Result(); n != 0 || err != nil {
		t.Errorf("the bench space's key is in the user's keyspace: %d %v", n, err)
	}
	if err := admin.Do(ctx, "AUTH", "by-hand", "hand-pw").Err(); err != nil {
		t.Errorf("the user made by hand: %v (an instance without spec.users must leave it alone)", err)
	}

	// Emptied by hand: a new password, live, at the instance's next pass (the operator watches no
	// Secret; a benchmark's hold on the instance is such a pass, here a live change of hz).
	cl.updateSecret(t, ns, "plain-bench", func(s *corev1.Secret) { s.Data["password"] = nil })
	cl.update(t, ns, "plain", func(ci *cachev1alpha1.CacheInstance) {
		ci.Spec.Config = map[string]cachev1alpha1.ConfigValue{"hz": "20"}
	})
	eventually(t, "a new bench password", func() error {
		if err := cl.get(t, ns, "plain-bench", sec); err != nil {
			return err
		}
		if len(sec.Data["password"]) == 0 {
			return fmt.Errorf("still empty")
		}
		c := asBench(string(sec.Data["password"]))
		defer c.Close()
		return c.Ping(ctx).Err()
	})
	old := asBench(password)
	defer old.Close()
	if err := old.Ping(ctx).Err(); err == nil || !strings.HasPrefix(err.Error(), "WRONGPASS") {
		t.Errorf("the replaced password: %v, want WRONGPASS", err)
	}
}

// updateSecret changes a Secret as a user would.
func (cl *cluster) updateSecret(t *testing.T, ns, name string, mutate func(*corev1.Secret)) {
	t.Helper()
	s := &corev1.Secret{}
	if err := cl.get(t, ns, name, s); err != nil {
		t.Fatal(err)
	}
	mutate(s)
	if err := cl.c.Update(context.Background(), s); err != nil {
		t.Fatal(err)
	}
}

// startServerWithACLFile runs iocache-server with the ACL file as the operator rendered it, as a
// pod would start, and returns its address.
func startServerWithACLFile(t *testing.T, acl string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "users.acl")
	if err := os.WriteFile(file, []byte(acl), 0o600); err != nil {
		t.Fatal(err)
	}
	return startTestServerWith(t, "--aclfile", file)
}
