package engine

import (
	"bufio"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/probe"
	"github.com/iocache/iocache/server/testpeer"
)

// TLS: clients (redis-cli, go-redis), client authentication, bad and stalled clients, live
// io-threads changes and certificate reloads with TLS clients connected, replication over TLS
// both ways with redis-server, and the same replies as redis-server over TLS.

// setTLS configures c to serve TLS on a free port with certs (tls-auth-clients as Redis's
// default, yes); extra are more directive/value pairs.
func setTLS(t testing.TB, c *config.Config, certs *testpeer.Certs, extra ...string) {
	t.Helper()
	args := append(certs.ServerArgs(strconv.Itoa(testpeer.FreePort(t))), extra...)
	for i := 0; i+1 < len(args); i += 2 {
		name := strings.TrimPrefix(args[i], "--")
		if err := c.Set(name, []string{args[i+1]}, false); err != nil {
			// A directive of several arguments (client-output-buffer-limit).
			if err := c.Set(name, strings.Fields(args[i+1]), false); err != nil {
				t.Fatalf("%s %s: %v", args[i], args[i+1], err)
			}
		}
	}
}

// startTLSServer runs a TLS-only server (port 0, a tls-port) and returns its TLS address.
func startTLSServer(t *testing.T, certs *testpeer.Certs, mutate func(*config.Config), extra ...string) (*Server, string) {
	t.Helper()
	s, _ := startServer(t, func(c *config.Config) {
		setTLS(t, c, certs, extra...)
		if mutate != nil {
			mutate(c)
		}
	})
	return s, s.TLSAddr()
}

func tlsClient(t testing.TB, addr string, proto int, cfg *tls.Config) *redis.Client {
	t.Helper()
	c := redis.NewClient(&redis.Options{Addr: addr, Protocol: proto, DisableIdentity: true, MaxRetries: -1, PoolSize: 4,
		TLSConfig: cfg, ReadTimeout: 10 * time.Second})
	t.Cleanup(func() { c.Close() })
	return c
}

// TestTLSGoRedis: go-redis over TLS, RESP2 and RESP3, with the main thread or I/O threads
// serving the sockets: single commands, a deep pipeline, a value over many records, pub/sub.
func TestTLSGoRedis(t *testing.T) {
	certs := testpeer.NewCerts(t)
	for _, threads := range []int{1, 2} {
		t.Run(fmt.Sprintf("io-threads=%d", threads), func(t *testing.T) {
			_, addr := startTLSServer(t, certs, func(c *config.Config) { c.IOThreads = threads })
			var c *redis.Client
			for _, proto := range []int{2, 3} {
				c = tlsClient(t, addr, proto, certs.ClientConfig(t, true))
				exerciseTLSClient(t, c, addr, proto, certs.ClientConfig(t, true))
			}
			if threads > 1 {
				// The record layer ran on the I/O threads: the main thread read no socket.
				info := c.Info(ctx(), "stats").Val()
				total, threaded := regexpFind(`total_reads_processed:(\d+)`, info), regexpFind(`io_threaded_reads_processed:(\d+)`, info)
				if total == "" || total == "0" || total != threaded {
					t.Errorf("reads: total %s, on I/O threads %s", total, threaded)
				}
			}
		})
	}
}

func exerciseTLSClient(t *testing.T, c *redis.Client, addr string, proto int, cfg *tls.Config) {
	t.Helper()
	key := func(s string) string { return fmt.Sprintf("resp%d:%s", proto, s) }
	if err := c.Set(ctx(), key("k"), "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	if v := c.Get(ctx(), key("k")).Val(); v != "v" {
		t.Fatalf("GET: %q", v)
	}
	pipe := c.Pipeline()
	var incrs []*redis.IntCmd
	for i := 0; i < 2000; i++ {
		incrs = append(incrs, pipe.Incr(ctx(), key("n")))
	}
	if _, err := pipe.Exec(ctx()); err != nil {
		t.Fatal(err)
	}
	for i, r := range incrs {
		if r.Val() != int64(i+1) {
			t.Fatalf("pipelined INCR %d: %d", i, r.Val())
		}
	}
	big := strings.Repeat("0123456789abcdef", 300_000) // 4.8 MB: about 300 records each way
	if err := c.Set(ctx(), key("big"), big, 0).Err(); err != nil {
		t.Fatal(err)
	}
	if v := c.Get(ctx(), key("big")).Val(); v != big {
		t.Fatalf("big value: got %d bytes", len(v))
	}
	sub := tlsClient(t, addr, proto, cfg)
	ps := sub.Subscribe(ctx(), key("ch"))
	defer ps.Close()
	if _, err := ps.Receive(ctx()); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 100; i++ {
		if n := c.Publish(ctx(), key("ch"), strconv.Itoa(i)).Val(); n != 1 {
			t.Fatalf("PUBLISH reached %d subscribers", n)
		}
	}
	for i := 0; i < 100; i++ {
		m, err := ps.ReceiveMessage(ctx())
		if err != nil || m.Payload != strconv.Itoa(i) {
			t.Fatalf("message %d: %v %v", i, m, err)
		}
	}
}

