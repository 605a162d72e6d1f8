package projections_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/postgres/readmodel"
	"github.com/onceledger/onceledger/domain/payment"
	"github.com/onceledger/onceledger/projections"
)

func TestProjectionsMatchIndependentModel(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := ctxT(t)
	g := newGenerator(1)
	f.apply(ctx, g.payments(120))
	stop := f.run(ctx)
	f.waitCaughtUp(ctx)
	// Events appended while the projectors run are picked up too.
	f.apply(ctx, g.payments(60))
	f.waitCaughtUp(ctx)
	if err := stop(); err != nil {
		t.Fatalf("run: %v", err)
	}

	g.m.checkBalances(t, f.balances(ctx))

	// Every payment stream has its row, folded to its last version.
	rows, err := f.pool.Query(ctx, `SELECT stream_id, provider, payment_id, captured_amount, fee_amount,
		refunded_amount, dispute_open_amount, dispute_lost_amount, version FROM payments`)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]paymentModel{}
	versions := map[string]int64{}
	for rows.Next() {
		var s string
		var p paymentModel
		var v int64
		if err := rows.Scan(&s, &p.provider, &p.id, &p.captured, &p.fees, &p.refunded, &p.disputeOpen, &p.disputeLost, &v); err != nil {
			t.Fatal(err)
		}
		got[s], versions[s] = p, v
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(g.m.payments) {
		t.Errorf("payments rows: got %d, want %d", len(got), len(g.m.payments))
	}
	for s, want := range g.m.payments {
		w := want
		w.events = 0
		if got[s] != w {
			t.Errorf("payment %s: got %+v, want %+v", s, got[s], w)
		}
		if versions[s] != int64(want.events-1) {
			t.Errorf("payment %s: version %d, want %d", s, versions[s], want.events-1)
		}
	}

	// Reconciliation items: open or resolved as the model says.
	rows, err = f.pool.Query(ctx, `SELECT stream_id || '/' || kind || '/' || item_key, status = 'open' FROM reconciliation_items`)
	if err != nil {
		t.Fatal(err)
	}
	items := map[string]bool{}
	for rows.Next() {
		var k string
		var open bool
		if err := rows.Scan(&k, &open); err != nil {
			t.Fatal(err)
		}
		items[k] = open
	}
	if len(items) != len(g.m.open) {
		t.Errorf("reconciliation items: got %d, want %d", len(items), len(g.m.open))
	}
	for k, open := range g.m.open {
		if o, ok := items[k]; !ok || o != open {
			t.Errorf("item %s: got open=%v (present %v), want open=%v", k, o, ok, open)
		}
	}

	// The accountants' views agree with the model.
	var captured, refunded, openItems int64
	for _, pm := range g.m.payments {
		captured += pm.captured
		refunded += pm.refunded
	}
	for _, open := range g.m.open {
		if open {
			openItems++
		}
	}
	var vCaptured, vRefunded, vOpen, vProviderBal, mProviderBal int64
	if err := f.pool.QueryRow(ctx, `SELECT (SELECT sum(captured_amount) FROM v_daily_totals), (SELECT sum(refunded_amount) FROM v_daily_totals),
		(SELECT count(*) FROM v_open_reconciliation), (SELECT sum(balance) FROM v_balances_by_provider WHERE provider = 'stripe' AND currency = 'USD')`).
		Scan(&vCaptured, &vRefunded, &vOpen, &vProviderBal); err != nil {
		t.Fatal(err)
	}
	mProviderBal = g.m.balances[acctCur{"provider:stripe:balance", "USD"}]
	if vCaptured != captured || vRefunded != refunded || vOpen != openItems || vProviderBal != mProviderBal {
		t.Errorf("views: captured %d/%d, refunded %d/%d, open items %d/%d, stripe USD balance %d/%d (got/want)",
			vCaptured, captured, vRefunded, refunded, vOpen, openItems, vProviderBal, mProviderBal)
	}

	// Payout streams only reach the ledger.
	var payoutRows int
	if err := f.pool.QueryRow(ctx, `SELECT count(*) FROM payments WHERE stream_id LIKE 'payout-%'`).Scan(&payoutRows); err != nil || payoutRows != 0 {
		t.Errorf("payout streams in payments: %d (%v)", payoutRows, err)
	}

	vs, err := f.svc.Verify(ctx)
	if err != nil || len(vs) != 0 {
		t.Errorf("verify: %v %v", vs, err)
	}
	st := f.statusWhen(ctx, func(st projections.StatusReport) bool {
		atHead := len(st.Projections) == 3
		for _, p := range st.Projections {
			atHead = atHead && p.Position == st.Head
		}
		return atHead
	})
	if len(st.Projections) != 3 {
		t.Fatalf("status: %+v", st)
	}
	for _, p := range st.Projections {
		if p.Lag != 0 || p.Position != st.Head || p.Status != projections.StatusStopped || p.Active {
			t.Errorf("status after stop: %+v (head %s)", p, st.Head)
		}
	}
}

