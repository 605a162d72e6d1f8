package postgres_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/postgres"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
)

// EnsureDatabase creates a missing database, and racing callers all succeed.
func TestEnsureDatabase(t *testing.T) {
	ctx := testCtx(t)
	u := pgtest.UnusedDatabaseURL(t)
	_, err := pgx.Connect(ctx, u)
	require.Error(t, err, "database exists before EnsureDatabase")
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = postgres.EnsureDatabase(ctx, u) }()
	}
	wg.Wait()
	for i, err := range errs {
		require.NoError(t, err, "caller %d: %v", i, err)
	}
	conn, err := pgx.Connect(ctx, u)
	require.NoError(t, err, "database not created: %v", err)
	conn.Close(ctx)
	require.NoError(t, postgres.EnsureDatabase(ctx, u), "existing database: %v", err)
}

// Two migrators racing on one fresh database: both succeed, every
// migration is applied exactly once.
func TestMigrateConcurrently(t *testing.T) {
	ctx := testCtx(t)
	u := pgtest.NewEmptyDatabase(t)
	ok, err := postgres.MigrationStatus(ctx, u)
	require.NoError(t, err, "fresh database: up to date = %v, err = %v; want false, nil", ok, err)
	require.False(t, ok, "fresh database: up to date = %v, err = %v; want false, nil", ok, err)
	const migrators = 3
	var wg sync.WaitGroup
	applied := make([][]int64, migrators)
	errs := make([]error, migrators)
	for i := range migrators {
		wg.Add(1)
		go func() { defer wg.Done(); applied[i], errs[i] = postgres.Migrate(ctx, u) }()
	}
	wg.Wait()
	var all []int64
	for i := range migrators {
		require.NoError(t, errs[i], "migrator %d: %v", i, errs[i])
		all = append(all, applied[i]...)
	}
	slices.Sort(all)
	require.NotEqualValues(t, 0, len(all), "versions applied across migrators = %v, want each once starting at 1", all)
	require.EqualValues(t, 1, all[0], "versions applied across migrators = %v, want each once starting at 1", all)
	require.EqualValues(t, len(all), len(slices.Compact(slices.Clone(all))), "versions applied across migrators = %v, want each once starting at 1", all)
	ok, err = postgres.MigrationStatus(ctx, u)
	require.NoError(t, err, "after migrate: up to date = %v, err = %v", ok, err)
	require.True(t, ok, "after migrate: up to date = %v, err = %v", ok, err)
	again, err := postgres.Migrate(ctx, u)
	require.NoError(t, err, "second migrate applied %v, err %v; want nothing", again, err)
	require.Len(t, again, 0, "second migrate applied %v, err %v; want nothing", again, err)
	conn, err := pgx.Connect(ctx, u)
	require.NoError(t, err)
	defer conn.Close(ctx)
	var n int
	require.NoError(t, conn.QueryRow(ctx, `SELECT count(*) FROM goose_db_version WHERE version_id = 1`).Scan(&n), "goose rows for version 1: %d, %v", n, err)
	require.EqualValues(t, 1, n, "goose rows for version 1: %d, %v", n, err)
	for _, table := range []string{"events", "webhook_inbox", "webhook_conflicts"} {
		var exists bool
		assert.NoError(t, conn.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, table).Scan(&exists), "table %s missing (%v)", table, err)
		assert.True(t, exists, "table %s missing (%v)", table, err)
	}
}

func TestMigrationsAppliedOverPool(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	ok, err := postgres.MigrationsApplied(ctx, pool)
	require.NoError(t, err, "migrated pool: %v, %v", ok, err)
	require.True(t, ok, "migrated pool: %v, %v", ok, err)
	require.NoError(t, pool.Ping(ctx), "pool unusable after the status check: %v", err)
}

// The schema's gates hold: empty or NULL dedup keys are refused, statuses
// are a closed set, conflicts need their inbox row.
func TestSchemaConstraints(t *testing.T) {
	ctx := testCtx(t)
	pool := pgtest.NewPool(t)
	bad := map[string]string{
		"empty dedup key":  `INSERT INTO webhook_inbox (provider, dedup_key, payload_hash, raw_body, status) VALUES ('stripe', '', 'h', '\x00', 'received')`,
		"null dedup key":   `INSERT INTO webhook_inbox (provider, dedup_key, payload_hash, raw_body, status) VALUES ('stripe', NULL, 'h', '\x00', 'received')`,
		"empty provider":   `INSERT INTO webhook_inbox (provider, dedup_key, payload_hash, raw_body, status) VALUES ('', 'k', 'h', '\x00', 'received')`,
		"unknown status":   `INSERT INTO webhook_inbox (provider, dedup_key, payload_hash, raw_body, status) VALUES ('stripe', 'k', 'h', '\x00', 'done')`,
		"orphan conflict":  `INSERT INTO webhook_conflicts (provider, dedup_key, payload_hash, raw_body) VALUES ('stripe', 'nope', 'h', '\x00')`,
		"negative version": `INSERT INTO events (stream_id, version, event_id, type, data) VALUES ('s', -1, gen_random_uuid(), 't', '{}')`,
	}
	for name, sql := range bad {
		_, err := pool.Exec(ctx, sql)
		assert.Error(t, err, "%s: accepted", name)
	}
	_, err := pool.Exec(ctx, `INSERT INTO webhook_inbox (provider, dedup_key, payload_hash, raw_body, status) VALUES ('stripe', 'evt_1', 'h', '\x00', 'received')`)
	require.NoError(t, err)
	tag, err := pool.Exec(ctx, `INSERT INTO webhook_inbox (provider, dedup_key, payload_hash, raw_body, status) VALUES ('stripe', 'evt_1', 'h2', '\x01', 'received') ON CONFLICT DO NOTHING`)
	require.NoError(t, err, "duplicate dedup key inserted: %v rows, %v", tag.RowsAffected(), err)
	require.EqualValues(t, 0, tag.RowsAffected(), "duplicate dedup key inserted: %v rows, %v", tag.RowsAffected(), err)
}