// TestTLSRedisCLI: redis-cli --tls reads and writes; with tls-auth-clients yes (the default) it
// needs --cert and --key.
func TestTLSRedisCLI(t *testing.T) {
	cli := testpeer.Require(t, "redis-cli")
	certs := testpeer.NewCerts(t)
	_, addr := startTLSServer(t, certs, func(c *config.Config) { c.IOThreads = 2 })
	_, port, _ := net.SplitHostPort(addr)
	run := func(withCert bool, args ...string) (string, error) {
		a := []string{"-h", "127.0.0.1", "-p", port, "--tls", "--cacert", certs.CAFile}
		if withCert {
			a = append(a, "--cert", certs.ClientCertFile, "--key", certs.ClientKeyFile)
		}
		out, err := exec.Command(cli, append(a, args...)...).CombinedOutput()
		return strings.TrimSpace(string(out)), err
	}
	if out, err := run(true, "SET", "k", "hello"); err != nil || out != "OK" {
		t.Fatalf("SET: %q %v", out, err)
	}
	if out, err := run(true, "GET", "k"); err != nil || out != "hello" {
		t.Fatalf("GET: %q %v", out, err)
	}
	// With port 0, INFO's tcp_port is the tls-port, as in Redis.
	if out, err := run(true, "INFO", "server"); err != nil || !slices.Contains(strings.Fields(out), "tcp_port:"+port) {
		t.Errorf("INFO server: %v\n%s", err, out)
	}
	if out, _ := run(false, "GET", "k"); out == "hello" {
		t.Fatalf("a client without a certificate was served under tls-auth-clients yes: %q", out)
	}
}

// TestTLSAuthClients: yes refuses a client without a certificate, optional lets it in, no asks
// for none; a client certificate from another CA is refused under optional.
func TestTLSAuthClients(t *testing.T) {
	certs := testpeer.NewCerts(t)
	_, addr := startTLSServer(t, certs, nil)
	admin := tlsClient(t, addr, 2, certs.ClientConfig(t, true))
	if err := admin.Ping(ctx()).Err(); err != nil {
		t.Fatalf("with a certificate: %v", err)
	}
	noCert := func() error {
		c := redis.NewClient(&redis.Options{Addr: addr, TLSConfig: certs.ClientConfig(t, false), MaxRetries: -1, DisableIdentity: true})
		defer c.Close()
		return c.Ping(ctx()).Err()
	}
	if err := noCert(); err == nil {
		t.Fatal("tls-auth-clients yes let in a client without a certificate")
	}
	for _, mode := range []string{"optional", "no"} {
		if err := admin.ConfigSet(ctx(), "tls-auth-clients", mode).Err(); err != nil {
			t.Fatal(err)
		}
		if err := noCert(); err != nil {
			t.Fatalf("tls-auth-clients %s: %v", mode, err)
		}
	}
	// A certificate the CA did not sign is refused when given.
	if err := admin.ConfigSet(ctx(), "tls-auth-clients", "optional").Err(); err != nil {
		t.Fatal(err)
	}
	other := testpeer.NewCerts(t)
	cfg := certs.ClientConfig(t, false)
	cfg.Certificates = other.ClientConfig(t, true).Certificates
	c := redis.NewClient(&redis.Options{Addr: addr, TLSConfig: cfg, MaxRetries: -1, DisableIdentity: true})
	defer c.Close()
	if err := c.Ping(ctx()).Err(); err == nil {
		t.Fatal("a certificate from another CA was accepted")
	}
}

// TestTLSBadClientsAreClosed: plaintext sent to the tls-port, a client that never starts its
// handshake and one that stops in the middle are closed (the last two after the handshake
// timeout), handshakes count against maxclients, and a TLS client is served meanwhile.
func TestTLSBadClientsAreClosed(t *testing.T) {
	old := tlsHandshakeTimeout
	tlsHandshakeTimeout = 700 * time.Millisecond
	t.Cleanup(func() { tlsHandshakeTimeout = old })
	certs := testpeer.NewCerts(t)
	_, addr := startTLSServer(t, certs, func(c *config.Config) { c.IOThreads = 2; c.MaxClients = 4 })
	good := tlsClient(t, addr, 2, certs.ClientConfig(t, true))
	if err := good.Set(ctx(), "k", "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	expectClosed := func(what string, c net.Conn, within time.Duration) {
		t.Helper()
		_ = c.SetReadDeadline(time.Now().Add(within))
		_, err := io.Copy(io.Discard, c)
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			t.Errorf("%s: still open after %v", what, within)
		}
	}
	plain, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer plain.Close()
	if _, err := plain.Write([]byte("*1\r\n$4\r\nPING\r\n")); err != nil {
		t.Fatal(err)
	}
	expectClosed("plaintext on the tls-port", plain, 3*time.Second)

	silent, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	partial, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer partial.Close()
	if _, err := partial.Write([]byte{0x16, 0x03, 0x01, 0x02, 0x00, 0x01}); err != nil { // a ClientHello's first bytes
		t.Fatal(err)
	}
	// The good client and the two stalled handshakes fill maxclients 4 with one to spare; a
	// third stalled one takes it, and a new TLS client is refused until they time out.
	third, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	defer third.Close()
	time.Sleep(100 * time.Millisecond) // accepted
	if err := good.Ping(ctx()).Err(); err != nil {
		t.Fatalf("the TLS client while handshakes stall: %v", err)
	}
	refused := redis.NewClient(&redis.Options{Addr: addr, TLSConfig: certs.ClientConfig(t, true), MaxRetries: -1, DisableIdentity: true, PoolSize: 1})
	defer refused.Close()
	if err := refused.Ping(ctx()).Err(); err == nil {
		t.Error("a client past maxclients (counting stalled handshakes) was served")
	}
	expectClosed("a client that never starts its handshake", silent, 5*time.Second)
	expectClosed("a client that stops mid-handshake", partial, 5*time.Second)
	expectClosed("a third stalled client", third, 5*time.Second)
	if v := good.Get(ctx(), "k").Val(); v != "v" {
		t.Errorf("the TLS client afterwards: %q", v)
	}
	info := good.Info(ctx(), "clients").Val()
	if !strings.Contains(info, "connected_clients:1\r\n") {
		t.Errorf("connected clients after the bad ones left:\n%s", info)
	}
	// go-redis remembers a failed dial for a while: a new client.
	if err := tlsClient(t, addr, 2, certs.ClientConfig(t, true)).Ping(ctx()).Err(); err != nil {
		t.Errorf("a client once the stalled handshakes timed out: %v", err)
	}
}

