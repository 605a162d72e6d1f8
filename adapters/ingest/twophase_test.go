package ingest_test

// Tests of the write protocol: the ingestion matrix at the service level
// (over the two-phase journal and the one-transaction Postgres journal) and
// the crash windows between the two phases, each run against every event
// store backend: the Postgres event store through the port, and the
// EventStoreDB adapter against the in-process fake node. The inbox is always
// a real Postgres database.

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/esdb"
	"github.com/onceledger/onceledger/adapters/esdb/esdbfake"
	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/ingest"
	"github.com/onceledger/onceledger/adapters/postgres"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/payment"
)

// backend constructs an event store for a test whose inbox lives in pool.
type backend struct {
	name  string
	store func(t *testing.T, pool *pgxpool.Pool) eventstore.Store
}

var backends = []backend{
	{"postgres", func(_ *testing.T, pool *pgxpool.Pool) eventstore.Store { return postgres.NewEventStore(pool) }},
	{"esdbfake", func(t *testing.T, _ *pgxpool.Pool) eventstore.Store {
		return dialESDB(t, esdbfake.Start(t).URL())
	}},
}

func dialESDB(t *testing.T, url string) *esdb.Store {
	t.Helper()
	s, err := esdb.Dial(url)
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	return s
}

func eachBackend(t *testing.T, fn func(t *testing.T, b backend)) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) { fn(t, b) })
	}
}

// probe wraps a store: it counts appends, can hold an append whose context
// carries a *pause, and can fail every append.
type probe struct {
	eventstore.Store
	appends atomic.Int64
	fail    error
}

type pauseKey struct{}

// pause holds the first append made with its context until released.
type pause struct {
	once             sync.Once
	reached, release chan struct{}
}

func newPause() *pause { return &pause{reached: make(chan struct{}), release: make(chan struct{})} }

func (p *probe) Append(ctx context.Context, stream string, exp eventstore.ExpectedVersion, evs []eventstore.EventData) (eventstore.AppendResult, error) {
	p.appends.Add(1)
	if ps, ok := ctx.Value(pauseKey{}).(*pause); ok {
		ps.once.Do(func() {
			close(ps.reached)
			<-ps.release
		})
	}
	if p.fail != nil {
		return eventstore.AppendResult{}, p.fail
	}
	return p.Store.Append(ctx, stream, exp, evs)
}

type fixture struct {
	t     *testing.T
	pool  *pgxpool.Pool
	inbox *postgres.Inbox
	store *probe
	svc   *ingest.Service
}

func newFixture(t *testing.T, b backend) *fixture {
	pool := pgtest.NewPool(t)
	return fixtureOver(t, pool, b.store(t, pool))
}

// fixtureOver is the two-phase service over an inbox in pool and store.
func fixtureOver(t *testing.T, pool *pgxpool.Pool, store eventstore.Store) *fixture {
	f := &fixture{t: t, pool: pool, inbox: postgres.NewInbox(pool), store: &probe{Store: store}}
	f.svc = ingest.New(ingest.TwoPhase(f.inbox, f.store), ingest.PaymentDecider{}, ingest.Options{})
	return f
}

// sweeper is the production sweeper with an age the test can wait out.
func (f *fixture) sweeper() *ingest.Worker {
	w := f.svc.Sweeper(f.inbox, 0, nil)
	w.OlderThan, w.Lease, w.Interval = time.Millisecond, time.Minute, 5*time.Millisecond
	time.Sleep(20 * time.Millisecond) // rows gated before now are due
	return w
}

func tctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}

// --- deliveries ---

func deliveryOf(pay, id, typ string, facts ...delivery.Fact) delivery.Event {
	ev := delivery.Event{Provider: "standard", DedupKey: id, Type: typ, PaymentKey: pay,
		OccurredAt: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC), Facts: facts}
	return withBody(ev, "")
}

// withBody sets the verified bytes (and their hash); salt makes a payload
// that differs from the first one for the same dedup key.
func withBody(ev delivery.Event, salt string) delivery.Event {
	raw, _ := json.Marshal(map[string]any{"id": ev.DedupKey, "type": ev.Type, "payment": ev.PaymentKey, "facts": ev.Facts, "salt": salt})
	sum := sha256.Sum256(raw)
	ev.Raw, ev.PayloadHash = raw, hex.EncodeToString(sum[:])
	return ev
}

func captured(capID string, amount, fee int64) delivery.Fact {
	return delivery.Fact{Kind: delivery.KindCaptured, BusinessID: capID, Amount: amount, Fee: fee, Currency: "USD"}
}

