package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/standard"
	"github.com/onceledger/onceledger/cmd/onceledger/app"
)

// EnvScreenshots, set to 1, makes the crawler (TestConsoleCrawl) save a
// screenshot of each kind of page, and the browser tour those of the
// actions' results, into docs/console/ (the README shows them). Off by
// default, so that CI does not dirty the tree.
const EnvScreenshots = "ONCELEDGER_SCREENSHOTS"

// EnvChromium overrides the browser binary (default: chromium on PATH).
const EnvChromium = "ONCELEDGER_CHROMIUM"

const (
	consoleSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	adminToken    = "admin-token-0123456789"
	readToken     = "read-token-0123456789"
)

// chromiumPath finds the browser. Without one the test FAILS (it must not
// pass by skipping on a machine that lacks it); only -short skips.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("browser test skipped in -short mode")
	}
	if p := os.Getenv(EnvChromium); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatalf("no Chromium found: install Debian's chromium (apt-get install -y chromium; .ci/run does), "+
		"or set %s; use -short to skip the browser test", EnvChromium)
	return ""
}

// browser starts headless Chromium with an empty profile and returns a tab.
func browser(t *testing.T) context.Context {
	t.Helper()
	path := chromiumPath(t)
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	t.Cleanup(cancel)
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx,
		chromedp.ExecPath(path),
		chromedp.Flag("headless", true),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("no-default-browser-check", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 800),
	)
	t.Cleanup(cancelAlloc)
	tab, cancelTab := chromedp.NewContext(alloc)
	t.Cleanup(cancelTab)
	require.NoError(t, chromedp.Do(tab, chromedp.Navigate("about:blank")), "start Chromium at %s", path)
	return tab
}

type shooter struct {
	t   *testing.T
	dir string // "" when screenshots are off
}

func newShooter(t *testing.T) shooter {
	if os.Getenv(EnvScreenshots) != "1" {
		return shooter{t: t}
	}
	dir := filepath.Join("..", "..", "docs", "console")
	require.NoError(t, os.MkdirAll(dir, 0o755))
	return shooter{t: t, dir: dir}
}

// shot saves a PNG of the window (1280×800), as the crawler does.
func (s shooter) shot(tab context.Context, name string) {
	s.t.Helper()
	if s.dir == "" {
		return
	}
	png, err := chromedp.Run(tab, chromedp.CaptureScreenshot())
	require.NoError(s.t, err)
	require.NoError(s.t, os.WriteFile(filepath.Join(s.dir, name+".png"), png, 0o644))
}

func text(t *testing.T, tab context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(tab, chromedp.Text(chromedp.CSS(sel)))
	require.NoError(t, err, "text of %s", sel)
	return s
}

func do(t *testing.T, tab context.Context, steps ...chromedp.Action[chromedp.Void]) {
	t.Helper()
	require.NoError(t, chromedp.Do(tab, steps...))
}

func signInAs(t *testing.T, tab context.Context, base, token string) {
	t.Helper()
	do(t, tab,
		chromedp.Navigate(base+"/console"),
		chromedp.WaitVisible(chromedp.CSS("#token")),
		chromedp.SendKeys(chromedp.CSS("#token"), token),
		chromedp.Click(chromedp.CSS("form.signin button")),
		chromedp.WaitVisible(chromedp.CSS("#actor")),
	)
}

func signOut(t *testing.T, tab context.Context) {
	t.Helper()
	do(t, tab, chromedp.Click(chromedp.CSS("form.signout button")), chromedp.WaitVisible(chromedp.CSS("#token")))
}

// liveApp is `onceledger serve`'s app, built by app.New as serve builds it
// (projectors, workers, the console), on a real socket over a real
// database.
type liveApp struct {
	t     *testing.T
	app   *app.App
	base  string
	dbURL string
}

