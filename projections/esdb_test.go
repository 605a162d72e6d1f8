package projections_test

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/uuid"

	"github.com/onceledger/onceledger/adapters/esdb"
	"github.com/onceledger/onceledger/adapters/esdb/esdbfake"
	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/ingest"
	"github.com/onceledger/onceledger/adapters/postgres"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/adapters/postgres/readmodel"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/payment"
	"github.com/onceledger/onceledger/projections"
)

// The projections over EventStoreDB: the esdb adapter on the in-process fake
// node as the feed, the read models in a fresh Postgres database. The
// fixture of helpers_test.go is reused for its pool, read-model store,
// service and balance query; its Postgres-only helpers (appendRaw, feed,
// waitCaughtUp) are not called here.

// spyFeed records what the projectors read, to prove a restarted projector
// continues after its checkpoint instead of replaying the feed.
type spyFeed struct {
	projections.Feed
	mu     sync.Mutex
	calls  []eventstore.Position // the after argument of each ReadAll
	events int                   // events returned in total
}

func (s *spyFeed) ReadAll(ctx context.Context, after eventstore.Position, limit int) ([]eventstore.RecordedEvent, error) {
	evs, err := s.Feed.ReadAll(ctx, after, limit)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls = append(s.calls, after)
	s.events += len(evs)
	return evs, err
}

func (s *spyFeed) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls, s.events = nil, 0
}

func (s *spyFeed) snapshot() ([]eventstore.Position, int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]eventstore.Position(nil), s.calls...), s.events
}

// lockedBuffer collects a logger's output from many goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

type esdbFixture struct {
	*fixture
	fake  *esdbfake.Server
	store *esdb.Store
	spy   *spyFeed
}

func newESDBFixture(t *testing.T) *esdbFixture {
	t.Helper()
	fake := esdbfake.Start(t)
	store, err := esdb.Dial(fake.URL())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = store.Close() })
	pool := pgtest.NewPool(t)
	db := readmodel.New(pool)
	spy := &spyFeed{Feed: store}
	f := &fixture{t: t, pool: pool, db: db, svc: projections.NewService(spy, db, nil), count: map[string]int{}}
	return &esdbFixture{fixture: f, fake: fake, store: store, spy: spy}
}

