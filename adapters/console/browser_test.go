package console_test

import (
	"context"
	"fmt"
	"html"
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
)

// EnvScreenshots, set to 1, makes the browser test save a screenshot of each
// page into docs/console/ (the README shows them). Off by default, so that
// CI does not dirty the tree.
const EnvScreenshots = "ONCELEDGER_SCREENSHOTS"

// EnvChromium overrides the browser binary (default: chromium on PATH).
const EnvChromium = "ONCELEDGER_CHROMIUM"

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
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
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
		chromedp.WindowSize(1280, 900),
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

// shot saves a PNG of the whole page.
func (s shooter) shot(tab context.Context, name string) {
	s.t.Helper()
	if s.dir == "" {
		return
	}
	png, err := chromedp.Run(tab, chromedp.FullScreenshot(100))
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

// TestConsoleInBrowser drives the console in headless Chromium against a
// real server over real Postgres, with data that arrived as signed
// deliveries through the ingestion path.
func TestConsoleInBrowser(t *testing.T) {
	tab := browser(t)
	f := newFixture(t, fixtureOptions{})
	s := f.seedStory()
	shots := newShooter(t)
	base := f.srv.URL

	// Sign in (the token is typed into a form, never put in a URL).
	do(t, tab, chromedp.Navigate(base+"/console"), chromedp.WaitVisible(chromedp.CSS("#token")))
	loc, err := chromedp.Run(tab, chromedp.Location())
	require.NoError(t, err)
	assert.True(t, strings.HasSuffix(loc, "/console/signin"), loc)
	shots.shot(tab, "signin")
	signInAs(t, tab, base, adminToken)
	assert.Equal(t, "ops", text(t, tab, "#actor"))
	loc, _ = chromedp.Run(tab, chromedp.Location())
	assert.NotContains(t, loc, adminToken)
	assert.Contains(t, text(t, tab, "main"), "balanced")
	shots.shot(tab, "overview")

	// Find a payment with the search form, and open its timeline.
	do(t, tab,
		chromedp.Click(chromedp.CSS(`nav a[href="/console/payments"]`)),
		chromedp.WaitVisible(chromedp.CSS("#f-payment")),
		chromedp.SendKeys(chromedp.CSS("#f-payment"), s.paymentID),
		chromedp.Click(chromedp.CSS("form.filters button")),
		chromedp.WaitVisible(chromedp.CSS(`#payments a[href$="/`+s.paymentID+`"]`)),
	)
	assert.NotContains(t, text(t, tab, "#payments"), "pay_more_", "the search narrowed the list")
	shots.shot(tab, "payments")
	do(t, tab,
		chromedp.Click(chromedp.CSS(`#payments a[href$="/`+s.paymentID+`"]`)),
		chromedp.WaitVisible(chromedp.CSS("#timeline")),
	)
	assert.Equal(t, s.paymentID, text(t, tab, "#payment-id"))
	timeline := text(t, tab, "#timeline")
	for _, want := range []string{"payment.captured", "refund.posted", "reconciliation.flagged", "revenue:sales", s.conflictKey} {
		assert.Contains(t, timeline, want)
	}

	// Resolve its open reconciliation item with a note (through the act
	// port's test double, which records the action as an event), and see
	// the action in the timeline and the item resolved.
	note := fmt.Sprintf("checked with the provider, ticket %d", time.Now().UnixNano())
	do(t, tab,
		chromedp.SendKeys(chromedp.CSS(`#items input[name="note"]`), note),
		chromedp.Click(chromedp.CSS(`#items form.act button`)),
		chromedp.WaitVisible(chromedp.CSS(`p.notice`)),
	)
	require.Len(t, f.recon.snapshot(), 1)
	assert.Equal(t, "ops", f.recon.snapshot()[0].Actor)
	f.waitProjected()
	do(t, tab, chromedp.Reload(), chromedp.WaitVisible(chromedp.CSS("#timeline")))
	assert.Contains(t, text(t, tab, "#timeline"), "resolved by ops: "+note)
	assert.Contains(t, text(t, tab, "#items"), "resolved")
	shots.shot(tab, "payment")

	do(t, tab, chromedp.Navigate(base+"/console/reconciliation?status=all"), chromedp.WaitVisible(chromedp.CSS("#items")))
	items := text(t, tab, "#items")
	assert.Contains(t, items, "refund_before_payment")
	assert.Contains(t, items, s.orphanID)
	shots.shot(tab, "reconciliation")

	// Redrive an ignored delivery (through the Redriver test double).
	do(t, tab,
		chromedp.Navigate(base+"/console/inbox?status=ignored"),
		chromedp.WaitVisible(chromedp.CSS("#deliveries")),
	)
	assert.Contains(t, text(t, tab, "#deliveries"), s.ignoredKey)
	shots.shot(tab, "inbox")
	do(t, tab,
		chromedp.Click(chromedp.CSS(`#deliveries input[type="checkbox"]`)),
		chromedp.Click(chromedp.CSS("#redrive-selected")),
		chromedp.WaitVisible(chromedp.CSS("#redrive-result")),
	)
	assert.Contains(t, text(t, tab, "#redrive-result"), "1 considered")
	assert.Contains(t, text(t, tab, "#redrive-counts"), "ignored 1")
	reqs := f.redrive.snapshot()
	require.Len(t, reqs, 1)
	require.Len(t, reqs[0].Keys, 1)
	assert.Equal(t, s.ignoredKey, reqs[0].Keys[0].DedupKey)
	shots.shot(tab, "redrive")

	do(t, tab,
		chromedp.Navigate(base+"/console/inbox/delivery?provider=standard&key="+url.QueryEscape(s.conflictKey)),
		chromedp.WaitVisible(chromedp.CSS("#raw")),
	)
	assert.Contains(t, text(t, tab, "#raw"), s.paymentID)
	shots.shot(tab, "delivery")

	for _, p := range []struct{ path, sel, name string }{
		{"/console/payouts", "#payouts", "payouts"},
		{"/console/periods", "h1", "periods"},
		{"/console/projections", "#projections", "projections"},
	} {
		do(t, tab, chromedp.Navigate(base+p.path), chromedp.WaitVisible(chromedp.CSS(p.sel)))
		shots.shot(tab, p.name)
	}
	assert.Contains(t, text(t, tab, "#projections"), "live")

	// A read token sees but may not act: it gets no acting forms, and a
	// form forged in its own page is refused by the server.
	signOut(t, tab)
	signInAs(t, tab, base, readToken)
	assert.Equal(t, "alice", text(t, tab, "#actor"))
	do(t, tab, chromedp.Navigate(base+"/console/reconciliation"), chromedp.WaitVisible(chromedp.CSS("#items")))
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
	shots.shot(tab, "read-token-refused")
	assert.Len(t, f.recon.snapshot(), 1, "nothing reached the act port")

	// A cross-site page cannot make a signed-in admin's browser act.
	signOut(t, tab)
	signInAs(t, tab, base, adminToken)
	evil := evilSite(t, base+"/console/reconciliation/resolve", "payment-standard-"+s.orphanID, s.orphanID)
	do(t, tab,
		chromedp.Navigate(evil),
		chromedp.WaitVisible(chromedp.CSS("#evil")),
		chromedp.Click(chromedp.CSS("#evil button")),
		chromedp.WaitVisible(chromedp.CSS("#error-message")),
	)
	assert.Contains(t, text(t, tab, "#error-message"), "Cross-origin request refused")
	assert.Len(t, f.recon.snapshot(), 1, "nothing reached the act port")
	shots.shot(tab, "cross-site-refused")
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