func refunded(refID string, amount int64) delivery.Fact {
	return delivery.Fact{Kind: delivery.KindRefunded, BusinessID: refID, Amount: amount, Currency: "USD"}
}

func capture(pay, id string, amount int64) delivery.Event {
	return deliveryOf(pay, id, "payment.captured", captured("cap_"+pay, amount, 30))
}

// twoFacts is one delivery whose decision is a set of two events (Stripe's
// charge.refunded after a missed charge.succeeded looks like this).
func twoFacts(pay, id string) delivery.Event {
	return deliveryOf(pay, id, "charge.refunded", captured("cap_"+pay, 1000, 30), refunded("re_"+pay, 400))
}

func stream(pay string) string { return "payment-standard-" + pay }

// --- reading back ---

func types(t *testing.T, s eventstore.Store, stream string) []string {
	t.Helper()
	evs, err := s.ReadStream(tctx(t), stream)
	require.NoError(t, err)
	out := []string{}
	for i, e := range evs {
		require.EqualValues(t, uint64(i), e.Version, "%s: event %d has version %d: versions not contiguous", stream, i, e.Version)
		out = append(out, e.Type)
	}
	return out
}

// typeCounts counts the stream's events by type (versions contiguous).
func typeCounts(t *testing.T, s eventstore.Store, stream string) map[string]int {
	t.Helper()
	count := map[string]int{}
	for _, ty := range types(t, s, stream) {
		count[ty]++
	}
	return count
}

func balances(t *testing.T, s eventstore.Store, stream string) map[string]int64 {
	t.Helper()
	evs, err := s.ReadStream(tctx(t), stream)
	require.NoError(t, err)
	out := map[string]int64{}
	for _, r := range evs {
		e, err := payment.Decode(r.Type, r.Data)
		require.NoError(t, err)
		for _, p := range payment.Postings(e) {
			out[p.Account+" "+string(p.Currency)] += p.Amount
		}
	}
	return out
}

func inboxRow(t *testing.T, pool *pgxpool.Pool, id string) (status string, deliveries int) {
	t.Helper()
	err := pool.QueryRow(tctx(t), `SELECT status, delivery_count FROM webhook_inbox WHERE provider = 'standard' AND dedup_key = $1`, id).
		Scan(&status, &deliveries)
	require.NoError(t, err, "inbox row %s: %v", id, err)
	return status, deliveries
}

func scalar(t *testing.T, pool *pgxpool.Pool, sql string, args ...any) int64 {
	t.Helper()
	var n int64
	require.NoError(t, pool.QueryRow(tctx(t), sql, args...).Scan(&n))
	return n
}

func equal[T comparable](t *testing.T, what string, got, want []T) {
	t.Helper()
	require.EqualValues(t, fmt.Sprint(want), fmt.Sprint(got), "%s:\n got  %v\n want %v", what, got, want)
}

func mustIngest(t *testing.T, svc *ingest.Service, ev delivery.Event, want ingest.Outcome) ingest.Result {
	t.Helper()
	res, err := svc.Ingest(tctx(t), ev)
	require.NoError(t, err, "ingest %s: %v", ev.DedupKey, err)
	require.EqualValues(t, want, res.Outcome, "ingest %s: outcome %s, want %s", ev.DedupKey, res.Outcome, want)
	return res
}

// wantInboxStatus fails the test unless the inbox row of id has status want.
func wantInboxStatus(t *testing.T, pool *pgxpool.Pool, id, want, when string) {
	t.Helper()
	st, _ := inboxRow(t, pool, id)
	require.EqualValues(t, want, st, "inbox status %s%s", st, when)
}

// ingestConcurrently sends n deliveries at once (ev(i) is the i-th), all
// released together, and returns every answer once all have come back.
func ingestConcurrently(t *testing.T, svc *ingest.Service, n int, ev func(i int) delivery.Event) ([]ingest.Outcome, []error) {
	outcomes := make([]ingest.Outcome, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			res, err := svc.Ingest(tctx(t), ev(i))
			outcomes[i], errs[i] = res.Outcome, err
		}()
	}
	close(start)
	wg.Wait()
	return outcomes, errs
}

// --- the ingestion matrix, for any recorder and store ---

// harness is what a matrix row needs: a service over some recorder, the
// store its facts land in, and the inbox's database.
type harness struct {
	svc   *ingest.Service
	store eventstore.Store
	pool  *pgxpool.Pool
}

