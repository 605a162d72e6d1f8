package projections_test

import (
	"context"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
	tablesBefore := f.tableDefinitions(ctx)

	var balances, entries, payments int64
	require.NoError(t, f.pool.QueryRow(ctx, `SELECT (SELECT count(*) FROM account_balances), (SELECT count(*) FROM ledger_entries),
		(SELECT count(*) FROM payments)`).Scan(&balances, &entries, &payments))

	// Accountants query as the read-only role, all through the rebuild.
	cfg := f.pool.Config().Copy()
	cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
		_, err := c.Exec(ctx, `SET ROLE onceledger_readonly`)
		return err
	}
	cfg.MaxConns = 8
	ro, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
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
					if err == nil {
						assert.Equal(t, []int64{balances, 0, 2}, []int64{n, sum, n2}, "account_balances during rebuild: rows, sum, currencies")
					}
				case 1:
					err = ro.QueryRow(qctx, `SELECT count(*), coalesce(sum(amount), 0) FROM ledger_entries`).Scan(&n, &sum)
					if err == nil {
						assert.Equal(t, []int64{entries, 0}, []int64{n, sum}, "ledger_entries during rebuild: rows, sum")
					}
				case 2:
					err = ro.QueryRow(qctx, `SELECT (SELECT count(*) FROM payments), (SELECT count(*) FROM v_balances_by_provider)`).Scan(&n, &n2)
					if err == nil {
						assert.Equal(t, payments, n, "payments during rebuild")
						assert.NotZero(t, n2, "provider balances during rebuild")
					}
				}
				if qctx.Err() == nil && !assert.NoError(t, err, "query during rebuild") {
					failures.Add(1)
				}
				queries.Add(1)
			}
		})
	}

	var progressCalls atomic.Int64
	// SwapAll: the tables equal history, and would be kept as they are;
	// this test is about replacing them under the accountants' queries.
	rep, err := f.svc.Rebuild(ctx, nil, projections.RebuildOptions{
		SwapAll:   true,
		BatchSize: 100,
		Progress:  func(done, total int64) { progressCalls.Add(1) },
	})
	stopQueries()
	wg.Wait()
	require.NoError(t, err, "rebuild")
	assert.Empty(t, rep.Differences, "report")
	assert.True(t, rep.Swapped)
	assert.Equal(t, int64(f.total()), rep.Events)
	assert.NotZero(t, progressCalls.Load(), "progress calls")
	assert.GreaterOrEqual(t, queries.Load(), int64(10), "queries during the rebuild")
	for _, tc := range rep.Tables {
		assert.Equal(t, tc.LiveRows, tc.RebuiltRows, "table %s", tc.Table)
		if tc.Table != "period_balances" && tc.Table != "payouts" && tc.Table != "settlement_lines" && // no closed period, no settlement here
			tc.Table != "balance_assertions" && tc.Table != "ledger_actors" && // nor a stated balance, nor an adjustment
			!strings.HasPrefix(tc.Table, "bank_") { // nor a bank statement
			assert.NotZero(t, tc.LiveRows, "table %s", tc.Table)
		}
		assert.Zero(t, tc.DifferingRows, "table %s", tc.Table)
		assert.Equal(t, projections.RepairReplaced, tc.Repair, "table %s", tc.Table)
	}

	// The swapped-in tables are the live tables in every respect: names of
	// indexes, grants, views, the id sequence; the projectors go on.
	assert.Equal(t, indexesBefore, f.indexes(ctx), "indexes after swap")
	assert.Equal(t, tablesBefore, f.tableDefinitions(ctx), "persistence and constraints after swap")
	rows, err := f.pool.Query(ctx, `SELECT relname::text FROM pg_class
		WHERE relnamespace = 'public'::regnamespace AND (relname LIKE '%\_shadow%' OR relname LIKE '%\_old' OR relname LIKE '%\_sh')`)
	require.NoError(t, err)
	leftovers, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	assert.Empty(t, leftovers, "leftover shadow objects")
	var seq *string
	require.NoError(t, f.pool.QueryRow(ctx, `SELECT pg_get_serial_sequence('ledger_entries', 'id')`).Scan(&seq))
	assert.NotNil(t, seq, "ledger_entries.id lost its sequence")
	g2 := g.payments(40)
	f.apply(ctx, g2)
	f.waitCaughtUp(ctx)
	g.m.checkBalances(t, f.balances(ctx))
	var viewRows int
	require.NoError(t, ro.QueryRow(ctx, `SELECT count(*) FROM v_daily_totals`).Scan(&viewRows))
	assert.NotZero(t, viewRows, "v_daily_totals after swap")
	vs, err := f.svc.Verify(ctx)
	require.NoError(t, err)
	assert.Empty(t, vs, "verify after rebuild")
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
	require.NoError(t, err, "rebuild")
	assert.Empty(t, rep.Differences, "report")
	assert.True(t, rep.Swapped)
	f.waitCaughtUp(ctx)
	g.m.checkBalances(t, f.balances(ctx))
	vs, err := f.svc.Verify(ctx)
	require.NoError(t, err)
	assert.Empty(t, vs, "verify")
	// Compared once more from scratch: still identical.
	rep, err = f.svc.Rebuild(ctx, nil, projections.RebuildOptions{VerifyOnly: true})
	require.NoError(t, err, "verify-only rebuild")
	assert.Empty(t, rep.Differences, "verify-only rebuild")
	assert.False(t, rep.Swapped)
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

	_, err := f.pool.Exec(ctx, `UPDATE account_balances SET balance = balance + 1 WHERE account = 'revenue:sales' AND currency = 'USD'`)
	require.NoError(t, err)
	_, err = f.pool.Exec(ctx, `UPDATE payments SET captured_amount = captured_amount + 7 WHERE stream_id = 'payment-stripe-pay_0'`)
	require.NoError(t, err)
	// One entry lost, one made up (a copy of another under a new event id).
	_, err = f.pool.Exec(ctx, `DELETE FROM ledger_entries WHERE id = (SELECT min(id) FROM ledger_entries)`)
	require.NoError(t, err)
	_, err = f.pool.Exec(ctx, `INSERT INTO ledger_entries (event_id, posting_index, stream_id, event_type, provider, account,
			currency, amount, occurred_at, recorded_at, position_commit, position_prepare, period)
		SELECT gen_random_uuid(), posting_index, stream_id, event_type, provider, account,
			currency, amount, occurred_at, recorded_at, position_commit, position_prepare, period
		FROM ledger_entries WHERE id = (SELECT max(id) FROM ledger_entries)`)
	require.NoError(t, err)

	vs, err := f.svc.Verify(ctx)
	require.NoError(t, err)
	assert.True(t, hasCheck(vs, projections.CheckBalancesMatch), "verify should find the corrupted balance: %v", vs)
	rep, err := f.svc.Rebuild(ctx, nil, projections.RebuildOptions{VerifyOnly: true})
	require.NoError(t, err)
	assert.False(t, rep.Swapped)
	assert.True(t, hasDiff(rep.Differences, "account_balances", "revenue:sales/USD"), "verify-only rebuild should report the balance: %+v", rep.Differences)
	assert.True(t, hasDiff(rep.Differences, "payments", "stripe/pay_0"), "verify-only rebuild should report the payment: %+v", rep.Differences)
	// The checksum pass found differences; the stored replay detailed them.
	assert.Equal(t, []string{projections.PhaseChecksumReplay, projections.PhaseReplay}, replays(rep))
	// Verify-only leaves the live tables alone.
	got := f.balances(ctx)
	assert.Equal(t, g.m.balances[acctCur{"revenue:sales", "USD"}]+1, got[acctCur{"revenue:sales", "USD"}], "verify-only changed the live table")

	rep, err = f.svc.Rebuild(ctx, nil, projections.RebuildOptions{})
	require.NoError(t, err, "rebuild")
	require.True(t, rep.Swapped)
	require.NotEmpty(t, rep.Differences)
	assert.Equal(t, []string{projections.PhaseChecksumReplay, projections.PhaseReplay}, replays(rep))
	assert.True(t, hasDiff(rep.Differences, "ledger_entries", ""), "the lost and the made-up entries: %+v", rep.Differences)
	// Few rows differ: the live tables are repaired in place.
	for _, tc := range rep.Tables {
		want := projections.RepairNone
		switch tc.Table {
		case "account_balances", "payments", "ledger_entries":
			want = projections.RepairPatched
		}
		assert.Equal(t, want, tc.Repair, "table %s", tc.Table)
	}
	g.m.checkBalances(t, f.balances(ctx))
	vs, err = f.svc.Verify(ctx)
	require.NoError(t, err)
	assert.Empty(t, vs, "verify after repair")
	rep, err = f.svc.Rebuild(ctx, nil, projections.RebuildOptions{VerifyOnly: true})
	require.NoError(t, err)
	assert.Empty(t, rep.Differences, "after repair")
	assert.Equal(t, []string{projections.PhaseChecksumReplay}, replays(rep), "a healthy ledger: no stored replay")
}

