package controllers

import (
	"context"
	"crypto/rand"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
)

// secretPollInterval is how often a missing auth Secret is looked for again. The operator may only
// get and create Secrets (it never lists or watches them, so it never holds every Secret of the
// cluster in memory), hence no event tells it when a user creates one.
const secretPollInterval = 30 * time.Second

// generatePassword returns 256 random bits as 52 base32 characters: nothing to quote in a file, a
// URL or a shell.
func generatePassword() string { return rand.Text() + rand.Text() }

// desiredSecret is the Secret the operator creates for auth.generate. Its content is written once
// and never touched again, so a running server and its clients keep agreeing on the password.
func desiredSecret(ci *cachev1alpha1.CacheInstance, password string) *corev1.Secret {
	return &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{
			Name:            ci.Spec.Auth.ExistingSecret,
			Namespace:       ci.Namespace,
			Labels:          objectLabels(ci),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ci, cachev1alpha1.GroupVersion.WithKind("CacheInstance"))},
		},
		Type: corev1.SecretTypeOpaque,
		Data: map[string][]byte{ci.Spec.Auth.Key: []byte(password)},
	}
}

// reconcileSecret makes sure the password file the server reads will exist: it creates the Secret
// for auth.generate, and otherwise reports a Secret or key that is missing, since the pod could not
// start without it. The password itself is never logged, recorded or copied.
func (r *CacheInstanceReconciler) reconcileSecret(ctx context.Context, inst *instance) (*ctrl.Result, error) {
	a := inst.Spec.Auth
	if a == nil {
		return nil, nil
	}
	var sec corev1.Secret
	err := r.Get(ctx, client.ObjectKey{Namespace: inst.Namespace, Name: a.ExistingSecret}, &sec)
	switch {
	case apierrors.IsNotFound(err) && a.Generate:
		password := generatePassword()
		err := r.Create(ctx, desiredSecret(inst.CacheInstance, password))
		if apierrors.IsAlreadyExists(err) {
			// Created since the read (a concurrent pass): look at that one next pass. Nothing that
			// needs the password (the users file, the live step) may run on a guess: stop here.
			return &ctrl.Result{RequeueAfter: conflictRetry}, nil
		}
		if err != nil {
			return nil, fmt.Errorf("creating Secret %s: %w", a.ExistingSecret, err)
		}
		r.Recorder.Eventf(inst.CacheInstance, nil, corev1.EventTypeNormal, "SecretCreated", "CreateSecret",
			"Created Secret %s with a random password in key %s", a.ExistingSecret, a.Key)
		inst.password = password
		return nil, nil
	case apierrors.IsNotFound(err):
		return r.secretMissing(inst, fmt.Sprintf("Secret %s does not exist: create it with the password in key %s, or set auth.generate: true", a.ExistingSecret, a.Key))
	case err != nil:
		return nil, fmt.Errorf("reading Secret %s: %w", a.ExistingSecret, err)
	case len(sec.Data[a.Key]) == 0:
		return r.secretMissing(inst, fmt.Sprintf("Secret %s has no key %s (or it is empty): put the password there, or set auth.key", a.ExistingSecret, a.Key))
	}
	// As the server reads requirepass-file: a trailing line break is not part of it.
	inst.password = strings.TrimRight(string(sec.Data[a.Key]), "\r\n")
	return nil, nil
}

func (r *CacheInstanceReconciler) secretMissing(inst *instance, msg string) (*ctrl.Result, error) {
	inst.block(reasonSecretMissing, msg)
	r.Recorder.Eventf(inst.CacheInstance, nil, corev1.EventTypeWarning, "SecretMissing", "ReadSecret", "%s", msg)
	return &ctrl.Result{RequeueAfter: r.secretPoll()}, nil
}
