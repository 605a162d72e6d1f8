package expectstore_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/expectations"
	"github.com/onceledger/onceledger/adapters/ingest"
	"github.com/onceledger/onceledger/adapters/postgres/expectstore"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/expectation"
)

// scriptedAsker answers from a script per reference and counts questions.
type scriptedAsker struct {
	mu     sync.Mutex
	log    []string
	asked  map[string]int
	answer func(ref string, n int) (expectations.Answer, error)
}

func (a *scriptedAsker) Ask(_ context.Context, ref string) (expectations.Answer, error) {
	a.mu.Lock()
	a.asked[ref]++
	a.log = append(a.log, ref)
	n := a.asked[ref]
	a.mu.Unlock()
	return a.answer(ref, n)
}

func (a *scriptedAsker) count(ref string) int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return a.asked[ref]
}

// recordingGate keeps what would be recorded.
type recordingGate struct {
	mu  sync.Mutex
	evs []delivery.Event
}

func (g *recordingGate) Ingest(_ context.Context, ev delivery.Event) (ingest.Result, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.evs = append(g.evs, ev)
	return ingest.Result{Outcome: ingest.Accepted}, nil
}

// The schedule: due expectations are asked once each however many
// queriers sweep at once (the lease); a pending answer backs off; a forged
// one records nothing and counts; 429 waits its Retry-After; a paid one is
// recorded and not asked again.
func TestQuerierScheduleLeaseAndOutcomes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w := worlds(t)["postgres"](t)
	refs := []string{}
	for i := range 40 {
		ref := fmt.Sprintf("ORDER-%02d", i)
		refs = append(refs, ref)
		_, _, err := w.ops.Register(ctx, expectation.RegisterCommand{Provider: "alipay", Reference: ref, Amount: 100,
			Currency: "CNY", ExpiresAt: w.clock().Add(24 * time.Hour), Actor: "shop"})
		require.NoError(t, err)
	}
	w.drain(t, ctx, w.manager("m"))
	w.advance(16 * time.Minute) // past ONCELEDGER_QUERY_AFTER

	paid := delivery.Event{Provider: "alipay", DedupKey: "query:T:TRADE_SUCCESS", Type: "TRADE_SUCCESS", PaymentKey: "T"}
	var limited sync.Map // refs that answer 429
	asker := &scriptedAsker{asked: map[string]int{}, answer: func(ref string, n int) (expectations.Answer, error) {
		if _, ok := limited.Load(ref); ok {
			return expectations.Answer{}, &expectations.RetryAfterError{After: 30 * time.Minute, Err: errors.New("429")}
		}
		switch ref {
		case "ORDER-00":
			return expectations.Answer{Outcome: expectations.OutcomePaid, Event: paid}, nil
		case "ORDER-01":
			return expectations.Answer{}, fmt.Errorf("%w: sign", expectations.ErrForged)
		case "ORDER-03":
			return expectations.Answer{}, errors.New("HTTP 502")
		}
		return expectations.Answer{Outcome: expectations.OutcomePending}, nil
	}}
	gate := &recordingGate{}
	store := expectstore.New(w.pool)
	queriers := make([]*expectations.Querier, 4)
	for i := range queriers {
		queriers[i] = expectations.NewQuerier(map[string]expectations.Asker{"alipay": asker}, gate, store,
			expectations.QueryConfig{Owner: fmt.Sprintf("q%d", i), Now: w.clock, Rate: 10000, Batch: 7})
	}
	var wg sync.WaitGroup
	for _, q := range queriers {
		wg.Go(func() {
			for {
				n, err := q.Sweep(ctx)
				if !assert.NoError(t, err) || n == 0 {
					return
				}
			}
		})
	}
	wg.Wait()
	for _, ref := range refs {
		assert.Equal(t, 1, asker.count(ref), "%s asked once across the queriers", ref)
	}
	require.Len(t, gate.evs, 1, "only the paid answer is recorded")
	forged := 0.0
	for _, q := range queriers {
		forged += testutil.ToFloat64(q.Counter().WithLabelValues("alipay", "forged"))
	}
	assert.Equal(t, 1.0, forged)

	next := func(ref string) (at *time.Time, attempts int) {
		require.NoError(t, w.pool.QueryRow(ctx, `SELECT next_query_at, query_attempts FROM expected_payments WHERE reference = $1`, ref).
			Scan(&at, &attempts))
		return at, attempts
	}
	at, _ := next("ORDER-00")
	assert.Nil(t, at, "paid: not asked again")
	at, n := next("ORDER-01")
	require.NotNil(t, at)
	assert.Equal(t, 1, n, "forged: backs off")
	at, n = next("ORDER-10")
	require.NotNil(t, at)
	assert.Equal(t, 1, n)
	assert.WithinDuration(t, w.clock().Add(time.Minute), *at, time.Second, "first backoff")

	// Nothing is due until the backoff has passed; then the pending ones
	// are asked again, with a doubled backoff.
	got, err := queriers[0].Sweep(ctx)
	require.NoError(t, err)
	assert.Zero(t, got)
	w.advance(2 * time.Minute)
	for {
		n, err := queriers[1].Sweep(ctx)
		require.NoError(t, err)
		if n == 0 {
			break
		}
	}
	assert.Equal(t, 2, asker.count("ORDER-10"))
	at, n = next("ORDER-10")
	assert.Equal(t, 2, n)
	assert.WithinDuration(t, w.clock().Add(2*time.Minute), *at, time.Second)

	w.advance(3 * time.Minute)
	retryAfterDefers(t, ctx, w, asker, gate, refs, &limited, next)

}

