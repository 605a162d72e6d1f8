package main

import (
	"context"
	"html"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/outbox"
)

// The console's subscriptions pages read and act through the service
// /v1/subscriptions calls: admins see the list (state, cursor, last error)
// and one subscription's attempts, and replay it with a note, recorded
// with their name; a read token sees neither.
func TestConsoleSubscriptions(t *testing.T) {
	live := startLiveApp(t)
	svc := live.app.Subscriptions()
	ctx := context.Background()
	created, err := svc.Create(ctx, outbox.NewSubscription{URL: "http://127.0.0.1:9/hook", Description: "shop fulfilment"}, "ops", "test")
	require.NoError(t, err)
	id := created.Subscription.ID.String()
	live.deliver("msg_console_sub", "payment.captured", time.Now(),
		map[string]any{"payment_id": "pay_console_sub", "capture_id": "cap_console_sub", "amount": 1000, "currency": "USD"})

	get := func(c *http.Client, path string) (int, string) {
		resp, err := c.Get(live.base + path)
		require.NoError(t, err)
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		require.NoError(t, err)
		return resp.StatusCode, string(b)
	}
	reader := httpSession(t, live.base, readToken)
	status, body := get(reader, "/console/subscriptions")
	assert.Equal(t, http.StatusForbidden, status)
	assert.Contains(t, body, "admin tokens only")
	_, body = get(reader, "/console")
	assert.NotContains(t, body, `href="/console/subscriptions"`, "no link for a reader")

	admin := httpSession(t, live.base, adminToken)
	require.Eventually(t, func() bool { // the sender's first attempt fails: nothing listens on port 9
		_, body = get(admin, "/console/subscriptions/"+id+"?status=failed")
		return regexp.MustCompile(`<td class="status-open">failed</td>`).MatchString(body)
	}, 30*time.Second, 100*time.Millisecond, "a failed attempt is listed")
	status, body = get(admin, "/console/subscriptions")
	require.Equal(t, http.StatusOK, status)
	assert.Contains(t, body, "shop fulfilment")
	assert.Contains(t, body, `class="state-failing"`)
	_, overview := get(admin, "/console")
	assert.Regexp(t, `id="att-subscriptions"><strong class="bad">1</strong> failing`, overview,
		"a failing subscription is under Needs attention (issue 39)")
	sub, err := svc.Get(ctx, created.Subscription.ID)
	require.NoError(t, err)
	assert.Contains(t, body, html.EscapeString(sub.LastError), "the last error, as /v1 lists it")

	csrf := regexp.MustCompile(`name="csrf" value="([^"]+)"`).FindStringSubmatch(body)
	require.Len(t, csrf, 2)
	form := url.Values{"csrf": {csrf[1]}, "id": {id}, "from_time": {"2026-01-01T00:00:00Z"}, "return": {"/console/subscriptions"}}
	resp, err := admin.PostForm(live.base+"/console/subscriptions/replay", form)
	require.NoError(t, err)
	resp.Body.Close()
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode, "a note is required")
	form.Set("note", "the shop lost its database")
	resp, err = admin.PostForm(live.base+"/console/subscriptions/replay", form)
	require.NoError(t, err)
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.Contains(t, resp.Request.URL.String(), "/console/subscriptions?done=replaying")
	assert.Contains(t, string(b), "The replay is under way")
	sub, err = svc.Get(ctx, created.Subscription.ID)
	require.NoError(t, err)
	assert.NotNil(t, sub.Replay, "the replay went through the service")
}
