package console_test

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A payout's item (payout_mismatch, missing_webhook of a payout line) names
// no payment: its link goes to the payout named by its stream, never to
// "/console/payouts/standard/" (a 404; issue 39).
func TestConsoleItemOfAPayoutLinksToThePayout(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	at := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	_, err := f.pool.Exec(context.Background(), `INSERT INTO reconciliation_items
		(stream_id, kind, item_key, status, provider, payment_id, details, opened_at)
		VALUES ('payout-standard-po_../1', 'payout_mismatch', 'po_../1', 'open', 'standard', '', 'differs', $1)`, at)
	require.NoError(t, err)
	c := f.client()
	c.signIn(readToken)

	r := c.get("/console/reconciliation")
	require.Equal(t, http.StatusOK, r.status)
	assert.Contains(t, r.body, `href="/console/payouts/standard/po_..%2F1"`)
	assert.NotContains(t, r.body, `href="/console/payouts/standard/"`)
	assert.Contains(t, r.body, `>po_../1</a>`, "the payout's id is shown")
}

// The 404 page of a signed-in viewer keeps the navigation and does not offer
// "Sign in": it read as a logout (issue 39).
func TestConsoleNotFoundKeepsTheNavigation(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	c := f.client()
	c.signIn(readToken)
	r := c.get("/console/no-such-page")
	require.Equal(t, http.StatusNotFound, r.status)
	assert.Contains(t, r.body, `href="/console/reconciliation"`, "the navigation")
	assert.NotContains(t, r.body, "Sign in")

	anon := f.client()
	r = anon.get("/console/no-such-page")
	require.Equal(t, http.StatusNotFound, r.status)
	assert.Contains(t, r.body, "Sign in", "a visitor without a session is offered to sign in")
}
