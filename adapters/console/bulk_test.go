package console_test

import (
	"net/http"
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/console"
)

// An admin resolves the items ticked on the reconciliation page with one
// note, or every open item the filter matches; each is its own action with
// the actor and the note (issue 39).
func TestConsoleBulkResolve(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	s := f.seedStory()
	admin := f.client()
	admin.signIn(adminToken)
	page := admin.get("/console/reconciliation")
	require.Contains(t, page.body, `action="/console/reconciliation/bulk"`)
	m := conflictItemKey.FindStringSubmatch(page.body)
	require.Len(t, m, 2)
	m[1], _ = url.PathUnescape(m[1])
	conflict := console.ItemRef{StreamID: "payment-standard-" + s.paymentID, Kind: "conflicting_redelivery", Key: m[1]}
	orphan := console.ItemRef{StreamID: "payment-standard-" + s.orphanID, Kind: "refund_before_payment", Key: "re_9"}
	csrf := admin.csrf("/console/reconciliation")

	r := admin.post("/console/reconciliation/bulk", url.Values{"csrf": {csrf}, "action": {"resolve"}, "note": {"  "},
		"item": {"payment-standard-" + s.paymentID + "/conflicting_redelivery/" + url.PathEscape(m[1])}})
	assert.Equal(t, http.StatusBadRequest, r.status, "a note is required")
	r = admin.post("/console/reconciliation/bulk", url.Values{"csrf": {csrf}, "action": {"resolve"}, "note": {"n"}})
	assert.Equal(t, http.StatusBadRequest, r.status, "nothing selected")
	assert.Empty(t, f.recon.snapshot())

	r = admin.post("/console/reconciliation/bulk", url.Values{"csrf": {csrf}, "action": {"resolve-filtered"},
		"note": {"refunds settled by the provider"}, "filter_kind": {"refund_before_payment"}, "return": {"/console/reconciliation"}})
	require.Equal(t, http.StatusOK, r.status, r.body)
	assert.Contains(t, r.body, "The items were resolved")
	calls := f.recon.snapshot()
	require.Len(t, calls, 1, "the filter matched the orphan refund only")
	assert.Equal(t, orphan, calls[0].Item)
	assert.Equal(t, "refunds settled by the provider", calls[0].Note)
	assert.Equal(t, "ops", calls[0].Actor)

	r = admin.post("/console/reconciliation/bulk", url.Values{"csrf": {csrf}, "action": {"resolve"}, "note": {"checked"},
		"item": {"payment-standard-" + s.paymentID + "/conflicting_redelivery/" + url.PathEscape(m[1])}})
	require.Equal(t, http.StatusOK, r.status, r.body)
	calls = f.recon.snapshot()
	require.Len(t, calls, 2)
	assert.Equal(t, conflict, calls[1].Item)

	reader := f.client()
	reader.signIn(readToken)
	assert.NotContains(t, reader.get("/console/reconciliation").body, `action="/console/reconciliation/bulk"`)
	r = reader.post("/console/reconciliation/bulk", url.Values{"csrf": {reader.csrf("/console")}, "action": {"resolve-filtered"}, "note": {"x"}})
	assert.Equal(t, http.StatusForbidden, r.status)
}

// The list shows the amount at stake, and a conflict links to its delivery
// (the field-by-field diff), not only to two hashes.
func TestConsoleReconciliationShowsAmountAndDelivery(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	s := f.seedStory()
	c := f.client()
	c.signIn(readToken)
	page := c.get("/console/reconciliation")
	row := conflictRow.FindString(page.body)
	require.NotEmpty(t, row)
	assert.Contains(t, row, "1\u202f250.00 USD", "the payment's captured amount")
	assert.Contains(t, row, `href="/console/inbox/delivery?key=`+s.conflictKey+`&amp;provider=standard"`)
}

// A conflict's row says what its redelivery changed, field by field, not
// the two payload hashes (issue 39).
func TestConsoleReconciliationSaysWhatDiffers(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	f.seedStory()
	c := f.client()
	c.signIn(readToken)
	row := conflictRow.FindString(c.get("/console/reconciliation").body)
	require.NotEmpty(t, row)
	assert.Contains(t, row, "data.amount 125000 → 126000")
	assert.NotContains(t, row, "sha256")
}

// Items filter by the amount at stake, in a currency; a bad amount is a 400
// naming the parameter.
func TestConsoleReconciliationFiltersByAmount(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	s := f.seedStory()
	c := f.client()
	c.signIn(readToken)
	r := c.get("/console/reconciliation?min_amount=1000&currency=USD")
	require.Equal(t, http.StatusOK, r.status)
	assert.Contains(t, r.body, s.paymentID, "1,250.00 USD at stake")
	assert.NotContains(t, r.body, s.orphanID, "an EUR item")
	r = c.get("/console/reconciliation?min_amount=2000&currency=USD")
	assert.NotContains(t, r.body, s.paymentID)
	r = c.get("/console/reconciliation?min_amount=1O&currency=USD")
	assert.Equal(t, http.StatusBadRequest, r.status)
	assert.Contains(t, r.body, "min_amount")
	r = c.get("/console/reconciliation?min_amount=10")
	assert.Equal(t, http.StatusBadRequest, r.status)
	assert.Contains(t, r.body, "currency")
}