var matrix = []struct {
	name string
	run  func(t *testing.T, h harness)
}{
	{"same event twice", func(t *testing.T, h harness) {
		ev := capture("p1", "evt_1", 1000)
		mustIngest(t, h.svc, ev, ingest.Accepted)
		mustIngest(t, h.svc, ev, ingest.Duplicate)
		equal(t, "stream", types(t, h.store, stream("p1")), []string{payment.TypeCaptured})
		st, n := inboxRow(t, h.pool, "evt_1")
		require.EqualValues(t, "applied", st, "inbox: %s after %d deliveries", st, n)
		require.EqualValues(t, 2, n, "inbox: %s after %d deliveries", st, n)
	}},
	{"fifty identical at once", func(t *testing.T, h harness) {
		ev := twoFacts("p1", "evt_1")
		const n = 50
		outcomes, errs := ingestConcurrently(t, h.svc, n, func(int) delivery.Event { return ev })
		count := map[ingest.Outcome]int{}
		for i := range n {
			require.NoError(t, errs[i], "delivery %d: %v", i, errs[i])
			count[outcomes[i]]++
		}
		require.EqualValues(t, 1, count[ingest.Accepted], "outcomes %v; want 1 accepted, %d duplicates", count, n-1)
		require.EqualValues(t, n-1, count[ingest.Duplicate], "outcomes %v; want 1 accepted, %d duplicates", count, n-1)
		equal(t, "stream", types(t, h.store, stream("p1")), []string{payment.TypeCaptured, payment.TypeRefundPosted})
		st, got := inboxRow(t, h.pool, "evt_1")
		require.EqualValues(t, "applied", st, "inbox: %s after %d deliveries, want applied after %d", st, got, n)
		require.EqualValues(t, n, got, "inbox: %s after %d deliveries, want applied after %d", st, got, n)
	}},
	{"refund before payment", func(t *testing.T, h harness) {
		mustIngest(t, h.svc, deliveryOf("late", "evt_r", "refund.succeeded", refunded("re_1", 300)), ingest.Accepted)
		equal(t, "before the capture", types(t, h.store, stream("late")), []string{payment.TypeRefundPending, payment.TypeFlagged})
		mustIngest(t, h.svc, deliveryOf("late", "evt_c", "payment.captured", captured("cap_1", 1000, 30)), ingest.Accepted)
		equal(t, "after the capture", types(t, h.store, stream("late")), []string{payment.TypeRefundPending, payment.TypeFlagged,
			payment.TypeCaptured, payment.TypeRefundPosted, payment.TypeCleared})

		mustIngest(t, h.svc, deliveryOf("inorder", "evt_c2", "payment.captured", captured("cap_1", 1000, 30)), ingest.Accepted)
		mustIngest(t, h.svc, deliveryOf("inorder", "evt_r2", "refund.succeeded", refunded("re_1", 300)), ingest.Accepted)
		late, natural := balances(t, h.store, stream("late")), balances(t, h.store, stream("inorder"))
		require.EqualValues(t, fmt.Sprint(natural), fmt.Sprint(late), "balances depend on arrival order:\n refund first %v\n natural      %v", late, natural)
		require.EqualValues(t, 670, late["provider:standard:balance USD"], "balances depend on arrival order:\n refund first %v\n natural      %v", late, natural)
	}},
	{"twenty different events for one payment at once", func(t *testing.T, h harness) {
		mustIngest(t, h.svc, capture("p1", "evt_cap", 10_000), ingest.Accepted)
		const n = 20
		outcomes, errs := ingestConcurrently(t, h.svc, n, func(i int) delivery.Event {
			return deliveryOf("p1", fmt.Sprintf("evt_re_%02d", i), "refund.succeeded", refunded(fmt.Sprintf("re_%02d", i), 10))
		})
		for i := range n {
			require.NoError(t, errs[i], "refund %d: %s, %v", i, outcomes[i], errs[i])
			require.EqualValues(t, ingest.Accepted, outcomes[i], "refund %d: %s, %v", i, outcomes[i], errs[i])
		}
		evs, err := h.store.ReadStream(tctx(t), stream("p1"))
		require.NoError(t, err)
		require.Len(t, evs, n+1, "%d events, want %d", len(evs), n+1)
		refunds := map[string]int{}
		for i, e := range evs {
			require.EqualValues(t, uint64(i), e.Version, "event %d has version %d", i, e.Version)
			if d, _ := payment.Decode(e.Type, e.Data); d != nil {
				if r, ok := d.(payment.RefundPosted); ok {
					refunds[r.RefundID]++
				}
			}
		}
		require.Len(t, refunds, n, "refunds posted: %v", refunds)
		got := scalar(t, h.pool, `SELECT count(*) FROM webhook_inbox WHERE status <> 'applied'`)
		require.EqualValues(t, 0, got, "%d inbox rows not applied", got)
	}},
	{"one capture reported by different event types at once", func(t *testing.T, h harness) {
		// Stripe sends charge.succeeded and payment_intent.succeeded for one
		// capture: different dedup keys, different event ids, one fact.
		const n = 10
		_, errs := ingestConcurrently(t, h.svc, n, func(i int) delivery.Event {
			return deliveryOf("p1", fmt.Sprintf("evt_%d", i), "charge.succeeded", captured("ch_1", 1000, 30))
		})
		for i, err := range errs {
			require.NoError(t, err, "delivery %d: %v", i, err)
		}
		equal(t, "stream", types(t, h.store, stream("p1")), []string{payment.TypeCaptured})
		b := balances(t, h.store, stream("p1"))
		require.EqualValues(t, -1000, b["revenue:sales USD"], "balances %v", b)
	}},
	{"conflicting redelivery", func(t *testing.T, h harness) {
		ev := capture("p1", "evt_1", 1000)
		mustIngest(t, h.svc, ev, ingest.Accepted)
		other := withBody(capture("p1", "evt_1", 100), "tampered")
		for range 2 {
			res := mustIngest(t, h.svc, other, ingest.Duplicate)
			require.True(t, res.Conflict, "conflict not reported")
		}
		equal(t, "stream", types(t, h.store, stream("p1")), []string{payment.TypeCaptured, payment.TypeFlagged})
		got := scalar(t, h.pool, `SELECT delivery_count FROM webhook_conflicts WHERE dedup_key = 'evt_1'`)
		require.EqualValues(t, 2, got, "conflict deliveries %d", got)
	}},
	{"same facts in other bytes", func(t *testing.T, h harness) {
		// Providers re-render envelopes and timestamps on a retry: the same
		// facts are a plain duplicate, whatever the bytes.
		ev := twoFacts("p1", "evt_1")
		mustIngest(t, h.svc, ev, ingest.Accepted)
		rerendered := withBody(ev, "re-rendered envelope")
		rerendered.OccurredAt = rerendered.OccurredAt.Add(time.Second)
		rerendered.Facts = []delivery.Fact{ev.Facts[1], ev.Facts[0]}
		require.NotEqualValues(t, ev.PayloadHash, rerendered.PayloadHash, "test delivery has the same bytes")
		for range 2 {
			res := mustIngest(t, h.svc, rerendered, ingest.Duplicate)
			require.False(t, res.Conflict, "same facts reported as a conflict")
		}
		equal(t, "stream", types(t, h.store, stream("p1")), []string{payment.TypeCaptured, payment.TypeRefundPosted})
		got := scalar(t, h.pool, `SELECT count(*) FROM webhook_conflicts`)
		require.EqualValues(t, 0, got, "%d webhook_conflicts rows", got)
		got = scalar(t, h.pool, `SELECT conflict_count FROM webhook_inbox WHERE dedup_key = 'evt_1'`)
		require.EqualValues(t, 0, got, "conflict_count %d", got)
	}},
	{"different amount under the same key", func(t *testing.T, h harness) {
		ev := capture("p1", "evt_1", 1000)
		mustIngest(t, h.svc, ev, ingest.Accepted)
		other := capture("p1", "evt_1", 1001) // same envelope, one cent more
		res := mustIngest(t, h.svc, other, ingest.Duplicate)
		require.True(t, res.Conflict, "result %+v", res)
		require.EqualValues(t, stream("p1"), res.StreamID, "result %+v", res)
		equal(t, "stream", types(t, h.store, stream("p1")), []string{payment.TypeCaptured, payment.TypeFlagged})
		got := scalar(t, h.pool, `SELECT count(*) FROM webhook_conflicts WHERE dedup_key = 'evt_1'`)
		require.EqualValues(t, 1, got, "%d webhook_conflicts rows", got)
	}},
	{"old inbox row without a facts hash", func(t *testing.T, h harness) {
		// Rows written before migration 00005 have no facts_hash: the first
		// arrival's facts are taken from its normalized copy.
		ev := capture("p1", "evt_1", 1000)
		mustIngest(t, h.svc, ev, ingest.Accepted)
		got := scalar(t, h.pool, `WITH u AS (UPDATE webhook_inbox SET facts_hash = NULL RETURNING 1) SELECT count(*) FROM u`)
		require.EqualValues(t, 1, got, "%d rows reset", got)
		res := mustIngest(t, h.svc, withBody(ev, "re-rendered"), ingest.Duplicate)
		require.False(t, res.Conflict, "same facts reported as a conflict")
		res = mustIngest(t, h.svc, capture("p1", "evt_1", 999), ingest.Duplicate)
		require.True(t, res.Conflict, "different facts not reported")
	}},
}

