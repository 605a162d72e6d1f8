package readmodel_test

import (
	"context"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/pressly/goose/v3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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
	require.NoError(t, err)
	_, err = p.DownTo(ctx, 1)
	require.NoError(t, err, "down to 1")
	var n int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM pg_class WHERE relnamespace = 'public'::regnamespace
		AND relname IN ('payments', 'ledger_entries', 'account_balances', 'reconciliation_items',
		'projection_checkpoints', 'v_daily_totals')`).Scan(&n))
	require.Zero(t, n, "after down: read-model relations left")
	_, err = p.Up(ctx)
	require.NoError(t, err, "up again")

	for _, rel := range []string{"payments", "ledger_entries", "account_balances", "reconciliation_items",
		"projection_checkpoints", "webhook_inbox", "payouts", "settlement_lines", "v_balances_by_provider", "v_open_reconciliation", "v_daily_totals",
		"periods", "period_balances"} {
		var ok bool
		require.NoError(t, pool.QueryRow(ctx, `SELECT has_table_privilege('onceledger_readonly', $1, 'SELECT')`, rel).Scan(&ok))
		assert.True(t, ok, "onceledger_readonly cannot read %s", rel)
	}
	var write bool
	require.NoError(t, pool.QueryRow(ctx, `SELECT has_table_privilege('onceledger_readonly', 'account_balances', 'UPDATE')`).Scan(&write))
	assert.False(t, write, "onceledger_readonly may write account_balances")
	var login bool
	require.NoError(t, pool.QueryRow(ctx, `SELECT rolcanlogin FROM pg_roles WHERE rolname = 'onceledger_readonly'`).Scan(&login))
	assert.False(t, login, "onceledger_readonly can log in")
	rows, err := pool.Query(ctx, `SELECT name FROM projection_checkpoints ORDER BY name`)
	require.NoError(t, err)
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	require.NoError(t, err)
	assert.Equal(t, []string{"ledger", "payments", "payouts", "reconciliation"}, names, "seeded checkpoints")
}
