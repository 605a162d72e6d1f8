package main_test

import (
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The console's "Resolve with an adjustment": postings that do not balance
// bring the form back (400, nothing recorded); balanced ones resolve the
// item, with the admin's name. The balances and provider-days pages show.
func TestConsoleResolveWithAnAdjustment(t *testing.T) {
	s := startActStack(t, onPostgres)
	pay := uniq("pay")
	s.deliver(uniq("msg"), "payment.captured", map[string]any{"payment_id": pay, "capture_id": "cap_" + pay,
		"amount": 1000, "currency": "USD", "fee": 30})
	at := time.Now().Add(time.Minute).UTC().Format(time.RFC3339)
	require.Equal(t, http.StatusOK, s.post("/v1/balance-assertions", actAdmin, map[string]any{"account": "provider:standard:balance",
		"currency": "USD", "as_of": at, "amount": 960, "source": "dashboard"}).Status)
	item := s.item("", "balance_mismatch", func(it listedItem) bool { return it.Status == "open" })

	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	client := &http.Client{Jar: jar}
	resp, err := client.PostForm(s.base+"/console/signin", url.Values{"token": {actAdmin}})
	require.NoError(t, err)
	_ = resp.Body.Close()
	get := func(path string) (int, string) {
		resp, err := client.Get(s.base + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	status, page := get("/console/adjust?item=" + url.QueryEscape(item.ID))
	require.Equal(t, http.StatusOK, status, page)
	m := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(page)
	require.NotNil(t, m)
	form := url.Values{"csrf": {m[1]}, "item": {item.ID}, "note": {"fee charged twice"},
		"account0": {"expenses:fees:standard"}, "currency0": {"USD"}, "amount0": {"0.10"},
		"account1": {"provider:standard:balance"}, "currency1": {"USD"}, "amount1": {"-0.09"}}
	resp, err = client.PostForm(s.base+"/console/adjust", form)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Contains(t, string(b), "Not recorded")
	assert.Contains(t, string(b), `value="-0.09"`, "the form comes back with what was typed")

	form.Set("amount1", "-0.10")
	resp, err = client.PostForm(s.base+"/console/adjust", form)
	require.NoError(t, err)
	_ = resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode, "redirected to the items")
	res := s.item("", "balance_mismatch", func(it listedItem) bool { return it.Status == "resolved" })
	assert.Equal(t, "ops", res.ResolvedBy)

	status, page = get("/console/balance-assertions?provider=standard")
	assert.Equal(t, http.StatusOK, status)
	assert.Contains(t, page, "agreed")
	status, page = get("/console/provider-days?provider=standard")
	assert.Equal(t, http.StatusOK, status)
	assert.Contains(t, page, "awaiting_report", "no report covers today")
}
