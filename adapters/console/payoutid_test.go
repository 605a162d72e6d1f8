package console_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An Adyen payout id holds '/' (Merchant/41/EUR): the list links to it
// escaped, and the link opens the payout.
func TestConsolePayoutIDWithSlashes(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	at := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	_, err := f.pool.Exec(context.Background(), `INSERT INTO payouts (provider, payout_id, amount, currency,
		arrival_date, paid, status, line_count, lines_net, difference, updated_at)
		VALUES ('adyen', 'Merchant/41/EUR', 10000, 'EUR', $1, true, 'reconciled', 0, 0, 0, $1)`, at)
	require.NoError(t, err)
	c := f.client()
	c.signIn(readToken)

	r := c.get("/console/payouts")
	require.Equal(t, http.StatusOK, r.status)
	assert.Contains(t, r.body, `href="/console/payouts/adyen/Merchant%2F41%2FEUR"`)
	r = c.get("/console/payouts/adyen/Merchant%2F41%2FEUR")
	require.Equal(t, http.StatusOK, r.status, r.body)
	assert.Contains(t, r.body, "Merchant/41/EUR")
}
