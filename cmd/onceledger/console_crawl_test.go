package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/outbox"
)

// The crawler's window: the size the console must fit without a horizontal
// scroll (docs/console/README.md).
const crawlWidth, crawlHeight = 1280, 800

// TestConsoleCrawl follows, from the overview, every link and every GET
// form of the console (its default values), as a read token and as an
// admin, and never submits a POST form. Every page must answer 200 (no
// link to a 4xx), fit 1280 px (document.documentElement.scrollWidth and
// every control's box inside the window; a control hidden by an ancestor's
// overflow counts as clipped), give every ellipsized id its full text as a
// title, and log no console error. The data is realistic where layouts
// break: ids of 64+ characters, a conflicting redelivery, a payout's
// missing_webhook item, and pages of 1,000 rows (console_pages_test.go).
// With ONCELEDGER_SCREENSHOTS=1 it writes a
// 1280×800 screenshot of each kind of page into docs/console/ (the
// README's pictures).
//
// With ONCELEDGER_CRAWL_URL (and ONCELEDGER_CRAWL_TOKEN, an admin token) it
// crawls that server instead, as an admin: `make screenshots` points it at
// `make demo`'s server, so the README's pictures show the demo's data.
func TestConsoleCrawl(t *testing.T) {
	if base := os.Getenv("ONCELEDGER_CRAWL_URL"); base != "" {
		crawlServer(t, base, os.Getenv("ONCELEDGER_CRAWL_TOKEN"))
		return
	}
	tab := browser(t)
	live := startLiveApp(t)
	s := live.seed()
	seedLongIDs(t, live)
	seedSubscription(t, live)
	_ = s
	var (
		mu   sync.Mutex
		errs []string
	)
	require.NoError(t, chromedp.Listen(tab, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *log.EventEntryAdded:
			if e.Entry.Level == log.EntryLevelError {
				errs = append(errs, e.Entry.Text+" "+e.Entry.URL)
			}
		case *runtime.EventExceptionThrown:
			errs = append(errs, e.ExceptionDetails.Text)
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError {
				errs = append(errs, "console.error")
			}
		}
	}))
	do(t, tab, chromedp.EmulateViewport(crawlWidth, crawlHeight))
	shots := newShooter(t)
	for _, role := range []struct{ name, token string }{{"read", readToken}, {"admin", adminToken}} {
		t.Run(role.name, func(t *testing.T) {
			signInAs(t, tab, live.base, role.token)
			cr := &crawler{t: t, tab: tab, base: live.base, http: httpSession(t, live.base, role.token), seen: map[string]bool{}}
			if role.name == "admin" {
				cr.shots = shots
			}
			cr.crawl()
			mu.Lock()
			assert.Empty(t, errs, "console errors")
			errs = nil
			mu.Unlock()
			assert.Greater(t, cr.pages, 20, "the crawl reached the console's pages")
			signOut(t, tab)
		})
	}
	t.Run("1000 rows", func(t *testing.T) { bigPages(t, tab, live) }) // console_pages_test.go
}

// seedSubscription adds a push subscription to an endpoint that refuses
// connections, then a payment: its attempts fail, so the pages show a
// failing state, a last error and attempts.
func seedSubscription(t *testing.T, live *liveApp) {
	t.Helper()
	_, err := live.app.Subscriptions().Create(context.Background(),
		outbox.NewSubscription{URL: "http://127.0.0.1:9/onceledger", Description: "shop fulfilment"}, "ops", "the crawl's")
	require.NoError(t, err)
	live.deliver("msg_crawl_subscription", "payment.captured", time.Now(),
		map[string]any{"payment_id": "pay_crawl_sub", "capture_id": "cap_crawl_sub", "amount": 1000, "currency": "USD"})
}

// seedLongIDs records deliveries whose ids are as long as providers make
// them: a 72-character dedup key, a 70-character payment id.
func seedLongIDs(t *testing.T, live *liveApp) {
	t.Helper()
	long := "pay_" + strings.Repeat("9f86d081884c7d659a2feaa0c55ad015", 2) + "a3bf4f1b2b"
	key := "msg_" + strings.Repeat("e3b0c44298fc1c149afbf4c8996fb924", 2) + "27ae41e4"
	require.Equal(t, "accepted", live.deliver(key, "payment.captured", time.Now(),
		map[string]any{"payment_id": long, "capture_id": "ch_" + strings.Repeat("0", 60), "amount": 12345678, "currency": "JPY", "fee": 123456}))
	require.Equal(t, "duplicate", live.deliver(key, "payment.captured", time.Now(),
		map[string]any{"payment_id": long, "capture_id": "ch_" + strings.Repeat("0", 60), "amount": 12345679, "currency": "JPY", "fee": 123456}))
	live.waitProjected()
}

