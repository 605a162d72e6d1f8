package console_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/access"
	"github.com/onceledger/onceledger/adapters/console"
	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/ingest"
	"github.com/onceledger/onceledger/adapters/operations"
	"github.com/onceledger/onceledger/adapters/postgres"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/adapters/postgres/readmodel"
	"github.com/onceledger/onceledger/adapters/postgres/sessionstore"
	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/standard"
	"github.com/onceledger/onceledger/domain/payment"
	"github.com/onceledger/onceledger/domain/period"
	"github.com/onceledger/onceledger/projections"
)

const (
	standardSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	adminToken     = "admin-token-0123456789"
	readToken      = "read-token-0123456789"
)

// fixture is the console over a real database whose data arrived through
// the real ingestion path: deliveries signed with the Standard Webhooks
// scheme, verified and normalized by the provider adapter, recorded by the
// ingest service with the Postgres recorder, and projected by the running
// projectors.
type fixture struct {
	t       *testing.T
	pool    *pgxpool.Pool
	es      *postgres.EventStore
	svc     *ingest.Service
	adapter *standard.Adapter
	projSvc *projections.Service
	srv     *httptest.Server
	recon   *reconRecorder
	redrive *redriveRecorder
}

type fixtureOptions struct {
	noActions bool // leave the acting ports unset
}

func newFixture(t *testing.T, opts fixtureOptions) *fixture {
	t.Helper()
	pool := pgtest.NewPool(t)
	es := postgres.NewEventStore(pool)
	adapter, err := standard.New([]string{standardSecret}, 5*time.Minute)
	require.NoError(t, err)
	f := &fixture{
		t: t, pool: pool, es: es, adapter: adapter,
		svc:     ingest.New(postgres.NewJournal(pool, es), ingest.PaymentDecider{}, ingest.Options{}),
		projSvc: projections.NewService(es, readmodel.New(pool), nil),
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- f.projSvc.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		<-done
	})

	tokens, err := access.Parse("alice="+readToken, "ops="+adminToken)
	require.NoError(t, err)
	cfg := readSide(pool, es)
	cfg.Tokens, cfg.PageSize = tokens, 5
	if !opts.noActions {
		f.recon = &reconRecorder{es: es}
		f.redrive = &redriveRecorder{}
		cfg.Recon, cfg.Redrive = f.recon, f.redrive
		cfg.PeriodActions = periodActions{operations.NewPeriods(es, time.UTC, time.Now)}
	}
	h, err := console.New(cfg)
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle(console.Prefix, h)
	mux.Handle(console.Prefix+"/", h)
	f.srv = httptest.NewServer(mux)
	t.Cleanup(f.srv.Close)
	return f
}

// readSide is the console's configuration over a real database, wired as
// serve wires it (cmd/onceledger/app): the read-model store, the
// projections' status reader, the event store, the session store.
func readSide(pool *pgxpool.Pool, es *postgres.EventStore) console.Config {
	store := readmodel.New(pool)
	return console.Config{
		Sessions: sessionstore.New(pool),
		Read:     store,
		Periods:  store,
		Events:   es,
		Expected: store,
		Projections: projections.StatusReader{Feed: es, DB: store,
			Options: projections.StatusOptions{LagCap: 100_000}},
	}
}

var seq atomic.Int64

// deliver signs a Standard Webhooks delivery, verifies and normalizes it
// with the provider adapter and records it through the ingest service.
func (f *fixture) deliver(msgID, typ string, data map[string]any) ingest.Outcome {
	f.t.Helper()
	return f.deliverAt(msgID, typ, time.Now(), data)
}

// deliverAt is deliver with the time the provider says the fact happened.
func (f *fixture) deliverAt(msgID, typ string, at time.Time, data map[string]any) ingest.Outcome {
	f.t.Helper()
	body, err := json.Marshal(map[string]any{"type": typ, "timestamp": at.UTC().Format(time.RFC3339), "data": data})
	require.NoError(f.t, err)
	return f.deliverRaw(msgID, body)
}