// replays lists the replays a rebuild made: the checksum pass's, the
// stored one's, in order.
func replays(rep projections.Report) []string {
	var out []string
	for _, p := range rep.Phases {
		if p.Name == projections.PhaseChecksumReplay || p.Name == projections.PhaseReplay {
			out = append(out, p.Name)
		}
	}
	return out
}

// hasDiff: ds has a difference of table with key (any key when empty).
func hasDiff(ds []projections.Difference, table, key string) bool {
	for _, d := range ds {
		if d.Table == table && (key == "" || d.Key == key) {
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
	require.NoError(f.t, err)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(f.t, err)
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
	_, err := p.Step(ctx)
	require.NoError(t, err)
	rep, err := f.svc.Rebuild(ctx, nil, projections.RebuildOptions{})
	require.NoError(t, err, "rebuild")
	require.Empty(t, rep.Differences)
	require.True(t, rep.Swapped)
	f.waitCaughtUp(ctx)
	g.m.checkBalances(t, f.balances(ctx))
	st, err := f.svc.Status(ctx)
	require.NoError(t, err)
	for _, p := range st.Projections {
		assert.Equal(t, projections.StatusStopped, p.Status, p.Name)
		assert.Zero(t, p.Lag, p.Name)
	}

	// A checkpoint claiming a position past the head is a violation.
	_, err = f.pool.Exec(ctx, `UPDATE projection_checkpoints SET position_commit = position_commit + 1000000 WHERE name = 'payments'`)
	require.NoError(t, err)
	vs, err := f.svc.Verify(ctx)
	require.NoError(t, err)
	assert.True(t, hasCheck(vs, projections.CheckCheckpointInFeed), "verify should report the checkpoint past the head: %v", vs)
}

// tableDefinitions lists, per read-model table, its persistence (logged or
// not) and its constraints' names and definitions.
func (f *fixture) tableDefinitions(ctx context.Context) []string {
	f.t.Helper()
	rows, err := f.pool.Query(ctx, `
		SELECT t.relname || ' ' || t.relpersistence::text || coalesce(' ' || c.conname || ': ' || pg_get_constraintdef(c.oid), '')
		FROM pg_class t LEFT JOIN pg_constraint c ON c.conrelid = t.oid
		WHERE t.relname IN ('ledger_entries', 'account_balances', 'payments', 'reconciliation_items', 'periods', 'period_balances')
		ORDER BY 1`)
	require.NoError(f.t, err)
	defs, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(f.t, err)
	return defs
}

// TestLiveProjectorsProgressWhileARebuildCompares: a rebuild of a healthy
// ledger compares its shadows with the live tables while the live
// projectors run. The rebuild is held in that phase while deliveries are
// recorded: the live projectors project them all before it goes on. The
// rebuild then finds the live tables equal to history at its position,
// leaves them (and the checkpoints, now past it) alone, and the ledger
// stays exact: nothing lost or applied twice.
func TestLiveProjectorsProgressWhileARebuildCompares(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := ctxT(t)
	f.onReadModelPool(ctx)
	g := newGenerator(18)
	f.apply(ctx, g.payments(40))
	stop := f.run(ctx)
	defer stop()
	f.waitCaughtUp(ctx)

	entered, proceed := make(chan struct{}), make(chan struct{})
	opts := projections.WithPhaseHook(projections.RebuildOptions{BatchSize: 50}, func(phase string) {
		if phase != projections.HookOnlineCompare {
			return
		}
		close(entered)
		select {
		case <-proceed:
		case <-ctx.Done():
		}
	})
	type result struct {
		rep projections.Report
		err error
	}
	done := make(chan result, 1)
	go func() {
		rep, err := f.svc.Rebuild(ctx, nil, opts)
		done <- result{rep, err}
	}()
	select {
	case <-entered:
	case r := <-done:
		t.Fatalf("the rebuild ended without comparing online: %+v, %v", r.rep, r.err)
	}
	// The rebuild is in its comparison phase: the live projectors go on.
	f.apply(ctx, g.payments(10))
	f.waitCaughtUp(ctx) // polls to a deadline
	g.m.checkBalances(t, f.balances(ctx))
	close(proceed)
	r := <-done
	require.NoError(t, r.err, "rebuild")
	assert.Empty(t, r.rep.Differences)
	assert.True(t, r.rep.Swapped)
	assert.Equal(t, []string{projections.PhaseChecksumReplay}, replays(r.rep), "a healthy ledger: no stored replay")
	for _, tc := range r.rep.Tables {
		assert.Equal(t, projections.RepairNone, tc.Repair, "table %s", tc.Table)
	}
	// The checkpoints stayed where the live projectors took them, past the
	// rebuild's position.
	for _, name := range r.rep.Projections {
		cp, err := f.db.Checkpoint(ctx, name)
		require.NoError(t, err)
		assert.True(t, r.rep.Position.Less(cp.Position), "checkpoint of %s: %s, rebuild at %s", name, cp.Position, r.rep.Position)
	}
	f.apply(ctx, g.payments(5))
	f.waitCaughtUp(ctx)
	g.m.checkBalances(t, f.balances(ctx))
	vs, err := f.svc.Verify(ctx)
	require.NoError(t, err)
	assert.Empty(t, vs, "verify")
	rep, err := f.svc.Rebuild(ctx, nil, projections.RebuildOptions{VerifyOnly: true})
	require.NoError(t, err)
	assert.Empty(t, rep.Differences, "compared again from scratch")
	require.NoError(t, stop())
}

// When the checksum pass finds a difference, the stored replay keeps the
// shadows the pass stored (all but the ledger's) and replays only the
// ledger from the start: a difference in any table is still reported and
// repaired, whichever projections are rebuilt.
func TestDifferencesFoundByTheChecksumPassAreRepaired(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := ctxT(t)
	g := newGenerator(21)
	f.apply(ctx, g.payments(50))
	stop := f.run(ctx)
	defer stop()
	f.waitCaughtUp(ctx)

	var key string // provider/payment_id of the corrupted row
	corrupt := func() {
		require.NoError(t, f.pool.QueryRow(ctx, `UPDATE payments SET refunded_amount = refunded_amount + 3
			WHERE stream_id = (SELECT min(stream_id) FROM payments) RETURNING provider || '/' || payment_id`).Scan(&key))
	}
	// The payments projection alone: no ledger lane at all.
	corrupt()
	rep, err := f.svc.Rebuild(ctx, []string{projections.NamePayments}, projections.RebuildOptions{BatchSize: 40})
	require.NoError(t, err)
	assert.Equal(t, []string{projections.PhaseChecksumReplay, projections.PhaseReplay}, replays(rep))
	assert.True(t, hasDiff(rep.Differences, "payments", key), "%+v", rep.Differences)
	require.Len(t, rep.Tables, 2) // payments and payment_ids
	for _, tc := range rep.Tables {
		want := projections.RepairNone
		if tc.Table == "payments" {
			want = projections.RepairPatched
		}
		assert.Equal(t, want, tc.Repair, "table %s", tc.Table)
	}

	// Every projection: the ledger replayed from the start, the others
	// kept from the pass; only payments differ.
	corrupt()
	f.apply(ctx, g.payments(5)) // the live projectors go on meanwhile
	rep, err = f.svc.Rebuild(ctx, nil, projections.RebuildOptions{BatchSize: 40})
	require.NoError(t, err)
	assert.Equal(t, []string{projections.PhaseChecksumReplay, projections.PhaseReplay}, replays(rep))
	require.Len(t, rep.Differences, 1, "%+v", rep.Differences)
	assert.True(t, hasDiff(rep.Differences, "payments", key))
	for _, tc := range rep.Tables {
		want := projections.RepairNone
		if tc.Table == "payments" {
			want = projections.RepairPatched
		}
		assert.Equal(t, want, tc.Repair, "table %s", tc.Table)
		assert.Equal(t, tc.LiveRows, tc.RebuiltRows, "table %s", tc.Table)
	}
	f.waitCaughtUp(ctx)
	g.m.checkBalances(t, f.balances(ctx))
	rep, err = f.svc.Rebuild(ctx, nil, projections.RebuildOptions{VerifyOnly: true})
	require.NoError(t, err)
	assert.Empty(t, rep.Differences, "after the repairs")
	assert.Equal(t, []string{projections.PhaseChecksumReplay}, replays(rep))
	vs, err := f.svc.Verify(ctx)
	require.NoError(t, err)
	assert.Empty(t, vs)
	require.NoError(t, stop())
}
