package postgres_test

import (
	"context"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/postgres"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
)

// The head never goes back. A read-model transaction the horizon passed
// stops being passable while it is still open (here: it drops the reserved
// name, the deterministic stand-in for one ending between a statement's
// snapshot and its read of pg_stat_activity): feed_horizon() dips to its id,
// below an event already read. The store's horizon does not: the head and
// the feed still show that event, and a fresh store told the checkpoint
// (AtLeast, as verify does) agrees.
func TestHeadNeverGoesBack(t *testing.T) {
	ctx := testCtx(t)
	u := pgtest.NewDatabase(t)
	pool, err := pgxpool.New(ctx, u)
	require.NoError(t, err)
	t.Cleanup(pool.Close)
	cfg, err := pgx.ParseConfig(u)
	require.NoError(t, err)
	cfg.RuntimeParams["application_name"] = postgres.ReadModelApplicationName
	marked, err := pgx.ConnectConfig(ctx, cfg)
	require.NoError(t, err)
	defer marked.Close(context.Background())

	s := postgres.NewEventStore(pool)
	tx, err := marked.Begin(ctx)
	require.NoError(t, err)
	defer tx.Rollback(context.Background())
	_, err = tx.Exec(ctx, `SELECT pg_current_xact_id()`) // takes its xid first
	require.NoError(t, err)
	_, err = s.Append(ctx, "s-after", eventstore.NoStream, events(1))
	require.NoError(t, err)
	head := readAllAtLeast(t, ctx, s, 1)[0].Position
	got, err := s.Head(ctx)
	require.NoError(t, err)
	require.Equal(t, head, got, "the marked transaction is passed")

	_, err = tx.Exec(ctx, `SET application_name = 'no-longer-marked'`)
	require.NoError(t, err)
	var raw int64
	require.NoError(t, pool.QueryRow(ctx, `SELECT feed_horizon()`).Scan(&raw))
	require.LessOrEqual(t, raw, int64(head.Commit), "feed_horizon() dipped below the event read (the cause)")

	got, err = s.Head(ctx)
	require.NoError(t, err)
	assert.Equal(t, head, got, "the head went back")
	evs, err := s.ReadAll(ctx, eventstore.Start, 10)
	require.NoError(t, err)
	assert.Len(t, evs, 1, "the feed no longer shows an event it showed")

	fresh := postgres.NewEventStore(pool)
	got, err = fresh.Head(ctx)
	require.NoError(t, err)
	assert.Equal(t, eventstore.Start, got, "a fresh store knows no floor: the dip")
	fresh.AtLeast(head)
	got, err = fresh.Head(ctx)
	require.NoError(t, err)
	assert.Equal(t, head, got, "a fresh store told the checkpoint")
}
