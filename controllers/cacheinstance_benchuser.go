package controllers

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
	"github.com/iocache/iocache/server/bench"
)

// The benchmark Jobs' own ACL user (bench.UserName, with bench.ACLRules): the Jobs used to mount
// the instance's password, the default user's, which reads and changes every key and the server's
// configuration. Now each instance has a Secret <instance>-bench with a password of the bench
// user's only; the live step creates the user on every server with ACL SETUSER (again after a
// restart), so no pod template changes and no pod restarts for it. The user may send the
// benchmark's few commands on keys under bench.KeyPrefix, in the bench space: a leaked password
// from a benchmark pod reads no user data and changes no setting.

// benchSecretKey is the key of the bench user's password in its Secret.
const benchSecretKey = "password"

// benchSecretName is the Secret with the bench user's password.
func benchSecretName(ci *cachev1alpha1.CacheInstance) string { return ci.Name + "-bench" }

// isReservedUser is true for the users the operator keeps for itself: spec.users cannot name them
// and the live step never deletes them.
func isReservedUser(name string) bool { return strings.HasPrefix(name, "iocache-") }

// benchUser reads, or creates once, the bench user's Secret and returns the user as the servers
// get it. ok is false when a concurrent pass created the Secret first: the caller retries.
func (r *CacheInstanceReconciler) benchUser(ctx context.Context, ci *cachev1alpha1.CacheInstance) (u aclUser, ok bool, err error) {
	return r.jobUser(ctx, ci, benchSecretName(ci), bench.UserName, bench.ACLRules())
}

// jobUser reads, or creates once, the Secret with the password of one of the operator's own
// users (the benchmark or the backup Jobs') and returns the user with its rules. ok is false when
// a concurrent pass created the Secret first: the caller retries.
func (r *CacheInstanceReconciler) jobUser(ctx context.Context, ci *cachev1alpha1.CacheInstance, secretName, user string, acl []string) (u aclUser, ok bool, err error) {
	var sec corev1.Secret
	err = r.Get(ctx, client.ObjectKey{Namespace: ci.Namespace, Name: secretName}, &sec)
	password := ""
	switch {
	case apierrors.IsNotFound(err):
		password = generatePassword()
		err = r.Create(ctx, desiredJobUserSecret(ci, secretName, password))
		if apierrors.IsAlreadyExists(err) {
			return aclUser{}, false, nil
		}
		if err != nil {
			return aclUser{}, false, fmt.Errorf("creating Secret %s: %w", secretName, err)
		}
	case err != nil:
		return aclUser{}, false, fmt.Errorf("reading Secret %s: %w", secretName, err)
	default:
		password = strings.TrimRight(string(sec.Data[benchSecretKey]), "\r\n")
		if password == "" {
			// Emptied by hand: a new password, which the live step and the next Job pick up.
			password = generatePassword()
			orig := sec.DeepCopy()
			sec.Data = map[string][]byte{benchSecretKey: []byte(password)}
			if err := r.Patch(ctx, &sec, client.MergeFrom(orig)); err != nil {
				return aclUser{}, false, fmt.Errorf("writing Secret %s: %w", secretName, err)
			}
		}
	}
	rules := append([]string{"on", "#" + hashPassword(password)}, acl...)
	return aclUser{name: user, rules: rules}, true, nil
}

// desiredJobUserSecret holds a job user's password, written once.
func desiredJobUserSecret(ci *cachev1alpha1.CacheInstance, name, password string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:            name,
			Namespace:       ci.Namespace,
			Labels:          objectLabels(ci),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ci, cachev1alpha1.GroupVersion.WithKind("CacheInstance"))},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{benchSecretKey: []byte(password)},
	}
}
