package postgres_test

import (
	"context"
	"slices"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/adapters/postgres"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
)

// EnsureDatabase creates a missing database, and racing callers all succeed.
func TestEnsureDatabase(t *testing.T) {
	ctx := testCtx(t)
	u := pgtest.UnusedDatabaseURL(t)
	if _, err := pgx.Connect(ctx, u); err == nil {
		t.Fatal("database exists before EnsureDatabase")
	}
	var wg sync.WaitGroup
	errs := make([]error, 4)
	for i := range errs {
		wg.Add(1)
		go func() { defer wg.Done(); errs[i] = postgres.EnsureDatabase(ctx, u) }()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("caller %d: %v", i, err)
		}
	}
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatalf("database not created: %v", err)
	}
	conn.Close(ctx)
	if err := postgres.EnsureDatabase(ctx, u); err != nil {
		t.Fatalf("existing database: %v", err)
	}
}

// Two migrators racing on one fresh database: both succeed, every
// migration is applied exactly once.
func TestMigrateConcurrently(t *testing.T) {
	ctx := testCtx(t)
	u := pgtest.NewEmptyDatabase(t)
	ok, err := postgres.MigrationStatus(ctx, u)
	if err != nil || ok {
		t.Fatalf("fresh database: up to date = %v, err = %v; want false, nil", ok, err)
	}
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
		if errs[i] != nil {
			t.Fatalf("migrator %d: %v", i, errs[i])
		}
		all = append(all, applied[i]...)
	}
	slices.Sort(all)
	if len(all) == 0 || all[0] != 1 || len(slices.Compact(slices.Clone(all))) != len(all) {
		t.Fatalf("versions applied across migrators = %v, want each once starting at 1", all)
	}
	ok, err = postgres.MigrationStatus(ctx, u)
	if err != nil || !ok {
		t.Fatalf("after migrate: up to date = %v, err = %v", ok, err)
	}
	again, err := postgres.Migrate(ctx, u)
	if err != nil || len(again) != 0 {
		t.Fatalf("second migrate applied %v, err %v; want nothing", again, err)
	}
	conn, err := pgx.Connect(ctx, u)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	var n int
	if err := conn.QueryRow(ctx, `SELECT count(*) FROM goose_db_version WHERE version_id = 1`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("goose rows for version 1: %d, %v", n, err)
	}
	for _, table := range []string{"events", "webhook_inbox", "webhook_conflicts"} {
		var exists bool
		if err := conn.QueryRow(ctx, `SELECT to_regclass($1) IS NOT NULL`, table).Scan(&exists); err != nil || !exists {
			t.Errorf("table %s missing (%v)", table, err)
		}
	}
}

func TestMigrationsAppliedOverPool(t *testing.T) {
	ctx := context.Background()
	pool := pgtest.NewPool(t)
	ok, err := postgres.MigrationsApplied(ctx, pool)
	if err != nil || !ok {
		t.Fatalf("migrated pool: %v, %v", ok, err)
	}
	if err := pool.Ping(ctx); err != nil {
		t.Fatalf("pool unusable after the status check: %v", err)
	}
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
		if _, err := pool.Exec(ctx, sql); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
	if _, err := pool.Exec(ctx, `INSERT INTO webhook_inbox (provider, dedup_key, payload_hash, raw_body, status) VALUES ('stripe', 'evt_1', 'h', '\x00', 'received')`); err != nil {
		t.Fatal(err)
	}
	tag, err := pool.Exec(ctx, `INSERT INTO webhook_inbox (provider, dedup_key, payload_hash, raw_body, status) VALUES ('stripe', 'evt_1', 'h2', '\x01', 'received') ON CONFLICT DO NOTHING`)
	if err != nil || tag.RowsAffected() != 0 {
		t.Fatalf("duplicate dedup key inserted: %v rows, %v", tag.RowsAffected(), err)
	}
}
