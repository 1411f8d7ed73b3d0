package controllers

import (
	"bytes"
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
	"github.com/iocache/iocache/server/bench"
	"github.com/iocache/iocache/server/tlschain"
)

// spec.tls: the certificate the servers serve, where it comes from (a Secret the user provides,
// or a cert-manager Certificate the operator asks for), what the operator reads from it (the CA
// and, for authClients Required, the key pair it presents itself), and how a renewed certificate
// reaches the running servers without a restart.
//
// The operator may only get Secrets, never list or watch them (see NewManager), so no event says
// that the TLS Secret changed: an instance with spec.tls is looked at again every tlsRecheck, and a
// renewal (cert-manager renews a third of the lifetime before expiry) is noticed within that. The
// kubelet then updates the projected files in the pods within about a minute; the server reads
// its certificate files only when told to (CONFIG SET of a tls-* directive, even to the same path,
// as Redis does), so the operator compares, by a TLS handshake, the certificate each pod serves
// with the Secret's and has a pod that serves another one load its files again.

// certificateGVK is cert-manager's Certificate, handled as unstructured data: the operator neither
// imports cert-manager nor needs its CRD to start.
var certificateGVK = schema.GroupVersionKind{Group: "cert-manager.io", Version: "v1", Kind: "Certificate"}

const (
	// tlsRecheck is how often an instance with spec.tls reads its Secret again, for a renewal.
	tlsRecheck = 5 * time.Minute
	// tlsRotationRetry is how soon a pod that does not serve the Secret's certificate yet is
	// looked at again: the kubelet updates mounted Secrets within about a minute.
	tlsRotationRetry = 15 * time.Second
	// certificateIssueWait is how soon a missing cert-manager Secret is looked for again: issuing
	// usually takes seconds.
	certificateIssueWait = 10 * time.Second
	// certManagerRecheck is how often an instance waits for cert-manager's CRD to appear.
	certManagerRecheck = 2 * time.Minute
	// expiringWithin is when a certificate counts as expiring: less than this, or than a quarter of
	// its lifetime, is left.
	expiringWithin = 7 * 24 * time.Hour
)

// Reasons of TLSReady and CertificateExpiring (api/v1alpha1 documents them).
const (
	reasonCertificateServed  = "CertificateServed"
	reasonTLSSecretMissing   = "SecretMissing"
	reasonTLSSecretInvalid   = "SecretInvalid"
	reasonCertificateExpired = "CertificateExpired"
	reasonCertManagerMissing = "CertManagerMissing"
	reasonRotating           = "Rotating"
	reasonNotChecked         = "NotChecked"
	reasonExpiresSoon        = "ExpiresSoon"
	reasonNotExpiring        = "NotExpiring"
	// reasonCertificateExpiring is the Warning event when CertificateExpiring becomes True.
	reasonCertificateExpiring = "CertificateExpiring"
)

// tlsState is what the TLS step learned in one pass.
type tlsState struct {
	secretName string
	// leaf is the server certificate of the Secret's tls.crt; fingerprint the SHA-256 of its DER.
	leaf        *x509.Certificate
	fingerprint [32]byte
	// client is the operator's own TLS configuration: the server's chain checked against ca.crt
	// (not its name: the operator dials pod IPs), and the Secret's key pair presented when
	// authClients is Required. Nil when the Secret could not be used.
	client *tls.Config
	// problem is why TLSReady is False (reason, message), or nil.
	problem *blocker
	// served counts the ready pods found serving leaf; rotating names those that do not yet.
	served   int32
	rotating []string
	checked  bool
}

// creds is how the operator reaches this instance's servers.
func (i *instance) creds() serverCreds {
	c := serverCreds{password: i.password}
	if i.tls != nil {
		c.tls = i.tls.client
	}
	return c
}