// TestTLSLiveIOThreads changes io-threads (and the activation policy, which moves conns between
// the main thread and I/O threads) while TLS clients pipeline and a subscriber listens: conns
// move between threads with their TLS state, and nothing is lost or reordered.
func TestTLSLiveIOThreads(t *testing.T) {
	certs := testpeer.NewCerts(t)
	_, addr := startTLSServer(t, certs, func(c *config.Config) { c.IOThreads = 1 })
	admin := tlsClient(t, addr, 2, certs.ClientConfig(t, true))
	sub := tlsClient(t, addr, 3, certs.ClientConfig(t, true))
	ps := sub.Subscribe(ctx(), "ch")
	defer ps.Close()
	if _, err := ps.Receive(ctx()); err != nil {
		t.Fatal(err)
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := 0; w < 4; w++ {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			c := tlsClient(t, addr, 2+w%2, certs.ClientConfig(t, true))
			key := "n" + strconv.Itoa(w)
			var want int64
			for {
				select {
				case <-stop:
					return
				default:
				}
				pipe := c.Pipeline()
				var last *redis.IntCmd
				for i := 0; i < 50; i++ {
					last = pipe.Incr(ctx(), key)
				}
				if _, err := pipe.Exec(ctx()); err != nil {
					errs <- err
					return
				}
				want += 50
				if last.Val() != want {
					errs <- fmt.Errorf("%s: %d, want %d", key, last.Val(), want)
					return
				}
			}
		}(w)
	}
	published := 0
	for _, kv := range [][2]string{{"io-threads", "3"}, {"io-threads", "2"}, {"io-threads-activation", "load"},
		{"io-threads", "4"}, {"io-threads-activation", "always"}, {"io-threads", "1"}, {"io-threads", "2"}, {"io-threads", "1"}} {
		if err := admin.ConfigSet(ctx(), kv[0], kv[1]).Err(); err != nil {
			t.Fatal(err)
		}
		for i := 0; i < 20; i++ {
			if err := admin.Publish(ctx(), "ch", strconv.Itoa(published)).Err(); err != nil {
				t.Fatal(err)
			}
			published++
			time.Sleep(5 * time.Millisecond)
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for i := 0; i < published; i++ {
		m, err := ps.ReceiveMessage(ctx())
		if err != nil || m.Payload != strconv.Itoa(i) {
			t.Fatalf("message %d: %v %v", i, m, err)
		}
	}
}

// peerCert is the common name of the certificate a new TLS conn to addr is served.
func peerCert(t *testing.T, addr string, cfg *tls.Config) string {
	t.Helper()
	c, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	return c.ConnectionState().PeerCertificates[0].Subject.CommonName
}

// TestTLSCertificateReload: CONFIG SET of the certificate files serves new conns the new
// certificate while an established conn goes on; a missing or mismatched file is refused with
// Redis's text and the certificate in effect stays.
func TestTLSCertificateReload(t *testing.T) {
	certs := testpeer.NewCerts(t)
	_, addr := startTLSServer(t, certs, func(c *config.Config) { c.IOThreads = 2 })
	cfg := certs.ClientConfig(t, true)
	kept := redis.NewClient(&redis.Options{Addr: addr, TLSConfig: cfg, PoolSize: 1, MaxRetries: -1, DisableIdentity: true})
	defer kept.Close()
	id := kept.ClientID(ctx()).Val()
	if cn := peerCert(t, addr, cfg); cn != "server" {
		t.Fatalf("served %q", cn)
	}
	cert2, key2 := certs.Issue(t, "server2")
	if err := kept.ConfigSet(ctx(), "tls-cert-file", cert2).Err(); err == nil {
		t.Fatal("a certificate that does not match the key was taken")
	} else if want := "ERR CONFIG SET failed (possibly related to argument 'tls-cert-file') - Unable to update TLS configuration. Check server logs."; err.Error() != want {
		t.Fatalf("mismatch: %q", err)
	}
	if err := kept.Do(ctx(), "CONFIG", "SET", "tls-cert-file", cert2, "tls-key-file", key2).Err(); err != nil {
		t.Fatal(err)
	}
	if cn := peerCert(t, addr, cfg); cn != "server2" {
		t.Fatalf("after the reload a new conn is served %q", cn)
	}
	if got := kept.ClientID(ctx()).Val(); got != id {
		t.Fatalf("the established conn was replaced (%d, then %d)", id, got)
	}
	if err := kept.Set(ctx(), "k", "v", 0).Err(); err != nil {
		t.Fatalf("the established conn after the reload: %v", err)
	}
	for _, kv := range [][2]string{{"tls-cert-file", certs.Dir + "/missing.crt"}, {"tls-key-file", certs.Dir + "/missing.key"},
		{"tls-ca-cert-file", certs.Dir + "/missing.crt"}, {"tls-protocols", "SSLv3"}, {"tls-ciphers", "NOSUCHCIPHER"}} {
		err := kept.ConfigSet(ctx(), kv[0], kv[1]).Err()
		want := "ERR CONFIG SET failed (possibly related to argument '" + kv[0] + "') - Unable to update TLS configuration. Check server logs."
		if err == nil || err.Error() != want {
			t.Errorf("CONFIG SET %s %s: %v", kv[0], kv[1], err)
		}
	}
	if got := kept.ConfigGet(ctx(), "tls-cert-file").Val()["tls-cert-file"]; got != cert2 {
		t.Errorf("tls-cert-file after refusals: %q", got)
	}
	if cn := peerCert(t, addr, cfg); cn != "server2" {
		t.Fatalf("after the refusals a new conn is served %q", cn)
	}
	// Files rotated in place (a mounted Secret) are reloaded by setting the same path again,
	// as in Redis 7.0.
	cert3, key3 := certs.Issue(t, "server3")
	if err := os.WriteFile(cert2, mustRead(t, cert3), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(key2, mustRead(t, key3), 0o600); err != nil {
		t.Fatal(err)
	}
	if cn := peerCert(t, addr, cfg); cn != "server2" {
		t.Fatalf("rotated files were read before CONFIG SET: %q", cn)
	}
	if err := kept.Do(ctx(), "CONFIG", "SET", "tls-cert-file", cert2, "tls-key-file", key2).Err(); err != nil {
		t.Fatal(err)
	}
	if cn := peerCert(t, addr, cfg); cn != "server3" {
		t.Fatalf("after CONFIG SET of the same paths: %q", cn)
	}
	// The tls-port moves.
	port := testpeer.FreePort(t)
	if err := kept.ConfigSet(ctx(), "tls-port", strconv.Itoa(port)).Err(); err != nil {
		t.Fatal(err)
	}
	moved := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	if cn := peerCert(t, moved, cfg); cn != "server3" {
		t.Fatalf("on the new tls-port: %q", cn)
	}
	if _, err := tls.Dial("tcp", addr, cfg); err == nil {
		t.Error("the old tls-port still accepts")
	}
	if err := kept.Ping(ctx()).Err(); err != nil {
		t.Errorf("the established conn after the port moved: %v", err)
	}
}

// TestTLSStartFailures: the server does not start when the TLS files are missing, unreadable or
// mismatched, with Redis's message.
func TestTLSStartFailures(t *testing.T) {
	certs := testpeer.NewCerts(t)
	unreadable := certs.Dir + "/unreadable.key"
	if err := os.WriteFile(unreadable, []byte("x"), 0o000); err != nil {
		t.Fatal(err)
	}
	for _, extra := range [][]string{
		{"tls-cert-file", certs.Dir + "/missing.crt"},
		{"tls-key-file", certs.Dir + "/missing.key"},
		{"tls-key-file", unreadable},
		{"tls-key-file", certs.ClientKeyFile},
		{"tls-cert-file", ""},
		{"tls-ca-cert-file", ""},
		{"tls-ca-cert-file", certs.Dir + "/missing.crt"},
		{"tls-dh-params-file", certs.Dir + "/missing.pem"},
		{"tls-protocols", "TLSv1.4"},
	} {
		cfg := config.New()
		cfg.Port, cfg.Bind, cfg.Dir, cfg.LogLevel = 0, []string{"127.0.0.1"}, t.TempDir(), "nothing"
		setTLS(t, cfg, certs, extra...)
		s, err := New(cfg)
		if err == nil {
			s.closeListeners()
			t.Errorf("%v: the server started", extra)
			continue
		}
		if err.Error() != "Failed to configure TLS. Check logs for more info." {
			t.Errorf("%v: %v", extra, err)
		}
	}
	// tls-replication alone needs the material too, and tls-auth-clients no needs no CA.
	cfg := config.New()
	cfg.Port, cfg.Bind, cfg.Dir, cfg.LogLevel = 0, []string{"127.0.0.1"}, t.TempDir(), "nothing"
	if err := cfg.Set("tls-replication", []string{"yes"}, false); err != nil {
		t.Fatal(err)
	}
	if _, err := New(cfg); err == nil || err.Error() != errTLSStart {
		t.Errorf("tls-replication yes without certificates: %v", err)
	}
	_, addr := startTLSServer(t, certs, nil, "--tls-ca-cert-file", "", "--tls-auth-clients", "no")
	if err := tlsClient(t, addr, 2, certs.ClientConfig(t, false)).Ping(ctx()).Err(); err != nil {
		t.Errorf("tls-auth-clients no without a CA: %v", err)
	}
}

// TestTLSEncryptedKey: tls-key-file-pass opens a key in traditional encrypted PEM and one in
// encrypted PKCS#8 as OpenSSL 3 writes it; a wrong pass is refused.
func TestTLSEncryptedKey(t *testing.T) {
	certs := testpeer.NewCerts(t)
	raw, err := os.ReadFile(certs.KeyFile)
	if err != nil {
		t.Fatal(err)
	}
	key, err := tls.X509KeyPair(mustRead(t, certs.CertFile), raw)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKCS8PrivateKey(key.PrivateKey)
	if err != nil {
		t.Fatal(err)
	}
	block, err := x509.EncryptPEMBlock(rand.Reader, "PRIVATE KEY", der, []byte("secret"), x509.PEMCipherAES256) //nolint:staticcheck // the form tls-key-file-pass opens
	if err != nil {
		t.Fatal(err)
	}
	enc := certs.Dir + "/enc.key"
	if err := os.WriteFile(enc, pem.EncodeToMemory(block), 0o600); err != nil {
		t.Fatal(err)
	}
	_, addr := startTLSServer(t, certs, nil, "--tls-key-file", enc, "--tls-key-file-pass", "secret")
	if err := tlsClient(t, addr, 2, certs.ClientConfig(t, true)).Ping(ctx()).Err(); err != nil {
		t.Fatal(err)
	}
	// What OpenSSL 3 writes: encrypted PKCS#8 (PBES2, PBKDF2 with HMAC-SHA256, AES-256-CBC).
	openssl := testpeer.Require(t, "openssl")
	p8 := certs.Dir + "/p8.key"
	if out, err := exec.Command(openssl, "pkcs8", "-topk8", "-v2", "aes-256-cbc", "-in", certs.KeyFile, "-out", p8,
		"-passout", "pass:secret8").CombinedOutput(); err != nil {
		t.Fatalf("openssl: %v %s", err, out)
	}
	if !strings.Contains(string(mustRead(t, p8)), "ENCRYPTED PRIVATE KEY") {
		t.Fatal("openssl did not write an encrypted PKCS#8 key")
	}
	_, addr = startTLSServer(t, certs, nil, "--tls-key-file", p8, "--tls-key-file-pass", "secret8")
	if err := tlsClient(t, addr, 2, certs.ClientConfig(t, true)).Ping(ctx()).Err(); err != nil {
		t.Fatal(err)
	}
	for _, kv := range [][2]string{{enc, "wrong"}, {p8, "wrong"}, {p8, ""}} {
		cfg := config.New()
		cfg.Port, cfg.Bind, cfg.Dir, cfg.LogLevel = 0, []string{"127.0.0.1"}, t.TempDir(), "nothing"
		setTLS(t, cfg, certs, "--tls-key-file", kv[0], "--tls-key-file-pass", kv[1])
		if _, err := New(cfg); err == nil {
			t.Errorf("%s opened with pass %q", kv[0], kv[1])
		}
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// startRedisTLS runs redis-server with TLS on a free port (plaintext on another) and returns
// the TLS address.
func startRedisTLS(t *testing.T, certs *testpeer.Certs, extra ...string) (tlsAddr, plainAddr string) {
	t.Helper()
	port := strconv.Itoa(testpeer.FreePort(t))
	plainAddr = startRedisPeer(t, append(certs.ServerArgs(port), extra...)...)
	return net.JoinHostPort("127.0.0.1", port), plainAddr
}

// dialPeerTLS is dialPeer over TLS.
func dialPeerTLS(t *testing.T, addr string, cfg *tls.Config) *peerConn {
	t.Helper()
	c, err := tls.Dial("tcp", addr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return &peerConn{t: t, c: c, br: bufio.NewReader(c)}
}

// TestTLSRepliesMatchRedis: the same commands over TLS to iocache and to redis-server, started
// with the same certificates, give the same bytes back, RESP2 and RESP3.
func TestTLSRepliesMatchRedis(t *testing.T) {
	certs := testpeer.NewCerts(t)
	redisAddr, _ := startRedisTLS(t, certs)
	_, addr := startTLSServer(t, certs, func(c *config.Config) { c.IOThreads = 2 })
	cmds := split("SET a 1", "INCRBY a 41", "GET a", "APPEND a xyz", "STRLEN a", "LPUSH l a b c", "LRANGE l 0 -1",
		"HSET h f v g w", "HGETALL h", "SADD s x", "SMEMBERS s", "ZADD z 1 a 2 b", "ZRANGE z 0 -1 WITHSCORES",
		"EXPIRE a 100", "TTL a", "TYPE h", "DEL a l h s z", "GET a", "PING", "ECHO hello", "INCR nosuch:int x",
		"SET big "+strings.Repeat("x", 70000), "GETRANGE big 69990 -1", "CONFIG GET tls-port", "CONFIG GET tls-auth-clients",
		"CONFIG SET tls-protocols bad", "CONFIG SET tls-ciphers NOPE", "CONFIG SET tls-ciphersuites NOPE",
		"CONFIG SET tls-auth-clients maybe", "CONFIG SET tls-session-cache-size -1", "CONFIG GET tls-session-cache-timeout",
		"CONFIG GET tls-protocols", "CONFIG GET tls-replication", "CONFIG GET tls-dh-params-file",
		"CONFIG SET tls-cert-file /nonexistent/cert", "CONFIG SET tls-ca-cert-file /nonexistent/ca",
		"CONFIG SET tls-dh-params-file /nonexistent/dh", "CONFIG SET tls-ca-cert-dir /nonexistent/dir",
		"CONFIG GET tls-cert-file", "CONFIG SET tls-auth-clients optional", "CONFIG GET tls-auth-clients",
		"CONFIG SET tls-auth-clients yes", "CONFIG SET tls-cluster no", "CONFIG SET tls-session-caching no",
		"CONFIG SET tls-session-caching yes", "CONFIG SET tls-protocols TLSv1.2", "CONFIG SET tls-protocols",
		"CONFIG SET tls-ciphers DEFAULT", "CONFIG SET tls-ciphersuites TLS_AES_128_GCM_SHA256")
	cfg := certs.ClientConfig(t, true)
	for _, proto := range []string{"2", "3"} {
		r, i := dialPeerTLS(t, redisAddr, cfg), dialPeerTLS(t, addr, cfg)
		r.do("FLUSHALL")
		i.do("FLUSHALL")
		r.do("HELLO", proto)
		i.do("HELLO", proto)
		for _, cmd := range cmds {
			if cmd[0] == "CONFIG" && cmd[1] == "GET" && cmd[2] == "tls-port" {
				continue // different ports
			}
			want, got := r.do(cmd...), i.do(cmd...)
			if want != got {
				t.Errorf("RESP%s %q:\n redis:   %q\n iocache: %q", proto, cmd, want, got)
			}
		}
	}
}

// TestTLSReplicationWithRedis: an iocache replica of redis-server, and a redis-server replica
// of iocache, each link over TLS (tls-replication yes), full sync then the stream.
func TestTLSReplicationWithRedis(t *testing.T) {
	certs := testpeer.NewCerts(t)
	t.Run("iocache replica of redis-server", func(t *testing.T) {
		primaryTLS, primaryPlain := startRedisTLS(t, certs, "--tls-replication", "yes", "--repl-diskless-sync-delay", "0")
		primary := tlsClient(t, primaryTLS, 2, certs.ClientConfig(t, true))
		fillEveryType(t, primary, "before:")
		host, port, _ := net.SplitHostPort(primaryTLS)
		replicaPort := testpeer.FreePort(t)
		_, _ = startServer(t, func(c *config.Config) {
			c.Port = replicaPort
			c.IOThreads = 2
			setTLS(t, c, certs, "--tls-replication", "yes",
				"--tls-client-cert-file", certs.ClientCertFile, "--tls-client-key-file", certs.ClientKeyFile)
			c.ReplicaOf = host + " " + port
		})
		replicaPlain := net.JoinHostPort("127.0.0.1", strconv.Itoa(replicaPort))
		replica := redisClient(t, replicaPlain, 2)
		waitFor(t, "the replica's TLS link", func() bool {
			return strings.Contains(replica.Info(ctx(), "replication").Val(), "master_link_status:up")
		})
		fillEveryType(t, primary, "after:")
		compareWhenSynced(t, primaryPlain, replicaPlain)
	})
	t.Run("redis-server replica of iocache", func(t *testing.T) {
		primaryPort := testpeer.FreePort(t)
		_, primaryTLS := startTLSServer(t, certs, func(c *config.Config) {
			c.Port = primaryPort
			c.IOThreads = 2
		})
		primary := tlsClient(t, primaryTLS, 2, certs.ClientConfig(t, true))
		fillEveryType(t, primary, "before:")
		host, port, _ := net.SplitHostPort(primaryTLS)
		_, replicaPlain := startRedisTLS(t, certs, "--tls-replication", "yes", "--replicaof", host, port)
		replica := redisClient(t, replicaPlain, 2)
		waitFor(t, "redis-server's TLS link", func() bool {
			return strings.Contains(replica.Info(ctx(), "replication").Val(), "master_link_status:up")
		})
		fillEveryType(t, primary, "after:")
		s := primary.Info(ctx(), "replication").Val()
		if !strings.Contains(s, "connected_slaves:1") {
			t.Errorf("the primary's INFO replication:\n%s", s)
		}
		primaryPlain := net.JoinHostPort("127.0.0.1", strconv.Itoa(primaryPort))
		compareWhenSynced(t, primaryPlain, replicaPlain)
	})
}

// TestTLSReplicationIocacheToIocache: an iocache replica of an iocache primary over TLS, a full
// sync, the stream, then a dropped link continued with a partial resync over a new TLS link.
func TestTLSReplicationIocacheToIocache(t *testing.T) {
	certs := testpeer.NewCerts(t)
	primaryPort, replicaPort := testpeer.FreePort(t), testpeer.FreePort(t)
	_, primaryTLS := startTLSServer(t, certs, func(c *config.Config) { c.Port = primaryPort; c.IOThreads = 2 })
	primary := tlsClient(t, primaryTLS, 2, certs.ClientConfig(t, true))
	fillEveryType(t, primary, "before:")
	host, port, _ := net.SplitHostPort(primaryTLS)
	_, _ = startServer(t, func(c *config.Config) {
		c.Port = replicaPort
		setTLS(t, c, certs, "--tls-replication", "yes")
		c.ReplicaOf = host + " " + port
	})
	plain := func(p int) string { return net.JoinHostPort("127.0.0.1", strconv.Itoa(p)) }
	replica := redisClient(t, plain(replicaPort), 2)
	linkUp := func() bool {
		return strings.Contains(replica.Info(ctx(), "replication").Val(), "master_link_status:up")
	}
	waitFor(t, "the TLS link", linkUp)
	fillEveryType(t, primary, "stream:")
	compareWhenSynced(t, plain(primaryPort), plain(replicaPort))
	if n := replica.Do(ctx(), "client", "kill", "type", "master").Val(); n != int64(1) {
		t.Fatalf("CLIENT KILL TYPE master: %v", n)
	}
	fillEveryType(t, primary, "while-down:")
	waitFor(t, "the new TLS link", linkUp)
	compareWhenSynced(t, plain(primaryPort), plain(replicaPort))
	st := primary.Info(ctx(), "stats").Val()
	if !strings.Contains(st, "sync_full:1\r\n") || !strings.Contains(st, "sync_partial_ok:1\r\n") {
		t.Errorf("the primary's syncs:\n%s", st)
	}
}

// compareWhenSynced waits until both servers hold the same data set (as keyspaceDump sees it).
func compareWhenSynced(t *testing.T, primaryAddr, replicaAddr string) {
	t.Helper()
	var want, got map[string]string
	for i := 0; i < 100; i++ {
		want, got = keyspaceDump(t, primaryAddr), keyspaceDump(t, replicaAddr)
		if fmt.Sprint(want) == fmt.Sprint(got) {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Fatalf("the replica's data differs:\n primary: %v\n replica: %v", want, got)
}

// TestTLSSessionResumption: a client resumes its session (Go's stateless tickets stand in for
// Redis's session cache), not after tls-session-cache-timeout, and not with
// tls-session-caching no.
func TestTLSSessionResumption(t *testing.T) {
	certs := testpeer.NewCerts(t)
	_, addr := startTLSServer(t, certs, nil)
	admin := tlsClient(t, addr, 2, certs.ClientConfig(t, true))
	cfg := certs.ClientConfig(t, true)
	cfg.ClientSessionCache = tls.NewLRUClientSessionCache(4)
	resumed := func() bool {
		t.Helper()
		c := dialPeerTLS(t, addr, cfg)
		c.do("PING") // a TLS 1.3 ticket arrives after the handshake: read once
		defer c.c.Close()
		return c.c.(*tls.Conn).ConnectionState().DidResume
	}
	resumed()
	if !resumed() {
		t.Error("the second conn did not resume its session")
	}
	if err := admin.ConfigSet(ctx(), "tls-session-cache-timeout", "1").Err(); err != nil {
		t.Fatal(err)
	}
	resumed() // a ticket stamped under the new material
	if !resumed() {
		t.Error("a session younger than tls-session-cache-timeout was not resumed")
	}
	time.Sleep(2100 * time.Millisecond)
	if resumed() {
		t.Error("a session older than tls-session-cache-timeout was resumed")
	}
	if err := admin.Do(ctx(), "CONFIG", "SET", "tls-session-caching", "no", "tls-session-cache-timeout", "300").Err(); err != nil {
		t.Fatal(err)
	}
	resumed()
	if resumed() {
		t.Error("a session was resumed under tls-session-caching no")
	}
}

// TestTLSNoGoroutinePerConn: once their handshakes are done, TLS conns cost no goroutine: the
// I/O threads serve them.
func TestTLSNoGoroutinePerConn(t *testing.T) {
	certs := testpeer.NewCerts(t)
	_, addr := startTLSServer(t, certs, func(c *config.Config) { c.IOThreads = 2 })
	cfg := certs.ClientConfig(t, true)
	dialPeerTLS(t, addr, cfg).do("PING") // the server's own goroutines are all started
	before := runtime.NumGoroutine()
	for i := 0; i < 50; i++ {
		if got := dialPeerTLS(t, addr, cfg).do("PING"); got != "+PONG\r\n" {
			t.Fatalf("PING: %q", got)
		}
	}
	time.Sleep(100 * time.Millisecond) // handshake goroutines exit after handing their conn over
	if after := runtime.NumGoroutine(); after-before > 10 {
		t.Errorf("50 TLS conns added %d goroutines", after-before)
	}
}

// TestTLSProtocolsCiphersAndCADir: tls-protocols and tls-ciphers choose what is negotiated, live;
// tls-ca-cert-dir stands in for tls-ca-cert-file.
func TestTLSProtocolsCiphersAndCADir(t *testing.T) {
	certs := testpeer.NewCerts(t)
	caDir := t.TempDir()
	if err := os.WriteFile(caDir+"/ca.pem", mustRead(t, certs.CAFile), 0o600); err != nil {
		t.Fatal(err)
	}
	_, addr := startTLSServer(t, certs, nil, "--tls-ca-cert-file", "", "--tls-ca-cert-dir", caDir,
		"--tls-protocols", "TLSv1.2", "--tls-ciphers", "ECDHE-ECDSA-AES256-GCM-SHA384")
	cfg := certs.ClientConfig(t, true)
	state := func() tls.ConnectionState {
		t.Helper()
		c := dialPeerTLS(t, addr, cfg)
		defer c.c.Close()
		c.do("PING")
		return c.c.(*tls.Conn).ConnectionState()
	}
	if st := state(); st.Version != tls.VersionTLS12 || st.CipherSuite != tls.TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384 {
		t.Errorf("negotiated %s %s", tls.VersionName(st.Version), tls.CipherSuiteName(st.CipherSuite))
	}
	tls13 := cfg.Clone()
	tls13.MinVersion = tls.VersionTLS13
	if c, err := tls.Dial("tcp", addr, tls13); err == nil {
		c.Close()
		t.Error("a TLS 1.3 client was served under tls-protocols TLSv1.2")
	}
	admin := tlsClient(t, addr, 2, cfg)
	if err := admin.ConfigSet(ctx(), "tls-protocols", "TLSv1.2 TLSv1.3").Err(); err != nil {
		t.Fatal(err)
	}
	if st := state(); st.Version != tls.VersionTLS13 {
		t.Errorf("after CONFIG SET tls-protocols: %s", tls.VersionName(st.Version))
	}
}

// trickleConn writes what crypto/tls gives it a few bytes at a time, so that the server sees
// every record (and the handshake) arrive in pieces.
type trickleConn struct{ net.Conn }

func (c trickleConn) Write(p []byte) (int, error) {
	for i := 0; i < len(p); i += 7 {
		if _, err := c.Conn.Write(p[i:min(i+7, len(p))]); err != nil {
			return i, err
		}
		if i%700 == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	return len(p), nil
}

// TestTLSRecordsInPieces: a client whose records arrive a few bytes at a time, handshake
// included, is served: a would-block in the middle of a record resumes where it stopped.
func TestTLSRecordsInPieces(t *testing.T) {
	certs := testpeer.NewCerts(t)
	_, addr := startTLSServer(t, certs, func(c *config.Config) { c.IOThreads = 2 })
	raw, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	tc := tls.Client(trickleConn{raw}, certs.ClientConfig(t, true))
	t.Cleanup(func() { tc.Close() })
	p := &peerConn{t: t, c: tc, br: bufio.NewReader(tc)}
	val := strings.Repeat("v", 3000)
	if got := p.do("SET", "k", val); got != "+OK\r\n" {
		t.Fatalf("SET: %q", got)
	}
	if got := p.do("GET", "k"); got != "$3000\r\n"+val+"\r\n" {
		t.Fatalf("GET: %d bytes", len(got))
	}
}

// TestTLSOutputLimit: a TLS subscriber that stops reading is closed at its output limit, pending
// ciphertext counted with pending replies, as for plaintext.
func TestTLSOutputLimit(t *testing.T) {
	certs := testpeer.NewCerts(t)
	_, addr := startTLSServer(t, certs, func(c *config.Config) { c.IOThreads = 2 }, "--client-output-buffer-limit", "pubsub 256kb 0 0")
	cfg := certs.ClientConfig(t, true)
	sub := dialPeerTLS(t, addr, cfg)
	if got := sub.do("SUBSCRIBE", "ch"); !strings.Contains(got, "subscribe") {
		t.Fatalf("SUBSCRIBE: %q", got)
	}
	pub := tlsClient(t, addr, 2, cfg)
	msg := strings.Repeat("m", 64<<10)
	for i := 0; i < 200; i++ { // 12.8 MB: more than the socket buffers and the limit
		if err := pub.Publish(ctx(), "ch", msg).Err(); err != nil {
			t.Fatal(err)
		}
	}
	waitFor(t, "the subscriber's close", func() bool {
		return strings.Contains(pub.Info(ctx(), "clients").Val(), "pubsub_clients:0")
	})
	if st := pub.Info(ctx(), "stats").Val(); !strings.Contains(st, "client_output_buffer_limit_disconnections:1\r\n") {
		t.Errorf("INFO stats after the close:\n%s", st)
	}
}

// TestTLSHealthCheck: --check-health probes a tls-port with --tls, checking the server's chain
// against --cacert, with a client certificate under tls-auth-clients yes.
func TestTLSHealthCheck(t *testing.T) {
	certs := testpeer.NewCerts(t)
	_, addr := startTLSServer(t, certs, nil)
	_, port, _ := net.SplitHostPort(addr)
	probe := func(extra ...string) (int, string) {
		var out strings.Builder
		rc := probe.CheckHealth(append([]string{"--port", port, "--timeout", "5s"}, extra...), &out)
		return rc, out.String()
	}
	if rc, out := probe("--tls", "--cacert", certs.CAFile, "--cert", certs.ClientCertFile, "--key", certs.ClientKeyFile); rc != 0 {
		t.Errorf("TLS probe: %d %s", rc, out)
	}
	if rc, _ := probe("--tls", "--cacert", certs.CAFile); rc == 0 {
		t.Error("a probe without a client certificate passed under tls-auth-clients yes")
	}
	other := testpeer.NewCerts(t)
	if rc, _ := probe("--tls", "--cacert", other.CAFile, "--cert", certs.ClientCertFile, "--key", certs.ClientKeyFile); rc == 0 {
		t.Error("a server whose chain the CA does not sign passed")
	}
	if rc, _ := probe(); rc == 0 {
		t.Error("a plaintext probe of the tls-port passed")
	}

	// An expired certificate does not fail the probe: liveness would restart the container and
	// empty the cache. Its CA must still have signed it.
	expiredCert, expiredKey := certs.IssueValid(t, "expired", time.Now().Add(-50*time.Minute), time.Now().Add(-time.Minute))
	_, addr = startTLSServer(t, certs, nil, "--tls-cert-file", expiredCert, "--tls-key-file", expiredKey)
	_, port, _ = net.SplitHostPort(addr)
	if rc, out := probe("--tls", "--cacert", certs.CAFile, "--cert", certs.ClientCertFile, "--key", certs.ClientKeyFile); rc != 0 {
		t.Errorf("TLS probe of a server with an expired certificate: %d %s", rc, out)
	}
	if rc, _ := probe("--tls", "--cacert", other.CAFile, "--cert", certs.ClientCertFile, "--key", certs.ClientKeyFile); rc == 0 {
		t.Error("an expired certificate from another CA passed")
	}
}

// TestTLSTurnedOnAndOffLive: a plaintext server starts serving TLS with CONFIG SET (files
// first, then tls-port), and stops accepting TLS with tls-port 0 while its TLS clients go on.
func TestTLSTurnedOnAndOffLive(t *testing.T) {
	certs := testpeer.NewCerts(t)
	_, addr := startServer(t, nil)
	admin := redisClient(t, addr, 2)
	if err := admin.Do(ctx(), "CONFIG", "SET", "tls-cert-file", certs.CertFile, "tls-key-file", certs.KeyFile,
		"tls-ca-cert-file", certs.CAFile).Err(); err != nil {
		t.Fatal(err)
	}
	port := strconv.Itoa(testpeer.FreePort(t))
	if err := admin.ConfigSet(ctx(), "tls-port", port).Err(); err != nil {
		t.Fatal(err)
	}
	tlsAddr := net.JoinHostPort("127.0.0.1", port)
	c := redis.NewClient(&redis.Options{Addr: tlsAddr, TLSConfig: certs.ClientConfig(t, true), PoolSize: 1, MaxRetries: -1, DisableIdentity: true})
	defer c.Close()
	if err := c.Set(ctx(), "k", "v", 0).Err(); err != nil {
		t.Fatalf("over the tls-port set live: %v", err)
	}
	if err := admin.ConfigSet(ctx(), "tls-port", "0").Err(); err != nil {
		t.Fatal(err)
	}
	if conn, err := tls.Dial("tcp", tlsAddr, certs.ClientConfig(t, true)); err == nil {
		conn.Close()
		t.Error("tls-port 0 still accepts")
	}
	if v := c.Get(ctx(), "k").Val(); v != "v" {
		t.Errorf("the TLS client after tls-port 0: %q", v)
	}
}
