package console_test

import (
	"context"
	"encoding/csv"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The payouts pages read the payouts read model, as GET /v1/payouts does:
// a payout the report proves wrong shows as mismatch with its line count,
// difference and lines; a webhook's payout shows as paid.
func TestConsolePayoutsReadThePayoutsReadModel(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	s := f.seedStory()
	f.waitProjected()
	ctx := context.Background()
	at := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	_, err := f.pool.Exec(ctx, `INSERT INTO payouts (provider, payout_id, amount, currency, arrival_date, paid, status,
		line_count, lines_net, difference, updated_at)
		VALUES ('stripe', 'po_short', 10000, 'EUR', $1, true, 'mismatch', 2, 9700, -300, $1)`, at)
	require.NoError(t, err)
	_, err = f.pool.Exec(ctx, `INSERT INTO settlement_lines (provider, line_key, kind, payment_id, gross, fee, net,
		currency, original_amount, original_currency, payout_id, occurred_at, stream_id) VALUES
		('stripe', 'txn_1', 'charge', 'pi_1', 10000, 300, 9700, 'EUR', 10000, 'EUR', 'po_short', $1, 'settlement-stripe'),
		('stripe', 'txn_2', 'payout', '', -10000, 0, -10000, 'EUR', -10000, 'EUR', 'po_short', $1, 'settlement-stripe')`, at)
	require.NoError(t, err)
	c := f.client()
	c.signIn(readToken)

	r := c.get("/console/payouts")
	require.Equal(t, http.StatusOK, r.status)
	row := regexp.MustCompile(`(?s)<tr[^>]*><td>stripe</td>.*?po_short.*?</tr>`).FindString(r.body)
	require.NotEmpty(t, row, r.body)
	assert.Contains(t, row, `class="status-mismatch">mismatch<`)
	assert.Contains(t, row, `<td class="num">2</td>`, "line count")
	assert.Contains(t, row, "-3.00", "difference")
	assert.Contains(t, r.body, `class="status-paid">paid<`, "the webhook's payout")
	assert.Contains(t, r.body, "po_"+strings.TrimPrefix(s.paymentID, "pay_console_"))

	r = c.get("/console/payouts?status=mismatch")
	assert.Contains(t, r.body, "po_short")
	assert.NotContains(t, r.body, `class="status-paid"`)
	assert.Equal(t, http.StatusBadRequest, c.get("/console/payouts?status=lost").status)

	r = c.get("/console/payouts/stripe/po_short")
	require.Equal(t, http.StatusOK, r.status)
	assert.Contains(t, r.body, `<dd id="payout-status" class="status-mismatch">mismatch</dd>`)
	assert.Contains(t, r.body, "txn_1")
	assert.Contains(t, r.body, "txn_2")
	assert.Equal(t, http.StatusNotFound, c.get("/console/payouts/stripe/nope").status)

	r = c.get("/console/payouts?format=csv&status=mismatch")
	recs, err := csv.NewReader(strings.NewReader(r.body)).ReadAll()
	require.NoError(t, err)
	require.Len(t, recs, 2)
	assert.Equal(t, []string{"stripe", "po_short", "10000", "EUR", at.Format(time.RFC3339Nano), "mismatch", "2", "-300"}, recs[1])
}
