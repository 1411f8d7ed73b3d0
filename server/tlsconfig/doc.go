// Package tlsconfig turns Redis's tls-* directives into crypto/tls configurations, the way
// Redis's tlsConfigure turns them into SSL_CTXs: certificates and keys (encrypted PKCS#8 and PEM
// keys included), CA files and directories, tls-protocols, OpenSSL cipher strings, client
// authentication and the session cache's timeout. Building is all or nothing: a missing,
// unreadable or mismatched file fails with the warning Redis logs, and the caller keeps the
// material in effect (CONFIG SET) or does not start. It reads server/config and uses
// server/tlschain for the replica's check of its primary; it holds no state and opens no socket:
// server/engine owns the listeners, the handshakes and when to rebuild.
package tlsconfig
