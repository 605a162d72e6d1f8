package projections_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/domain/assertion"
	"github.com/onceledger/onceledger/domain/ledger"
	"github.com/onceledger/onceledger/projections"
)

// readModelTables are the tables a rebuild writes.
var readModelTables = []string{"ledger_entries", "account_balances", "periods", "period_balances", "payments", "payment_ids",
	"reconciliation_items", "settlement_lines", "payouts", "balance_assertions", "balance_movements", "ledger_actors", "provider_days", "item_days", "day_facts", "batch_links",
	"bank_statement_lines", "bank_statements", "bank_payouts"}

// tableContents is every read-model table's rows as JSON text, sorted,
// without what legitimately differs between two projections of the same
// history: ids drawn from a sequence and the balances' wall-clock stamp.
func tableContents(ctx context.Context, t *testing.T, pool *pgxpool.Pool) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, table := range readModelTables {
		rows, err := pool.Query(ctx, `SELECT (to_jsonb(t) - 'id' - CASE WHEN $1 = 'account_balances' THEN 'updated_at' ELSE '' END)::text
			FROM `+pgx.Identifier{table}.Sanitize()+` t ORDER BY 1`, table)
		require.NoError(t, err, table)
		out[table], err = pgx.CollectRows(rows, pgx.RowTo[string])
		require.NoError(t, err, table)
	}
	return out
}

// emptyReadModel empties the live read-model tables: a database restored
// without its read models. With unstarted, every checkpoint goes to the
// start of the feed too (projections new to the database, which never
// ran); otherwise the checkpoints stay where they were, and the empty
// tables are wrong.
func emptyReadModel(ctx context.Context, t *testing.T, pool *pgxpool.Pool, unstarted bool) {
	t.Helper()
	for _, table := range readModelTables {
		_, err := pool.Exec(ctx, `TRUNCATE `+pgx.Identifier{table}.Sanitize())
		require.NoError(t, err, table)
	}
	if unstarted {
		_, err := pool.Exec(ctx, `UPDATE projection_checkpoints SET position_commit = 0, position_prepare = 0`)
		require.NoError(t, err)
	}
}

// checkRebuildIntoEmpty rebuilds the emptied read model of f (no live
// projector running: nothing brings the live tables along) and checks the
// outcome against want, the tables the live projectors made of the same
// history (the live path: statement by statement). The shadows replace the
// live tables. Empty tables of projections that never started are only
// behind: no difference, and the rebuild must not replay the feed through
// the live path for them while it holds the projectors. Empty tables at a
// later checkpoint are wrong: every rebuilt row is reported missing from
// them (read from the shadow alone), the first few detailed.
func checkRebuildIntoEmpty(ctx context.Context, t *testing.T, f *fixture, want map[string][]string, events int64, unstarted bool) {
	t.Helper()
	rep, err := f.svc.Rebuild(ctx, nil, projections.RebuildOptions{BatchSize: 64, MaxRowDifferences: 5})
	require.NoError(t, err, "rebuild")
	require.True(t, rep.Swapped)
	assert.Equal(t, events, rep.Events)
	assert.Equal(t, []string{projections.PhaseReplay}, replays(rep), "empty live tables: no checksum pass")
	for _, tc := range rep.Tables {
		assert.Zero(t, tc.LiveRows, "table %s: the live tables stayed empty until the swap", tc.Table)
		assert.Equal(t, int64(len(want[tc.Table])), tc.RebuiltRows, "table %s", tc.Table)
		if unstarted {
			assert.Zero(t, tc.DifferingRows, "table %s", tc.Table)
		} else {
			assert.Equal(t, tc.RebuiltRows, tc.DifferingRows, "table %s", tc.Table)
		}
		if tc.RebuiltRows > 0 {
			assert.Equal(t, projections.RepairReplaced, tc.Repair, "table %s", tc.Table)
		}
	}
	if unstarted {
		assert.Empty(t, rep.Differences, "the tables of projections that never ran are behind, not wrong")
	} else {
		var missing []projections.Difference
		for _, d := range rep.Differences {
			if d.Table == "ledger_entries" && d.Kind == projections.DiffMissingInLive {
				missing = append(missing, d)
			}
		}
		require.Len(t, missing, 5, "the first differences of ledger_entries: %+v", rep.Differences)
		for i, d := range missing {
			assert.Empty(t, d.Live)
			assert.Contains(t, d.Rebuilt, `"amount"`)
			if i > 0 {
				assert.Less(t, missing[i-1].Key, d.Key, "ordered by key")
			}
		}
	}
	assert.Equal(t, want, tableContents(ctx, t, f.pool), "the bulk path's tables equal the live path's")
	for _, name := range rep.Projections {
		cp, err := f.db.Checkpoint(ctx, name)
		require.NoError(t, err)
		assert.Equal(t, rep.Position, cp.Position, "checkpoint of %s", name)
	}
}