// runMatrix runs every matrix row against a fresh harness.
func runMatrix(t *testing.T, newHarness func(t *testing.T) harness) {
	for _, row := range matrix {
		t.Run(row.name, func(t *testing.T) { row.run(t, newHarness(t)) })
	}
}

func TestIngestionMatrix(t *testing.T) {
	for _, b := range backends {
		t.Run("twophase/"+b.name, func(t *testing.T) {
			runMatrix(t, func(t *testing.T) harness {
				f := newFixture(t, b)
				return harness{svc: f.svc, store: f.store, pool: f.pool}
			})
		})
	}
	// The one-transaction Postgres recorder answers the same matrix.
	t.Run("onetx/postgres", func(t *testing.T) {
		runMatrix(t, func(t *testing.T) harness {
			pool := pgtest.NewPool(t)
			store := postgres.NewEventStore(pool)
			return harness{svc: ingest.New(postgres.NewJournal(pool, store), ingest.PaymentDecider{}, ingest.Options{}), store: store, pool: pool}
		})
	})
}

// --- crash windows ---

// crash leaves a delivery where a process killed between the phases leaves it.
type crash struct {
	name string
	at   func(t *testing.T, f *fixture, ev delivery.Event)
}

// gate commits ev's inbox row as "received", as the first phase does.
func (f *fixture) gate(t *testing.T, ev delivery.Event) {
	t.Helper()
	inserted, _, err := f.inbox.Gate(tctx(t), ev, ingest.StatusReceived)
	require.NoError(t, err, "gate: %v, %v", inserted, err)
	require.True(t, inserted, "gate: %v, %v", inserted, err)
}

