package v1alpha1

import metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

// TLSAuthClients is whether clients must present a certificate (Redis's tls-auth-clients).
// +kubebuilder:validation:Enum=None;Optional;Required
type TLSAuthClients string

const (
	// TLSAuthClientsNone asks clients for no certificate (tls-auth-clients no): TLS encrypts and
	// proves the server to the client, and spec.auth's password authenticates the client.
	TLSAuthClientsNone TLSAuthClients = "None"
	// TLSAuthClientsOptional checks a certificate a client presents, but lets in clients without
	// one (tls-auth-clients optional).
	TLSAuthClientsOptional TLSAuthClients = "Optional"
	// TLSAuthClientsRequired refuses clients without a certificate signed by the Secret's CA
	// (tls-auth-clients yes).
	TLSAuthClientsRequired TLSAuthClients = "Required"
)

// TLSSpec serves the instance over TLS only: the client port (6379) speaks TLS and no plaintext
// port stays open (port 0, tls-port 6379), replicas follow their primary over TLS, and everything
// the operator runs against the server (probes, the preStop hook, its own connection, benchmark
// Jobs) speaks TLS too. The metrics port stays plain HTTP: it serves no key, value or secret.
// +kubebuilder:validation:XValidation:rule="has(self.secretName) != has(self.certManager)",message="tls needs exactly one of secretName (a Secret you provide, with tls.crt, tls.key and ca.crt) or certManager (the operator asks cert-manager for the certificate)"
type TLSSpec struct {
	// SecretName names a Secret in the instance's namespace in cert-manager's layout: tls.crt (the
	// server's certificate chain), tls.key (its private key) and ca.crt (the CA that signed it,
	// which probes, replicas, benchmark Jobs and the operator verify the server against). The pods
	// mount it; when it changes (a renewal), the operator has the running servers load the new
	// files, without a restart.
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +optional
	SecretName string `json:"secretName,omitempty"`

	// CertManager has the operator create a cert-manager Certificate named <instance>-tls for the
	// instance's Service names, written by cert-manager into the Secret <instance>-tls. It needs
	// cert-manager's CRDs in the cluster, and an issuer that fills ca.crt (a CA or self-signed
	// issuer, Vault, ...).
	// +optional
	CertManager *CertManagerSpec `json:"certManager,omitempty"`

	// AuthClients is whether clients must present a certificate: None (the default), Optional or
	// Required (Redis's tls-auth-clients no, optional, yes). Redis defaults to requiring one; the
	// operator does not, because every application would then need a certificate from the same CA,
	// and spec.auth's password already authenticates clients. With Required, probes, replicas and
	// the operator present the server's own certificate, which is therefore issued for client
	// authentication too (cert-manager usages "server auth" and "client auth"); benchmark Jobs
	// present a client certificate of their own under certManager (Certificate <name>-bench-tls),
	// the server's under secretName.
	// +kubebuilder:default=None
	// +optional
	AuthClients TLSAuthClients `json:"authClients,omitempty"`
}

// CertManagerSpec says which cert-manager issuer signs the instance's certificate.
type CertManagerSpec struct {
	// IssuerRef is the cert-manager Issuer (in the instance's namespace) or ClusterIssuer.
	IssuerRef IssuerReference `json:"issuerRef"`
	// Duration is the certificate's requested lifetime (cert-manager's default: 90 days).
	// +optional
	Duration *metav1.Duration `json:"duration,omitempty"`
	// RenewBefore is how long before expiry cert-manager renews it (cert-manager's default: a
	// third of the lifetime).
	// +optional
	RenewBefore *metav1.Duration `json:"renewBefore,omitempty"`
}

// IssuerReference names a cert-manager issuer.
type IssuerReference struct {
	// Name of the issuer.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	Name string `json:"name"`
	// Kind is Issuer (in the instance's namespace) or ClusterIssuer.
	// +kubebuilder:default=Issuer
	// +kubebuilder:validation:Enum=Issuer;ClusterIssuer
	// +optional
	Kind string `json:"kind,omitempty"`
	// Group is the issuer's API group; cert-manager.io for cert-manager's own issuers, another
	// group for an external issuer.
	// +kubebuilder:default=cert-manager.io
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Group string `json:"group,omitempty"`
}

// TLSStatus is what the operator read from the certificate the instance serves. It holds no
// secret material.
type TLSStatus struct {
	// SecretName is the Secret the certificate comes from.
	// +optional
	SecretName string `json:"secretName,omitempty"`
	// Subject is the certificate's subject, as text.
	// +optional
	Subject string `json:"subject,omitempty"`
	// NotBefore is when the certificate became valid.
	// +optional
	NotBefore *metav1.Time `json:"notBefore,omitempty"`
	// NotAfter is when it expires.
	// +optional
	NotAfter *metav1.Time `json:"notAfter,omitempty"`
	// ServedBy counts the ready pods that the operator found serving this certificate, by a TLS
	// handshake.
	// +optional
	ServedBy int32 `json:"servedBy,omitempty"`
}

const (
	// ConditionTLSReady is present when spec.tls is set. True (reason CertificateServed) when the
	// Secret holds a valid certificate, key and CA and every ready pod serves that certificate.
	// False: SecretMissing (no Secret yet: with certManager, cert-manager has not issued it),
	// SecretInvalid (a key is missing or does not parse, or the key does not match the
	// certificate), CertificateExpired, CertManagerMissing (spec.tls.certManager but the
	// cert-manager Certificate CRD is not installed), or Rotating (the Secret holds a new
	// certificate that a pod does not serve yet: the kubelet updates mounted Secrets within
	// about a minute, then the operator has the server reload its files). Unknown (reason
	// NotChecked) while no ready pod has been checked.
	ConditionTLSReady = "TLSReady"
	// ConditionCertificateExpiring is present when spec.tls is set. True (reason ExpiresSoon)
	// when less than 7 days or a quarter of the certificate's lifetime is left, whichever is
	// shorter: below the third of the lifetime where cert-manager renews by default, so a
	// renewal that works never sets it. False (reason NotExpiring) otherwise.
	ConditionCertificateExpiring = "CertificateExpiring"
)

// TLSSecretName is the Secret that holds the instance's certificate: spec.tls.secretName, or the
// one cert-manager writes for spec.tls.certManager. "" without spec.tls.
func (c *CacheInstance) TLSSecretName() string {
	t := c.Spec.TLS
	switch {
	case t == nil:
		return ""
	case t.SecretName != "":
		return t.SecretName
	default:
		return c.Name + "-tls"
	}
}

// SetDefaults fills what the schema defaults.
func (t *TLSSpec) SetDefaults() {
	if t.AuthClients == "" {
		t.AuthClients = TLSAuthClientsNone
	}
	if m := t.CertManager; m != nil {
		if m.IssuerRef.Kind == "" {
			m.IssuerRef.Kind = "Issuer"
		}
		if m.IssuerRef.Group == "" {
			m.IssuerRef.Group = "cert-manager.io"
		}
	}
}
