package console_test

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/ingest"
)

// A payment.failed of 9.00 keeps its amount: the payment's page names the
// currency and the failed attempt, the list shows it, the CSV has it, and
// nothing is posted.
func TestConsoleFailedPaymentKeepsItsAmount(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	pay := fmt.Sprintf("pay_failed_%d", seq.Add(1))
	require.Equal(t, ingest.Accepted, f.deliver("msg_"+pay, "payment.failed",
		map[string]any{"payment_id": pay, "amount": 900, "currency": "USD", "reason": "card_declined"}))
	f.waitProjected()
	c := f.client()
	require.Equal(t, http.StatusOK, c.signIn(readToken).status)

	page := c.get("/console/payments/standard/" + pay)
	require.Equal(t, http.StatusOK, page.status)
	assert.NotContains(t, page.body, "not known yet")
	assert.Contains(t, page.body, "<dt>Currency</dt><dd>USD</dd>")
	assert.Regexp(t, `id="payment-failed">9\.00 `, page.body)
	assert.Contains(t, page.body, "Payment of 9.00 USD failed: card_declined")
	assert.Contains(t, page.body, "Posts nothing.")

	list := c.get("/console/payments?payment_id=" + pay)
	require.Equal(t, http.StatusOK, list.status)
	assert.Contains(t, list.body, "failed: 9.00")

	csv := c.get("/console/payments?format=csv&payment_id=" + pay)
	require.Equal(t, http.StatusOK, csv.status)
	lines := strings.Split(strings.TrimSpace(csv.body), "\n")
	require.Len(t, lines, 2, csv.body)
	assert.True(t, strings.HasSuffix(strings.TrimSpace(lines[0]), ",failed_attempt"), lines[0])
	assert.True(t, strings.HasSuffix(strings.TrimSpace(lines[1]), ",900"), lines[1])

	var entries int
	require.NoError(t, f.pool.QueryRow(t.Context(), `SELECT count(*) FROM ledger_entries WHERE stream_id = $1`,
		"payment-standard-"+pay).Scan(&entries))
	assert.Zero(t, entries, "a failure posts nothing")
	var failedAmount int64
	require.NoError(t, f.pool.QueryRow(t.Context(), `SELECT failed_amount FROM payments WHERE payment_id = $1`, pay).Scan(&failedAmount))
	assert.Equal(t, int64(900), failedAmount)
}
