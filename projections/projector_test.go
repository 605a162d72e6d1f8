package projections_test

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/postgres/readmodel"
	"github.com/onceledger/onceledger/domain/payment"
	"github.com/onceledger/onceledger/projections"
	"github.com/onceledger/onceledger/projections/views"
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
	require.NoError(t, stop(), "run")

	g.m.checkBalances(t, f.balances(ctx))

	f.checkPayments(ctx, g.m)
	f.checkReconciliation(ctx, g.m)

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
	require.NoError(t, f.pool.QueryRow(ctx, `SELECT (SELECT sum(captured_amount) FROM v_daily_totals), (SELECT sum(refunded_amount) FROM v_daily_totals),
		(SELECT count(*) FROM v_open_reconciliation), (SELECT sum(balance) FROM v_balances_by_provider WHERE provider = 'stripe' AND currency = 'USD')`).
		Scan(&vCaptured, &vRefunded, &vOpen, &vProviderBal))
	mProviderBal = g.m.balances[acctCur{"provider:stripe:balance", "USD"}]
	assert.Equal(t, []int64{captured, refunded, openItems, mProviderBal}, []int64{vCaptured, vRefunded, vOpen, vProviderBal},
		"views: captured, refunded, open items, stripe USD balance")

	// Payout streams only reach the ledger.
	var payoutRows int
	require.NoError(t, f.pool.QueryRow(ctx, `SELECT count(*) FROM payments WHERE stream_id LIKE 'payout-%'`).Scan(&payoutRows))
	assert.Zero(t, payoutRows, "payout streams in payments")

	vs, err := f.svc.Verify(ctx)
	require.NoError(t, err)
	assert.Empty(t, vs, "verify")
	st := f.statusWhen(ctx, func(st views.Status) bool {
		atHead := len(st.Projections) == len(projections.Default())
		for _, p := range st.Projections {
			atHead = atHead && p.Position == st.Head
		}
		return atHead
	})
	require.Len(t, st.Projections, len(projections.Default()))
	for _, p := range st.Projections {
		assert.Zero(t, p.Lag, p.Name)
		assert.Equal(t, st.Head, p.Position, p.Name)
		assert.Equal(t, projections.StatusStopped, p.Status, p.Name)
		assert.False(t, p.Active, p.Name)
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
		require.NoError(t, <-done, "run")
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
			assert.NoError(t, p.Run(rctx), "run %s", p.Name())
		})
	}
	killer, err := pgx.Connect(ctx, serverURL())
	require.NoError(t, err)
	defer killer.Close(context.WithoutCancel(ctx))
	for range 5 {
		time.Sleep(150 * time.Millisecond)
		_, err := killer.Exec(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity
			WHERE datname = $1 AND pid <> pg_backend_pid()`, f.pool.Config().ConnConfig.Database)
		require.NoError(t, err, "terminate")
	}
	f.waitCaughtUp(ctx)
	cancel()
	wg.Wait()

	g.m.checkBalances(t, f.balances(ctx))
	var entries, want int64
	require.NoError(t, f.pool.QueryRow(ctx, `SELECT count(*), count(DISTINCT (event_id, posting_index)) FROM ledger_entries`).Scan(&entries, &want))
	assert.Equal(t, want, entries, "duplicate entries")
	// The same as a replay from scratch.
	rep, err := f.svc.Rebuild(ctx, nil, projections.RebuildOptions{VerifyOnly: true})
	require.NoError(t, err)
	assert.Empty(t, rep.Differences, "differences after crashes")
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
	require.Zero(t, b.batches.Load(), "standby projector applied batches while the active one ran")
	held, err := f.db.LockHeld(ctx, projections.LockActive, projections.NameLedger)
	require.NoError(t, err)
	require.True(t, held, "active lock not held")

	// A stops: B takes over within about a second and projects new events.
	stopA()
	require.NoError(t, <-doneA)
	aDone := a.batches.Load()
	f.apply(ctx, g.payments(20))
	waitFor(t, func() bool { return b.batches.Load() > 0 })
	f.waitCaughtUp(ctx, projections.NameLedger)
	assert.Equal(t, aDone, a.batches.Load(), "stopped projector kept applying")
	cp, err := f.db.Checkpoint(ctx, projections.NameLedger)
	require.NoError(t, err)
	assert.Equal(t, projections.StatusLive, cp.Status, "after take-over")
	stopB()
	require.NoError(t, <-doneB)
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
	pe, ok := errors.AsType[*projections.PoisonError](err)
	require.True(t, ok, "run: want a poison error, got %v", err)
	require.ErrorIs(t, err, projections.ErrPoison)
	require.ErrorIs(t, err, payment.ErrUnknownEventType)
	assert.Equal(t, bad, pe.Event.Position, "poison at")
	cp, err := f.db.Checkpoint(ctx, projections.NamePayments)
	require.NoError(t, err)
	assert.Equal(t, good, cp.Position, "checkpoint after poison")
	assert.Equal(t, projections.StatusStopped, cp.Status)
	assert.Equal(t, &bad, cp.ErrorPosition)
	assert.Contains(t, cp.LastError, "payment.mystery")
	st := f.statusWhen(ctx, func(st views.Status) bool {
		for _, p := range st.Projections {
			if p.Name == projections.NamePayments {
				return p.Lag == wantLag
			}
		}
		return false
	})
	for _, p := range st.Projections {
		if p.Name == projections.NamePayments {
			assert.NotEmpty(t, p.LastError, "status of the stopped projection")
			assert.Equal(t, wantLag, p.Lag)
			assert.Equal(t, projections.StatusStopped, p.Status)
		}
	}
	vs, err := f.svc.Verify(ctx)
	require.NoError(t, err)
	assert.True(t, hasCheck(vs, projections.CheckDecodable), "verify should report the undecodable event: %v", vs)
	// Running again stops at the same place: never skipped.
	err = projections.NewProjector(projections.Payments(), f.es, f.db, nil).Run(ctx)
	pe, ok = errors.AsType[*projections.PoisonError](err)
	require.True(t, ok, "second run: %v", err)
	assert.Equal(t, bad, pe.Event.Position, "second run")
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
	pe, ok := errors.AsType[*projections.PoisonError](err)
	require.True(t, ok, "want poison at %s, got %v", bad, err)
	assert.Equal(t, bad, pe.Event.Position)
	cp, err := f.db.Checkpoint(ctx, projections.NameLedger)
	require.NoError(t, err)
	assert.Equal(t, good, cp.Position, "the events before the poison are committed")
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
	require.NoError(t, err)
	// Hold an append open...
	tx, err := f.pool.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(context.WithoutCancel(ctx))
	_, err = f.es.AppendTx(ctx, tx, "payment-standard-early", eventstore.NoStream,
		[]eventstore.EventData{{ID: uuid.New(), Type: typ, Data: body}})
	require.NoError(t, err)
	// ...while a later one commits, and the projectors run.
	f.appendEvents(ctx, "payment-standard-late", late)
	time.Sleep(700 * time.Millisecond)
	var n int
	require.NoError(t, f.pool.QueryRow(ctx, `SELECT count(*) FROM ledger_entries`).Scan(&n))
	cp, err := f.db.Checkpoint(ctx, projections.NameLedger)
	require.NoError(t, err)
	require.Zero(t, n, "projected past an open append")
	require.Equal(t, eventstore.Start, cp.Position, "projected past an open append")
	require.NoError(t, tx.Commit(ctx))
	f.mu.Lock()
	f.count["payment-standard-early"] = 1
	f.mu.Unlock()
	f.waitCaughtUp(ctx)
	got := f.balances(ctx)
	assert.Equal(t, int64(-1500), got[acctCur{"revenue:sales", "USD"}], "both captures should be projected")
	assert.Equal(t, int64(1500), got[acctCur{"provider:standard:balance", "USD"}], "both captures should be projected")
	rows, err := f.pool.Query(ctx, `SELECT stream_id FROM payments ORDER BY 1`)
	require.NoError(t, err)
	streams, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	assert.Equal(t, []string{"payment-standard-early", "payment-standard-late"}, streams)
	require.NoError(t, stop())
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
	require.FailNow(f.t, "no event of "+stream+" in the feed")
	return
}

func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	require.Eventually(t, cond, 30*time.Second, 5*time.Millisecond, "condition not reached in time")
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
func (f *fixture) statusWhen(ctx context.Context, ready func(views.Status) bool) views.Status {
	f.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		st, err := f.svc.Status(ctx)
		require.NoError(f.t, err)
		if ready(st) || time.Now().After(deadline) {
			return st
		}
		time.Sleep(20 * time.Millisecond)
	}
}
