package esdb

import (
	"context"
	"errors"
	"fmt"
	"time"

	esdbclient "github.com/EventStore/EventStore-Client-Go/v4/esdb"

	"github.com/onceledger/onceledger/adapters/eventstore"
)

// How the Store drives the client.
//
// The client serves every call through one unbuffered internal queue, read
// by a connection goroutine that also runs node discovery. Three flaws of
// the client (v4.2.0) shape this file:
//
//   - sending on that queue ignores the call's context: while discovery
//     runs (seconds, with the node away) every call waits, deaf to its
//     deadline;
//   - when a discovery fails for good, the connection goroutine returns
//     without draining the queue: calls queued behind the failed one wait
//     forever, and the client answers every later call "connection closed";
//   - closing the client closes the queue, so a call still sending on it
//     panics ("send on closed channel"), a crash of the whole process.
//
// Hence: each call runs in its own goroutine and its caller waits for the
// call's context, not for the client; a client is closed only when no call
// runs on it; a replaced client releases the callers stranded on it.

// generation is one client and the calls running on it.
type generation struct {
	client   *esdbclient.Client
	inflight int
	retired  bool          // replaced, or the store closed: close once idle
	dead     chan struct{} // closed on retirement: callers still waiting give up
}

func newGeneration(c *esdbclient.Client) *generation {
	return &generation{client: c, dead: make(chan struct{})}
}

// errReplaced: the call was left waiting on a client that was replaced
// (its discovery failed); the caller may run it again on the new one.
var errReplaced = fmt.Errorf("%w: the client was replaced while the call waited", eventstore.ErrUnavailable)

// errClosed: the store was closed.
var errClosed = errors.New("esdb: store closed")

// undeadlinedWait bounds the wait of a call whose context has no deadline,
// so that a command run by hand while the node is away ends with
// ErrUnavailable instead of hanging; loops that retry (projectors,
// subscriptions, the sweeper) simply try again.
const undeadlinedWait = 30 * time.Second

// acquire counts a call on the current generation.
func (s *Store) acquire() (*generation, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return nil, errClosed
	}
	s.gen.inflight++
	return s.gen, nil
}

// release ends a call; the last call on a retired client closes it.
func (s *Store) release(g *generation) {
	s.mu.Lock()
	defer s.mu.Unlock()
	g.inflight--
	if g.retired && g.inflight == 0 && s.config != nil {
		_ = g.client.Close()
	}
}

// retireLocked marks g as no longer to be used, releases the callers
// waiting on it, and closes its client now if no call runs on it (a client
// the caller of New owns is never closed).
func (s *Store) retireLocked(g *generation) {
	if g.retired {
		return
	}
	g.retired = true
	close(g.dead)
	if g.inflight == 0 && s.config != nil {
		_ = g.client.Close()
	}
}

// replace puts a fresh client in place of old's, whose discovery failed for
// good (the client never recovers from that); a no-op if someone did it
// already. Only a store that owns its configuration can.
func (s *Store) replace(old *generation) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return errClosed
	}
	if s.gen != old {
		return nil
	}
	fresh, err := esdbclient.NewClient(s.config)
	if err != nil {
		return err
	}
	s.retireLocked(old)
	s.gen = newGeneration(fresh)
	return nil
}

// op is one client call. It gets its own context, canceled when run returns
// (the caller got its answer or gave up), so that a call released late
// sends nothing.
type op[T any] func(ctx context.Context, c *esdbclient.Client) (T, error)

// run runs op on the current client in its own goroutine and waits for it,
// for ctx to end, or for the client to be retired, whichever comes first.
// op must not share mutable state with its caller: a call given up on may
// still run for a while, and then sends its result to nobody.
func run[T any](ctx context.Context, s *Store, call op[T]) (*generation, T, error) {
	var zero T
	g, err := s.acquire()
	if err != nil {
		return nil, zero, err
	}
	type result struct {
		v   T
		err error
	}
	callCtx, giveUp := context.WithCancel(ctx)
	defer giveUp()
	done := make(chan result, 1)
	go func() {
		defer s.release(g)
		v, err := call(callCtx, g.client)
		done <- result{v, err}
	}()
	var limit <-chan time.Time
	if _, ok := ctx.Deadline(); !ok {
		t := time.NewTimer(undeadlinedWait)
		defer t.Stop()
		limit = t.C
	}
	select {
	case r := <-done:
		return g, r.v, r.err
	case <-ctx.Done():
		err = ctx.Err()
	case <-g.dead:
		err = errReplaced
	case <-limit:
		err = fmt.Errorf("%w: no answer within %v", eventstore.ErrUnavailable, undeadlinedWait)
	}
	return g, zero, err
}

// do runs op (see run). When the client turns out to be closed (a discovery
// failed for good; Dial makes that unlikely unless the connection string
// bounds the attempts) and the store owns its configuration, it replaces
// the client and runs op once more. That retry is safe even for appends: a
// closed client fails before sending anything, a stranded call either never
// got a connection or already failed, and an append carries its event ids
// and a concrete expected version, so the node takes a repeat as a no-op.
func do[T any](ctx context.Context, s *Store, call op[T]) (T, error) {
	g, v, err := run(ctx, s, call)
	if err == nil || s.config == nil || ctx.Err() != nil ||
		!(isCode(err, esdbclient.ErrorCodeConnectionClosed) || errors.Is(err, errReplaced)) {
		return v, err
	}
	if rerr := s.replace(g); rerr != nil {
		return v, err
	}
	_, v, err = run(ctx, s, call)
	return v, err
}