var crashes = []crash{
	{"after the inbox commit, before the append", func(t *testing.T, f *fixture, ev delivery.Event) {
		f.gate(t, ev)
	}},
	{"after the append, before the status update", func(t *testing.T, f *fixture, ev delivery.Event) {
		f.gate(t, ev)
		c := tctx(t)
		history, err := f.store.ReadStream(c, ev.StreamID())
		require.NoError(t, err)
		decided, err := ingest.PaymentDecider{}.Decide(history, ev)
		require.NoError(t, err)
		_, err = f.store.Append(c, ev.StreamID(), eventstore.ExpectFor(len(history)), decided)
		require.NoError(t, err)
	}},
}

var recoveries = []struct {
	name string
	run  func(t *testing.T, f *fixture, ev delivery.Event)
}{
	{"sweeper", func(t *testing.T, f *fixture, ev delivery.Event) {
		// At the default age the row is still its first request's.
		n, err := f.svc.Sweeper(f.inbox, 0, nil).Once(tctx(t))
		require.NoError(t, err, "sweeper at the default age took %d rows (%v) of a fresh row", n, err)
		require.EqualValues(t, 0, n, "sweeper at the default age took %d rows (%v) of a fresh row", n, err)
		w := f.sweeper()
		n, err = w.Once(tctx(t))
		require.NoError(t, err, "sweeper took %d rows: %v", n, err)
		require.EqualValues(t, 1, n, "sweeper took %d rows: %v", n, err)
		n, err = w.Once(tctx(t))
		require.NoError(t, err, "second pass took %d rows: %v", n, err)
		require.EqualValues(t, 0, n, "second pass took %d rows: %v", n, err)
		mustIngest(t, f.svc, ev, ingest.Duplicate) // a late redelivery adds nothing
	}},
	{"provider redelivery", func(t *testing.T, f *fixture, ev delivery.Event) {
		mustIngest(t, f.svc, ev, ingest.Duplicate)
		n, err := f.sweeper().Once(tctx(t))
		require.NoError(t, err, "sweeper found %d rows after the redelivery: %v", n, err)
		require.EqualValues(t, 0, n, "sweeper found %d rows after the redelivery: %v", n, err)
	}},
}