// appendEvents appends domain events straight to the EventStoreDB stream,
// with the concrete expected version the recorder would use.
func (f *esdbFixture) appendEvents(ctx context.Context, stream string, evs ...payment.Event) {
	f.t.Helper()
	data := make([]eventstore.EventData, len(evs))
	for i, e := range evs {
		typ, body, err := payment.Encode(e)
		if err != nil {
			f.t.Fatalf("encode: %v", err)
		}
		data[i] = eventstore.EventData{ID: uuid.New(), Type: typ, Data: body}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, err := f.store.Append(ctx, stream, eventstore.ExpectFor(f.count[stream]), data); err != nil {
		f.t.Fatalf("append to %s: %v", stream, err)
	}
	f.count[stream] += len(data)
}

func (f *esdbFixture) apply(ctx context.Context, ops []appendOp) {
	f.t.Helper()
	for _, op := range ops {
		f.appendEvents(ctx, op.stream, op.events...)
	}
}

// head is the feed's last position as the adapter reports it.
func (f *esdbFixture) head(ctx context.Context) eventstore.Position {
	f.t.Helper()
	h, err := f.store.Head(ctx)
	if err != nil {
		f.t.Fatalf("head: %v", err)
	}
	return h
}

// waitAt waits until every projection's checkpoint is at pos (bounded).
func (f *esdbFixture) waitAt(ctx context.Context, pos eventstore.Position) {
	f.t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		cps, err := f.db.Checkpoints(ctx)
		done := err == nil && len(cps) == len(f.svc.Names())
		for _, cp := range cps {
			done = done && cp.Position == pos
		}
		if done {
			return
		}
		if time.Now().After(deadline) {
			f.t.Fatalf("projections did not reach %s: %+v (%v)", pos, cps, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// recordDeliveries sends provider deliveries through the two-phase journal
// serve uses with EventStoreDB (inbox row first, then the append), and
// returns the outcome of each.
func (f *esdbFixture) recordDeliveries(ctx context.Context, evs ...delivery.Event) []ingest.Outcome {
	f.t.Helper()
	svc := ingest.New(ingest.TwoPhase(postgres.NewInbox(f.pool), f.store), ingest.PaymentDecider{}, ingest.Options{})
	out := make([]ingest.Outcome, len(evs))
	for i, ev := range evs {
		res, err := svc.Ingest(ctx, ev)
		if err != nil {
			f.t.Fatalf("record %s: %v", ev.DedupKey, err)
		}
		out[i] = res.Outcome
	}
	return out
}

// standardDelivery is a normalized Standard Webhooks delivery of one fact.
func standardDelivery(msgID, typ, paymentKey string, at time.Time, fact delivery.Fact) delivery.Event {
	raw := []byte(fmt.Sprintf(`{"type":%q,"msg":%q}`, typ, msgID))
	sum := sha256.Sum256(raw)
	return delivery.Event{
		Provider: "standard", DedupKey: msgID, Type: typ, PaymentKey: paymentKey, OccurredAt: at,
		PayloadHash: hex.EncodeToString(sum[:]), Raw: raw, Facts: []delivery.Fact{fact},
	}
}

// checkPayments compares the payments table with the model (every stream
// the model knows, and no other) and each row's version with the model's
// event count.
func (f *esdbFixture) checkPayments(ctx context.Context, m *model) {
	f.t.Helper()
	rows, err := f.pool.Query(ctx, `SELECT stream_id, provider, payment_id, captured_amount, fee_amount,
		refunded_amount, dispute_open_amount, dispute_lost_amount, version FROM payments`)
	if err != nil {
		f.t.Fatal(err)
	}
	got := map[string]paymentModel{}
	versions := map[string]int64{}
	for rows.Next() {
		var s string
		var p paymentModel
		var v int64
		if err := rows.Scan(&s, &p.provider, &p.id, &p.captured, &p.fees, &p.refunded, &p.disputeOpen, &p.disputeLost, &v); err != nil {
			f.t.Fatal(err)
		}
		got[s], versions[s] = p, v
	}
	if err := rows.Err(); err != nil {
		f.t.Fatal(err)
	}
	if len(got) != len(m.payments) {
		f.t.Errorf("payments rows: got %d, want %d", len(got), len(m.payments))
	}
	for s, want := range m.payments {
		w := want
		w.events = 0
		if got[s] != w {
			f.t.Errorf("payment %s: got %+v, want %+v", s, got[s], w)
		}
		if versions[s] != int64(want.events-1) {
			f.t.Errorf("payment %s: version %d, want %d", s, versions[s], want.events-1)
		}
	}
}

// checkReconciliation compares reconciliation_items with the model.
func (f *esdbFixture) checkReconciliation(ctx context.Context, m *model) {
	f.t.Helper()
	rows, err := f.pool.Query(ctx, `SELECT stream_id || '/' || kind || '/' || item_key, status = 'open' FROM reconciliation_items`)
	if err != nil {
		f.t.Fatal(err)
	}
	items := map[string]bool{}
	for rows.Next() {
		var k string
		var open bool
		if err := rows.Scan(&k, &open); err != nil {
			f.t.Fatal(err)
		}
		items[k] = open
	}
	if err := rows.Err(); err != nil {
		f.t.Fatal(err)
	}
	if len(items) != len(m.open) {
		f.t.Errorf("reconciliation items: got %d %v, want %d", len(items), items, len(m.open))
	}
	for k, open := range m.open {
		if o, ok := items[k]; !ok || o != open {
			f.t.Errorf("item %s: got open=%v (present %v), want open=%v", k, o, ok, open)
		}
	}
}

// entryCounts is a fingerprint of what the ledger projection applied.
func (f *esdbFixture) entryCounts(ctx context.Context) [3]int64 {
	f.t.Helper()
	var c [3]int64
	if err := f.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM ledger_entries),
		(SELECT coalesce(sum(entry_count), 0)::bigint FROM account_balances),
		(SELECT count(*) FROM payments)`).Scan(&c[0], &c[1], &c[2]); err != nil {
		f.t.Fatal(err)
	}
	return c
}

func TestESDBProjectionsMatchIndependentModel(t *testing.T) {
	t.Parallel()
	f := newESDBFixture(t)
	ctx := ctxT(t)
	g := newGenerator(7)
	f.apply(ctx, g.payments(90))

	// Deliveries through the recorder serve uses with EventStoreDB: a refund
	// before its capture, the refund's redelivery, the capture reported again
	// under another message id, a payout.
	at := time.Date(2026, 11, 20, 9, 0, 0, 0, time.UTC)
	usd := money.Currency("USD")
	refund := standardDelivery("msg_ref", "refund.succeeded", "pw_1", at, delivery.Fact{Kind: delivery.KindRefunded, BusinessID: "re_w1", Amount: 400, Currency: usd})
	capture := standardDelivery("msg_cap", "payment.captured", "pw_1", at.Add(time.Minute), delivery.Fact{Kind: delivery.KindCaptured, BusinessID: "cap_w1", Amount: 1000, Fee: 30, Currency: usd})
	captureAgain := standardDelivery("msg_cap_again", "payment.captured", "pw_1", at.Add(2*time.Minute), delivery.Fact{Kind: delivery.KindCaptured, BusinessID: "cap_w1", Amount: 1000, Fee: 30, Currency: usd})
	payout := standardDelivery("msg_po", "payout.paid", "", at.Add(3*time.Minute), delivery.Fact{Kind: delivery.KindPayoutPaid, BusinessID: "po_w1", Amount: 2000, Currency: usd})
	outcomes := f.recordDeliveries(ctx, refund, capture, refund, captureAgain, payout)
	want := []ingest.Outcome{ingest.Accepted, ingest.Accepted, ingest.Duplicate, ingest.Accepted, ingest.Accepted}
	if fmt.Sprint(outcomes) != fmt.Sprint(want) {
		t.Fatalf("outcomes %v, want %v", outcomes, want)
	}
	// The model, from the chart of accounts: the capture posts with the
	// refund that waited for it; the second report of the capture posts
	// nothing; the payout leaves the provider balance for the bank.
	const sw = "payment-standard-pw_1"
	g.m.post("provider:standard:balance", usd, 1000-30-400-2000)
	g.m.post("expenses:fees:standard", usd, 30)
	g.m.post("revenue:sales", usd, -1000)
	g.m.post("revenue:refunds", usd, 400)
	g.m.post("bank:payouts", usd, 2000)
	hist, err := f.store.ReadStream(ctx, sw)
	if err != nil {
		t.Fatal(err)
	}
	g.m.payments[sw] = paymentModel{provider: "standard", id: "pw_1", captured: 1000, fees: 30, refunded: 400, events: len(hist)}
	g.m.open[sw+"/"+payment.ReconRefundBeforePayment+"/re_w1"] = false

	stop := f.run(ctx)
	f.waitAt(ctx, f.head(ctx))
	// Appends while the projectors run reach them through the subscription.
	f.apply(ctx, g.payments(40))
	head := f.head(ctx)
	f.waitAt(ctx, head)
	if err := stop(); err != nil {
		t.Fatalf("run: %v", err)
	}

	g.m.checkBalances(t, f.balances(ctx))
	f.checkPayments(ctx, g.m)
	f.checkReconciliation(ctx, g.m)

	// The checkpoints hold EventStoreDB's $all positions in the bigint
	// columns, exactly.
	var c, p int64
	if err := f.pool.QueryRow(ctx, `SELECT min(position_commit), min(position_prepare) FROM projection_checkpoints`).Scan(&c, &p); err != nil {
		t.Fatal(err)
	}
	if c <= 0 || uint64(c) != head.Commit || uint64(p) != head.Prepare {
		t.Errorf("stored checkpoint %d/%d, head %s", c, p, head)
	}

	if vs, err := f.svc.Verify(ctx); err != nil || len(vs) != 0 {
		t.Errorf("verify: %v %v", vs, err)
	}
	st, err := f.svc.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Head != head || len(st.Projections) != 3 {
		t.Fatalf("status: %+v, head %s", st, head)
	}
	for _, ps := range st.Projections {
		if ps.Lag != 0 || ps.Position != head {
			t.Errorf("status: %+v", ps)
		}
	}

	// A restarted projector continues at its checkpoint: it reads nothing
	// at or before it and applies nothing again.
	before := f.entryCounts(ctx)
	f.spy.reset()
	stop = f.run(ctx)
	defer func() { _ = stop() }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		calls, _ := f.spy.snapshot()
		if len(calls) >= 3*len(f.svc.Names()) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("restarted projectors read %d times", len(calls))
		}
		time.Sleep(20 * time.Millisecond)
	}
	calls, read := f.spy.snapshot()
	if read != 0 {
		t.Errorf("restarted projectors read %d events with nothing new", read)
	}
	for _, after := range calls {
		if after != head {
			t.Errorf("restarted projector read after %s, checkpoint %s", after, head)
		}
	}
	if got := f.entryCounts(ctx); got != before {
		t.Errorf("entries/balance entries/payments after restart: %v, before %v", got, before)
	}

	more := g.payments(25)
	f.apply(ctx, more)
	newEvents := 0
	for _, op := range more {
		newEvents += len(op.events)
	}
	head2 := f.head(ctx)
	f.waitAt(ctx, head2)
	calls, read = f.spy.snapshot()
	if read < newEvents*3 {
		t.Errorf("projectors read %d events, want at least %d (3 projections × %d new)", read, 3*newEvents, newEvents)
	}
	for _, after := range calls {
		if after.Less(head) {
			t.Errorf("restarted projector went back to %s (checkpoint was %s)", after, head)
		}
	}
	g.m.checkBalances(t, f.balances(ctx))
	f.checkPayments(ctx, g.m)
	if got := f.entryCounts(ctx); got[0] <= before[0] || got[0] != got[1] {
		t.Errorf("entries after new events: %v, before %v", got, before)
	}

	// A rebuild over EventStoreDB (with the projectors live) finds nothing
	// to correct.
	rep, err := f.svc.Rebuild(ctx, nil, projections.RebuildOptions{BatchSize: 50})
	if err != nil {
		t.Fatalf("rebuild: %v", err)
	}
	if len(rep.Differences) != 0 || !rep.Swapped || rep.Events != int64(f.fake.EventCount()) || rep.Position != head2 {
		t.Errorf("rebuild report: %+v (want no differences, swapped, %d events, at %s)", rep, f.fake.EventCount(), head2)
	}
	for _, tc := range rep.Tables {
		if tc.LiveRows != tc.RebuiltRows || tc.DifferingRows != 0 {
			t.Errorf("table %+v", tc)
		}
	}
	g.m.checkBalances(t, f.balances(ctx))
	if vs, err := f.svc.Verify(ctx); err != nil || len(vs) != 0 {
		t.Errorf("verify after rebuild: %v %v", vs, err)
	}
	if err := stop(); err != nil {
		t.Fatalf("run: %v", err)
	}
}

// EventStoreDB keeps log positions as signed 64-bit numbers, so a real node
// never sends a commit position of 2^63 or more; the protocol and the client
// carry them as uint64, and the checkpoint columns are bigint. The adapter
// passes such a position through unchanged; the read models refuse it (a
// permanent failure: it would fail the same way on every retry) rather than
// store a wrapped, negative position, so a projection never skips or
// re-applies events because of it: it stays at the last event it could
// store.
func TestESDBPositionBeyondBigint(t *testing.T) {
	t.Parallel()
	f := newESDBFixture(t)
	ctx := ctxT(t)
	g := newGenerator(11)
	f.apply(ctx, g.payments(6))
	good := f.head(ctx)
	if good.Commit > math.MaxInt64 || good.Prepare > math.MaxInt64 {
		t.Fatalf("the fake's ordinary positions must fit bigint: %s", good)
	}
	balancesBefore := newModel()
	for k, v := range g.m.balances {
		balancesBefore.balances[k] = v
	}

	if err := f.fake.SetNextPosition(math.MaxInt64 + 1); err != nil {
		t.Fatal(err)
	}
	const big = "payment-stripe-pay_huge"
	f.appendEvents(ctx, big, payment.Captured{
		Meta:      payment.Meta{Provider: "stripe", PaymentKey: "pay_huge", DedupKey: "huge", OccurredAt: time.Now().UTC()},
		CaptureID: "cap_huge", Amount: 100, Currency: "USD",
	})
	huge := f.head(ctx)
	if huge.Commit != math.MaxInt64+1 {
		t.Fatalf("the adapter changed the position: head %s", huge)
	}
	evs, err := f.store.ReadAll(ctx, good, 10)
	if err != nil || len(evs) != 1 || evs[0].Position != huge {
		t.Fatalf("read after the last ordinary event: %+v %v", evs, err)
	}

	logs := &lockedBuffer{}
	f.svc = projections.NewService(f.spy, f.db, slog.New(slog.NewTextHandler(logs, nil)))
	stop := f.run(ctx)
	defer func() { _ = stop() }()
	f.waitAt(ctx, good)
	// Let the projectors try the event at 2^63 for a while.
	time.Sleep(1500 * time.Millisecond)
	cps, err := f.db.Checkpoints(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, cp := range cps {
		if cp.Position != good {
			t.Errorf("projection %s moved to %s past the last storable position %s", cp.Name, cp.Position, good)
		}
		// Known gap: the runtime tries to record the poison, but the store
		// refuses its position as well, so the status stays "live" without
		// an error while the projector retries; the log says why.
		t.Logf("projection %s: status %s, error %q", cp.Name, cp.Status, cp.LastError)
	}
	if !strings.Contains(logs.String(), "does not fit bigint columns") {
		t.Errorf("the projectors' log does not say why they stopped:\n%s", logs.String())
	}
	balancesBefore.checkBalances(t, f.balances(ctx))
	var n int
	if err := f.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM ledger_entries WHERE stream_id = $1) +
		(SELECT count(*) FROM payments WHERE stream_id = $1)`, big).Scan(&n); err != nil || n != 0 {
		t.Errorf("rows of the unstorable event: %d (%v)", n, err)
	}
	if err := stop(); err != nil && !errors.Is(err, projections.ErrPoison) {
		t.Errorf("run: %v", err)
	}

	// A rebuild refuses too, and leaves the live tables alone.
	rep, err := f.svc.Rebuild(ctx, nil, projections.RebuildOptions{BatchSize: 50})
	if err == nil || !strings.Contains(err.Error(), "bigint") || rep.Swapped {
		t.Errorf("rebuild over a position beyond bigint: %+v, %v", rep, err)
	}
	balancesBefore.checkBalances(t, f.balances(ctx))
}
