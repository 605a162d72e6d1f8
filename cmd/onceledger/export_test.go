package main

import (
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/bookexport"
	"github.com/onceledger/onceledger/adapters/postgres"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
)

// TestExportCommand runs `onceledger export` as main does: --out writes
// the file whole, and a table that cannot name an account fails naming
// it, leaving no file behind. (The formats and their figures are tested
// end to end in adapters/bookexport.)
func TestExportCommand(t *testing.T) {
	url := pgtest.NewDatabase(t)
	_, err := postgres.Migrate(context.Background(), url)
	require.NoError(t, err)
	dir := t.TempDir()
	g := &globals{ctx: context.Background(), log: slog.New(slog.DiscardHandler),
		cli: &cli{DatabaseURL: url, EventStore: "postgres", ReportingTZ: "Europe/Berlin"}}
	out := filepath.Join(dir, "nov.beancount")
	require.NoError(t, (&exportCmd{Format: "beancount", From: "2026-11-01", To: "2026-12-01", Out: out}).Run(g))
	b, err := os.ReadFile(out)
	require.NoError(t, err)
	assert.Contains(t, string(b), "reporting zone Europe/Berlin")

	err = (&exportCmd{Format: "hledger", From: "2026-11-01", To: "2026/12/01", Out: out}).Run(g)
	require.ErrorIs(t, err, bookexport.ErrBadRange)
	assert.Contains(t, err.Error(), "--to")

	table := filepath.Join(dir, "accounts.txt")
	require.NoError(t, os.WriteFile(table, []byte("[beancount]\nequity:opening_balances=Equity:Opening_Balances\n"), 0o600))
	g.cli.ExportAccounts = table
	bad := filepath.Join(dir, "bad.beancount")
	err = (&exportCmd{Format: "beancount", From: "2026-11-01", To: "2026-12-01", Out: bad}).Run(g)
	require.ErrorIs(t, err, bookexport.ErrUnmappedAccount)
	assert.Contains(t, err.Error(), "equity:opening_balances")
	_, err = os.Stat(bad)
	assert.True(t, os.IsNotExist(err), "no file is left behind")
	entries, err := os.ReadDir(dir)
	require.NoError(t, err)
	assert.Len(t, entries, 2, "no temporary file either")
}
