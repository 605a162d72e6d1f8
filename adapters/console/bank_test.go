package console_test

import (
	"context"
	"net/http"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The bank pages read the bank read models: the statements by account, an
// account's lines with the payouts each banked (linked to the payout),
// and the payout's page and list show the line that banked it.
func TestConsoleBankPages(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	ctx := context.Background()
	at := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	_, err := f.pool.Exec(ctx, `INSERT INTO payouts (provider, payout_id, amount, currency, arrival_date, paid, status, updated_at)
		VALUES ('stripe', 'po_banked', 10000, 'EUR', $1, true, 'paid', $1)`, at)
	require.NoError(t, err)
	_, err = f.pool.Exec(ctx, `INSERT INTO bank_statement_lines (account, line_key, reference, format, booked_on, amount,
		currency, status, payouts, event_id, recorded_at, description) VALUES
		('main', 'ref:B1', 'B1', 'camt.053', '2026-03-03', 10000, 'EUR', 'matched', '[{"provider":"stripe","id":"po_banked","amount":10000}]', gen_random_uuid(), $1, 'STRIPE po_banked'),
		('main', 'ref:B2', 'B2', 'camt.053', '2026-03-03', 777, 'EUR', 'suspense', '[]', gen_random_uuid(), $1, 'who?')`, at)
	require.NoError(t, err)
	_, err = f.pool.Exec(ctx, `INSERT INTO bank_statements (account, statement_key, format, statement_id, seq, covers, currency,
		opening, opening_on, closing, closing_on, entries, event_id) VALUES
		('main', 'stmt:1', 'camt.053', 'S1', 7, '2026-03-03', 'EUR', 0, '2026-03-02', 10777, '2026-03-03', 2, gen_random_uuid())`)
	require.NoError(t, err)
	_, err = f.pool.Exec(ctx, `INSERT INTO bank_payouts (provider, payout_id, account, line_key, booked_on, line_amount, line_currency)
		VALUES ('stripe', 'po_banked', 'main', 'ref:B1', '2026-03-03', 10000, 'EUR')`)
	require.NoError(t, err)
	c := f.client()
	c.signIn(readToken)

	r := c.get("/console/bank")
	require.Equal(t, http.StatusOK, r.status)
	assert.Contains(t, r.body, `<a href="/console/bank/main">main</a>`)
	assert.Contains(t, r.body, "107.77", "the closing balance")
	assert.Contains(t, r.body, `aria-current="page">Bank<`)

	r = c.get("/console/bank/main")
	require.Equal(t, http.StatusOK, r.status)
	row := regexp.MustCompile(`(?s)<tr data-line="ref:B1">.*?</tr>`).FindString(r.body)
	require.NotEmpty(t, row, r.body)
	assert.Contains(t, row, `<a href="/console/payouts/stripe/po_banked"`)
	assert.Contains(t, row, "2026-03-03")
	assert.Contains(t, c.get("/console/bank/main?status=suspense").body, "ref:B2")
	assert.NotContains(t, c.get("/console/bank/main?status=suspense").body, `data-line="ref:B1"`)
	assert.Equal(t, http.StatusBadRequest, c.get("/console/bank/main?status=lost").status)

	r = c.get("/console/bank/main?format=csv&status=matched")
	assert.Contains(t, r.body, `"2026-03-03","B1","ref:B1",10000,"EUR","matched","stripe/po_banked","STRIPE po_banked"`)

	r = c.get("/console/payouts/stripe/po_banked")
	assert.Contains(t, r.body, `2026-03-03 by line <code>B1</code> of <a href="/console/bank/main">main</a>`)
	r = c.get("/console/payouts")
	assert.Contains(t, r.body, `<a href="/console/bank/main">2026-03-03</a>`)
}