// certificateDNSNames are the names the cert-manager certificate is issued for: the client
// Service, the replicas Service and each pod's name under the headless Service, short and long.
func certificateDNSNames(ci *cachev1alpha1.CacheInstance) []string {
	var names []string
	for _, svc := range []string{ci.Name, replicasServiceName(ci)} {
		names = append(names, svc, svc+"."+ci.Namespace, svc+"."+ci.Namespace+".svc", svc+"."+ci.Namespace+".svc.cluster.local")
	}
	h := headlessName(ci) + "." + ci.Namespace + ".svc"
	return append(names, "*."+h, "*."+h+".cluster.local")
}

// desiredCertificate is the cert-manager Certificate for spec.tls.certManager. The certificate is
// good for client authentication too: replicas and the operator present it under authClients
// Required, and a replica always presents it to its primary.
func desiredCertificate(ci *cachev1alpha1.CacheInstance) *unstructured.Unstructured {
	dns := []any{}
	for _, n := range certificateDNSNames(ci) {
		dns = append(dns, n)
	}
	return certificateObject(ci, ci.TLSSecretName(), map[string]any{
		"dnsNames": dns,
		"usages":   []any{"digital signature", "key encipherment", "server auth", "client auth"},
	})
}

// benchCertificateName is the benchmark Jobs' client certificate (and its Secret) under
// spec.tls.certManager with authClients Required: the Jobs present it, not the servers' own, so
// the servers' private key is mounted in no benchmark pod.
func benchCertificateName(ci *cachev1alpha1.CacheInstance) string { return ci.Name + "-bench-tls" }

// benchClientCertificate is true when the Jobs get a client certificate of their own: cert-manager
// can issue one from the instance's issuer. A certificate from a Secret of the user's comes
// without its CA's key, so there the Jobs present the server's certificate.
func benchClientCertificate(ci *cachev1alpha1.CacheInstance) bool {
	t := ci.Spec.TLS
	return t != nil && t.CertManager != nil && t.AuthClients == cachev1alpha1.TLSAuthClientsRequired
}

// desiredBenchCertificate is the Jobs' client certificate: client authentication only, named for
// the bench user.
func desiredBenchCertificate(ci *cachev1alpha1.CacheInstance) *unstructured.Unstructured {
	return certificateObject(ci, benchCertificateName(ci), map[string]any{
		"commonName": bench.UserName,
		"usages":     []any{"digital signature", "key encipherment", "client auth"},
	})
}

// certificateObject is a Certificate of the instance's issuer named name, issued into the Secret
// of the same name, with the fields of spec added.
func certificateObject(ci *cachev1alpha1.CacheInstance, name string, spec map[string]any) *unstructured.Unstructured {
	m := ci.Spec.TLS.CertManager
	labels := map[string]any{}
	for k, v := range objectLabels(ci) {
		labels[k] = v
	}
	spec["secretName"] = name
	spec["issuerRef"] = map[string]any{"name": m.IssuerRef.Name, "kind": m.IssuerRef.Kind, "group": m.IssuerRef.Group}
	// A fresh key at every renewal, and labels on the Secret that say whose it is.
	spec["privateKey"] = map[string]any{"algorithm": "ECDSA", "size": int64(256), "rotationPolicy": "Always"}
	spec["secretTemplate"] = map[string]any{"labels": labels}
	if m.Duration != nil {
		spec["duration"] = m.Duration.Duration.String()
	}
	if m.RenewBefore != nil {
		spec["renewBefore"] = m.RenewBefore.Duration.String()
	}
	ref := metav1.NewControllerRef(ci, cachev1alpha1.GroupVersion.WithKind("CacheInstance"))
	u := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{
			"name":      name,
			"namespace": ci.Namespace,
			"labels":    labels,
			"ownerReferences": []any{map[string]any{
				"apiVersion": ref.APIVersion, "kind": ref.Kind, "name": ref.Name, "uid": string(ref.UID),
				"controller": true, "blockOwnerDeletion": true,
			}},
		},
		"spec": spec,
	}}
	u.SetGroupVersionKind(certificateGVK)
	return u
}

