package console_test

import (
	"encoding/csv"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/console"
)

// client is a browser-like HTTP client: a cookie jar, no redirects
// followed automatically unless asked.
type client struct {
	t   *testing.T
	f   *fixture
	hc  *http.Client
	jar *cookiejar.Jar
}

func (f *fixture) client() *client {
	jar, err := cookiejar.New(nil)
	require.NoError(f.t, err)
	return &client{t: f.t, f: f, jar: jar, hc: &http.Client{Jar: jar}}
}

type resp struct {
	status int
	header http.Header
	body   string
	url    string
}

func (c *client) do(req *http.Request) resp {
	c.t.Helper()
	r, err := c.hc.Do(req)
	require.NoError(c.t, err)
	defer r.Body.Close()
	b, err := io.ReadAll(r.Body)
	require.NoError(c.t, err)
	return resp{status: r.StatusCode, header: r.Header, body: string(b), url: r.Request.URL.String()}
}

func (c *client) get(path string) resp {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodGet, c.f.srv.URL+path, nil)
	require.NoError(c.t, err)
	return c.do(req)
}

func (c *client) post(path string, form url.Values, header ...string) resp {
	c.t.Helper()
	req, err := http.NewRequest(http.MethodPost, c.f.srv.URL+path, strings.NewReader(form.Encode()))
	require.NoError(c.t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return c.do(req)
}

func (c *client) signIn(token string) resp {
	c.t.Helper()
	return c.post("/console/signin", url.Values{"token": {token}})
}

var csrfField = regexp.MustCompile(`name="csrf" value="([^"]+)"`)

// csrf returns the CSRF token of the forms of a page.
func (c *client) csrf(page string) string {
	c.t.Helper()
	m := csrfField.FindStringSubmatch(c.get(page).body)
	require.Len(c.t, m, 2, "page %s has a CSRF field", page)
	return m[1]
}

func TestConsoleSignInSessionAndHeaders(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	c := f.client()

	r := c.get("/console")
	assert.Equal(t, http.StatusOK, r.status)
	assert.True(t, strings.HasSuffix(r.url, "/console/signin"), "sent to sign in: %s", r.url)
	assert.Contains(t, r.header.Get("Content-Security-Policy"), "default-src 'none'")
	assert.Contains(t, r.header.Get("Content-Security-Policy"), "frame-ancestors 'none'")
	assert.NotContains(t, r.header.Get("Content-Security-Policy"), "script-src")
	assert.Equal(t, "DENY", r.header.Get("X-Frame-Options"))
	assert.Equal(t, "same-origin", r.header.Get("Referrer-Policy"))
	assert.Equal(t, "no-store", r.header.Get("Cache-Control"))

	r = c.signIn("wrong")
	assert.Equal(t, http.StatusUnauthorized, r.status)
	assert.Contains(t, r.body, "not one this server accepts")

	// The token goes in the body; the session in a strict cookie.
	req, _ := http.NewRequest(http.MethodPost, f.srv.URL+"/console/signin", strings.NewReader(url.Values{"token": {adminToken}}.Encode()))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	raw, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(req)
	require.NoError(t, err)
	raw.Body.Close()
	assert.Equal(t, http.StatusSeeOther, raw.StatusCode)
	setCookie := raw.Header.Get("Set-Cookie")
	assert.Contains(t, setCookie, "HttpOnly")
	assert.Contains(t, setCookie, "SameSite=Strict")
	assert.Contains(t, setCookie, "Path=/console")
	assert.NotContains(t, setCookie, "Secure", "plain HTTP: not Secure (TLS or SecureCookies turn it on)")
	assert.NotContains(t, setCookie, adminToken)
	assert.NotContains(t, raw.Header.Get("Location"), adminToken)

	r = c.signIn(adminToken)
	assert.Equal(t, http.StatusOK, r.status)
	assert.Contains(t, r.body, "Signed in as <strong id=\"actor\">ops</strong> (admin)")
	for _, page := range []string{"/console", "/console/payments", "/console/reconciliation", "/console/inbox",
		"/console/payouts", "/console/periods", "/console/projections"} {
		r := c.get(page)
		assert.Equal(t, http.StatusOK, r.status, page)
		assert.Contains(t, r.body, "<h1>", page)
	}

	// Sign-out needs the CSRF token, and ends the session server-side.
	r = c.post("/console/signout", url.Values{})
	assert.Equal(t, http.StatusForbidden, r.status)
	token := c.csrf("/console")
	cookies := c.jar.Cookies(mustURL(t, f.srv.URL+"/console"))
	require.Len(t, cookies, 1)
	r = c.post("/console/signout", url.Values{"csrf": {token}})
	assert.True(t, strings.HasSuffix(r.url, "/console/signin"))
	// A copy of the old cookie is worthless now.
	replay := f.client()
	replay.jar.SetCookies(mustURL(t, f.srv.URL+"/console"), cookies)
	r = replay.get("/console")
	assert.True(t, strings.HasSuffix(r.url, "/console/signin"), "the signed-out session is gone: %s", r.url)
}

func TestConsoleSessionEndsWhenTokenIsRemoved(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	c := f.client()
	c.signIn(readToken)
	cookies := c.jar.Cookies(mustURL(t, f.srv.URL+"/console"))
	require.Len(t, cookies, 1)

	// Another server over the same sessions, where alice's token is gone.
	other := newConsoleServer(t, f, "", "ops="+adminToken)
	hc := &http.Client{Jar: mustJar(t)}
	hc.Jar.SetCookies(mustURL(t, other.URL+"/console"), cookies)
	r, err := hc.Get(other.URL + "/console")
	require.NoError(t, err)
	r.Body.Close()
	assert.True(t, strings.HasSuffix(r.Request.URL.Path, "/console/signin"))
}

func TestConsoleActingRules(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	s := f.seedStory()
	item := url.Values{
		"stream_id": {"payment-standard-" + s.paymentID}, "kind": {"conflicting_redelivery"},
		"item_key": {s.conflictKey}, "note": {"checked with the provider"},
	}

	reader := f.client()
	reader.signIn(readToken)
	page := reader.get("/console/reconciliation")
	assert.NotContains(t, page.body, `action="/console/reconciliation/resolve"`, "no acting forms for a read token")
	form := clone(item)
	form.Set("csrf", reader.csrf("/console"))
	r := reader.post("/console/reconciliation/resolve", form)
	assert.Equal(t, http.StatusForbidden, r.status)
	assert.Contains(t, r.body, "may read but not act")

	admin := f.client()
	admin.signIn(adminToken)
	r = admin.post("/console/reconciliation/resolve", item)
	assert.Equal(t, http.StatusForbidden, r.status, "no CSRF token")
	assert.Contains(t, r.body, "CSRF")
	form = clone(item)
	form.Set("csrf", reader.csrf("/console"))
	r = admin.post("/console/reconciliation/resolve", form)
	assert.Equal(t, http.StatusForbidden, r.status, "another session's CSRF token")

	form.Set("csrf", admin.csrf("/console"))
	r = admin.post("/console/reconciliation/resolve", form, "Sec-Fetch-Site", "cross-site", "Origin", "https://evil.example")
	assert.Equal(t, http.StatusForbidden, r.status, "a cross-site POST, even with a token")
	assert.Contains(t, r.body, "Cross-origin request refused")

	form.Set("note", "")
	r = admin.post("/console/reconciliation/resolve", form)
	assert.Equal(t, http.StatusBadRequest, r.status, "a note is required")
	assert.Empty(t, f.recon.snapshot())

	form.Set("note", "checked with the provider")
	form.Set("return", "https://evil.example/")
	r = admin.post("/console/reconciliation/resolve", form)
	assert.Equal(t, http.StatusOK, r.status)
	assert.Contains(t, r.url, f.srv.URL+"/console/reconciliation?done=resolved", "no open redirect")
	assert.Contains(t, r.body, "The item was resolved")
	assert.Contains(t, r.body, `<strong id="notice-item">conflicting_redelivery `+s.conflictKey+` of payment-standard-`+s.paymentID+`</strong>`,
		"the confirmation names the item")
	f.waitProjected()
	r = admin.get("/console/reconciliation?status=resolved")
	// The test double records reconciliation.cleared: the facts resolved it.
	assert.Regexp(t, `\d\d:\d\d:\d\d\x{a0}UTC</time>, by the facts`, r.body, "resolved items say when and by whom")
	assert.Equal(t, []reconCall{{Resolve: true, Item: console.ItemRef{StreamID: "payment-standard-" + s.paymentID,
		Kind: "conflicting_redelivery", Key: s.conflictKey}, Actor: "ops", Note: "checked with the provider"}}, f.recon.snapshot())
}

func TestConsoleActionsNotConfigured(t *testing.T) {
	f := newFixture(t, fixtureOptions{noActions: true})
	c := f.client()
	c.signIn(adminToken)
	token := c.csrf("/console")
	r := c.post("/console/reconciliation/resolve", url.Values{"csrf": {token}, "stream_id": {"s"}, "kind": {"k"}, "item_key": {"i"}, "note": {"n"}})
	assert.Equal(t, http.StatusServiceUnavailable, r.status)
	assert.Contains(t, r.body, "not configured")
	r = c.post("/console/inbox/redrive", url.Values{"csrf": {token}, "scope": {"all"}})
	assert.Equal(t, http.StatusServiceUnavailable, r.status)
	assert.Contains(t, r.body, "not configured")
}

func TestConsoleListsPageAndExport(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	s := f.seedStory()
	c := f.client()
	c.signIn(readToken)

	// Keyset pages of 5 cover every payment once.
	seen := map[string]bool{}
	next := "/console/payments"
	pages := 0
	linkRe := regexp.MustCompile(`href="/console/payments/standard/([^"]+)"`)
	nextRe := regexp.MustCompile(`href="(/console/payments\?[^"]*cursor=[^"]+)" rel="next"`)
	for next != "" {
		pages++
		r := c.get(strings.ReplaceAll(next, "&amp;", "&"))
		require.Equal(t, http.StatusOK, r.status)
		for _, m := range linkRe.FindAllStringSubmatch(r.body, -1) {
			assert.False(t, seen[m[1]], "payment %s listed twice", m[1])
			seen[m[1]] = true
		}
		next = ""
		if m := nextRe.FindStringSubmatch(r.body); m != nil {
			next = m[1]
		}
	}
	assert.Len(t, seen, 9, "7 + the story's payment + the orphan refund's")
	assert.Equal(t, 2, pages)

	r := c.get("/console/payments?cursor=bm90LWEtY3Vyc29y")
	assert.Equal(t, http.StatusBadRequest, r.status)
	r = c.get("/console/payments?currency=dollars")
	assert.Equal(t, http.StatusBadRequest, r.status)
	assert.Contains(t, r.body, "currency")

	r = c.get("/console/payments?payment_id=" + s.paymentID)
	assert.Contains(t, r.body, s.paymentID)
	assert.NotContains(t, r.body, "pay_more_")

	// CSV: every matching row, provider text neutralized, amounts numeric.
	f.deliver("msg_formula", "payment.captured", map[string]any{"payment_id": "=HYPERLINK(1)", "capture_id": "cap_x", "amount": 700, "currency": "USD"})
	f.waitProjected()
	r = c.get("/console/payments?format=csv")
	require.Equal(t, http.StatusOK, r.status)
	assert.Contains(t, r.header.Get("Content-Type"), "text/csv")
	assert.Contains(t, r.header.Get("Content-Disposition"), "attachment")
	recs, err := csv.NewReader(strings.NewReader(r.body)).ReadAll()
	require.NoError(t, err)
	require.Len(t, recs, 11, "header + 10 payments")
	var formula []string
	for _, rec := range recs {
		if strings.Contains(rec[1], "HYPERLINK") {
			formula = rec
		}
	}
	require.NotNil(t, formula)
	assert.Equal(t, "'=HYPERLINK(1)", formula[1])
	assert.Equal(t, "700", formula[5])

	for _, page := range []string{"/console/reconciliation?status=all&format=csv", "/console/inbox?format=csv", "/console/payouts?format=csv"} {
		r := c.get(page)
		assert.Equal(t, http.StatusOK, r.status, page)
		recs, err := csv.NewReader(strings.NewReader(r.body)).ReadAll()
		require.NoError(t, err, page)
		assert.Greater(t, len(recs), 1, page)
	}
}

func TestConsoleTimelineInboxAndRedrive(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	s := f.seedStory()
	c := f.client()
	c.signIn(adminToken)

	r := c.get("/console/payments/standard/" + s.paymentID)
	require.Equal(t, http.StatusOK, r.status)
	for _, want := range []string{"payment.captured", "refund.posted", "reconciliation.flagged", "revenue:sales",
		"Capture cap_1 of 1\u202f250.00 USD", s.conflictKey, "Raw payload", "conflicting_redelivery", `action="/console/reconciliation/resolve"`} {
		assert.Contains(t, r.body, want)
	}
	assert.Equal(t, http.StatusNotFound, c.get("/console/payments/standard/nope").status)

	// An id with a slash and other URL characters: the list links to it and
	// the link opens it.
	odd := "ord/42?x=1&y=<b>"
	f.deliver("msg_odd", "payment.captured", map[string]any{"payment_id": odd, "capture_id": "cap_odd", "amount": 100, "currency": "USD"})
	f.waitProjected()
	list := c.get("/console/payments?payment_id=" + url.QueryEscape("ord/"))
	link := regexp.MustCompile(`href="(/console/payments/standard/[^"]+)"`).FindStringSubmatch(list.body)
	require.Len(t, link, 2, list.body)
	r = c.get(strings.ReplaceAll(link[1], "&amp;", "&"))
	require.Equal(t, http.StatusOK, r.status)
	assert.Contains(t, r.body, `<span id="payment-id">ord/42?x=1&amp;y=&lt;b&gt;</span>`)

	r = c.get("/console/inbox?status=ignored")
	require.Equal(t, http.StatusOK, r.status)
	assert.Contains(t, r.body, s.ignoredKey)
	assert.Contains(t, r.body, "ignored <strong>1</strong>")
	m := regexp.MustCompile(`name="key" value="([^"]+)"`).FindStringSubmatch(r.body)
	require.Len(t, m, 2)
	token := c.csrf("/console")
	r = c.post("/console/inbox/redrive", url.Values{"csrf": {token}, "status": {"ignored"}, "scope": {"selected"}, "key": {m[1]}})
	require.Equal(t, http.StatusOK, r.status)
	assert.Contains(t, r.body, "1 considered")
	reqs := f.redrive.snapshot()
	require.Len(t, reqs, 1)
	assert.Equal(t, []console.DeliveryRef{{Provider: "standard", DedupKey: s.ignoredKey}}, reqs[0].Keys)
	assert.Equal(t, "ops", reqs[0].Actor)
	assert.Equal(t, "ignored", reqs[0].Filter.Status)

	r = c.post("/console/inbox/redrive", url.Values{"csrf": {token}, "scope": {"selected"}, "key": {"forged"}})
	assert.Equal(t, http.StatusBadRequest, r.status)

	r = c.get("/console/inbox/delivery?provider=standard&key=" + url.QueryEscape(s.conflictKey))
	require.Equal(t, http.StatusOK, r.status)
	assert.Contains(t, r.body, "Conflicting redeliveries")
	assert.Contains(t, r.body, "126000")
}

func clone(v url.Values) url.Values {
	out := url.Values{}
	for k, vs := range v {
		out[k] = append([]string(nil), vs...)
	}
	return out
}

func mustURL(t *testing.T, s string) *url.URL {
	u, err := url.Parse(s)
	require.NoError(t, err)
	return u
}

func mustJar(t *testing.T) *cookiejar.Jar {
	j, err := cookiejar.New(nil)
	require.NoError(t, err)
	return j
}
