package controllers

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
)

// ACL users (spec.users): each user's passwords come from a Secret of the user's (every key one
// password). The operator hashes them (SHA-256, as Redis's #<hash> rule takes them) into an ACL
// file, users.acl, in a Secret of its own (<instance>-users) that the pods mount and the server
// loads at start (aclfile), so a pod that restarts has its users before it serves. Changes reach
// the running servers live: ACL SETUSER for every user, ACL DELUSER for users no longer listed,
// on each pod, with the rest of the live config (each pod's status records the users' hash next to
// the config's, so a pod is done again when either changes, or when it restarts). The file and the pruning are spec.users' only; the bench user is set live on every
// instance (cacheinstance_benchuser.go). The users' Secrets are read every secretPollInterval: the operator may not list or watch
// Secrets, so a new password is in effect within that time.

// Where the users file is mounted, inside the config volume.
const (
	usersSubdir   = "users"
	usersFileName = "users.acl"
	usersFilePath = configDir + "/" + usersSubdir + "/" + usersFileName
)

// reasonUserSecretMissing is Degraded's reason when a user's Secret or its passwords are missing.
const reasonUserSecretMissing = "UserSecretMissing"

// aclUser is one user as the servers get it: ACL SETUSER <name> <rules...>.
type aclUser struct {
	name  string
	rules []string
}

// usersSecretName is the Secret holding the rendered ACL file.
func usersSecretName(ci *cachev1alpha1.CacheInstance) string { return ci.Name + "-users" }

// hashPassword is the server's #<hash> form of a password.
func hashPassword(password string) string {
	sum := sha256.Sum256([]byte(password))
	return hex.EncodeToString(sum[:])
}

// reconcileUsers puts the bench user (cacheinstance_benchuser.go) and spec.users among the users
// the servers must have; for spec.users it reads their Secrets and renders the ACL file into the
// users Secret. Their hash (usersHash) tells the live step which pods must get them again.
func (r *CacheInstanceReconciler) reconcileUsers(ctx context.Context, inst *instance) (*ctrl.Result, error) {
	benchUser, ok, err := r.benchUser(ctx, inst.CacheInstance)
	if err != nil || !ok {
		return &ctrl.Result{RequeueAfter: conflictRetry}, err
	}
	inst.users = []aclUser{benchUser}
	if inst.Spec.Backup != nil {
		backupUser, ok, err := r.backupUser(ctx, inst.CacheInstance)
		if err != nil || !ok {
			return &ctrl.Result{RequeueAfter: conflictRetry}, err
		}
		inst.users = append(inst.users, backupUser)
	}
	if inst.managesUsers() {
		if res, err := r.readSpecUsers(ctx, inst); res != nil || err != nil {
			return res, err
		}
		// The default user first: an ACL file that left it out would give it no password.
		file := []string{"user default on #" + hashPassword(inst.password) + " ~* &* +@all"}
		for _, u := range inst.users {
			file = append(file, "user "+u.name+" "+strings.Join(u.rules, " "))
		}
		text := strings.Join(file, "\n") + "\n"
		if err := r.Apply(ctx, desiredUsersSecret(inst.CacheInstance, text), client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
			return nil, fmt.Errorf("applying Secret %s: %w", usersSecretName(inst.CacheInstance), err)
		}
		inst.recheckIn(r.secretPoll())
	}
	// A new password or rule changes the hash the pods are verified against: the live step then
	// applies the users to each of them.
	h := sha256.New()
	for _, u := range inst.users {
		h.Write([]byte("user " + u.name + " " + strings.Join(u.rules, " ") + "\n"))
	}
	inst.usersHash = hex.EncodeToString(h.Sum(nil)[:8])
	return nil, nil
}

// managesUsers is true when the operator owns the servers' ACL users (spec.users, which needs
// spec.auth): it renders the users file and deletes users nobody listed. Otherwise it only adds
// its own and leaves users made by hand alone.
func (i *instance) managesUsers() bool { return len(i.Spec.Users) > 0 && i.Spec.Auth != nil }