// reconcileTLS makes sure the certificate the pods mount exists and is usable: it applies the
// cert-manager Certificate when asked, reads the Secret, checks its three keys, and prepares the
// operator's own TLS configuration. A Secret the pods could not start with (missing, a key
// missing, a key that does not match) stops the pass, as a missing auth Secret does. Nothing of
// the Secret is logged or recorded but the certificate's public facts.
func (r *CacheInstanceReconciler) reconcileTLS(ctx context.Context, inst *instance) (*ctrl.Result, error) {
	t := inst.Spec.TLS
	if t == nil {
		forgetTLSExpiry(inst.Namespace, inst.Name)
		return nil, nil
	}
	st := &tlsState{secretName: inst.TLSSecretName()}
	inst.tls = st
	inst.recheckIn(tlsRecheck)
	if t.CertManager != nil {
		installed, err := r.apiInstalled(certificateGVK)
		if err != nil {
			return nil, fmt.Errorf("looking up the cert-manager Certificate API: %w", err)
		}
		if !installed {
			return r.tlsBlocked(inst, reasonCertManagerMissing, certManagerRecheck, true,
				"spec.tls.certManager needs cert-manager, but its Certificate CRD (cert-manager.io/v1) is not installed: install cert-manager, or use spec.tls.secretName with a Secret of your own")
		}
		certificates := []*unstructured.Unstructured{desiredCertificate(inst.CacheInstance)}
		if benchClientCertificate(inst.CacheInstance) {
			certificates = append(certificates, desiredBenchCertificate(inst.CacheInstance))
		}
		for _, c := range certificates {
			if err := r.Apply(ctx, client.ApplyConfigurationFromUnstructured(c), client.FieldOwner(fieldOwner), client.ForceOwnership); err != nil {
				return nil, fmt.Errorf("applying cert-manager Certificate %s: %w", c.GetName(), err)
			}
		}
	}
	var sec corev1.Secret
	err := r.Get(ctx, client.ObjectKey{Namespace: inst.Namespace, Name: st.secretName}, &sec)
	switch {
	case apierrors.IsNotFound(err) && t.CertManager != nil:
		return r.tlsBlocked(inst, reasonTLSSecretMissing, certificateIssueWait, false, fmt.Sprintf(
			"Waiting for cert-manager to issue Certificate %s into Secret %s (kubectl describe certificate %s -n %s says how far it is)",
			st.secretName, st.secretName, st.secretName, inst.Namespace))
	case apierrors.IsNotFound(err):
		return r.tlsBlocked(inst, reasonTLSSecretMissing, secretPollInterval, true, fmt.Sprintf(
			"Secret %s does not exist: create it with tls.crt, tls.key and ca.crt (cert-manager's layout: kubectl create secret generic %s --from-file=tls.crt --from-file=tls.key --from-file=ca.crt)",
			st.secretName, st.secretName))
	case err != nil:
		return nil, fmt.Errorf("reading Secret %s: %w", st.secretName, err)
	}
	leaf, cfg, err := parseTLSSecret(sec.Data, t.AuthClients == cachev1alpha1.TLSAuthClientsRequired)
	if err != nil {
		return r.tlsBlocked(inst, reasonTLSSecretInvalid, secretPollInterval, true, fmt.Sprintf("Secret %s: %v", st.secretName, err))
	}
	st.leaf, st.client, st.fingerprint = leaf, cfg, sha256.Sum256(leaf.Raw)
	setTLSExpiry(inst.Namespace, inst.Name, leaf.NotAfter)
	if now := time.Now(); now.After(leaf.NotAfter) {
		// The pods can still start with it, and the rest of the instance still needs its passes:
		// reported, not a stop.
		msg := fmt.Sprintf("The certificate in Secret %s expired at %s: clients that check it refuse the server; renew it",
			st.secretName, leaf.NotAfter.UTC().Format(time.RFC3339))
		st.problem = &blocker{reason: reasonCertificateExpired, message: msg}
		inst.block(reasonCertificateExpired, msg)
	}
	return nil, nil
}

