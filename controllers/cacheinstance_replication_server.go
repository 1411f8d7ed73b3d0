package controllers

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	cachev1alpha1 "github.com/iocache/iocache/api/v1alpha1"
)

// The operator's replication commands to a server pod: ROLE to read it, REPLICAOF to point it,
// CLIENT PAUSE WRITE around a switchover. Each opens its own short connection, as applyLive does.

// serverCreds is how the operator reaches an instance's servers: the password of spec.auth and,
// with spec.tls, the TLS client configuration built from the instance's Secret (tlsState.client).
// Neither is ever logged or recorded.
type serverCreds struct {
	password string
	tls      *tls.Config
}

// serverClient is a one-connection client for the operator's few commands to a pod (live config,
// replication, certificate reloads).
func serverClient(addr string, creds serverCreds) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr: addr, Password: creds.password, TLSConfig: creds.tls,
		DialTimeout: liveDialTimeout, ReadTimeout: liveIOTimeout, WriteTimeout: liveIOTimeout,
		PoolSize: 1, MaxRetries: -1, DisableIdentity: true, Protocol: 2,
	})
}

// readRole asks a server its role with ROLE: a primary's offset, or a replica's primary, link and
// applied offset.
func readRole(ctx context.Context, addr string, creds serverCreds) (role cachev1alpha1.ReplicationRole, offset int64, primary string, linkUp bool, err error) {
	rdb := serverClient(addr, creds)
	defer func() { _ = rdb.Close() }()
	reply, err := rdb.Do(ctx, "ROLE").Slice()
	if err != nil {
		return "", 0, "", false, fmt.Errorf("ROLE: %w", err)
	}
	if len(reply) == 0 {
		return "", 0, "", false, fmt.Errorf("ROLE: empty reply")
	}
	switch reply[0] {
	case "master":
		if len(reply) >= 2 {
			offset, _ = reply[1].(int64)
		}
		return cachev1alpha1.RolePrimary, offset, "", false, nil
	case "slave":
		if len(reply) < 5 {
			return "", 0, "", false, fmt.Errorf("ROLE: short replica reply %v", reply)
		}
		host, _ := reply[1].(string)
		port, _ := reply[2].(int64)
		state, _ := reply[3].(string)
		offset, _ = reply[4].(int64)
		if host != "" {
			primary = net.JoinHostPort(host, strconv.FormatInt(port, 10))
		}
		return cachev1alpha1.RoleReplica, offset, primary, state == "connected", nil
	}
	return "", 0, "", false, fmt.Errorf("ROLE: unexpected role %v", reply[0])
}

// promote makes a server a primary: REPLICAOF NO ONE, which keeps its data and its history, so
// the replicas pointed at it next continue with a partial resync.
func promote(ctx context.Context, addr string, creds serverCreds) error {
	rdb := serverClient(addr, creds)
	defer func() { _ = rdb.Close() }()
	if err := rdb.Do(ctx, "REPLICAOF", "NO", "ONE").Err(); err != nil {
		return fmt.Errorf("REPLICAOF NO ONE: %w", err)
	}
	return nil
}

// replicateFrom points a server at the primary, with the instance's password as masterauth: set
// live, never in the ConfigMap. A server that was a primary (demoted) then drops its clients, as
// Redis Sentinel does: connections the client Service gave it would otherwise get READONLY for as
// long as they live, while reconnecting through the Service reaches the new primary.
func replicateFrom(ctx context.Context, addr, primary string, creds serverCreds, demoted bool) error {
	host, port, err := net.SplitHostPort(primary)
	if err != nil {
		return err
	}
	rdb := serverClient(addr, creds)
	defer func() { _ = rdb.Close() }()
	if creds.password != "" {
		if err := rdb.Do(ctx, "CONFIG", "SET", "masterauth", creds.password).Err(); err != nil {
			return fmt.Errorf("CONFIG SET masterauth: %w", err)
		}
	}
	if err := rdb.Do(ctx, "REPLICAOF", host, port).Err(); err != nil {
		return fmt.Errorf("REPLICAOF: %w", err)
	}
	if demoted {
		for _, typ := range []string{"normal", "pubsub"} {
			if err := rdb.Do(ctx, "CLIENT", "KILL", "TYPE", typ, "SKIPME", "yes").Err(); err != nil {
				return fmt.Errorf("CLIENT KILL TYPE %s: %w", typ, err)
			}
		}
	}
	return nil
}

// switchoverPause bounds how long a switchover holds the old primary's writes: if the operator
// stops mid-way, the server lifts the pause itself.
const switchoverPause = 10 * time.Second

// switchoverCatchUp is how long a switchover waits for the chosen replica to reach the paused
// primary's offset before it gives up and lifts the pause.
const switchoverCatchUp = 5 * time.Second

// pauseWrites holds a primary's writes (CLIENT PAUSE WRITE, reads go on) and returns its offset
// once no write can move it any more.
func pauseWrites(ctx context.Context, addr string, creds serverCreds) (int64, error) {
	rdb := serverClient(addr, creds)
	defer func() { _ = rdb.Close() }()
	if err := rdb.Do(ctx, "CLIENT", "PAUSE", switchoverPause.Milliseconds(), "WRITE").Err(); err != nil {
		return 0, fmt.Errorf("CLIENT PAUSE: %w", err)
	}
	role, offset, _, _, err := readRole(ctx, addr, creds)
	if err != nil {
		return 0, err
	}
	if role != cachev1alpha1.RolePrimary {
		return 0, fmt.Errorf("it is not a primary any more")
	}
	return offset, nil
}

// unpause lifts CLIENT PAUSE.
func unpause(ctx context.Context, addr string, creds serverCreds) error {
	rdb := serverClient(addr, creds)
	defer func() { _ = rdb.Close() }()
	return rdb.Do(ctx, "CLIENT", "UNPAUSE").Err()
}

// waitOffset waits until the server at addr has applied offset, up to switchoverCatchUp.
func waitOffset(ctx context.Context, addr string, creds serverCreds, offset int64) error {
	deadline := time.Now().Add(switchoverCatchUp)
	for {
		_, got, _, linkUp, err := readRole(ctx, addr, creds)
		if err == nil && linkUp && got >= offset {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("it reached offset %d of %d in %s (link up %v, %v)", got, offset, switchoverCatchUp, linkUp, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