// readSpecUsers appends spec.users to inst.users, sorted by name, each with the hashes of the
// passwords in its Secret.
func (r *CacheInstanceReconciler) readSpecUsers(ctx context.Context, inst *instance) (*ctrl.Result, error) {
	sorted := slices.Clone(inst.Spec.Users)
	slices.SortFunc(sorted, func(a, b cachev1alpha1.UserSpec) int { return strings.Compare(a.Name, b.Name) })
	for _, u := range sorted {
		var sec corev1.Secret
		err := r.Get(ctx, client.ObjectKey{Namespace: inst.Namespace, Name: u.PasswordSecret}, &sec)
		switch {
		case apierrors.IsNotFound(err):
			return r.userSecretMissing(inst, fmt.Sprintf("Secret %s of user %s does not exist: create it with one password per key", u.PasswordSecret, u.Name))
		case err != nil:
			return nil, fmt.Errorf("reading Secret %s of user %s: %w", u.PasswordSecret, u.Name, err)
		}
		var hashes []string
		for _, v := range sec.Data {
			// As requirepass-file is read: a trailing line break is not part of the password.
			if p := strings.TrimRight(string(v), "\r\n"); p != "" {
				hashes = append(hashes, "#"+hashPassword(p))
			}
		}
		if len(hashes) == 0 {
			return r.userSecretMissing(inst, fmt.Sprintf("Secret %s of user %s holds no password: put one password in each key", u.PasswordSecret, u.Name))
		}
		slices.Sort(hashes)
		state := "on"
		if !u.IsEnabled() {
			state = "off"
		}
		rules := append([]string{state}, hashes...)
		rules = append(rules, strings.Fields(u.Permissions)...)
		inst.users = append(inst.users, aclUser{name: u.Name, rules: rules})
	}
	return nil, nil
}

func (r *CacheInstanceReconciler) userSecretMissing(inst *instance, msg string) (*ctrl.Result, error) {
	inst.block(reasonUserSecretMissing, msg)
	r.Recorder.Eventf(inst.CacheInstance, nil, corev1.EventTypeWarning, reasonUserSecretMissing, "ReadSecret", "%s", msg)
	return &ctrl.Result{RequeueAfter: r.secretPoll()}, nil
}

// desiredUsersSecret holds the rendered ACL file: password hashes only.
func desiredUsersSecret(ci *cachev1alpha1.CacheInstance, text string) *corev1ac.SecretApplyConfiguration {
	return corev1ac.Secret(usersSecretName(ci), ci.Namespace).
		WithLabels(objectLabels(ci)).
		WithOwnerReferences(ownerReference(ci)).
		WithType(corev1.SecretTypeOpaque).
		WithData(map[string][]byte{usersFileName: []byte(text)})
}

// applyUsers brings a server's users to the listed ones: ACL SETUSER with reset and the whole
// rule set for each (idempotent; connections stay and follow the new rules) and, with prune, ACL
// DELUSER for the others but default and the operator's own. It returns the changes, as words for
// the event.
func applyUsers(ctx context.Context, addr string, creds serverCreds, users []aclUser, prune bool) ([]string, error) {
	rdb := serverClient(addr, creds)
	defer func() { _ = rdb.Close() }()
	existing, err := rdb.Do(ctx, "ACL", "USERS").StringSlice()
	if err != nil {
		return nil, fmt.Errorf("ACL USERS: %w", err)
	}
	var changes, set []string
	listed := map[string]bool{"default": true}
	for _, u := range users {
		listed[u.name] = true
		args := []any{"ACL", "SETUSER", u.name, "reset"}
		for _, r := range u.rules {
			args = append(args, r)
		}
		if err := rdb.Do(ctx, args...).Err(); err != nil {
			return nil, fmt.Errorf("ACL SETUSER %s: %w", u.name, err)
		}
		set = append(set, u.name)
	}
	changes = append(changes, "ACL users set: "+strings.Join(set, ", "))
	for _, name := range existing {
		if !prune || listed[name] || isReservedUser(name) {
			continue
		}
		if err := rdb.Do(ctx, "ACL", "DELUSER", name).Err(); err != nil {
			return nil, fmt.Errorf("ACL DELUSER %s: %w", name, err)
		}
		changes = append(changes, "user "+name+" removed")
	}
	return changes, nil
}
