package console_test

import (
	"net/http"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// An admin closes and reopens a period from the periods page (issue 39: the
// page had no button, even for an admin); the confirming page shows the new
// state; a reopen needs a reason; a read token sees no form.
func TestConsoleClosesAndReopensAPeriod(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	last := time.Now().UTC().AddDate(0, -1, 0)
	p := last.Format("2006-01")
	f.deliverAt("msg_last_month", "payment.captured", last, map[string]any{
		"payment_id": "pay_last", "capture_id": "cap_last", "amount": 1000, "currency": "USD"})
	f.waitProjected()

	reader := f.client()
	reader.signIn(readToken)
	assert.NotContains(t, reader.get("/console/periods").body, `action="/console/periods/close"`)

	admin := f.client()
	admin.signIn(adminToken)
	page := admin.get("/console/periods")
	require.Contains(t, page.body, `id="close-`+p+`"`)
	csrf := admin.csrf("/console/periods")

	r := admin.post("/console/periods/close", url.Values{"csrf": {csrf}, "period": {p}, "note": {"books checked"}})
	require.Equal(t, http.StatusOK, r.status, r.body)
	assert.Contains(t, r.url, "done=period-closed#")
	assert.Contains(t, r.body, "The period was closed")
	assert.Contains(t, r.body, `id="reopen-`+p+`"`, "the page shows the period closed, with its reopen form")
	assert.NotContains(t, r.body, `id="close-`+p+`"`)

	r = admin.post("/console/periods/reopen", url.Values{"csrf": {csrf}, "period": {p}, "note": {" "}})
	assert.Equal(t, http.StatusBadRequest, r.status)
	assert.Contains(t, r.body, "A reason is required")

	r = admin.post("/console/periods/reopen", url.Values{"csrf": {csrf}, "period": {p}, "note": {"a late refund"}})
	require.Equal(t, http.StatusOK, r.status, r.body)
	assert.Contains(t, r.body, "The period was reopened")
	assert.Contains(t, r.body, `id="close-`+p+`"`)
	assert.Contains(t, r.body, "a late refund", "the history names the reason")

	r = reader.post("/console/periods/close", url.Values{"csrf": {reader.csrf("/console")}, "period": {p}})
	assert.Equal(t, http.StatusForbidden, r.status)
}
