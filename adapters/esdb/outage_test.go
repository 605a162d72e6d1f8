package esdb_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/esdb/esdbfake"
	"github.com/onceledger/onceledger/adapters/eventstore"
)

// TestOutageUnderConcurrentCalls: the node goes away while many goroutines
// call the store (as the projectors, the sweeper, webhooks and /readyz of
// one server do), stays away for a while and comes back on the same
// address. With the client's own behaviour, calls queued behind a failed
// discovery waited forever, and closing that client to replace it made them
// panic inside the client ("send on closed channel"). Here every call ends
// within its deadline while the node is away, nothing panics, nothing races
// (run under -race), and every goroutine works again once the node is back
// — with the default (unbounded) discovery and with a bounded one, which
// makes the store replace its client.
func TestOutageUnderConcurrentCalls(t *testing.T) {
	for _, tc := range []struct{ name, params string }{
		{"default discovery", ""},
		{"bounded discovery", "&maxDiscoverAttempts=2&discoveryInterval=10"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := esdbfake.Start(t)
			addr := srv.Addr()
			s := dial(t, srv.URL()+tc.params)
			c := ctx(t)
			_, err := s.Append(c, "payment-x-0", eventstore.NoStream, events(1))
			require.NoError(t, err)
			stopAt := time.Now().Add(1500 * time.Millisecond)
			restartAt := stopAt.Add(2 * time.Second)
			testEnd := restartAt.Add(15 * time.Second)

			const workers = 24
			var wg sync.WaitGroup
			var mu sync.Mutex
			var problems []string
			okAfterRestart := make([]bool, workers)
			for w := 0; w < workers; w++ {
				wg.Go(func() {
					stream := fmt.Sprintf("payment-x-%d", w+1)
					written := 0
					// An append whose answer was lost is repeated with the
					// same ids at the same version, as the recorder does.
					var pending []eventstore.EventData
					for time.Now().Before(testEnd) && !okAfterRestart[w] {
						callCtx, cancel := context.WithTimeout(c, time.Second)
						began := time.Now()
						var err error
						switch w % 4 {
						case 0:
							_, err = s.ReadAll(callCtx, eventstore.Start, 10)
						case 1:
							_, err = s.Head(callCtx)
						case 2:
							_, err = s.ReadStream(callCtx, "payment-x-0")
						case 3:
							if pending == nil {
								pending = events(1)
							}
							_, err = s.Append(callCtx, stream, eventstore.ExpectFor(written), pending)
							if err == nil {
								written++
								pending = nil
							}
						}
						cancel()
						took := time.Since(began)
						mu.Lock()
						if took > 3*time.Second {
							problems = append(problems, fmt.Sprintf("worker %d: a call took %v", w, took))
						}
						if err != nil && !errors.Is(err, eventstore.ErrUnavailable) {
							problems = append(problems, fmt.Sprintf("worker %d: %v", w, err))
						}
						mu.Unlock()
						if err == nil && began.After(restartAt) {
							okAfterRestart[w] = true
						}
						time.Sleep(10 * time.Millisecond)
					}
				})
			}
			time.Sleep(time.Until(stopAt))
			srv.Stop()
			time.Sleep(time.Until(restartAt))
			require.NoError(t, srv.Start(addr))
			wg.Wait()
			assert.Empty(t, problems)
			for w, ok := range okAfterRestart {
				assert.True(t, ok, "worker %d never succeeded after the node came back", w)
			}
			// No append was lost or doubled: each stream holds distinct
			// events, and the appends went on after the outage.
			for w := 3; w < workers; w += 4 {
				evs, err := s.ReadStream(c, fmt.Sprintf("payment-x-%d", w+1))
				seen := map[string]bool{}
				for _, e := range evs {
					seen[e.ID.String()] = true
				}
				assert.NoError(t, err, "stream of worker %d: %d events (%d distinct), %v", w, len(evs), len(seen), err)
				assert.NotEqualValues(t, 0, len(evs), "stream of worker %d: %d events (%d distinct), %v", w, len(evs), len(seen), err)
				assert.EqualValues(t, len(evs), len(seen), "stream of worker %d: %d events (%d distinct), %v", w, len(evs), len(seen), err)
			}
		})
	}
}

// TestCallsEndWithTheirContextWhileTheNodeIsAway: with the default
// (unbounded) discovery the client would hold a call until the node comes
// back; the store answers ErrUnavailable at the caller's deadline.
func TestCallsEndWithTheirContextWhileTheNodeIsAway(t *testing.T) {
	srv := esdbfake.Start(t)
	s := dial(t, srv.URL())
	c := ctx(t)
	_, err := s.Head(c)
	require.NoError(t, err)
	srv.Stop()
	for i := 0; i < 3; i++ {
		short, cancel := context.WithTimeout(c, 300*time.Millisecond)
		began := time.Now()
		_, err := s.ReadStream(short, "payment-x-1")
		cancel()
		require.ErrorIs(t, err, eventstore.ErrUnavailable, "read %d while the node is away: %v", i, err)
		took := time.Since(began)
		require.False(t, took > 2*time.Second, "read %d took %v past a 300ms deadline", i, took)
	}
}