func TestCrashWindows(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		for _, c := range crashes {
			for _, r := range recoveries {
				t.Run(c.name+"/"+r.name, func(t *testing.T) {
					f := newFixture(t, b)
					ev := twoFacts("p1", "evt_1")
					c.at(t, f, ev)
					appendsBefore := f.store.appends.Load()
					eventsBefore := len(types(t, f.store, stream("p1")))

					r.run(t, f, ev)

					equal(t, "stream", types(t, f.store, stream("p1")), []string{payment.TypeCaptured, payment.TypeRefundPosted})
					wantInboxStatus(t, f.pool, "evt_1", "applied", "")
					require.False(t, eventsBefore > 0 && f.store.appends.Load() != appendsBefore, "%d appends after the facts were in the stream", f.store.appends.Load()-appendsBefore)
				})
			}
		}
	})
}

// TestSweeperOnPostgresJournal: the one-transaction journal never commits a
// row "received", but migration 00010 sets rows back to it (due at once) for
// the domain to apply again. The service's workers include the sweeper on
// Postgres too, and it records such a row's facts once.
func TestSweeperOnPostgresJournal(t *testing.T) {
	pool := pgtest.NewPool(t)
	store := postgres.NewEventStore(pool)
	inbox := postgres.NewInbox(pool)
	svc := ingest.New(postgres.NewJournal(pool, store), ingest.PaymentDecider{}, ingest.Options{})
	var sweeper *ingest.Worker
	for _, w := range svc.Workers(inbox, ingest.WorkerOptions{}) {
		if w.Status == ingest.StatusReceived {
			sweeper = w
		}
	}
	require.NotNil(t, sweeper, "no sweeper among the workers of a Postgres-journal service")
	require.Equal(t, ingest.DefaultSweepAge, sweeper.OlderThan)

	// What 00010 leaves: a row "received" whose facts are not in the
	// stream, its next attempt due now.
	ev := twoFacts("p1", "evt_1")
	inserted, _, err := inbox.Gate(tctx(t), ev, ingest.StatusReceived)
	require.NoError(t, err)
	require.True(t, inserted)
	require.EqualValues(t, 1, scalar(t, pool, `WITH u AS (UPDATE webhook_inbox SET next_attempt_at = now() WHERE dedup_key = 'evt_1' RETURNING 1) SELECT count(*) FROM u`))

	n, err := sweeper.Once(tctx(t))
	require.NoError(t, err)
	assert.Equal(t, 1, n, "the scheduled row is due before the sweep age")
	equal(t, "stream", types(t, store, stream("p1")), []string{payment.TypeCaptured, payment.TypeRefundPosted})
	wantInboxStatus(t, pool, "evt_1", "applied", " after the sweep")
	n, err = sweeper.Once(tctx(t))
	require.NoError(t, err)
	assert.Zero(t, n, "second pass")
	mustIngest(t, svc, ev, ingest.Duplicate)
	equal(t, "stream after a redelivery", types(t, store, stream("p1")), []string{payment.TypeCaptured, payment.TypeRefundPosted})
}

// TestConcurrentRedeliveriesWithSweeper: a row left "received" by a crash is
// re-driven by twenty concurrent redeliveries while two sweepers run.
func TestConcurrentRedeliveriesWithSweeper(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		for _, c := range crashes {
			t.Run(c.name, func(t *testing.T) {
				f := newFixture(t, b)
				ev := twoFacts("p1", "evt_1")
				c.at(t, f, ev)

				ctx, stop := context.WithCancel(tctx(t))
				var sweepers sync.WaitGroup
				for range 2 {
					w := f.sweeper()
					w.Lease = time.Millisecond // let the sweepers compete for the row too
					sweepers.Add(1)
					go func() { defer sweepers.Done(); _ = w.Run(ctx) }()
				}
				const n = 20
				outcomes, errs := ingestConcurrently(t, f.svc, n, func(int) delivery.Event { return ev })
				time.Sleep(30 * time.Millisecond)
				stop()
				sweepers.Wait()
				for i := range n {
					require.NoError(t, errs[i], "redelivery %d: %s, %v", i, outcomes[i], errs[i])
					require.EqualValues(t, ingest.Duplicate, outcomes[i], "redelivery %d: %s, %v", i, outcomes[i], errs[i])
				}
				equal(t, "stream", types(t, f.store, stream("p1")), []string{payment.TypeCaptured, payment.TypeRefundPosted})
				st, deliveries := inboxRow(t, f.pool, "evt_1")
				require.EqualValues(t, "applied", st, "inbox %s after %d deliveries", st, deliveries)
				require.EqualValues(t, n+1, deliveries, "inbox %s after %d deliveries", st, deliveries)
			})
		}
	})
}

