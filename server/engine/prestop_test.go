package engine

import (
	"bytes"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/iocache/iocache/server/config"
	"github.com/iocache/iocache/server/probe"
	"github.com/iocache/iocache/server/testpeer"
)

// The preStop hook of a replicated pod holds the container's SIGTERM while the server is a primary
// with replicas, and lets it go at once when there is nobody to hand over to or once the server
// has become a replica (the operator moved the primary away from the pod being deleted).
func TestPreStopWaitsWhileAPrimaryHasReplicas(t *testing.T) {
	_, primaryAddr := startServer(t, func(c *config.Config) { c.MetricsPort = testpeer.FreePort(t) })
	_, primaryPort, _ := net.SplitHostPort(primaryAddr)
	run := func(wait string) (time.Duration, string) {
		var stderr bytes.Buffer
		start := time.Now()
		if code := probe.PreStop([]string{"--port", primaryPort, "--wait", wait}, &stderr); code != 0 {
			t.Fatalf("pre-stop exited %d: %s", code, stderr.String())
		}
		return time.Since(start), stderr.String()
	}
	if took, _ := run("10s"); took > time.Second {
		t.Fatalf("a primary without replicas held its stop for %s", took)
	}

	host, _, _ := net.SplitHostPort(primaryAddr)
	_, replicaAddr := startServer(t, func(c *config.Config) {
		c.ReplicaOf = host + " " + primaryPort
		c.MetricsPort = testpeer.FreePort(t)
	})
	primary, replica := redisClient(t, primaryAddr, 2), redisClient(t, replicaAddr, 2)
	waitFor(t, "the replica's link", func() bool {
		return strings.Contains(replica.Info(ctx(), "replication").Val(), "master_link_status:up")
	})
	if took, msg := run("700ms"); took < 600*time.Millisecond || !strings.Contains(msg, "still a primary with 1 replicas") {
		t.Fatalf("a primary with a replica let its stop go after %s (%q): it must wait for the primary to move", took, msg)
	}

	// What the operator does: promote the replica, then make the old primary its replica.
	go func() {
		time.Sleep(500 * time.Millisecond)
		replica.Do(ctx(), "replicaof", "no", "one")
		_, replicaPort, _ := net.SplitHostPort(replicaAddr)
		primary.Do(ctx(), "replicaof", host, replicaPort)
	}()
	took, _ := run("10s")
	if took < 400*time.Millisecond || took > 3*time.Second {
		t.Fatalf("pre-stop returned after %s; want it right after the switchover at 0.5s", took)
	}
}

// The preStop hook reaches a TLS-only server (spec.tls: port 0, tls-port) with --tls, presenting
// the client certificate that tls-auth-clients yes requires; without --tls it cannot, and says so.
func TestPreStopOverTLS(t *testing.T) {
	certs := testpeer.NewCerts(t)
	_, addr := startTLSServer(t, certs, nil)
	_, port, _ := net.SplitHostPort(addr)
	var stderr bytes.Buffer
	args := []string{"--port", port, "--wait", "1s", "--tls", "--cacert", certs.CAFile, "--cert", certs.CertFile, "--key", certs.KeyFile}
	if code := probe.PreStop(args, &stderr); code != 0 || stderr.Len() != 0 {
		t.Fatalf("pre-stop over TLS exited %d: %s", code, stderr.String())
	}
	stderr.Reset()
	if code := probe.PreStop([]string{"--port", port, "--wait", "1s"}, &stderr); code != 0 || !strings.Contains(stderr.String(), "not waiting") {
		t.Fatalf("pre-stop in plaintext against the TLS port exited %d: %q", code, stderr.String())
	}
}
