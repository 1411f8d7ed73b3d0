package controllers

import (
	"context"
	"fmt"
	"time"
)

// The hand-over of writes from a primary to one of its replicas without losing an acknowledged
// write: the one sequence of server commands behind every planned move of a primary (a
// replicated instance's switchover, and the surge of a single pod: a temporary replica that
// takes over). It pauses the primary's writes (CLIENT PAUSE WRITE: clients wait, reads go on),
// waits until the replica has applied everything, lets the caller record the decision, promotes
// the replica, lets the caller move the clients' route to it while the old primary's writes
// are still held, then makes the old primary a replica of the new one (it drops its clients,
// which reconnect through the route) and lifts the pause.

// handOverSteps are the caller's parts of a hand-over, each an API-side action whose error
// ends the hand-over as it is.
type handOverSteps struct {
	// record is called once the replica holds everything up to offset, before it is promoted:
	// an operator that restarts after this finishes the same move.
	record func(offset int64) error
	// promoted is called once the replica takes writes (relabel it, point a Service at it).
	promoted func() error
	// route waits, with the old primary's writes held, until clients reach the new primary.
	route func()
}

// serverStepError is a server's refusal or timeout during a hand-over: the caller reports it and
// retries on a later pass. Errors of the caller's steps are returned as they are.
type serverStepError struct{ err error }

func (e *serverStepError) Error() string { return e.err.Error() }
func (e *serverStepError) Unwrap() error { return e.err }

// handOver moves writes from the primary at from to its replica at to, with the caller's steps,
// and returns the offset at which they changed hands. On any error the old primary's pause is
// lifted; after record succeeded, what is left is finished by the caller's next pass.
func handOver(ctx context.Context, from, to string, creds serverCreds, steps handOverSteps) (int64, error) {
	release := func(err error) (int64, error) {
		_ = unpause(ctx, from, creds)
		return 0, err
	}
	offset, err := pauseWrites(ctx, from, creds)
	if err != nil {
		return release(&serverStepError{err})
	}
	if err := waitOffset(ctx, to, creds, offset); err != nil {
		return release(&serverStepError{fmt.Errorf("the replica did not catch up: %w", err)})
	}
	if err := steps.record(offset); err != nil {
		return release(err)
	}
	if err := promote(ctx, to, creds); err != nil {
		return release(&serverStepError{err})
	}
	if err := steps.promoted(); err != nil {
		return release(err)
	}
	// The pause is renewed first so that it outlasts the wait for the route.
	if _, err := pauseWrites(ctx, from, creds); err != nil {
		return release(&serverStepError{err})
	}
	steps.route()
	err = replicateFrom(ctx, from, to, creds, true)
	if uerr := unpause(ctx, from, creds); err == nil {
		err = uerr
	}
	if err != nil {
		return 0, &serverStepError{fmt.Errorf("repointing the old primary: %w", err)}
	}
	return offset, nil
}

// waitCaughtUp waits until the replica at addr has its link to the primary up and has applied
// the primary's offset as it was when the wait began, up to timeout: a new replica is then close
// enough behind for a hand-over's pause to be short.
func waitCaughtUp(ctx context.Context, addr, primary string, creds serverCreds, timeout time.Duration) error {
	_, target, _, _, err := readRole(ctx, primary, creds)
	if err != nil {
		return err
	}
	deadline := time.Now().Add(timeout)
	for {
		_, got, _, linkUp, err := readRole(ctx, addr, creds)
		if err == nil && linkUp && got >= target {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("replica at offset %d of %d after %s (link up %v, %v)", got, target, timeout, linkUp, err)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
}
