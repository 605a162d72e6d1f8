package console_test

import (
	"net/http"
	"net/url"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

var conflictRow = regexp.MustCompile(`(?s)<th scope="row"[^>]*>(?:<a [^>]*>)?conflicting_redelivery(?:</a>)?</th>.*?</tr>`)

// conflictItemKey finds the conflict's item key in its row's checkbox (its
// item id, path-escaped).
var conflictItemKey = regexp.MustCompile(`name="item" value="[^"]*/conflicting_redelivery/(msg_capture_[^"]+)"`)

// After "Resolve", the page that says "The item was resolved" must show the
// state that includes the action: not the same item still open with its
// Resolve button (it read the read model before the projection caught up;
// issue 39). On an idle server it never says "being applied".
func TestConsoleBannerNeverAboveAStaleRow(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	s := f.seedStory()
	f.waitProjected()
	admin := f.client()
	admin.signIn(adminToken)
	page := admin.get("/console/reconciliation")
	require.NotEmpty(t, conflictRow.FindString(page.body), "the conflict's row")
	m := conflictItemKey.FindStringSubmatch(page.body)
	require.Len(t, m, 2, "the conflict's checkbox")
	m[1], _ = url.PathUnescape(m[1])
	form := url.Values{
		"stream_id": {"payment-standard-" + s.paymentID}, "kind": {"conflicting_redelivery"},
		"item_key": {m[1]}, "note": {"checked"}, "csrf": {admin.csrf("/console")},
	}
	r := admin.post("/console/reconciliation/resolve", form)
	require.Equal(t, http.StatusOK, r.status, r.body)
	u, err := url.Parse(r.url)
	require.NoError(t, err)
	assert.Equal(t, "resolved", u.Query().Get("done"), "an idle server shows the new state, never 'being applied'")
	assert.Contains(t, r.body, "The item was resolved")
	assert.NotContains(t, conflictRow.FindString(r.body), "status-open", "the banner stands above the item still open")
	all := admin.get("/console/reconciliation?status=all")
	assert.Contains(t, conflictRow.FindString(all.body), "status-resolved")
}
