package console_test

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A plain capture's page does not show "Authorized 0.00", and refunds
// beyond the captured amount are flagged in the header, not only in an item
// further down (issue 39).
func TestConsolePaymentHeaderTellsTheTruth(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	require.NotZero(t, f.deliver("msg_hdr_cap", "payment.captured",
		map[string]any{"payment_id": "pay_hdr", "capture_id": "cap_hdr", "amount": 1000, "currency": "USD"}))
	require.NotZero(t, f.deliver("msg_hdr_ref", "refund.succeeded",
		map[string]any{"payment_id": "pay_hdr", "refund_id": "re_hdr", "amount": 5000, "currency": "USD"}))
	f.waitProjected()
	c := f.client()
	c.signIn(readToken)
	r := c.get("/console/payments/standard/pay_hdr")
	require.Equal(t, http.StatusOK, r.status)
	assert.NotContains(t, r.body, "<dt>Authorized</dt>", "a plain capture was never authorized separately")
	assert.Contains(t, r.body, `id="payment-over-refunded"`)
	assert.Contains(t, r.body, "40.00 more than captured")
}