func startLiveApp(t *testing.T) *liveApp {
	t.Helper()
	sw, err := standard.New([]string{consoleSecret}, 5*time.Minute)
	require.NoError(t, err)
	dbURL := pgtest.NewDatabase(t)
	a, err := app.New(context.Background(), app.Config{
		DatabaseURL: dbURL,
		Projections: true,
		Providers:   map[string]providers.Adapter{standard.Name: sw},
		APITokens:   []string{"alice=" + readToken},
		AdminTokens: []string{"ops=" + adminToken},
		// A subscription to show (console_crawl_test.go).
		SecretsKey: strings.Repeat("5e", 32), OutboxAllowPrivate: true,
		// serve's defaults
		MaxBodyBytes: 1 << 20, IngestTimeout: 10 * time.Second, ReadTimeout: 15 * time.Second,
		// serve's 30 s: Chromium preconnects sockets that never send a
		// request, and http.Server.Shutdown counts such a connection as
		// idle only once it is 5 s old, so a 5 s drain raced them.
		ShutdownTimeout: 30 * time.Second, ProviderConcurrency: 64,
		Logger: slog.New(slog.DiscardHandler),
	})
	require.NoError(t, err)
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	ctx, stop := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- a.Serve(ctx, l) }()
	t.Cleanup(func() {
		stop()
		assert.NoError(t, <-served)
		a.Close()
	})
	return &liveApp{t: t, app: a, base: "http://" + l.Addr().String(), dbURL: dbURL}
}

