package readmodel_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/adapters/postgres/readmodel"
	"github.com/onceledger/onceledger/projections"
)

// reconCounter counts the statements that write reconciliation_items.
type reconCounter struct{ n atomic.Int64 }

func (c *reconCounter) see(sql string) {
	if strings.Contains(sql, `INSERT INTO "reconciliation_items"`) {
		c.n.Add(1)
	}
}
func (c *reconCounter) TraceQueryStart(ctx context.Context, _ *pgx.Conn, d pgx.TraceQueryStartData) context.Context {
	c.see(d.SQL)
	return ctx
}
func (c *reconCounter) TraceQueryEnd(context.Context, *pgx.Conn, pgx.TraceQueryEndData) {}
func (c *reconCounter) TraceBatchStart(ctx context.Context, _ *pgx.Conn, _ pgx.TraceBatchStartData) context.Context {
	return ctx
}
func (c *reconCounter) TraceBatchQuery(_ context.Context, _ *pgx.Conn, d pgx.TraceBatchQueryData) {
	c.see(d.SQL)
}
func (c *reconCounter) TraceBatchEnd(context.Context, *pgx.Conn, pgx.TraceBatchEndData) {}

// TestReconciliationStatementsDoNotGrowWithTheBatch: a batch's changes of
// reconciliation items are written with one statement per kind of change,
// not one per change (a settlement import opens an item per line); a
// later change of an item in the same batch still sees the earlier one.
func TestReconciliationStatementsDoNotGrowWithTheBatch(t *testing.T) {
	ctx := context.Background()
	c := &reconCounter{}
	cfg, err := pgxpool.ParseConfig(pgtest.NewDatabase(t))
	require.NoError(t, err)
	cfg.ConnConfig.Tracer = c
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	db := readmodel.New(pool)
	require.NoError(t, db.EnsureCheckpoints(ctx, []string{projections.NameReconciliation}))

	at := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	change := func(i int, open bool, actor string) projections.ReconciliationChange {
		return projections.ReconciliationChange{StreamID: fmt.Sprintf("payment-stripe-pi_%d", i), Kind: "unsettled",
			Key: "k", Open: open, Actor: actor, Note: "n", Provider: "stripe", PaymentID: fmt.Sprintf("pi_%d", i),
			Details: "d", At: at, EventID: uuid.New()}
	}
	var changes []projections.ReconciliationChange
	for i := range 200 {
		changes = append(changes, change(i, true, ""))
	}
	for i := range 50 {
		changes = append(changes, change(200+i, false, ""))
	}
	// The same items again, later in the batch: an operator resolves one,
	// the facts clear another, an operator reopens a third.
	changes = append(changes, change(0, false, "alice"), change(1, false, ""), change(200, true, "bob"))

	b, err := db.BeginLive(ctx, projections.NameReconciliation, eventstore.Start, false)
	require.NoError(t, err)
	require.NoError(t, b.ApplyReconciliation(ctx, changes))
	require.NoError(t, b.Commit(ctx, eventstore.Position{Commit: 1, Prepare: 1}))
	// Run one: opens and resolves (2 statements); run two: the three
	// changes of items already changed (3).
	assert.EqualValues(t, 5, c.n.Load(), "statements for %d changes", len(changes))

	status := func(i int) (st string, by *string) {
		require.NoError(t, pool.QueryRow(ctx, `SELECT status, resolved_by FROM reconciliation_items WHERE stream_id = $1`,
			fmt.Sprintf("payment-stripe-pi_%d", i)).Scan(&st, &by))
		return st, by
	}
	st, by := status(0)
	assert.Equal(t, "resolved", st)
	require.NotNil(t, by)
	assert.Equal(t, "alice", *by)
	st, by = status(1)
	assert.Equal(t, "resolved", st)
	assert.Nil(t, by)
	st, _ = status(200)
	assert.Equal(t, "open", st)
	st, _ = status(2)
	assert.Equal(t, "open", st)
	st, _ = status(201)
	assert.Equal(t, "resolved", st)
	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM reconciliation_items`).Scan(&n))
	assert.Equal(t, 250, n)
}
