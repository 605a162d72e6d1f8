package projections_test

import (
	"context"
	"slices"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/projections"
)

func TestRebuildWhileAccountantsQuery(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := ctxT(t)
	g := newGenerator(10)
	f.apply(ctx, g.payments(300))
	stop := f.run(ctx)
	defer stop()
	f.waitCaughtUp(ctx)
	indexesBefore := f.indexes(ctx)

	var balances, entries, payments int64
	if err := f.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM account_balances), (SELECT count(*) FROM ledger_entries),
		(SELECT count(*) FROM payments)`).Scan(&balances, &entries, &payments); err != nil {
		t.Fatal(err)
	}

	// Accountants query as the read-only role, all through the rebuild.
	cfg := f.pool.Config().Copy()
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		_, err := c.Exec(ctx, `SET ROLE onceledger_readonly`)
		return err
	}
	cfg.MaxConns = 8
	ro, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer ro.Close()
	qctx, stopQueries := context.WithCancel(ctx)
	var queries, failures atomic.Int64
	var wg sync.WaitGroup
	for i := range 6 {
		wg.Go(func() {
			for qctx.Err() == nil {
				var n, sum, n2 int64
				var err error
				switch i % 3 {
				case 0:
					// Double entry: all balances of a currency sum to zero.
					err = ro.QueryRow(qctx, `SELECT count(*), coalesce(sum(balance), 0), count(DISTINCT currency) FROM account_balances`).Scan(&n, &sum, &n2)
					if err == nil && (n != balances || sum != 0 || n2 != 2) {
						t.Errorf("account_balances during rebuild: %d rows, sum %d, %d currencies; want %d rows, sum 0", n, sum, n2, balances)
					}
				case 1:
					err = ro.QueryRow(qctx, `SELECT count(*), coalesce(sum(amount), 0) FROM ledger_entries`).Scan(&n, &sum)
					if err == nil && (n != entries || sum != 0) {
						t.Errorf("ledger_entries during rebuild: %d rows, sum %d; want %d rows, sum 0", n, sum, entries)
					}
				case 2:
					err = ro.QueryRow(qctx, `SELECT (SELECT count(*) FROM payments), (SELECT count(*) FROM v_balances_by_provider)`).Scan(&n, &n2)
					if err == nil && (n != payments || n2 == 0) {
						t.Errorf("payments during rebuild: %d rows (want %d), %d provider balances", n, payments, n2)
					}
				}
				if err != nil && qctx.Err() == nil {
					failures.Add(1)
					t.Errorf("query during rebuild: %v", err)
				}
				queries.Add(1)
			}
		})
	}

	var progressCalls atomic.Int64
	rep, err := f.svc.Rebuild(ctx, nil, projections.RebuildOptions{
		BatchSize: 100,
		Progress:  func(done, total int64) { progressCalls.Add(1) },
	})
	stopQueries()
	wg.Wait()
	if err != nil {
		t.Fatalf("rebuild: %v", err)
	}
	if len(rep.Differences) != 0 || !rep.Swapped || rep.Events != int64(f.total()) {
		t.Errorf("report: %+v (want no differences, swapped, %d events)", rep, f.total())
	}
	if progressCalls.Load() == 0 || queries.Load() < 10 {
		t.Errorf("progress calls %d, queries %d", progressCalls.Load(), queries.Load())
	}
	for _, tc := range rep.Tables {
		// No period is closed here: period_balances stays empty.
		if tc.LiveRows != tc.RebuiltRows || (tc.LiveRows == 0 && tc.Table != "period_balances") || tc.DifferingRows != 0 {
			t.Errorf("table %+v", tc)
		}
	}

	// The swapped-in tables are the live tables in every respect: names of
	// indexes, grants, views, the id sequence; the projectors go on.
	if got := f.indexes(ctx); !slices.Equal(got, indexesBefore) {
		t.Errorf("indexes after swap: %v, before %v", got, indexesBefore)
	}
	var leftovers []string
	rows, err := f.pool.Query(ctx, `SELECT relname::text FROM pg_class
		WHERE relnamespace = 'public'::regnamespace AND (relname LIKE '%\_shadow%' OR relname LIKE '%\_old' OR relname LIKE '%\_sh')`)
	if err == nil {
		leftovers, err = pgx.CollectRows(rows, pgx.RowTo[string])
	}
	if err != nil || len(leftovers) != 0 {
		t.Errorf("leftover shadow objects: %v (%v)", leftovers, err)
	}
	var seq *string
	if err := f.pool.QueryRow(ctx, `SELECT pg_get_serial_sequence('ledger_entries', 'id')`).Scan(&seq); err != nil || seq == nil {
		t.Errorf("ledger_entries.id lost its sequence: %v", err)
	}
	g2 := g.payments(40)
	f.apply(ctx, g2)
	f.waitCaughtUp(ctx)
	g.m.checkBalances(t, f.balances(ctx))
	var viewRows int
	if err := ro.QueryRow(ctx, `SELECT count(*) FROM v_daily_totals`).Scan(&viewRows); err != nil || viewRows == 0 {
		t.Errorf("v_daily_totals after swap: %d rows, %v", viewRows, err)
	}
	if vs, err := f.svc.Verify(ctx); err != nil || len(vs) != 0 {
		t.Errorf("verify after rebuild: %v %v", vs, err)
	}
}

func TestRebuildWhileEventsArrive(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := ctxT(t)
	g := newGenerator(11)
	f.apply(ctx, g.payments(150))
	stop := f.run(ctx)
	defer stop()

	appended := make(chan struct{})
	var batches [][]appendOp
	for range 20 {
		batches = append(batches, g.payments(5))
	}
	go func() {
		defer close(appended)
		for _, ops := range batches {
			f.apply(ctx, ops)
		}
	}()
	rep, err := f.svc.Rebuild(ctx, []string{projections.NameLedger, projections.NamePayments}, projections.RebuildOptions{BatchSize: 50})
	<-appended
	if err != nil {
		t.Fatalf("rebuild: %v", err)
	}
	if len(rep.Differences) != 0 || !rep.Swapped {
		t.Errorf("report: %+v", rep)
	}
	f.waitCaughtUp(ctx)
	g.m.checkBalances(t, f.balances(ctx))
	if vs, err := f.svc.Verify(ctx); err != nil || len(vs) != 0 {
		t.Errorf("verify: %v %v", vs, err)
	}
	// Compared once more from scratch: still identical.
	rep, err = f.svc.Rebuild(ctx, nil, projections.RebuildOptions{VerifyOnly: true})
	if err != nil || len(rep.Differences) != 0 || rep.Swapped {
		t.Errorf("verify-only rebuild: %+v %v", rep, err)
	}
}

func TestCorruptedLiveTableIsDetectedAndRepaired(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := ctxT(t)
	g := newGenerator(12)
	f.apply(ctx, g.payments(60))
	stop := f.run(ctx)
	defer stop()
	f.waitCaughtUp(ctx)

	if _, err := f.pool.Exec(ctx, `UPDATE account_balances SET balance = balance + 1 WHERE account = 'revenue:sales' AND currency = 'USD'`); err != nil {
		t.Fatal(err)
	}
	if _, err := f.pool.Exec(ctx, `UPDATE payments SET captured_amount = captured_amount + 7 WHERE stream_id = 'payment-stripe-pay_0'`); err != nil {
		t.Fatal(err)
	}

	vs, err := f.svc.Verify(ctx)
	if err != nil || !hasCheck(vs, projections.CheckBalancesMatch) {
		t.Errorf("verify should find the corrupted balance: %v %v", vs, err)
	}
	rep, err := f.svc.Rebuild(ctx, nil, projections.RebuildOptions{VerifyOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Swapped || !hasDiff(rep.Differences, "account_balances", "revenue:sales/USD") || !hasDiff(rep.Differences, "payments", "stripe/pay_0") {
		t.Errorf("verify-only rebuild should report both corruptions: %+v", rep.Differences)
	}
	// Verify-only leaves the live tables alone.
	got := f.balances(ctx)
	if got[acctCur{"revenue:sales", "USD"}] != g.m.balances[acctCur{"revenue:sales", "USD"}]+1 {
		t.Errorf("verify-only changed the live table")
	}

	rep, err = f.svc.Rebuild(ctx, nil, projections.RebuildOptions{})
	if err != nil || !rep.Swapped || len(rep.Differences) == 0 {
		t.Fatalf("rebuild: %+v %v", rep, err)
	}
	g.m.checkBalances(t, f.balances(ctx))
	if vs, err := f.svc.Verify(ctx); err != nil || len(vs) != 0 {
		t.Errorf("verify after repair: %v %v", vs, err)
	}
	rep, err = f.svc.Rebuild(ctx, nil, projections.RebuildOptions{VerifyOnly: true})
	if err != nil || len(rep.Differences) != 0 {
		t.Errorf("after repair: %+v %v", rep.Differences, err)
	}
}

func hasDiff(ds []projections.Difference, table, key string) bool {
	for _, d := range ds {
		if d.Table == table && d.Key == key {
			return true
		}
	}
	return false
}

// indexes lists the read-model tables' index names.
func (f *fixture) indexes(ctx context.Context) []string {
	f.t.Helper()
	rows, err := f.pool.Query(ctx, `SELECT indexname FROM pg_indexes WHERE tablename IN
		('ledger_entries', 'account_balances', 'payments', 'reconciliation_items') ORDER BY 1`)
	if err != nil {
		f.t.Fatal(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		f.t.Fatal(err)
	}
	return names
}

// With no projector running, the rebuild brings the live checkpoints to the
// same position itself before it compares.
func TestRebuildWithoutLiveProjectors(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := ctxT(t)
	g := newGenerator(13)
	f.apply(ctx, g.payments(40))
	// Only part of the feed is projected live.
	p := projections.NewProjector(projections.Ledger(), f.es, f.db, nil)
	projections.SetBatchSize(p, 10)
	f.feed(ctx)
	if _, err := p.Step(ctx); err != nil {
		t.Fatal(err)
	}
	rep, err := f.svc.Rebuild(ctx, nil, projections.RebuildOptions{})
	if err != nil || len(rep.Differences) != 0 || !rep.Swapped {
		t.Fatalf("rebuild: %+v %v", rep, err)
	}
	f.waitCaughtUp(ctx)
	g.m.checkBalances(t, f.balances(ctx))
	st, err := f.svc.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range st.Projections {
		if p.Status != projections.StatusStopped || p.Lag != 0 {
			t.Errorf("status after rebuild without projectors: %+v", p)
		}
	}

	// A checkpoint claiming a position past the head is a violation.
	if _, err := f.pool.Exec(ctx, `UPDATE projection_checkpoints SET position_commit = position_commit + 1000000 WHERE name = 'payments'`); err != nil {
		t.Fatal(err)
	}
	vs, err := f.svc.Verify(ctx)
	if err != nil || !hasCheck(vs, projections.CheckCheckpointInFeed) {
		t.Errorf("verify should report the checkpoint past the head: %v %v", vs, err)
	}
}
