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
	assert.Contains(t, r.body, `po_../1</code></a>`, "the payout's id is shown")
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

// A payout known only from its webhook has no report lines yet: its
// difference is not a discrepancy but "awaiting report" (issue 39), on the
// list and on its page.
func TestConsolePayoutWithoutLinesAwaitsItsReport(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	at := time.Now().UTC().Add(-time.Hour).Truncate(time.Second)
	_, err := f.pool.Exec(context.Background(), `INSERT INTO payouts (provider, payout_id, amount, currency,
		arrival_date, paid, status, line_count, lines_net, difference, updated_at)
		VALUES ('stripe', 'po_web', 738662, 'USD', $1, true, 'paid', 0, 0, -738662, $1)`, at)
	require.NoError(t, err)
	c := f.client()
	c.signIn(readToken)
	for _, path := range []string{"/console/payouts", "/console/payouts/stripe/po_web"} {
		r := c.get(path)
		require.Equal(t, http.StatusOK, r.status)
		assert.Contains(t, r.body, "awaiting report", path)
		assert.NotRegexp(t, `[-−]7\x{202f}386\.62`, r.body, path+": the negative difference reads as a discrepancy")
	}
}

// Accounts at zero are hidden from the overview by default (they filled it,
// issue 39), with a link that shows them; the all-time trial balance says it
// sums balances, not entries.
func TestConsoleOverviewHidesZeroBalances(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	_, err := f.pool.Exec(context.Background(), `INSERT INTO account_balances (account, currency, balance, entry_count, updated_at)
		VALUES ('provider:zeroed:balance', 'USD', 0, 2, now()), ('provider:held:balance', 'USD', 500, 1, now()),
		       ('revenue:sales', 'USD', -500, 1, now())`)
	require.NoError(t, err)
	c := f.client()
	c.signIn(readToken)
	r := c.get("/console")
	require.Equal(t, http.StatusOK, r.status)
	assert.Contains(t, r.body, "provider:held:balance")
	assert.NotContains(t, r.body, "provider:zeroed:balance")
	assert.Contains(t, r.body, `href="/console?zero=1"`)
	assert.Contains(t, r.body, "Debit balances")
	r = c.get("/console?zero=1")
	assert.Contains(t, r.body, "provider:zeroed:balance")
}
