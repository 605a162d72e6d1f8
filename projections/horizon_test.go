package projections_test

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/projections"
)

// TestLiveProjectorsKeepUpDuringARebuildTransaction: a rebuild-like long
// write transaction on a read-model connection is open while deliveries are
// recorded; the live projectors (on read-model connections, as serve runs
// them) project them all without waiting for it. An ordinary open write
// transaction still holds the feed (the late-commit rule).
func TestLiveProjectorsKeepUpDuringARebuildTransaction(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := ctxT(t)
	rm := f.onReadModelPool(ctx)
	g := newGenerator(17)
	f.apply(ctx, g.payments(5))
	stop := f.run(ctx)
	defer stop()
	f.waitCaughtUp(ctx)

	// The rebuild's transaction: shadow tables written, held open.
	long, err := rm.Begin(ctx)
	require.NoError(t, err)
	defer long.Rollback(context.WithoutCancel(ctx))
	_, err = long.Exec(ctx, `CREATE TABLE ledger_entries_rebuild_test (LIKE ledger_entries INCLUDING ALL EXCLUDING GENERATED);
		INSERT INTO ledger_entries_rebuild_test SELECT * FROM ledger_entries`)
	require.NoError(t, err)
	var longXID uint64
	require.NoError(t, long.QueryRow(ctx, `SELECT pg_current_xact_id()::text::bigint`).Scan(&longXID))

	// Live deliveries, recorded after it began: projected while it is open.
	f.apply(ctx, g.payments(20))
	f.waitCaughtUp(ctx) // polls to a deadline
	g.m.checkBalances(t, f.balances(ctx))
	var state string
	require.NoError(t, f.pool.QueryRow(ctx, `SELECT pg_xact_status($1::bigint::text::xid8)`, int64(longXID)).Scan(&state))
	require.Equal(t, "in progress", state, "test premise: the rebuild-like transaction is still open")
	cp, err := f.db.Checkpoint(ctx, projections.NameLedger)
	require.NoError(t, err)
	assert.Greater(t, cp.Position.Commit, longXID, "the live checkpoint passed the open read-model transaction")

	// An unmarked write transaction holds the feed: what is appended after
	// it began is not readable until it ends.
	plain, err := f.pool.Begin(ctx)
	require.NoError(t, err)
	defer plain.Rollback(context.WithoutCancel(ctx))
	_, err = plain.Exec(ctx, `SELECT pg_current_xact_id()`)
	require.NoError(t, err)
	f.apply(ctx, g.payments(3))
	evs, err := f.es.ReadAll(ctx, cp.Position, 100)
	require.NoError(t, err)
	assert.Empty(t, evs, "events appended after an open ordinary write transaction must stay behind the horizon")
	require.NoError(t, plain.Rollback(ctx))
	f.waitCaughtUp(ctx)
	g.m.checkBalances(t, f.balances(ctx))

	require.NoError(t, long.Rollback(ctx))
	require.NoError(t, stop())
}