// httpSession signs in with token over plain HTTP, for what a browser
// downloads rather than shows (the CSV exports).
func httpSession(t *testing.T, base, token string) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	c := &http.Client{Jar: jar}
	resp, err := c.PostForm(base+"/console/signin", url.Values{"token": {token}})
	require.NoError(t, err)
	_ = resp.Body.Close()
	require.Equal(t, http.StatusOK, resp.StatusCode)
	return c
}

type crawler struct {
	t     *testing.T
	tab   context.Context
	base  string
	http  *http.Client
	shots shooter
	seen  map[string]bool
	shot  map[string]bool
	pages int
}

// crawlLimit bounds the pages one role visits (the seeded console has
// fewer; a runaway pager would not end otherwise).
const crawlLimit = 400

func (c *crawler) crawl() {
	queue := []string{c.base + "/console"}
	c.seen[queue[0]] = true
	for len(queue) > 0 && c.pages < crawlLimit {
		u := queue[0]
		queue = queue[1:]
		for _, next := range c.visit(u) {
			if !c.seen[next] {
				c.seen[next] = true
				queue = append(queue, next)
			}
		}
	}
}

// visit checks one page and returns the console URLs it leads to.
func (c *crawler) visit(u string) []string {
	t := c.t
	if strings.Contains(u, "format=csv") || strings.Contains(u, ".csv") {
		resp, err := c.http.Get(u)
		require.NoError(t, err)
		_, _ = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		assert.Equal(t, http.StatusOK, resp.StatusCode, "%s", u)
		return nil
	}
	c.pages++
	resp, err := chromedp.Run(c.tab, chromedp.NavigateResponse(u))
	require.NoError(t, err, u)
	status := int(resp.Status)
	// No link leads to a 4xx, a 403 included: a page offers a reader only
	// what a reader may open (issue 39).
	if !assert.Equal(t, http.StatusOK, status, "%s", u) {
		return nil
	}
	c.checkLayout(u)
	c.screenshot(u)
	links, err := chromedp.Run(c.tab, chromedp.Evaluate[[]string](crawlLinksJS))
	require.NoError(t, err)
	var out []string
	for _, l := range links {
		p, err := url.Parse(l)
		if err != nil || p.Host != strings.TrimPrefix(c.base, "http://") || !strings.HasPrefix(p.Path, "/console") ||
			strings.HasPrefix(p.Path, "/console/static/") {
			continue
		}
		p.Fragment = ""
		out = append(out, p.String())
	}
	return out
}

// crawlLinksJS lists the page's links and its GET forms' URLs with their
// default values; POST forms are left alone.
const crawlLinksJS = `(() => {
  const out = Array.from(document.querySelectorAll("a[href]"), a => a.href);
  for (const f of document.querySelectorAll("form")) {
    if ((f.getAttribute("method") || "get").toLowerCase() !== "get") continue;
    const q = new URLSearchParams(new FormData(f)).toString();
    out.push(f.action + (q ? "?" + q : ""));
  }
  return out;
})()`

// layoutJS measures the page at the window's width: the document's scroll
// width, the controls whose box leaves the window or is cut by an
// ancestor that hides overflow, and the ellipsized texts without a title.
const layoutJS = `(() => {
  // The window less its vertical scrollbar: what a page may use.
  const w = document.documentElement.clientWidth, bad = [], untitled = [];
  const controls = "a[href], button, input:not([type=hidden]), select, textarea, summary";
  for (const el of document.querySelectorAll(controls)) {
    if (el.classList.contains("skip")) continue;
    const r = el.getBoundingClientRect();
    if (r.width === 0 && r.height === 0) continue;
    if (r.left < -0.5 || r.right > w + 0.5) { bad.push("outside: " + el.outerHTML.slice(0, 100)); continue; }
    if (el.tagName === "A") {
      if (el.scrollWidth > el.clientWidth + 1 && el.title !== el.textContent) untitled.push(el.outerHTML.slice(0, 100));
      continue;
    }
    for (let p = el.parentElement; p; p = p.parentElement) {
      const o = getComputedStyle(p).overflowX;
      if (o === "visible") continue;
      const pr = p.getBoundingClientRect();
      if (r.left < pr.left - 0.5 || r.right > pr.right + 0.5) { bad.push("clipped: " + el.outerHTML.slice(0, 100)); break; }
    }
  }
  for (const el of document.querySelectorAll("code")) {
    if (el.scrollWidth > el.clientWidth + 1 && el.title !== el.textContent) untitled.push(el.outerHTML.slice(0, 100));
  }
  return {scrollWidth: document.documentElement.scrollWidth, clientWidth: w, bad, untitled};
})()`