func (f *fixture) deliverRaw(msgID string, body []byte) ingest.Outcome {
	f.t.Helper()
	h, err := standard.Sign(standardSecret, msgID, time.Now(), body)
	require.NoError(f.t, err)
	evs, err := f.adapter.Parse(providers.Request{Header: h, Body: body})
	require.NoError(f.t, err)
	var out ingest.Outcome
	for _, ev := range evs {
		res, err := f.svc.Ingest(context.Background(), ev)
		require.NoError(f.t, err)
		out = res.Outcome
	}
	return out
}

// waitProjected waits until every projection has caught up with the feed.
func (f *fixture) waitProjected() {
	f.t.Helper()
	ctx := context.Background()
	require.Eventually(f.t, func() bool {
		head, err := f.es.Head(ctx)
		if err != nil {
			return false
		}
		var behind int
		err = f.pool.QueryRow(ctx, `SELECT count(*) FROM projection_checkpoints
			WHERE (position_commit, position_prepare) < ($1, $2)`, int64(head.Commit), int64(head.Prepare)).Scan(&behind)
		return err == nil && behind == 0
	}, 30*time.Second, 20*time.Millisecond, "projections catch up")
}

// seedStory records a small but complete story: a captured payment with a
// partial refund and a conflicting redelivery (an open reconciliation item),
// an orphan refund (refund_before_payment), a payout, an ignored type, and
// more payments than one page holds.
type story struct {
	paymentID   string
	conflictKey string // dedup key of the conflicting redelivery
	ignoredKey  string
	orphanID    string
}

func (f *fixture) seedStory() story {
	f.t.Helper()
	n := seq.Add(1)
	s := story{
		paymentID:   fmt.Sprintf("pay_console_%d", n),
		conflictKey: fmt.Sprintf("msg_capture_%d", n),
		ignoredKey:  fmt.Sprintf("msg_ignored_%d", n),
		orphanID:    fmt.Sprintf("pay_orphan_%d", n),
	}
	require.Equal(f.t, ingest.Accepted, f.deliver(s.conflictKey, "payment.captured",
		map[string]any{"payment_id": s.paymentID, "capture_id": "cap_1", "amount": 125000, "currency": "USD", "fee": 3650}))
	require.Equal(f.t, ingest.Accepted, f.deliver(fmt.Sprintf("msg_refund_%d", n), "refund.succeeded",
		map[string]any{"payment_id": s.paymentID, "refund_id": "re_1", "amount": 25000, "currency": "USD"}))
	// The same webhook-id with another amount: a conflicting redelivery.
	require.Equal(f.t, ingest.Duplicate, f.deliver(s.conflictKey, "payment.captured",
		map[string]any{"payment_id": s.paymentID, "capture_id": "cap_1", "amount": 126000, "currency": "USD", "fee": 3650}))
	require.Equal(f.t, ingest.Accepted, f.deliver(fmt.Sprintf("msg_orphan_%d", n), "refund.succeeded",
		map[string]any{"payment_id": s.orphanID, "refund_id": "re_9", "amount": 500, "currency": "EUR"}))
	require.Equal(f.t, ingest.Accepted, f.deliver(fmt.Sprintf("msg_payout_%d", n), "payout.paid",
		map[string]any{"payout_id": fmt.Sprintf("po_%d", n), "amount": 90000, "currency": "USD"}))
	require.Equal(f.t, ingest.Ignored, f.deliver(s.ignoredKey, "customer.created", map[string]any{"customer_id": "cus_1"}))
	// Earlier activity, spread over the last weeks (for the charts).
	for i := range 7 {
		at := time.Now().AddDate(0, 0, -(3*i + 1))
		pay, cur := fmt.Sprintf("pay_more_%d_%d", n, i), []string{"USD", "EUR"}[i%2]
		require.Equal(f.t, ingest.Accepted, f.deliverAt(fmt.Sprintf("msg_more_%d_%d", n, i), "payment.captured", at,
			map[string]any{"payment_id": pay, "capture_id": fmt.Sprintf("cap_m%d", i), "amount": 40000 + 12500*i, "currency": cur, "fee": 300}))
		if i%3 == 0 {
			require.Equal(f.t, ingest.Accepted, f.deliverAt(fmt.Sprintf("msg_more_refund_%d_%d", n, i), "refund.succeeded", at.Add(20*time.Hour),
				map[string]any{"payment_id": pay, "refund_id": fmt.Sprintf("re_m%d", i), "amount": 15000, "currency": cur}))
		}
		if i == 4 {
			require.Equal(f.t, ingest.Accepted, f.deliverAt(fmt.Sprintf("msg_more_dispute_%d_%d", n, i), "dispute.opened", at.Add(30*time.Hour),
				map[string]any{"payment_id": pay, "dispute_id": "dp_1", "amount": 20000, "currency": cur}))
		}
	}
	f.waitProjected()
	return s
}

