package postgres_test

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/postgres"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
)

func readModelPool(t *testing.T, ctx context.Context, base *pgxpool.Pool) *pgxpool.Pool {
	t.Helper()
	rm, err := postgres.NewReadModelPool(ctx, base)
	require.NoError(t, err)
	t.Cleanup(rm.Close)
	return rm
}

// openWrite begins a transaction on pool that has written (a rebuild's
// shadow table, here a scratch table) and so holds an xid, and returns it
// with that xid. It is rolled back at cleanup.
func openWrite(t *testing.T, ctx context.Context, pool *pgxpool.Pool, table string) (pgx.Tx, uint64) {
	t.Helper()
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	t.Cleanup(func() { _ = tx.Rollback(context.Background()) })
	_, err = tx.Exec(ctx, `CREATE TABLE `+pgx.Identifier{table}.Sanitize()+` (LIKE ledger_entries)`)
	require.NoError(t, err)
	var xid uint64
	require.NoError(t, tx.QueryRow(ctx, `SELECT pg_current_xact_id()::text::bigint`).Scan(&xid))
	return tx, xid
}

// A write transaction on a read-model connection (a rebuild loading its
// shadow tables) does not hold the feed back; the same transaction on an
// ordinary connection still does (the late-commit rule).
func TestReadModelTransactionsDoNotHoldTheFeedBack(t *testing.T) {
	ctx := testCtx(t)
	pool := pgtest.NewPool(t)
	rm := readModelPool(t, ctx, pool)
	s := postgres.NewEventStore(pool)

	_, rebuildXID := openWrite(t, ctx, rm, "ledger_entries_shadow")
	first := events(2)
	_, err := s.Append(ctx, "s-during-rebuild", eventstore.NoStream, first)
	require.NoError(t, err)
	got := readAllAtLeast(t, ctx, s, 2)
	require.Len(t, got, 2, "feed while a read-model write transaction is open")
	assert.Equal(t, first[0].ID, got[0].ID)
	assert.Equal(t, first[1].ID, got[1].ID)
	require.Greater(t, got[0].Position.Commit, rebuildXID, "test premise: the append is younger than the open read-model transaction")
	head, err := s.Head(ctx)
	require.NoError(t, err)
	assert.Equal(t, got[1].Position, head, "head passes the read-model transaction too")

	// The same kind of transaction without the mark holds the feed.
	plain, _ := openWrite(t, ctx, pool, "scratch")
	later := events(1)
	_, err = s.Append(ctx, "s-after-plain", eventstore.NoStream, later)
	require.NoError(t, err)
	assert.Len(t, readAllOurs(t, ctx, s), 2, "an unmarked open write transaction must hold the feed back")
	require.NoError(t, plain.Rollback(ctx))
	got = readAllAtLeast(t, ctx, s, 3)
	require.Len(t, got, 3, "after the unmarked transaction ended")
	assert.Equal(t, later[0].ID, got[2].ID)
}

// The mark is a promise the database keeps: a read-model connection cannot
// write events, whichever way it tries.
func TestReadModelConnectionsCannotWriteEvents(t *testing.T) {
	ctx := testCtx(t)
	pool := pgtest.NewPool(t)
	rm := readModelPool(t, ctx, pool)

	refused := func(t *testing.T, err error) {
		t.Helper()
		var pgErr *pgconn.PgError
		require.True(t, errors.As(err, &pgErr), "want a Postgres error, got %v", err)
		assert.Equal(t, pgerrcode.InsufficientPrivilege, pgErr.Code, pgErr.Message)
	}

	t.Run("event store", func(t *testing.T) {
		_, err := postgres.NewEventStore(rm).Append(ctx, "s-refused", eventstore.NoStream, events(1))
		refused(t, err)
	})
	t.Run("COPY", func(t *testing.T) {
		c, err := rm.Acquire(ctx)
		require.NoError(t, err)
		defer c.Release()
		_, err = c.Conn().CopyFrom(ctx, pgx.Identifier{"events"},
			[]string{"stream_id", "version", "event_id", "type", "data"},
			pgx.CopyFromRows([][]any{{"s-copy", int64(0), events(1)[0].ID, "Tested", []byte(`{}`)}}))
		refused(t, err)
	})
	t.Run("UPDATE", func(t *testing.T) {
		_, err := postgres.NewEventStore(pool).Append(ctx, "s-ok", eventstore.NoStream, events(1))
		require.NoError(t, err)
		_, err = rm.Exec(ctx, `UPDATE events SET tx_id = tx_id + 1000000`)
		refused(t, err)
	})
	t.Run("a connection taking the name", func(t *testing.T) {
		tx, err := pool.Begin(ctx)
		require.NoError(t, err)
		defer tx.Rollback(context.Background())
		_, err = tx.Exec(ctx, `SET LOCAL application_name = '`+postgres.ReadModelApplicationName+`'`)
		require.NoError(t, err)
		_, err = postgres.NewEventStore(pool).AppendTx(ctx, tx, "s-named", eventstore.NoStream, events(1))
		refused(t, err)
	})

	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM events`).Scan(&n))
	assert.Equal(t, 1, n, "only the ordinary connection's append is in the table")
	var name string
	require.NoError(t, rm.QueryRow(ctx, `SHOW application_name`).Scan(&name))
	assert.Equal(t, postgres.ReadModelApplicationName, name)
}
