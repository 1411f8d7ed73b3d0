// Package probe is iocache-server's client side for Kubernetes: the readiness and liveness
// probe (--check-health) and the preStop hook (--pre-stop). Each dials its own server as any
// client does, over TLS when told, with the password from a file or the environment; it shares
// no memory with the server it checks and imports only server/tlsconfig and server/tlschain for
// the certificates.
package probe
