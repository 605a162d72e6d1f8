package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/pressly/goose/v3/lock"

	"github.com/onceledger/onceledger/migrations"
)

// maintenanceDatabases are tried, in order, to issue CREATE DATABASE from.
var maintenanceDatabases = []string{"postgres", "template1"}

// connConfig parses a database URL as the pool does, so the pool's own
// settings in it (pool_max_conns=…) are accepted rather than sent to the
// server as unknown run-time parameters.
func connConfig(url string) (*pgx.ConnConfig, error) {
	pcfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, err
	}
	return pcfg.ConnConfig, nil
}

// EnsureDatabase creates the database named in url if it does not exist, by
// connecting to a maintenance database on the same server with the same
// credentials. It is safe to race: a concurrent creator winning is success.
func EnsureDatabase(ctx context.Context, url string) error {
	cfg, err := connConfig(url)
	if err != nil {
		return fmt.Errorf("ensure database: parse url: %w", err)
	}
	// Connecting to the target first avoids needing access to a maintenance
	// database in the common case where the database already exists.
	conn, err := pgx.ConnectConfig(ctx, cfg)
	if err == nil {
		return conn.Close(ctx)
	}
	if pgCode(err) != pgerrcode.InvalidCatalogName { // the database does not exist
		return fmt.Errorf("ensure database %q: %w", cfg.Database, err)
	}
	name := cfg.Database
	var lastErr error
	for _, maint := range maintenanceDatabases {
		mcfg := cfg.Copy()
		mcfg.Database = maint
		mconn, err := pgx.ConnectConfig(ctx, mcfg)
		if err != nil {
			lastErr = err
			continue
		}
		_, err = mconn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize())
		_ = mconn.Close(ctx)
		if err != nil && !duplicateDatabase(err) {
			return fmt.Errorf("ensure database %q: create: %w", name, err)
		}
		return nil
	}
	return fmt.Errorf("ensure database %q: no maintenance database reachable: %w", name, lastErr)
}

// Migrate applies every pending embedded migration to the database at url and
// returns the versions it applied (empty when the schema was up to date).
// Concurrent callers, in this process or others, are serialized by a
// Postgres session advisory lock; the losers find nothing left to apply.
func Migrate(ctx context.Context, url string) ([]int64, error) {
	cfg, err := connConfig(url)
	if err != nil {
		return nil, fmt.Errorf("migrate: parse url: %w", err)
	}
	db := stdlib.OpenDB(*cfg)
	defer db.Close()
	p, err := newProvider(db, true)
	if err != nil {
		return nil, err
	}
	results, err := p.Up(ctx)
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	applied := make([]int64, 0, len(results))
	for _, r := range results {
		applied = append(applied, r.Source.Version)
	}
	return applied, nil
}

// MigrationStatus reports whether every embedded migration is applied to the
// database at url.
func MigrationStatus(ctx context.Context, url string) (upToDate bool, err error) {
	cfg, err := connConfig(url)
	if err != nil {
		return false, fmt.Errorf("migration status: parse url: %w", err)
	}
	db := stdlib.OpenDB(*cfg)
	defer db.Close()
	return migrationsApplied(ctx, db)
}

// MigrationsApplied is MigrationStatus over an existing pool, for readiness
// checks. It takes no lock, so it neither waits for nor blocks a running
// migration. Note that goose creates its (empty) version table if it is
// missing.
func MigrationsApplied(ctx context.Context, pool *pgxpool.Pool) (bool, error) {
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	return migrationsApplied(ctx, db)
}

func migrationsApplied(ctx context.Context, db *sql.DB) (bool, error) {
	p, err := newProvider(db, false)
	if err != nil {
		return false, err
	}
	pending, err := p.HasPending(ctx)
	if err != nil {
		return false, fmt.Errorf("migration status: %w", err)
	}
	return !pending, nil
}

func newProvider(db *sql.DB, locked bool) (*goose.Provider, error) {
	opts := []goose.ProviderOption{
		goose.WithDisableGlobalRegistry(true), // only the embedded SQL files, no Go migrations registered elsewhere
		goose.WithLogger(goose.NopLogger()),   // callers log the returned versions
	}
	if locked {
		// Poll the advisory lock every second (goose's default is 5s) for up
		// to 10 minutes: a waiting instance starts soon after the winner.
		locker, err := lock.NewPostgresSessionLocker(lock.WithLockTimeout(1, 600))
		if err != nil {
			return nil, fmt.Errorf("migrate: locker: %w", err)
		}
		opts = append(opts, goose.WithSessionLocker(locker))
	}
	p, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS, opts...)
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	return p, nil
}

// duplicateDatabase reports that a concurrent CREATE DATABASE won: it is
// 42P04 when the other one had committed before, and a unique violation on
// the catalog when both inserted concurrently.
func duplicateDatabase(err error) bool {
	var pgErr *pgconn.PgError
	if !errors.As(err, &pgErr) {
		return false
	}
	return pgErr.Code == pgerrcode.DuplicateDatabase || (pgErr.Code == pgerrcode.UniqueViolation && pgErr.ConstraintName == "pg_database_datname_index")
}

// pgCode is the SQLSTATE of a server error, or "".
func pgCode(err error) string {
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgErr.Code
	}
	return ""
}