// tlsBlocked stops the pass because the pods cannot use the TLS Secret yet, and looks again after
// wait. Waiting for cert-manager to issue is no trouble worth a Warning; the rest is.
func (r *CacheInstanceReconciler) tlsBlocked(inst *instance, reason string, wait time.Duration, warn bool, msg string) (*ctrl.Result, error) {
	inst.tls.problem = &blocker{reason: reason, message: msg}
	inst.block(reason, msg)
	if warn {
		r.Recorder.Eventf(inst.CacheInstance, nil, corev1.EventTypeWarning, reason, "ReadTLSSecret", "%s", msg)
	}
	return &ctrl.Result{RequeueAfter: wait}, nil
}

// parseTLSSecret checks a Secret in cert-manager's layout and returns its server certificate and
// the operator's client configuration. The errors say what to fix, never what the keys hold.
func parseTLSSecret(data map[string][]byte, presentCert bool) (*x509.Certificate, *tls.Config, error) {
	for _, k := range []string{tlsCertKey, tlsKeyKey, tlsCAKey} {
		if len(bytes.TrimSpace(data[k])) == 0 {
			return nil, nil, fmt.Errorf("key %s is missing or empty; the Secret needs tls.crt, tls.key and ca.crt", k)
		}
	}
	pair, err := tls.X509KeyPair(data[tlsCertKey], data[tlsKeyKey])
	if err != nil {
		return nil, nil, fmt.Errorf("tls.crt and tls.key do not make a key pair (a PEM certificate and its unencrypted PEM key): %s", keyPairError(err))
	}
	leaf, err := x509.ParseCertificate(pair.Certificate[0])
	if err != nil {
		return nil, nil, fmt.Errorf("tls.crt: %w", err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(data[tlsCAKey]) {
		return nil, nil, errors.New("ca.crt holds no PEM certificate")
	}
	inter := x509.NewCertPool()
	for _, der := range pair.Certificate[1:] {
		if c, err := x509.ParseCertificate(der); err == nil {
			inter.AddCert(c)
		}
	}
	// Whether ca.crt signs the certificate, apart from its expiry, which is reported on its own.
	at := time.Now()
	if at.After(leaf.NotAfter) {
		at = leaf.NotAfter.Add(-time.Second)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, Intermediates: inter, CurrentTime: at,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		return nil, nil, fmt.Errorf("ca.crt does not verify tls.crt: %v", err)
	}
	cfg := &tls.Config{
		MinVersion: tls.VersionTLS12,
		// The operator dials pod IPs, which a certificate for the Service names does not carry:
		// the chain is checked against ca.crt in VerifyPeerCertificate, without the name, as
		// Redis's replicas and the probes check it.
		InsecureSkipVerify:    true, //nolint:gosec // verified below
		VerifyPeerCertificate: tlschain.Verifier(roots, true),
	}
	if presentCert {
		cfg.Certificates = []tls.Certificate{pair}
	}
	return leaf, cfg, nil
}

// keyPairError is crypto/tls's reason without anything it quotes from the input.
func keyPairError(err error) string {
	s := err.Error()
	if i := strings.Index(s, ";"); i > 0 {
		s = s[:i]
	}
	return s
}

// reconcileTLSRotation checks that every ready pod serves the Secret's certificate, and has one
// that serves another (the Secret was renewed since it loaded its files) load them again with
// CONFIG SET of the same paths, which rebuilds the server's TLS material all or nothing:
// established connections keep their session, new ones get the new certificate. Before the
// kubelet has updated the pod's files the reload only reloads the old ones; the pod is then
// looked at again shortly.
func (r *CacheInstanceReconciler) reconcileTLSRotation(ctx context.Context, inst *instance) (*ctrl.Result, error) {
	st := inst.tls
	if st == nil || st.client == nil || inst.rollout == nil {
		return nil, nil
	}
	pods := &corev1.PodList{}
	if err := r.List(ctx, pods, client.InNamespace(inst.Namespace), client.MatchingLabels(selectorLabels(inst.CacheInstance))); err != nil {
		return nil, fmt.Errorf("listing the instance's pods: %w", err)
	}
	st.checked = true
	for i := range pods.Items {
		pod := &pods.Items[i]
		if !servingCurrentTemplate(pod, inst.config) {
			continue
		}
		addr := r.serverAddress(pod)
		fp, err := servedFingerprint(ctx, addr, st.client)
		if err == nil && fp == st.fingerprint {
			st.served++
			continue
		}
		if err == nil {
			err = reloadTLSFiles(ctx, addr, inst.creds())
		}
		if err == nil {
			if fp, err = servedFingerprint(ctx, addr, st.client); err == nil && fp == st.fingerprint {
				st.served++
				r.Recorder.Eventf(inst.CacheInstance, nil, corev1.EventTypeNormal, "CertificateReloaded", "ReloadTLS",
					"Pod %s serves the renewed certificate from Secret %s (valid until %s), without a restart",
					pod.Name, st.secretName, st.leaf.NotAfter.UTC().Format(time.RFC3339))
				continue
			}
		}
		why := "it still serves the previous certificate (the kubelet has not updated its files yet)"
		if err != nil {
			why = err.Error()
		}
		st.rotating = append(st.rotating, fmt.Sprintf("%s: %s", pod.Name, why))
	}
	if len(st.rotating) > 0 {
		inst.recheckIn(tlsRotationRetry)
	}
	return nil, nil
}

// servedFingerprint is the SHA-256 of the certificate a TLS handshake with addr is served.
func servedFingerprint(ctx context.Context, addr string, cfg *tls.Config) ([32]byte, error) {
	d := tls.Dialer{NetDialer: &net.Dialer{Timeout: liveDialTimeout}, Config: cfg}
	ctx, cancel := context.WithTimeout(ctx, liveDialTimeout)
	defer cancel()
	c, err := d.DialContext(ctx, "tcp", addr)
	if err != nil {
		return [32]byte{}, fmt.Errorf("TLS handshake: %w", err)
	}
	defer func() { _ = c.Close() }()
	certs := c.(*tls.Conn).ConnectionState().PeerCertificates
	if len(certs) == 0 {
		return [32]byte{}, errors.New("TLS handshake: no certificate served")
	}
	return sha256.Sum256(certs[0].Raw), nil
}

// reloadTLSFiles has a server read its certificate files again: CONFIG SET of the paths it has
// (those the volume mounts), which rebuilds its TLS material even when they are unchanged.
func reloadTLSFiles(ctx context.Context, addr string, creds serverCreds) error {
	rdb := serverClient(addr, creds)
	defer func() { _ = rdb.Close() }()
	names := []string{"tls-cert-file", "tls-key-file", "tls-ca-cert-file"}
	have, err := rdb.ConfigGet(ctx, "tls-*-file").Result()
	if err != nil {
		return fmt.Errorf("CONFIG GET of the certificate files: %w", err)
	}
	set := []any{"CONFIG", "SET"}
	for _, n := range names {
		if have[n] == "" {
			return fmt.Errorf("the server has no %s", n)
		}
		set = append(set, n, have[n])
	}
	if err := rdb.Do(ctx, set...).Err(); err != nil {
		return fmt.Errorf("CONFIG SET of the certificate files: %w", err)
	}
	return nil
}

// apiInstalled asks the RESTMapper, which asks discovery again on a miss, so a CRD installed after
// the operator started is found.
func (r *CacheInstanceReconciler) apiInstalled(gvk schema.GroupVersionKind) (bool, error) {
	_, err := r.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		return false, nil
	}
	return err == nil, err
}

// certificateExpiring is true when less than expiringWithin, or a quarter of the certificate's
// lifetime, is left: below the third where cert-manager renews by default.
func certificateExpiring(leaf *x509.Certificate, now time.Time) bool {
	within := min(expiringWithin, leaf.NotAfter.Sub(leaf.NotBefore)/4)
	return leaf.NotAfter.Sub(now) < within
}

// setTLSStatus writes status.tls and the TLSReady and CertificateExpiring conditions; without
// spec.tls it removes them.
func setTLSStatus(st *cachev1alpha1.CacheInstanceStatus, inst *instance, now time.Time,
	set func(typ string, status metav1.ConditionStatus, reason, format string, args ...any)) {
	s := inst.tls
	if inst.Spec.TLS == nil {
		st.TLS = nil
		meta.RemoveStatusCondition(&st.Conditions, cachev1alpha1.ConditionTLSReady)
		meta.RemoveStatusCondition(&st.Conditions, cachev1alpha1.ConditionCertificateExpiring)
		return
	}
	if s == nil {
		// The pass stopped before the TLS step (an invalid spec): keep what an earlier pass found.
		if meta.FindStatusCondition(st.Conditions, cachev1alpha1.ConditionTLSReady) == nil {
			set(cachev1alpha1.ConditionTLSReady, metav1.ConditionUnknown, reasonNotChecked, "The TLS Secret has not been read yet")
		}
		return
	}
	if s.leaf != nil {
		st.TLS = &cachev1alpha1.TLSStatus{
			SecretName: s.secretName,
			Subject:    s.leaf.Subject.String(),
			NotBefore:  &metav1.Time{Time: s.leaf.NotBefore},
			NotAfter:   &metav1.Time{Time: s.leaf.NotAfter},
			ServedBy:   s.served,
		}
		if certificateExpiring(s.leaf, now) {
			set(cachev1alpha1.ConditionCertificateExpiring, metav1.ConditionTrue, reasonExpiresSoon,
				"The certificate in Secret %s expires at %s and has not been renewed",
				s.secretName, s.leaf.NotAfter.UTC().Format(time.RFC3339))
		} else {
			set(cachev1alpha1.ConditionCertificateExpiring, metav1.ConditionFalse, reasonNotExpiring,
				"The certificate in Secret %s is valid until %s", s.secretName, s.leaf.NotAfter.UTC().Format(time.RFC3339))
		}
	}
	switch {
	case s.problem != nil:
		set(cachev1alpha1.ConditionTLSReady, metav1.ConditionFalse, s.problem.reason, "%s", s.problem.message)
	case len(s.rotating) > 0:
		set(cachev1alpha1.ConditionTLSReady, metav1.ConditionFalse, reasonRotating,
			"Not every pod serves the certificate of Secret %s (valid until %s) yet: %s",
			s.secretName, s.leaf.NotAfter.UTC().Format(time.RFC3339), strings.Join(s.rotating, "; "))
	case !s.checked || s.served == 0:
		set(cachev1alpha1.ConditionTLSReady, metav1.ConditionUnknown, reasonNotChecked,
			"The certificate of Secret %s is valid until %s; no ready pod has been checked yet", s.secretName, s.leaf.NotAfter.UTC().Format(time.RFC3339))
	default:
		set(cachev1alpha1.ConditionTLSReady, metav1.ConditionTrue, reasonCertificateServed,
			"%d ready pods serve the certificate of Secret %s (%s), valid until %s",
			s.served, s.secretName, s.leaf.Subject.String(), s.leaf.NotAfter.UTC().Format(time.RFC3339))
	}
}

// newlyExpiring is the CertificateExpiring message when the condition has just become True (for a
// Warning event), else "".
func newlyExpiring(was bool, conditions []metav1.Condition) string {
	c := meta.FindStatusCondition(conditions, cachev1alpha1.ConditionCertificateExpiring)
	if was || c == nil || c.Status != metav1.ConditionTrue {
		return ""
	}
	return c.Message
}