// deliver POSTs a delivery signed with the Standard Webhooks scheme to the
// app's webhook endpoint and returns the answer's status field.
func (l *liveApp) deliver(msgID, typ string, at time.Time, data map[string]any) string {
	l.t.Helper()
	body, err := json.Marshal(map[string]any{"type": typ, "timestamp": at.UTC().Format(time.RFC3339), "data": data})
	require.NoError(l.t, err)
	h, err := standard.Sign(consoleSecret, msgID, time.Now(), body)
	require.NoError(l.t, err)
	req, err := http.NewRequest(http.MethodPost, l.base+"/webhooks/standard", bytes.NewReader(body))
	require.NoError(l.t, err)
	req.Header = h
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	require.NoError(l.t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(l.t, err)
	require.Equal(l.t, http.StatusOK, resp.StatusCode, "%s", b)
	var v struct{ Status string }
	require.NoError(l.t, json.Unmarshal(b, &v))
	return v.Status
}

// legacyIgnored stores a delivery as an older onceledger did that did not
// handle its type yet: in the inbox, status ignored, no facts. A redrive
// with the current code records what it carries.
func (l *liveApp) legacyIgnored(key, typ string, data map[string]any) {
	l.t.Helper()
	body, err := json.Marshal(map[string]any{"type": typ, "timestamp": time.Now().UTC().Format(time.RFC3339), "data": data})
	require.NoError(l.t, err)
	normalized := fmt.Sprintf(`{"provider":"standard","dedup_key":%q,"type":%q,"occurred_at":%q,"facts":[]}`,
		key, typ, time.Now().UTC().Format(time.RFC3339))
	_, err = l.app.Pool().Exec(context.Background(), `
		INSERT INTO webhook_inbox (provider, dedup_key, event_type, payload_hash, facts_hash, raw_body, normalized, status)
		VALUES ('standard', $1, $2, $3, 'legacy', $4, $5, 'ignored')`, key, typ, providers.PayloadHash(body), body, normalized)
	require.NoError(l.t, err)
}

// waitProjected waits until every projection has caught up with the feed.
func (l *liveApp) waitProjected() {
	l.t.Helper()
	ctx := context.Background()
	require.Eventually(l.t, func() bool {
		head, err := l.app.Events().Store.Head(ctx)
		if err != nil {
			return false
		}
		var behind int
		err = l.app.Pool().QueryRow(ctx, `SELECT count(*) FROM projection_checkpoints
			WHERE (position_commit, position_prepare) < ($1, $2)`, int64(head.Commit), int64(head.Prepare)).Scan(&behind)
		return err == nil && behind == 0
	}, 30*time.Second, 20*time.Millisecond, "projections catch up")
}

// story is what seed recorded.
type story struct {
	paymentID   string
	conflictKey string // dedup key of the conflicting redelivery
	ignoredKey  string // a type onceledger does not handle
	legacyKey   string // ignored by an older version; handled now
	legacyPay   string
	orphanID    string
}

// seed records, through the webhook endpoint with signed deliveries, a
// captured payment with a partial refund and a conflicting redelivery (an
// open reconciliation item), an orphan refund, a payout, an ignored type,
// earlier activity for the charts; and one delivery an older version
// ignored.
func (l *liveApp) seed() story {
	n := time.Now().UnixNano()
	s := story{
		paymentID:   fmt.Sprintf("pay_console_%d", n),
		conflictKey: fmt.Sprintf("msg_capture_%d", n),
		ignoredKey:  fmt.Sprintf("msg_ignored_%d", n),
		legacyKey:   fmt.Sprintf("msg_legacy_%d", n),
		legacyPay:   fmt.Sprintf("pay_legacy_%d", n),
		orphanID:    fmt.Sprintf("pay_orphan_%d", n),
	}
	now := time.Now()
	require.Equal(l.t, "accepted", l.deliver(s.conflictKey, "payment.captured", now,
		map[string]any{"payment_id": s.paymentID, "capture_id": "cap_1", "amount": 125000, "currency": "USD", "fee": 3650}))
	require.Equal(l.t, "accepted", l.deliver(fmt.Sprintf("msg_refund_%d", n), "refund.succeeded", now,
		map[string]any{"payment_id": s.paymentID, "refund_id": "re_1", "amount": 25000, "currency": "USD"}))
	// The same webhook-id with another amount: a conflicting redelivery.
	require.Equal(l.t, "duplicate", l.deliver(s.conflictKey, "payment.captured", now,
		map[string]any{"payment_id": s.paymentID, "capture_id": "cap_1", "amount": 126000, "currency": "USD", "fee": 3650}))
	require.Equal(l.t, "accepted", l.deliver(fmt.Sprintf("msg_orphan_%d", n), "refund.succeeded", now,
		map[string]any{"payment_id": s.orphanID, "refund_id": "re_9", "amount": 500, "currency": "EUR"}))
	require.Equal(l.t, "accepted", l.deliver(fmt.Sprintf("msg_payout_%d", n), "payout.paid", now,
		map[string]any{"payout_id": fmt.Sprintf("po_%d", n), "amount": 90000, "currency": "USD"}))
	require.Equal(l.t, "ignored", l.deliver(s.ignoredKey, "customer.created", now, map[string]any{"customer_id": "cus_1"}))
	for i := range 7 {
		at := now.AddDate(0, 0, -(3*i + 1))
		pay, cur := fmt.Sprintf("pay_more_%d_%d", n, i), []string{"USD", "EUR"}[i%2]
		require.Equal(l.t, "accepted", l.deliver(fmt.Sprintf("msg_more_%d_%d", n, i), "payment.captured", at,
			map[string]any{"payment_id": pay, "capture_id": fmt.Sprintf("cap_m%d", i), "amount": 40000 + 12500*i, "currency": cur, "fee": 300}))
		if i%3 == 0 {
			require.Equal(l.t, "accepted", l.deliver(fmt.Sprintf("msg_more_refund_%d_%d", n, i), "refund.succeeded", at.Add(20*time.Hour),
				map[string]any{"payment_id": pay, "refund_id": fmt.Sprintf("re_m%d", i), "amount": 15000, "currency": cur}))
		}
		if i == 4 {
			require.Equal(l.t, "accepted", l.deliver(fmt.Sprintf("msg_more_dispute_%d_%d", n, i), "dispute.opened", at.Add(30*time.Hour),
				map[string]any{"payment_id": pay, "dispute_id": "dp_1", "amount": 20000, "currency": cur}))
		}
	}
	l.legacyIgnored(s.legacyKey, "payment.captured",
		map[string]any{"payment_id": s.legacyPay, "capture_id": "cap_legacy", "amount": 7700, "currency": "EUR", "fee": 120})
	l.waitProjected()
	return s
}

// TestConsoleInBrowser drives the console in headless Chromium against
// serve's app on a real socket over real Postgres, with data that arrived
// as signed deliveries at the webhook endpoint, and the real acting
// services behind the forms.
func TestConsoleInBrowser(t *testing.T) {
	tab := browser(t)
	live := startLiveApp(t)
	tour := &consoleTour{t: t, tab: tab, live: live, shots: newShooter(t), base: live.base, s: live.seed()}
	tour.signIn()
	tour.findPayment()
	tour.findByCaptureID()
	tour.resolveItem()
	tour.redriveIgnored()
	tour.payouts()
	tour.otherPages()
	tour.readTokenRefused()
	tour.crossSiteRefused()
}

// consoleTour is one browser session through the console, step by step.
type consoleTour struct {
	t     *testing.T
	tab   context.Context
	live  *liveApp
	shots shooter
	base  string
	s     story
}

// signIn: the token is typed into a form, never put in a URL.
func (c *consoleTour) signIn() {
	t, tab := c.t, c.tab
	do(t, tab, chromedp.Navigate(c.base+"/console"), chromedp.WaitVisible(chromedp.CSS("#token")))
	loc, err := chromedp.Run(tab, chromedp.Location())
	require.NoError(t, err)
	assert.True(t, strings.HasSuffix(loc, "/console/signin"), loc)
	c.shots.shot(tab, "signin")
	signInAs(t, tab, c.base, adminToken)
	assert.Equal(t, "ops", text(t, tab, "#actor"))
	loc, _ = chromedp.Run(tab, chromedp.Location())
	assert.NotContains(t, loc, adminToken)
	assert.Contains(t, text(t, tab, "main"), "balanced")
}

// findByCaptureID finds a payment by its capture's id in the search box
// of the payments list: one payment has it, so its page opens.
func (c *consoleTour) findByCaptureID() {
	t, tab, s := c.t, c.tab, c.s
	do(t, tab,
		chromedp.Navigate(c.base+"/console/payments"),
		chromedp.WaitVisible(chromedp.CSS("#s-q")),
		chromedp.SendKeys(chromedp.CSS("#s-q"), "cap_1"),
		chromedp.Submit(chromedp.CSS("#s-q")),
		chromedp.WaitVisible(chromedp.CSS("#payment-id")),
	)
	assert.Equal(t, s.paymentID, text(t, tab, "#payment-id"))
}

// findPayment finds a payment with the search form and opens its
// timeline.
func (c *consoleTour) findPayment() {
	t, tab, s := c.t, c.tab, c.s
	do(t, tab,
		chromedp.Click(chromedp.CSS(`nav a[href="/console/payments"]`)),
		chromedp.WaitVisible(chromedp.CSS("#f-payment")),
		chromedp.SendKeys(chromedp.CSS("#f-payment"), s.paymentID),
		chromedp.Click(chromedp.CSS("form.filters button")),
	)
	// The list answered the search (the unfiltered first page may hold the
	// payment too): the URL carries the filter.
	require.Eventually(t, func() bool {
		loc, err := chromedp.Run(tab, chromedp.Location())
		return err == nil && strings.Contains(loc, "payment_id="+s.paymentID)
	}, 30*time.Second, 20*time.Millisecond)
	do(t, tab, chromedp.WaitVisible(chromedp.CSS(`#payments a[href$="/`+s.paymentID+`"]`)))
	assert.NotContains(t, text(t, tab, "#payments"), "pay_more_", "the search narrowed the list")
	do(t, tab,
		chromedp.Click(chromedp.CSS(`#payments a[href$="/`+s.paymentID+`"]`)),
		chromedp.WaitVisible(chromedp.CSS("#timeline")),
	)
	assert.Equal(t, s.paymentID, text(t, tab, "#payment-id"))
	timeline := text(t, tab, "#timeline")
	for _, want := range []string{"payment.captured", "refund.posted", "reconciliation.flagged", "revenue:sales", s.conflictKey} {
		assert.Contains(t, timeline, want)
	}
}

// resolveItem resolves the payment's open reconciliation item with a
// note, through the real service (a reconciliation.resolved event in the
// payment's stream), and sees the action in the timeline and the item
// resolved.
func (c *consoleTour) resolveItem() {
	t, tab, s, live := c.t, c.tab, c.s, c.live
	note := fmt.Sprintf("checked with the provider, ticket %d", time.Now().UnixNano())
	do(t, tab,
		chromedp.SendKeys(chromedp.CSS(`#items input[name="note"]`), note),
		chromedp.Click(chromedp.CSS(`#items form.act button`)),
		chromedp.WaitVisible(chromedp.CSS(`p.notice`)),
	)
	live.waitProjected()
	do(t, tab, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#timeline")))
	timeline := text(t, tab, "#timeline")
	assert.Contains(t, timeline, "reconciliation.resolved")
	assert.Contains(t, timeline, "resolved by an operator — by ops")
	assert.Contains(t, timeline, note)
	assert.Contains(t, text(t, tab, "#items"), "resolved by ops: "+note)
	var stream, actor string
	require.NoError(t, live.app.Pool().QueryRow(context.Background(), `SELECT stream_id, resolved_by FROM reconciliation_items
		WHERE payment_id = $1 AND kind = 'conflicting_redelivery'`, s.paymentID).Scan(&stream, &actor))
	assert.Equal(t, "ops", actor)
	recs, err := live.app.Events().Store.ReadStream(context.Background(), stream)
	require.NoError(t, err)
	assert.Equal(t, "reconciliation.resolved", recs[len(recs)-1].Type, "the action is the stream's last event")

	do(t, tab, chromedp.Navigate(c.base+"/console/reconciliation?status=all"), chromedp.WaitVisible(chromedp.CSS("#items")))
	items := text(t, tab, "#items")
	assert.Contains(t, items, "refund_before_payment")
	assert.Contains(t, items, s.orphanID)
	assert.Regexp(t, `UTC, by ops`, items, "a resolved item says when and by whom")
}

// redriveIgnored redrives every ignored delivery with the current code:
// the one an older version ignored now records its capture;
// customer.created is still not handled.
func (c *consoleTour) redriveIgnored() {
	t, tab, s := c.t, c.tab, c.s
	do(t, tab,
		chromedp.Navigate(c.base+"/console/inbox?status=ignored"),
		chromedp.WaitVisible(chromedp.CSS("#deliveries")),
	)
	deliveries := text(t, tab, "#deliveries")
	assert.Contains(t, deliveries, s.ignoredKey)
	assert.Contains(t, deliveries, s.legacyKey)
	do(t, tab,
		chromedp.Click(chromedp.CSS("#redrive-all")),
		chromedp.WaitVisible(chromedp.CSS("#redrive-result")),
	)
	result := text(t, tab, "#redrive-result")
	assert.Contains(t, result, "2 considered, 1 now recorded facts, 1 still ignored")
	counts := text(t, tab, "#redrive-counts")
	assert.Contains(t, counts, "ignored 2")
	assert.Contains(t, counts, "ignored 1")
	c.shots.shot(tab, "redrive")
	c.live.waitProjected()
	do(t, tab,
		chromedp.Navigate(c.base+"/console/payments/standard/"+s.legacyPay),
		chromedp.WaitVisible(chromedp.CSS("#timeline")),
	)
	assert.Contains(t, text(t, tab, "#timeline"), "payment.captured")
	assert.Contains(t, text(t, tab, "#timeline"), s.legacyKey)

	do(t, tab,
		chromedp.Navigate(c.base+"/console/inbox/delivery?provider=standard&key="+url.QueryEscape(s.conflictKey)),
		chromedp.WaitVisible(chromedp.CSS("#raw")),
	)
	assert.Contains(t, text(t, tab, "#raw"), s.paymentID)
}

// payouts: the payouts page reads the payouts read model (what GET
// /v1/payouts lists): the webhook's payout is paid, and a payout its
// report's lines do not add up to shows as mismatch, with its difference
// and its lines.
func (c *consoleTour) payouts() {
	t, tab := c.t, c.tab
	at := time.Now().UTC().Truncate(time.Second)
	_, err := c.live.app.Pool().Exec(context.Background(), `
		WITH p AS (INSERT INTO payouts (provider, payout_id, amount, currency, arrival_date, paid, status,
			line_count, lines_net, difference, updated_at)
			VALUES ('standard', 'po_short', 10000, 'EUR', $1, true, 'mismatch', 1, 9700, -300, $1))
		INSERT INTO settlement_lines (provider, line_key, kind, payment_id, gross, fee, net, currency,
			original_amount, original_currency, payout_id, occurred_at, stream_id)
		VALUES ('standard', 'txn_short', 'charge', 'pay_short', 10000, 300, 9700, 'EUR', 10000, 'EUR', 'po_short', $1,
			'settlement-standard')`, at)
	require.NoError(t, err)
	do(t, tab, chromedp.Navigate(c.base+"/console/payouts"), chromedp.WaitVisible(chromedp.CSS("#payouts")))
	payouts := text(t, tab, "#payouts")
	assert.Contains(t, payouts, "paid", "the webhook's payout")
	assert.Contains(t, payouts, "mismatch")
	do(t, tab,
		chromedp.Click(chromedp.CSS(`#payouts a[href$="/po_short"]`)),
		chromedp.WaitVisible(chromedp.CSS("#payout-status")),
	)
	assert.Equal(t, "mismatch", text(t, tab, "#payout-status"))
	assert.Equal(t, "-3.00", text(t, tab, "#payout-difference"))
	assert.Contains(t, text(t, tab, "#lines"), "txn_short")
}

// otherPages shows the periods and the projections (their screenshots
// are the crawler's, TestConsoleCrawl).
func (c *consoleTour) otherPages() {
	for _, p := range []struct{ path, sel string }{
		{"/console/periods", "#periods"},
		{"/console/projections", "#projections"},
	} {
		do(c.t, c.tab, chromedp.Navigate(c.base+p.path), chromedp.WaitVisible(chromedp.CSS(p.sel)))
	}
	assert.Contains(c.t, text(c.t, c.tab, "#projections"), "live")
}

// readTokenRefused: a read token sees but may not act: it gets no acting
// forms, and a form forged in its own page is refused by the server.
func (c *consoleTour) readTokenRefused() {
	t, tab := c.t, c.tab
	signOut(t, tab)
	signInAs(t, tab, c.base, readToken)
	assert.Equal(t, "alice", text(t, tab, "#actor"))
	do(t, tab, chromedp.Navigate(c.base+"/console/reconciliation"), chromedp.WaitVisible(chromedp.CSS("#items")))
	forms, err := chromedp.Run(tab, chromedp.Evaluate[int](`document.querySelectorAll("#items form").length`))
	require.NoError(t, err)
	assert.Zero(t, forms)
	// Re-point the page's own sign-out form (which carries the session's
	// CSRF token) at the resolve endpoint, and submit it.
	do(t, tab,
		chromedp.SetAttributeValue(chromedp.CSS("form.signout"), "action", "/console/reconciliation/resolve"),
		chromedp.Click(chromedp.CSS("form.signout button")),
		chromedp.WaitVisible(chromedp.CSS("#error-message")),
	)
	assert.Contains(t, text(t, tab, "#error-message"), "may read but not act")
	c.shots.shot(tab, "read-token-refused")
}

// crossSiteRefused: a cross-site page cannot make a signed-in admin's
// browser act; neither refused action reached the ledger (the orphan
// refund's item is open, its stream holds no action).
func (c *consoleTour) crossSiteRefused() {
	t, tab, s, live := c.t, c.tab, c.s, c.live
	signOut(t, tab)
	signInAs(t, tab, c.base, adminToken)
	evil := evilSite(t, c.base+"/console/reconciliation/resolve", "payment-standard-"+s.orphanID, "re_9")
	do(t, tab,
		chromedp.Navigate(evil),
		chromedp.WaitVisible(chromedp.CSS("#evil")),
		chromedp.Click(chromedp.CSS("#evil button")),
		chromedp.WaitVisible(chromedp.CSS("#error-message")),
	)
	assert.Contains(t, text(t, tab, "#error-message"), "Cross-origin request refused")
	c.shots.shot(tab, "cross-site-refused")

	var status string
	require.NoError(t, live.app.Pool().QueryRow(context.Background(), `SELECT status FROM reconciliation_items
		WHERE payment_id = $1`, s.orphanID).Scan(&status))
	assert.Equal(t, "open", status)
	recs, err := live.app.Events().Store.ReadStream(context.Background(), "payment-standard-"+s.orphanID)
	require.NoError(t, err)
	for _, r := range recs {
		assert.NotEqual(t, "reconciliation.resolved", r.Type)
	}
}

// evilSite serves, on another site (localhost rather than 127.0.0.1), a page
// with a form that posts to the console.
func evilSite(t *testing.T, target, stream, key string) string {
	t.Helper()
	page := fmt.Sprintf(`<!doctype html><html lang="en"><title>Win a prize</title>
<form id="evil" method="post" action="%s">
<input type="hidden" name="stream_id" value="%s"><input type="hidden" name="kind" value="refund_before_payment">
<input type="hidden" name="item_key" value="%s"><input type="hidden" name="note" value="pwned">
<button type="submit">Claim your prize</button></form></html>`, html.EscapeString(target), html.EscapeString(stream), html.EscapeString(key))
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(page))
	}))
	t.Cleanup(srv.Close)
	return strings.Replace(srv.URL, "127.0.0.1", "localhost", 1)
}