type layout struct {
	ScrollWidth int      `json:"scrollWidth"`
	ClientWidth int      `json:"clientWidth"`
	Bad         []string `json:"bad"`
	Untitled    []string `json:"untitled"`
}

func (c *crawler) checkLayout(u string) {
	got, err := chromedp.Run(c.tab, chromedp.Evaluate[layout](layoutJS))
	require.NoError(c.t, err, u)
	assert.LessOrEqual(c.t, got.ScrollWidth, min(crawlWidth, got.ClientWidth), "%s: horizontal scroll", u)
	assert.Empty(c.t, got.Bad, "%s: controls outside the window or clipped", u)
	assert.Empty(c.t, got.Untitled, "%s: ellipsized ids without their full text as title", u)
}

// pageKinds names a page by its route, for its screenshot: the first page
// of each kind the admin's crawl reaches (the README's pictures).
var pageKinds = []struct {
	re   *regexp.Regexp
	name string
}{
	{regexp.MustCompile(`^/console/?$`), "overview"},
	{regexp.MustCompile(`^/console/payments$`), "payments"},
	{regexp.MustCompile(`^/console/payments/[^/]+/[^/]+$`), "payment"},
	{regexp.MustCompile(`^/console/reconciliation$`), "reconciliation"},
	{regexp.MustCompile(`^/console/inbox$`), "inbox"},
	{regexp.MustCompile(`^/console/inbox/delivery$`), "delivery"},
	{regexp.MustCompile(`^/console/payouts$`), "payouts"},
	{regexp.MustCompile(`^/console/payouts/[^/]+/[^/]+$`), "payout"},
	{regexp.MustCompile(`^/console/periods$`), "periods"},
	{regexp.MustCompile(`^/console/projections$`), "projections"},
	{regexp.MustCompile(`^/console/subscriptions$`), "subscriptions"},
	{regexp.MustCompile(`^/console/subscriptions/[^/]+$`), "subscription"},
}

// screenshot saves the window (1280×800) of the first page of each kind.
func (c *crawler) screenshot(u string) {
	if c.shots.dir == "" {
		return
	}
	p, err := url.Parse(u)
	require.NoError(c.t, err)
	if c.shot == nil {
		c.shot = map[string]bool{}
	}
	for _, k := range pageKinds {
		if !k.re.MatchString(p.Path) || c.shot[k.name] {
			continue
		}
		if k.name == "delivery" {
			conflict, err := chromedp.Run(c.tab, chromedp.Evaluate[bool](`document.querySelector("table.compare") !== null`))
			if err != nil || !conflict {
				continue // a conflicting redelivery shows the most
			}
		}
		if k.name == "payment" {
			items, err := chromedp.Run(c.tab, chromedp.Evaluate[bool](`document.querySelector("#items") !== null`))
			if err != nil || !items {
				continue // a payment with an item shows the most
			}
		}
		c.shot[k.name] = true
		png, err := chromedp.Run(c.tab, chromedp.CaptureScreenshot())
		require.NoError(c.t, err)
		require.NoError(c.t, os.WriteFile(filepath.Join(c.shots.dir, k.name+".png"), png, 0o644), fmt.Sprint(k.name))
	}
}

// crawlServer crawls a running server (make demo's) as an admin, with the
// same checks, and takes the README's pictures when ONCELEDGER_SCREENSHOTS=1.
func crawlServer(t *testing.T, base, token string) {
	require.NotEmpty(t, token, "ONCELEDGER_CRAWL_TOKEN: an admin token of %s", base)
	tab := browser(t)
	do(t, tab, chromedp.EmulateViewport(crawlWidth, crawlHeight))
	signInAs(t, tab, base, token)
	cr := &crawler{t: t, tab: tab, base: base, http: httpSession(t, base, token), seen: map[string]bool{}, shots: newShooter(t)}
	cr.crawl()
	assert.Greater(t, cr.pages, 20, "the crawl reached the console's pages")
}
