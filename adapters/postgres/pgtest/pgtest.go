// Package pgtest gives tests a fresh, migrated Postgres database of their
// own on the server named by ONCELEDGER_TEST_DATABASE_URL, and drops it when
// the test ends. Tests never depend on leftovers and may run in parallel
// against one server. An unreachable server fails the test loudly; only
// -short skips.
package pgtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"net/url"
	"os"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/adapters/postgres"
)

// EnvURL names the server (any database on it) tests create databases on.
const EnvURL = "ONCELEDGER_TEST_DATABASE_URL"

// DefaultURL is used when EnvURL is unset.
const DefaultURL = "postgres://postgres@127.0.0.1:5432/postgres?sslmode=disable"

// NamePrefix starts every database name pgtest creates.
const NamePrefix = "onceledger_test_"

const setupTimeout = 60 * time.Second

// NewDatabase creates a database with a random name, applies all migrations,
// registers its drop as cleanup, and returns its URL.
func NewDatabase(t testing.TB) string {
	t.Helper()
	u := NewEmptyDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	if _, err := postgres.Migrate(ctx, u); err != nil {
		t.Fatalf("pgtest: migrate %s: %v", redact(u), err)
	}
	return u
}

// NewPool is NewDatabase returning a pool, closed at cleanup (before the
// database is dropped).
func NewPool(t testing.TB) *pgxpool.Pool {
	t.Helper()
	u := NewDatabase(t)
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	pool, err := pgxpool.New(ctx, u)
	if err != nil {
		t.Fatalf("pgtest: pool for %s: %v", redact(u), err)
	}
	t.Cleanup(pool.Close)
	return pool
}

// NewEmptyDatabase creates a database with a random name and no schema
// (migration tests), registers its drop, and returns its URL.
func NewEmptyDatabase(t testing.TB) string {
	t.Helper()
	u := UnusedDatabaseURL(t)
	name := databaseName(t, u)
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	conn := connectServer(ctx, t)
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, "CREATE DATABASE "+pgx.Identifier{name}.Sanitize()); err != nil {
		t.Fatalf("pgtest: create database %s: %v", name, err)
	}
	return u
}

// UnusedDatabaseURL returns the URL of a database that does not exist yet
// (for testing code that creates it); if something creates it, it is dropped
// at cleanup.
func UnusedDatabaseURL(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("pgtest: Postgres tests skipped in -short mode")
	}
	base := serverURL()
	parsed, err := url.Parse(base)
	if err != nil || parsed.Scheme == "" {
		t.Fatalf("pgtest: %s must be a postgres:// URL, got %q (%v)", EnvURL, redact(base), err)
	}
	var b [8]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatalf("pgtest: random name: %v", err)
	}
	name := NamePrefix + hex.EncodeToString(b[:])
	parsed.Path = "/" + name
	t.Cleanup(func() { drop(t, name) })
	return parsed.String()
}

func drop(t testing.TB, name string) {
	ctx, cancel := context.WithTimeout(context.Background(), setupTimeout)
	defer cancel()
	conn := connectServer(ctx, t)
	defer conn.Close(context.Background())
	// FORCE terminates sessions a test left behind (listeners, leaked conns).
	if _, err := conn.Exec(ctx, "DROP DATABASE IF EXISTS "+pgx.Identifier{name}.Sanitize()+" WITH (FORCE)"); err != nil {
		t.Errorf("pgtest: drop database %s: %v", name, err)
	}
}

func connectServer(ctx context.Context, t testing.TB) *pgx.Conn {
	t.Helper()
	base := serverURL()
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("pgtest: Postgres unreachable at %s: %v\n"+
			"Tests need a Postgres server: set %s, or start the local one "+
			"(pg_ctlcluster --skip-systemctl-redirect 15 main start); use -short to skip.",
			redact(base), err, EnvURL)
	}
	return conn
}

func serverURL() string {
	if u := os.Getenv(EnvURL); u != "" {
		return u
	}
	return DefaultURL
}

func databaseName(t testing.TB, u string) string {
	t.Helper()
	cfg, err := pgx.ParseConfig(u)
	if err != nil {
		t.Fatalf("pgtest: parse %s: %v", redact(u), err)
	}
	return cfg.Database
}

// redact hides a password in messages.
func redact(u string) string {
	p, err := url.Parse(u)
	if err != nil {
		return "(unparsable url)"
	}
	return p.Redacted()
}