// TestInFlightFirstArrival: the first arrival is held just before its
// append while a redelivery re-drives its row; whichever finishes first, the
// facts are recorded once and both answers are 2xx.
func TestInFlightFirstArrival(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		for _, other := range []bool{false, true} {
			name := "redelivery wins"
			if other {
				name = "another delivery moves the stream on first"
			}
			t.Run(name, func(t *testing.T) {
				f := newFixture(t, b)
				ev := twoFacts("p1", "evt_1")
				p := newPause()
				type answer struct {
					res ingest.Result
					err error
				}
				done := make(chan answer, 1)
				go func() {
					res, err := f.svc.Ingest(context.WithValue(tctx(t), pauseKey{}, p), ev)
					done <- answer{res, err}
				}()
				<-p.reached // the first arrival has decided on an empty stream

				want := []string{payment.TypeCaptured, payment.TypeRefundPosted}
				if other {
					mustIngest(t, f.svc, deliveryOf("p1", "evt_d", "dispute.created",
						delivery.Fact{Kind: delivery.KindDisputeOpened, BusinessID: "dp_1", Amount: 100, Currency: "USD"}), ingest.Accepted)
					// A dispute before any capture posts nothing yet: it is
					// recorded pending and flagged dispute_before_payment;
					// the capture then moves its funds and clears the item,
					// before the delivery's refund (domain/payment disputed).
					want = []string{payment.TypeDisputePending, payment.TypeFlagged,
						payment.TypeCaptured, payment.TypeDisputeFundsWithdrawn, payment.TypeCleared, payment.TypeRefundPosted}
				}
				mustIngest(t, f.svc, ev, ingest.Duplicate)
				equal(t, "stream after the redelivery", types(t, f.store, stream("p1")), want)
				wantInboxStatus(t, f.pool, "evt_1", "applied", " after the redelivery")

				close(p.release)
				a := <-done
				require.NoError(t, a.err, "first arrival: %+v, %v", a.res, a.err)
				require.EqualValues(t, ingest.Accepted, a.res.Outcome, "first arrival: %+v, %v", a.res, a.err)
				equal(t, "stream after the first arrival", types(t, f.store, stream("p1")), want)
			})
		}
	})
}

// TestConflictWhileReceived: a different payload for a key whose first
// arrival never reached the stream records the first one's facts first,
// then the conflict; the first payload stands.
func TestConflictWhileReceived(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		f := newFixture(t, b)
		ev := twoFacts("p1", "evt_1")
		crashes[0].at(t, f, ev)
		res := mustIngest(t, f.svc, withBody(capture("p1", "evt_1", 500), "other"), ingest.Duplicate)
		require.True(t, res.Conflict, "result %+v", res)
		require.EqualValues(t, stream("p1"), res.StreamID, "result %+v", res)
		equal(t, "stream", types(t, f.store, stream("p1")), []string{payment.TypeCaptured, payment.TypeRefundPosted, payment.TypeFlagged})
		wantInboxStatus(t, f.pool, "evt_1", "applied", "")
	})
}

// TestConflictWhileUnverified: a held delivery (PayPal IPN awaiting its
// postback) redelivered with another payload keeps the conflict out of the
// stream, so the held facts still post once verified.
// TestUnverifiedNeverOwnsTheKey: a held (unverified) delivery is a
// candidate under a key of its own, so a verified delivery of its dedup key
// is a first arrival; the candidate, once confirmed, is its redelivery
// (issue 13: a forged IPN cannot pre-empt the genuine one).
func TestUnverifiedNeverOwnsTheKey(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		f := newFixture(t, b)
		ev := capture("p1", "ipn_1", 1000)
		res, err := f.svc.Hold(tctx(t), ev)
		require.NoError(t, err, "hold: %+v, %v", res, err)
		require.EqualValues(t, ingest.Accepted, res.Outcome, "hold: %+v, %v", res, err)
		equal(t, "stream while held", types(t, f.store, stream("p1")), []string{})
		mustIngest(t, f.svc, withBody(capture("p1", "ipn_1", 1000), "other bytes"), ingest.Accepted)
		equal(t, "stream after the verified one", types(t, f.store, stream("p1")), []string{payment.TypeCaptured})
		cand := ingest.CandidateKey("ipn_1", ev.PayloadHash)
		res, err = f.svc.Redrive(tctx(t), ingest.InboxKey{Provider: "standard", DedupKey: cand}, ingest.StatusUnverified)
		require.NoError(t, err, "redrive: %+v, %v", res, err)
		require.EqualValues(t, ingest.Duplicate, res.Outcome, "redrive: %+v, %v", res, err)
		require.False(t, res.Conflict, "same facts")
		equal(t, "stream once verified", types(t, f.store, stream("p1")), []string{payment.TypeCaptured})
		wantInboxStatus(t, f.pool, "ipn_1", "applied", "")
		wantInboxStatus(t, f.pool, cand, "verified", "")
	})
}