func TestCrashBetweenBatchesGivesTheSameResult(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := ctxT(t)
	g := newGenerator(2)
	f.apply(ctx, g.payments(250))
	// Crash 1: cancel a projector mid-run, several times.
	for round := 0; round < 3; round++ {
		pctx, cancel := context.WithCancel(ctx)
		p := projections.NewProjector(projections.Ledger(), f.es, f.db, nil)
		projections.SetBatchSize(p, 7)
		done := make(chan error, 1)
		go func() { done <- p.Run(pctx) }()
		waitFor(t, func() bool {
			cp, err := f.db.Checkpoint(ctx, projections.NameLedger)
			return err == nil && cp.Position.Prepare > uint64(200*(round+1))
		})
		cancel()
		if err := <-done; err != nil {
			t.Fatalf("run: %v", err)
		}
	}

	// Crash 2: kill every connection of the database (the lock's, the
	// batch's, the listener's) while the projectors run; they reconnect,
	// take their locks again and go on.
	pjs := f.svc.Projectors()
	for _, p := range pjs {
		projections.SetBatchSize(p, 5)
	}
	rctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	for _, p := range pjs {
		wg.Go(func() {
			if err := p.Run(rctx); err != nil {
				t.Errorf("run %s: %v", p.Name(), err)
			}
		})
	}
	killer, err := pgx.Connect(ctx, serverURL())
	if err != nil {
		t.Fatal(err)
	}
	defer killer.Close(context.WithoutCancel(ctx))
	for range 5 {
		time.Sleep(150 * time.Millisecond)
		if _, err := killer.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
			WHERE datname = $1 AND pid <> pg_backend_pid()`, f.pool.Config().ConnConfig.Database); err != nil {
			t.Fatalf("terminate: %v", err)
		}
	}
	f.waitCaughtUp(ctx)
	cancel()
	wg.Wait()

	g.m.checkBalances(t, f.balances(ctx))
	var entries, want int64
	if err := f.pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT (event_id, posting_index)) FROM ledger_entries`).Scan(&entries, &want); err != nil {
		t.Fatal(err)
	}
	if entries != want {
		t.Errorf("duplicate entries: %d rows, %d distinct", entries, want)
	}
	// The same as a replay from scratch.
	rep, err := f.svc.Rebuild(ctx, nil, projections.RebuildOptions{VerifyOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Differences) != 0 {
		t.Errorf("differences after crashes: %v", rep.Differences)
	}
}

func TestOneActiveProjectorAndTakeOver(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := ctxT(t)
	g := newGenerator(3)
	f.apply(ctx, g.payments(30))

	// Two processes' worth of projectors of one projection, each with its
	// own counting view of the (real) database.
	a := &countingDB{Store: f.db}
	b := &countingDB{Store: f.db}
	pa := projections.NewProjector(projections.Ledger(), f.es, a, nil)
	pb := projections.NewProjector(projections.Ledger(), f.es, b, nil)
	projections.SetBatchSize(pa, 10)
	projections.SetBatchSize(pb, 10)
	actx, stopA := context.WithCancel(ctx)
	bctx, stopB := context.WithCancel(ctx)
	defer stopB()
	doneA, doneB := make(chan error, 1), make(chan error, 1)
	go func() { doneA <- pa.Run(actx) }()
	waitFor(t, func() bool { return a.batches.Load() > 0 })
	go func() { doneB <- pb.Run(bctx) }()

	// Keep appending while both run: only A applies batches.
	for range 5 {
		f.apply(ctx, g.payments(10))
		time.Sleep(100 * time.Millisecond)
	}
	f.waitCaughtUp(ctx, projections.NameLedger)
	if n := b.batches.Load(); n != 0 {
		t.Fatalf("standby projector applied %d batches while the active one ran", n)
	}
	held, err := f.db.LockHeld(ctx, projections.LockActive, projections.NameLedger)
	if err != nil || !held {
		t.Fatalf("active lock not held: %v %v", held, err)
	}

	// A stops: B takes over within about a second and projects new events.
	stopA()
	if err := <-doneA; err != nil {
		t.Fatal(err)
	}
	aDone := a.batches.Load()
	f.apply(ctx, g.payments(20))
	waitFor(t, func() bool { return b.batches.Load() > 0 })
	f.waitCaughtUp(ctx, projections.NameLedger)
	if a.batches.Load() != aDone {
		t.Errorf("stopped projector kept applying")
	}
	cp, err := f.db.Checkpoint(ctx, projections.NameLedger)
	if err != nil || cp.Status != projections.StatusLive {
		t.Errorf("after take-over: %+v %v", cp, err)
	}
	stopB()
	if err := <-doneB; err != nil {
		t.Fatal(err)
	}
	g.m.checkBalances(t, f.balances(ctx))
}

// countingDB is the real read-model store, counting the live batches one
// projector begins.
type countingDB struct {
	*readmodel.Store
	batches atomic.Int64
}

func (c *countingDB) BeginLive(ctx context.Context, name string, from eventstore.Position, honorPause bool) (projections.Batch, error) {
	c.batches.Add(1)
	return c.Store.BeginLive(ctx, name, from, honorPause)
}

func TestPoisonEventStopsTheProjection(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := ctxT(t)
	g := newGenerator(4)
	f.apply(ctx, g.payments(10))
	f.appendRaw(ctx, "payment-stripe-bad", eventstore.EventData{ID: uuid.New(), Type: "payment.mystery", Data: []byte(`{}`)})
	f.apply(ctx, g.payments(10))
	good, bad, wantLag := f.around(ctx, "payment-stripe-bad")

	err := projections.NewProjector(projections.Payments(), f.es, f.db, nil).Run(ctx)
	var pe *projections.PoisonError
	if !errors.As(err, &pe) || !errors.Is(err, projections.ErrPoison) || !errors.Is(err, payment.ErrUnknownEventType) {
		t.Fatalf("run: want a poison error for the unknown type, got %v", err)
	}
	if pe.Event.Position != bad {
		t.Errorf("poison at %s, want %s", pe.Event.Position, bad)
	}
	cp, err := f.db.Checkpoint(ctx, projections.NamePayments)
	if err != nil {
		t.Fatal(err)
	}
	if cp.Position != good || cp.Status != projections.StatusStopped || cp.ErrorPosition == nil || *cp.ErrorPosition != bad ||
		!strings.Contains(cp.LastError, "payment.mystery") {
		t.Errorf("checkpoint after poison: %+v, want at %s, stopped, error at %s", cp, good, bad)
	}
	st := f.statusWhen(ctx, func(st projections.StatusReport) bool {
		for _, p := range st.Projections {
			if p.Name == projections.NamePayments {
				return p.Lag == wantLag
			}
		}
		return false
	})
	for _, p := range st.Projections {
		if p.Name == projections.NamePayments && (p.LastError == "" || p.Lag != wantLag || p.Status != projections.StatusStopped) {
			t.Errorf("status of the stopped projection: %+v", p)
		}
	}
	vs, err := f.svc.Verify(ctx)
	if err != nil || !hasCheck(vs, projections.CheckDecodable) {
		t.Errorf("verify should report the undecodable event: %v %v", vs, err)
	}
	// Running again stops at the same place: never skipped.
	err = projections.NewProjector(projections.Payments(), f.es, f.db, nil).Run(ctx)
	if !errors.As(err, &pe) || pe.Event.Position != bad {
		t.Errorf("second run: %v", err)
	}
}

// A permanent failure inside a batch (here: a currency the schema rejects)
// is narrowed down to its event; the events before it are committed.
func TestPoisonInsideABatchIsNarrowedDown(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := ctxT(t)
	g := newGenerator(5)
	f.apply(ctx, g.payments(5))
	m := payment.Meta{Provider: "stripe", PaymentKey: "lower", DedupKey: "x", OccurredAt: time.Now()}
	f.appendEvents(ctx, "payment-stripe-lower", payment.Captured{Meta: m, CaptureID: "c", Amount: 100, Currency: "usd"})
	f.apply(ctx, g.payments(5))
	good, bad, _ := f.around(ctx, "payment-stripe-lower")

	err := projections.NewProjector(projections.Ledger(), f.es, f.db, nil).Run(ctx)
	var pe *projections.PoisonError
	if !errors.As(err, &pe) || pe.Event.Position != bad {
		t.Fatalf("want poison at %s, got %v", bad, err)
	}
	cp, _ := f.db.Checkpoint(ctx, projections.NameLedger)
	if cp.Position != good {
		t.Errorf("checkpoint %s, want %s (the events before the poison)", cp.Position, good)
	}
}

func TestLateCommitIsNotSkipped(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := ctxT(t)
	stop := f.run(ctx)
	defer stop()

	m := func(id string) payment.Meta {
		return payment.Meta{Provider: "standard", PaymentKey: id, DedupKey: id, OccurredAt: time.Now()}
	}
	early := payment.Captured{Meta: m("early"), CaptureID: "c1", Amount: 1000, Currency: "USD"}
	late := payment.Captured{Meta: m("late"), CaptureID: "c2", Amount: 500, Currency: "USD"}
	typ, body, err := payment.Encode(early)
	if err != nil {
		t.Fatal(err)
	}
	// Hold an append open...
	tx, err := f.pool.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback(context.WithoutCancel(ctx))
	if _, err := f.es.AppendTx(ctx, tx, "payment-standard-early", eventstore.NoStream,
		[]eventstore.EventData{{ID: uuid.New(), Type: typ, Data: body}}); err != nil {
		t.Fatal(err)
	}
	// ...while a later one commits, and the projectors run.
	f.appendEvents(ctx, "payment-standard-late", late)
	time.Sleep(700 * time.Millisecond)
	var n int
	if err := f.pool.QueryRow(ctx, `SELECT count(*) FROM ledger_entries`).Scan(&n); err != nil {
		t.Fatal(err)
	}
	cp, err := f.db.Checkpoint(ctx, projections.NameLedger)
	if err != nil {
		t.Fatal(err)
	}
	if n != 0 || cp.Position != eventstore.Start {
		t.Fatalf("projected past an open append: %d entries, checkpoint %s", n, cp.Position)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	f.mu.Lock()
	f.count["payment-standard-early"] = 1
	f.mu.Unlock()
	f.waitCaughtUp(ctx)
	got := f.balances(ctx)
	if got[acctCur{"revenue:sales", "USD"}] != -1500 || got[acctCur{"provider:standard:balance", "USD"}] != 1500 {
		t.Errorf("both captures should be projected: %v", got)
	}
	var streams []string
	rows, _ := f.pool.Query(ctx, `SELECT stream_id FROM payments ORDER BY 1`)
	for rows.Next() {
		var s string
		_ = rows.Scan(&s)
		streams = append(streams, s)
	}
	if strings.Join(streams, ",") != "payment-standard-early,payment-standard-late" {
		t.Errorf("payments: %v", streams)
	}
	if err := stop(); err != nil {
		t.Fatal(err)
	}
}

// around finds the first event of stream in the feed: the position before
// it, its own, and how many events there are from it on.
func (f *fixture) around(ctx context.Context, stream string) (before, at eventstore.Position, fromOn int64) {
	f.t.Helper()
	all := f.feed(ctx)
	for i, e := range all {
		if e.StreamID == stream {
			if i > 0 {
				before = all[i-1].Position
			}
			return before, e.Position, int64(len(all) - i)
		}
	}
	f.t.Fatalf("no event of %s in the feed", stream)
	return
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached in time")
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func hasCheck(vs projections.Violations, check string) bool {
	for _, v := range vs {
		if v.Check == check {
			return true
		}
	}
	return false
}

// statusWhen polls Status until ready holds or 30 s pass, and returns the
// last report for the caller to check. The head and the lags are counted
// below the feed horizon, which a transaction elsewhere on the server can
// hold back for a moment, so an exact head or lag is waited for.
func (f *fixture) statusWhen(ctx context.Context, ready func(projections.StatusReport) bool) projections.StatusReport {
	f.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := f.svc.Status(ctx)
		if err != nil {
			f.t.Fatal(err)
		}
		if ready(st) || time.Now().After(deadline) {
			return st
		}
		time.Sleep(20 * time.Millisecond)
	}
}