// TestRebuildIntoEmptyTablesEqualsTheLivePath: the same generated history
// projected by the live projectors, then, read models emptied, by a rebuild
// (COPY into unindexed shadows, indexes after the load, then the swap):
// the same rows. The live projectors then go on from the rebuild's
// position.
func TestRebuildIntoEmptyTablesEqualsTheLivePath(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := ctxT(t)
	g := newGenerator(31)
	f.apply(ctx, g.payments(120))
	stop := f.run(ctx)
	f.waitCaughtUp(ctx)
	require.NoError(t, stop())
	want := tableContents(ctx, t, f.pool)
	require.NotEmpty(t, want["ledger_entries"])

	for _, unstarted := range []bool{false, true} {
		emptyReadModel(ctx, t, f.pool, unstarted)
		checkRebuildIntoEmpty(ctx, t, f, want, int64(f.total()), unstarted)
	}

	stop = f.run(ctx)
	defer func() { _ = stop() }()
	f.apply(ctx, g.payments(20))
	f.waitCaughtUp(ctx)
	g.m.checkBalances(t, f.balances(ctx))
	vs, err := f.svc.Verify(ctx)
	require.NoError(t, err)
	assert.Empty(t, vs, "verify")
}

// TestESDBRebuildIntoEmptyTablesEqualsTheLivePath: the same over
// EventStoreDB (the test double).
func TestESDBRebuildIntoEmptyTablesEqualsTheLivePath(t *testing.T) {
	t.Parallel()
	f := newESDBFixture(t)
	ctx := ctxT(t)
	g := newGenerator(32)
	f.apply(ctx, g.payments(80))
	stop := f.run(ctx)
	f.waitAt(ctx, f.head(ctx))
	require.NoError(t, stop())
	want := tableContents(ctx, t, f.pool)
	require.NotEmpty(t, want["ledger_entries"])

	for _, unstarted := range []bool{false, true} {
		emptyReadModel(ctx, t, f.pool, unstarted)
		checkRebuildIntoEmpty(ctx, t, f.fixture, want, int64(f.fake.EventCount()), unstarted)
	}

	stop = f.run(ctx)
	defer func() { _ = stop() }()
	f.apply(ctx, g.payments(15))
	f.waitAt(ctx, f.head(ctx))
	g.m.checkBalances(t, f.balances(ctx))
}

// TestRebuildIntoEmptyTablesWithStatedBalances: balance movements are
// COPYed into a shadow without its key in a rebuild, and the assertions
// gain them there without the insert's RETURNING; a fact booked before a
// stated balance but arriving after it (the late capture) must still move
// that assertion's ledger figure, and an adjustment must resolve its item,
// exactly as the live path did.
func TestRebuildIntoEmptyTablesWithStatedBalances(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := ctxT(t)
	t0 := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	acct := ledger.ProviderBalance("stripe")
	stream := assertion.StreamID(acct, "USD")
	f.capture(ctx, "pi_1", t0, 1000, 30)
	f.appendAssertion(ctx, stream, stated(t0.Add(time.Hour), "a1", 970), stated(t0.Add(3*time.Hour), "a3", 1970))
	f.capture(ctx, "pi_2", t0.Add(2*time.Hour), 1000, 0) // late: moves a3
	f.appendAssertion(ctx, stream, stated(t0.Add(5*time.Hour), "a5", 1900))
	f.appendAssertion(ctx, stream, assertion.Adjusted{ID: uuid.New(), ItemID: "x/balance_mismatch/y", Provider: "stripe",
		EffectiveAt: t0.Add(4 * time.Hour), Actor: "alice", Note: "fee", At: t0.Add(6 * time.Hour),
		Postings: []ledger.Posting{{Account: "expenses:fees:stripe", Currency: "USD", Amount: 70}, {Account: acct, Currency: "USD", Amount: -70}}})
	f.capture(ctx, "pi_3", t0.Add(7*time.Hour), 500, 10)
	stop := f.run(ctx)
	f.waitCaughtUp(ctx)
	require.NoError(t, stop())
	want := tableContents(ctx, t, f.pool)
	require.Len(t, want["balance_assertions"], 3)
	require.NotEmpty(t, want["balance_movements"])

	for _, unstarted := range []bool{false, true} {
		emptyReadModel(ctx, t, f.pool, unstarted)
		checkRebuildIntoEmpty(ctx, t, f, want, int64(f.total()), unstarted)
	}
}