func TestIgnoredDelivery(t *testing.T) {
	eachBackend(t, func(t *testing.T, b backend) {
		f := newFixture(t, b)
		ev := deliveryOf("", "evt_x", "customer.created")
		mustIngest(t, f.svc, ev, ingest.Ignored)
		mustIngest(t, f.svc, ev, ingest.Duplicate)
		st, n := inboxRow(t, f.pool, "evt_x")
		require.EqualValues(t, "ignored", st, "inbox %s after %d", st, n)
		require.EqualValues(t, 2, n, "inbox %s after %d", st, n)
		assert.Zero(t, f.store.appends.Load(), "appends for an ignored delivery")
	})
}

// TestLostRaceExhausted: a delivery that keeps losing the race for its
// stream after its inbox row committed is decided again RaceBudget·MaxAttempts
// times inside its unit; then the service's retry finds the row "received",
// re-drives it with the same budget, and gives up with ErrContention (503).
// The row stays "received" for the sweeper.
func TestLostRaceExhausted(t *testing.T) {
	pool := pgtest.NewPool(t)
	store := &probe{Store: postgres.NewEventStore(pool),
		fail: &eventstore.WrongVersionError{Stream: stream("p1"), Expected: eventstore.NoStream, Actual: 0}}
	inbox := postgres.NewInbox(pool)
	retries := 0
	svc := ingest.New(ingest.TwoPhase(inbox, store), ingest.PaymentDecider{}, ingest.Options{MaxAttempts: 2, BaseBackoff: time.Microsecond,
		OnRetry: func(string) { retries++ }})
	_, err := svc.Ingest(tctx(t), capture("p1", "evt_1", 1000))
	require.ErrorIs(t, err, ingest.ErrContention, "err %v, want ErrContention", err)
	const appends = 2 * 2 * ingest.RaceBudget // two units, each RaceBudget·MaxAttempts appends
	require.EqualValues(t, appends, store.appends.Load(), "%d appends, %d retries; want %d, %d", store.appends.Load(), retries, appends, appends-1)
	require.EqualValues(t, appends-1, retries, "%d appends, %d retries; want %d, %d", store.appends.Load(), retries, appends, appends-1)
	st, n := inboxRow(t, pool, "evt_1")
	require.EqualValues(t, "received", st, "inbox %s after %d", st, n)
	require.EqualValues(t, 2, n, "inbox %s after %d", st, n)
}

// TestStoreDown: with the EventStoreDB node down the delivery fails with
// ErrUnavailable (503) after its inbox row committed; once the node is back
// the sweeper records it, once.
func TestStoreDown(t *testing.T) {
	pool := pgtest.NewPool(t)
	srv := esdbfake.Start(t)
	store := dialESDB(t, srv.URL()+"&maxDiscoverAttempts=2&discoveryInterval=10")
	f := fixtureOver(t, pool, store)
	ev := twoFacts("p1", "evt_1")

	addr := srv.Addr()
	srv.Stop()
	_, err := f.svc.Ingest(tctx(t), ev)
	require.ErrorIs(t, err, eventstore.ErrUnavailable, "ingest with the node down: %v; want ErrUnavailable", err)
	wantInboxStatus(t, pool, "evt_1", "received", "")
	require.NoError(t, srv.Start(addr))
	w := f.sweeper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		st, _ := inboxRow(t, pool, "evt_1")
		if st == "applied" {
			break
		}
		require.False(t, time.Now().After(deadline), "row still %s after the node came back", st)
		_, _ = w.Once(tctx(t))
		time.Sleep(20 * time.Millisecond)
	}
	equal(t, "stream", types(t, store, stream("p1")), []string{payment.TypeCaptured, payment.TypeRefundPosted})
}
