package main

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// thousand is the rows of the long pages the crawler measures.
const thousand = 1000

// bigPages seeds 1,000 payments and deliveries with ids of 70+ characters
// (signed deliveries at the webhook endpoint, several at a time) and a
// payout of 1,000 settlement lines (written in bulk: the crawl's app
// configures the Standard provider only, which publishes no report), then
// measures the pages that show them 1,000 rows at a time: the payments
// list, the inbox and the payout's settlement lines. After the crawl, so
// that it does not follow 1,000 payments' links.
func bigPages(t *testing.T, tab context.Context, live *liveApp) {
	payout := seedThousand(t, live)
	signInAs(t, tab, live.base, adminToken)
	defer signOut(t, tab)
	cr := &crawler{t: t, tab: tab, base: live.base}
	for _, page := range []struct{ path, rows string }{
		{"/console/payments?limit=1000", "#payments tbody tr"},
		{"/console/inbox?limit=1000", "main table tbody tr"},
		{"/console/payouts/stripe/" + payout, "main table tbody tr"},
	} {
		u := live.base + page.path
		resp, err := chromedp.Run(tab, chromedp.NavigateResponse(u))
		require.NoError(t, err, u)
		require.Equal(t, http.StatusOK, int(resp.Status), u)
		n, err := chromedp.Run(tab, chromedp.Evaluate[int](`document.querySelectorAll(`+fmt.Sprintf("%q", page.rows)+`).length`))
		require.NoError(t, err, u)
		assert.GreaterOrEqual(t, n, thousand, "%s shows 1,000 rows", u)
		cr.checkLayout(u)
	}
	reconciliationHeight(t, tab, live, cr)
}

// reconciliationHeight: an accountant works through the reconciliation
// page 50 items at a time; the 50 must fit within 1,600 px at 1280 px wide
// (issue 39: each conflict showed two 64-character hashes and its own
// form, about two items a screen). Fifty conflicting redeliveries, the
// widest kind, as an admin (with the bulk form and the checkboxes).
func reconciliationHeight(t *testing.T, tab context.Context, live *liveApp, cr *crawler) {
	for i := range 50 {
		id, key := fmt.Sprintf("pay_height_%02d", i), fmt.Sprintf("msg_height_%02d", i)
		for _, amount := range []int{1000 + i, 2000 + i} {
			live.deliver(key, "payment.captured", time.Now(),
				map[string]any{"payment_id": id, "capture_id": "cap_" + id, "amount": amount, "currency": "USD"})
		}
	}
	live.waitProjected()
	u := live.base + "/console/reconciliation?kind=conflicting_redelivery"
	resp, err := chromedp.Run(tab, chromedp.NavigateResponse(u))
	require.NoError(t, err, u)
	require.Equal(t, http.StatusOK, int(resp.Status), u)
	n, err := chromedp.Run(tab, chromedp.Evaluate[int](`document.querySelectorAll("#items tbody tr").length`))
	require.NoError(t, err)
	require.Equal(t, 50, n, "a page of 50 items")
	h, err := chromedp.Run(tab, chromedp.Evaluate[int](`document.documentElement.scrollHeight`))
	require.NoError(t, err)
	row, err := chromedp.Run(tab, chromedp.Evaluate[float64](`document.querySelector("#items tbody tr").getBoundingClientRect().height`))
	require.NoError(t, err)
	assert.LessOrEqual(t, h, 1600, "the reconciliation page with 50 items is %d px high (a row %.1f px)", h, row)
	cr.checkLayout(u)
}

// longID is an id of 70+ characters, as providers make them.
func longID(prefix string, i int) string {
	return fmt.Sprintf("%s%s_%06d", prefix, strings.Repeat("9f86d081884c7d659a2feaa0c55ad015", 2), i)
}

// seedThousand records the rows bigPages shows and returns the payout's id.
func seedThousand(t *testing.T, live *liveApp) string {
	t.Helper()
	work := make(chan int)
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range work {
				status := live.deliver(longID("msg_", i), "payment.captured", time.Now(), map[string]any{
					"payment_id": longID("pay_", i), "capture_id": longID("ch_", i), "amount": 100000 + i, "currency": "USD", "fee": 2900})
				assert.Equal(t, "accepted", status)
			}
		}()
	}
	for i := range thousand {
		work <- i
	}
	close(work)
	wg.Wait()
	payout := longID("po_", 0)
	ctx := context.Background()
	_, err := live.app.Pool().Exec(ctx, `
		INSERT INTO payouts (provider, payout_id, amount, currency, arrival_date, paid, status, line_count, lines_net, updated_at)
		VALUES ('stripe', $1, $2, 'USD', now(), true, 'reconciled', $3, $2, now())`, payout, int64(thousand)*97100, thousand)
	require.NoError(t, err)
	_, err = live.app.Pool().Exec(ctx, `
		INSERT INTO settlement_lines (provider, line_key, kind, source_type, line_id, payment_id, capture_id,
			gross, fee, net, currency, original_amount, original_currency, payout_id, occurred_at, stream_id)
		SELECT 'stripe', 'txn_' || repeat('e3b0c44298fc1c149afbf4c8996fb924', 2) || lpad(i::text, 6, '0'), 'charge', 'charge',
			'txn_' || lpad(i::text, 6, '0'), 'pi_' || repeat('9f86d081884c7d659a2feaa0c55ad015', 2) || lpad(i::text, 6, '0'),
			'ch_' || lpad(i::text, 6, '0'), 100000, 2900, 97100, 'USD', 100000, 'USD', $1, now(),
			'payment-stripe-pi_' || lpad(i::text, 6, '0')
		FROM generate_series(1, $2) AS i`, payout, thousand)
	require.NoError(t, err)
	live.waitProjected()
	return payout
}