// reconRecorder is a TEST DOUBLE of the ReconActions port. It records each
// call and, as the real service will, records the action as an event in the
// item's stream (reconciliation.cleared, with the actor and note in its
// details), so that the projections, the lists and the timeline show it.
type reconRecorder struct {
	es    *postgres.EventStore
	mu    sync.Mutex
	calls []reconCall
}

type reconCall struct {
	Resolve     bool
	Item        console.ItemRef
	Actor, Note string
}

func (r *reconRecorder) Resolve(ctx context.Context, item console.ItemRef, actor, note string) error {
	r.mu.Lock()
	r.calls = append(r.calls, reconCall{Resolve: true, Item: item, Actor: actor, Note: note})
	r.mu.Unlock()
	evs, err := r.es.ReadStream(ctx, item.StreamID)
	if err != nil {
		return err
	}
	if len(evs) == 0 {
		return fmt.Errorf("%w: stream %s", console.ErrNotFound, item.StreamID)
	}
	var meta payment.Meta
	if ev, err := payment.Decode(evs[0].Type, evs[0].Data); err == nil {
		meta = ev.Metadata()
	}
	meta.DedupKey, meta.OccurredAt = "console:"+uuid.NewString(), time.Now().UTC()
	typ, data, err := payment.Encode(payment.Cleared{Meta: meta, Kind: item.Kind, Key: item.Key,
		Details: fmt.Sprintf("resolved by %s: %s", actor, note)})
	if err != nil {
		return err
	}
	_, err = r.es.Append(ctx, item.StreamID, eventstore.ExpectFor(len(evs)),
		[]eventstore.EventData{{ID: uuid.New(), Type: typ, Data: data}})
	return err
}

func (r *reconRecorder) Reopen(_ context.Context, item console.ItemRef, actor, note string) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, reconCall{Item: item, Actor: actor, Note: note})
	return nil
}

func (r *reconRecorder) snapshot() []reconCall {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.calls)
}

// redriveRecorder is a TEST DOUBLE of the Redriver port: it records the
// requests and reports every selected delivery as still ignored.
type redriveRecorder struct {
	mu   sync.Mutex
	reqs []console.RedriveRequest
}

func (r *redriveRecorder) Redrive(_ context.Context, req console.RedriveRequest) (console.RedriveResult, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.reqs = append(r.reqs, req)
	return console.RedriveResult{Selected: len(req.Keys), Ignored: len(req.Keys)}, nil
}

func (r *redriveRecorder) snapshot() []console.RedriveRequest {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.reqs)
}

// newConsoleServer serves another console over f's database with other
// tokens: a second instance, or the same after a configuration change.
func newConsoleServer(t *testing.T, f *fixture, read, admin string) *httptest.Server {
	t.Helper()
	tokens, err := access.Parse(read, admin)
	require.NoError(t, err)
	cfg := readSide(f.pool, f.es)
	cfg.Tokens = tokens
	h, err := console.New(cfg)
	require.NoError(t, err)
	mux := http.NewServeMux()
	mux.Handle(console.Prefix, h)
	mux.Handle(console.Prefix+"/", h)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

// periodActions is the console's PeriodActions over the real operations
// service, as serve wires it.
type periodActions struct{ p *operations.Periods }

func (a periodActions) ClosePeriod(ctx context.Context, p period.Period, actor, note string) error {
	_, err := a.p.ClosePeriod(ctx, p, actor, note)
	return err
}

func (a periodActions) ReopenPeriod(ctx context.Context, p period.Period, actor, reason string) error {
	_, err := a.p.ReopenPeriod(ctx, p, actor, reason)
	return err
}
