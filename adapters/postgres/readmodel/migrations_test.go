package readmodel_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"

	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/migrations"
)

// The read-model migrations go down and up again cleanly, and the
// accountants' role sees the tables and views it is meant to.
func TestReadModelMigrationsDownAndUp(t *testing.T) {
	t.Parallel()
	pool := pgtest.NewPool(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db := stdlib.OpenDBFromPool(pool)
	defer db.Close()
	p, err := goose.NewProvider(goose.DialectPostgres, db, migrations.FS,
		goose.WithDisableGlobalRegistry(true), goose.WithLogger(goose.NopLogger()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := p.DownTo(ctx, 1); err != nil {
		t.Fatalf("down to 1: %v", err)
	}
	var n int
	if err := pool.QueryRow(ctx, `SELECT count(*) FROM pg_class WHERE relnamespace = 'public'::regnamespace
		AND relname IN ('payments', 'ledger_entries', 'account_balances', 'reconciliation_items',
		'projection_checkpoints', 'v_daily_totals')`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("after down: %d read-model relations left (%v)", n, err)
	}
	if _, err := p.Up(ctx); err != nil {
		t.Fatalf("up again: %v", err)
	}

	for _, rel := range []string{"payments", "ledger_entries", "account_balances", "reconciliation_items",
		"projection_checkpoints", "webhook_inbox", "v_balances_by_provider", "v_open_reconciliation", "v_daily_totals",
		"periods", "period_balances"} {
		var ok bool
		if err := pool.QueryRow(ctx, `SELECT has_table_privilege('onceledger_readonly', $1, 'SELECT')`, rel).Scan(&ok); err != nil || !ok {
			t.Errorf("onceledger_readonly cannot read %s (%v)", rel, err)
		}
	}
	var write bool
	if err := pool.QueryRow(ctx, `SELECT has_table_privilege('onceledger_readonly', 'account_balances', 'UPDATE')`).Scan(&write); err != nil || write {
		t.Errorf("onceledger_readonly may write account_balances (%v)", err)
	}
	var login bool
	if err := pool.QueryRow(ctx, `SELECT rolcanlogin FROM pg_roles WHERE rolname = 'onceledger_readonly'`).Scan(&login); err != nil || login {
		t.Errorf("onceledger_readonly can log in (%v)", err)
	}
	var names []string
	rows, err := pool.Query(ctx, `SELECT name FROM projection_checkpoints ORDER BY name`)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var s string
		_ = rows.Scan(&s)
		names = append(names, s)
	}
	if len(names) != 3 {
		t.Errorf("seeded checkpoints: %v", names)
	}
}