// retryAfterDefers: a 429 with Retry-After holds every question to the
// provider until it has run.
func retryAfterDefers(t *testing.T, ctx context.Context, w *world, asker *scriptedAsker, gate *recordingGate, refs []string,
	limited *sync.Map, next func(string) (*time.Time, int)) {
	t.Helper()
	// A 429 with Retry-After holds every question to the provider until it
	// has run: the others are deferred to then, asked nothing, no attempt
	// counted.
	limited.Store("ORDER-04", true)
	asker.mu.Lock()
	logged := len(asker.log)
	asker.mu.Unlock()
	q := expectations.NewQuerier(map[string]expectations.Asker{"alipay": asker}, gate, expectstore.New(w.pool),
		expectations.QueryConfig{Owner: "q-limited", Now: w.clock, Rate: 10000, Batch: 100})
	// ORDER-04 is due first.
	_, err := w.pool.Exec(ctx, `UPDATE expected_payments SET next_query_at = next_query_at - interval '1 minute' WHERE reference = 'ORDER-04'`)
	require.NoError(t, err)
	for {
		n, err := q.Sweep(ctx)
		require.NoError(t, err)
		if n == 0 {
			break
		}
	}
	asker.mu.Lock()
	log := append([]string(nil), asker.log[logged:]...)
	asker.mu.Unlock()
	require.NotEmpty(t, log)
	assert.Equal(t, "ORDER-04", log[len(log)-1], "after the 429 nothing more was asked: %v", log)
	at, n := next("ORDER-04")
	require.NotNil(t, at)
	assert.WithinDuration(t, w.clock().Add(30*time.Minute), *at, time.Second, "after its Retry-After")
	assert.Equal(t, 2, n, "429 is not an attempt")
	deferred := 0
	for _, ref := range refs[5:] {
		if at, _ := next(ref); at != nil && at.After(w.clock().Add(29*time.Minute)) {
			deferred++
		}
	}
	assert.Equal(t, len(refs[5:]), deferred, "the questions after the 429 wait for its Retry-After")
	assert.Equal(t, 1.0, testutil.ToFloat64(q.Counter().WithLabelValues("alipay", "rate_limited")), "one question got the 429")
}

// With Concurrency, up to that many questions to one provider are in
// flight at once (serve sets it from ONCELEDGER_QUERY_RATE, so that a
// question taking longer than 1/rate does not hold the sweep below the
// rate), never more, and each due expectation is still asked once.
func TestQuerierConcurrency(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	w := worlds(t)["postgres"](t)
	for i := range 24 {
		_, _, err := w.ops.Register(ctx, expectation.RegisterCommand{Provider: "alipay", Reference: fmt.Sprintf("ORDER-C%02d", i),
			Amount: 100, Currency: "CNY", ExpiresAt: w.clock().Add(24 * time.Hour), Actor: "shop"})
		require.NoError(t, err)
	}
	w.drain(t, ctx, w.manager("m"))
	w.advance(16 * time.Minute)

	var mu sync.Mutex
	inFlight, most := 0, 0
	release := make(chan struct{})
	// Fewer than 4 ever in flight: each waits until this runs out (once),
	// and the assertion below fails.
	patience, stop := context.WithTimeout(ctx, 5*time.Second)
	defer stop()
	asker := &scriptedAsker{asked: map[string]int{}, answer: func(string, int) (expectations.Answer, error) {
		mu.Lock()
		inFlight++
		most = max(most, inFlight)
		reached := inFlight == 4
		mu.Unlock()
		if reached {
			close(release) // the fourth question in flight: let them all answer
		}
		select {
		case <-release:
		case <-patience.Done():
		}
		mu.Lock()
		inFlight--
		mu.Unlock()
		return expectations.Answer{Outcome: expectations.OutcomePending}, nil
	}}
	q := expectations.NewQuerier(map[string]expectations.Asker{"alipay": asker}, &recordingGate{}, expectstore.New(w.pool),
		expectations.QueryConfig{Owner: "q-conc", Now: w.clock, Rate: 10000, Batch: 100, Concurrency: 4})
	n, err := q.Sweep(ctx)
	require.NoError(t, err)
	assert.Equal(t, 24, n)
	assert.Equal(t, 4, most, "four questions in flight at once, never more")
	for i := range 24 {
		assert.Equal(t, 1, asker.count(fmt.Sprintf("ORDER-C%02d", i)))
	}
}
