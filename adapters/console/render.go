package console

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"html/template"
	"io/fs"
	"net/http"
	"net/url"
	"path"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/params"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/projections/views"
)

type pageTemplate struct{ t *template.Template }

// parsePages parses each page of templates/ together with the layout.
func parsePages(zone *time.Location) (map[string]*pageTemplate, error) {
	base, err := template.New("layout.html").Funcs(funcs).Funcs(zoneFuncs(zone)).ParseFS(templateFS, "templates/layout.html", "templates/partials.html")
	if err != nil {
		return nil, fmt.Errorf("console: parse layout: %w", err)
	}
	names, err := fs.Glob(templateFS, "templates/*.html")
	if err != nil {
		return nil, err
	}
	out := map[string]*pageTemplate{}
	for _, n := range names {
		name := strings.TrimSuffix(path.Base(n), ".html")
		if name == "layout" || name == "partials" {
			continue
		}
		t, err := template.Must(base.Clone()).ParseFS(templateFS, n)
		if err != nil {
			return nil, fmt.Errorf("console: parse %s: %w", n, err)
		}
		out[name] = &pageTemplate{t: t}
	}
	return out, nil
}

var funcs = template.FuncMap{
	// amount takes the currency as a string or a money.Currency (the
	// views carry both).
	"amount": func(minor int64, currency any) string {
		return formatAmount(minor, money.Currency(fmt.Sprint(currency)))
	},
	// group writes a count or a position with the console's one digit
	// grouping (groupDigits).
	"group": func(n any) string { return groupDigits(fmt.Sprint(n)) },
	"age": func(t time.Time) string {
		if t.IsZero() {
			return "–"
		}
		return humanAge(time.Since(t))
	},
	"pathesc": url.PathEscape,
	"minus":   func(a, b int64) int64 { return a - b },
	"kindMeans": func(kind string) string {
		h, _ := helpOf(kind)
		return h.Means
	},
	// otherFees are a payment's fees in currencies other than its own (a
	// settlement's fee in the account's currency).
	"otherFees": func(fees []views.CurrencyAmount, currency string) []views.CurrencyAmount {
		var out []views.CurrencyAmount
		for _, f := range fees {
			if f.Currency != currency && f.Amount != 0 {
				out = append(out, f)
			}
		}
		return out
	},
	// clip shortens a long text to n runes with an ellipsis (the whole of
	// it goes in a title): a receiver's error body made each attempt's row
	// a screen tall (issue 39).
	"clip": func(s string, n int) string {
		if r := []rune(s); len(r) > n {
			return string(r[:n]) + "…"
		}
		return s
	},
	"actionForm": func(it views.ReconciliationItem, csrf, ret string) actionForm {
		sum := sha256.Sum256([]byte(it.StreamID + "\x00" + it.Kind + "\x00" + it.Key))
		return actionForm{Item: it, CSRF: csrf, Return: ret, ID: hex.EncodeToString(sum[:6])}
	},
	"payload":      func(b []byte) string { return payloadText(b) },
	"indent":       indentJSON,
	"itemDetails":  itemDetails,
	"itemHref":     itemHref,
	"itemSubject":  itemSubjectID,
	"deliveryHref": deliveryHref,
	"periodForm": func(pi views.PeriodInfo, csrf string) periodFormData {
		return periodFormData{Info: pi, CSRF: csrf}
	},
	"compare":  compareFields,
	"slice_of": func(v ...string) []string { return v },
	"negative": func(n int64) bool { return n < 0 },
	"abs": func(n int64) int64 {
		if n < 0 {
			return -n
		}
		return n
	},
	// The subscriptions pages (subscriptions.go).
	"subscriptionForms": newSubscriptionForms,
	// The bank pages (bank.go): a balance the format may not state.
	"deref":   func(p *int64) int64 { return *p },
	"bankDay": bankDay,
}

// digitGroup separates groups of three digits everywhere the console shows
// a number: a narrow no-break space (U+202F), the thin space of ISO 80000 and
// SI, neutral between locales that write 1,000.00 and 1.000,00 and never a
// line break inside a number. Exports and the API keep plain digits.
const digitGroup = "\u202f"

// groupDigits groups the integer part of a decimal text ("-1234567.89" →
// "-1 234 567.89").
func groupDigits(s string) string {
	sign, rest := "", s
	if strings.HasPrefix(rest, "-") {
		sign, rest = "-", rest[1:]
	}
	intPart, frac, hasFrac := strings.Cut(rest, ".")
	if len(intPart) <= 3 || strings.Trim(intPart, "0123456789") != "" {
		return s
	}
	var b strings.Builder
	b.WriteString(sign)
	for i, r := range intPart {
		if i > 0 && (len(intPart)-i)%3 == 0 {
			b.WriteString(digitGroup)
		}
		b.WriteRune(r)
	}
	if hasFrac {
		b.WriteString("." + frac)
	}
	return b.String()
}

// formatAmount writes minor units of c in major units, grouped; without a
// currency, the minor units.
func formatAmount(minor int64, c money.Currency) string {
	if c == "" {
		return groupDigits(fmt.Sprint(minor))
	}
	return groupDigits(money.FormatMinor(minor, c))
}

// zoneFuncs write times in the console's zone (Config.Zone), the zone
// named after each time ("2026-03-01 09:30:00 CET", "… UTC"); the full
// RFC 3339 instant is the element's title where a template wants it.
func zoneFuncs(zone *time.Location) template.FuncMap {
	return template.FuncMap{
		// time is a <time> element (never wrapped, see console.css) with
		// the instant in RFC 3339 UTC as its datetime.
		"time": func(t time.Time) template.HTML {
			if t.IsZero() {
				return "–"
			}
			return template.HTML(`<time datetime="` + t.UTC().Format(time.RFC3339) + `">` +
				t.In(zone).Format("2006-01-02\u00a015:04:05\u00a0MST") + `</time>`)
		},
		"date": func(t time.Time) string {
			if t.IsZero() {
				return ""
			}
			return t.In(zone).Format("2006-01-02")
		},
		"zone": func() string { return zone.String() },
	}
}

func humanAge(d time.Duration) string {
	switch {
	case d < time.Minute:
		return "just now"
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d.Minutes()))
	case d < 48*time.Hour:
		return fmt.Sprintf("%d h", int(d.Hours()))
	}
	return fmt.Sprintf("%d days", int(d.Hours()/24))
}

// payloadText shows a stored body: as text when it is UTF-8 (JSON, form
// encoding), else as a hex dump note. html/template escapes it.
func payloadText(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	return fmt.Sprintf("(%d bytes, not UTF-8) %x", len(b), b)
}

// itemDetails is an item's details with the operator's last word on it,
// after what the facts said.
func itemDetails(it views.ReconciliationItem) string {
	switch {
	case it.ResolvedBy != "":
		return fmt.Sprintf("%s — resolved by %s: %s", it.Details, it.ResolvedBy, it.Note)
	case it.Note != "":
		return fmt.Sprintf("%s — reopened: %s", it.Details, it.Note)
	}
	return it.Details
}

// itemHref is the page of what an item is about: its payout's page for an
// item of a payout's stream (a payout's missing_webhook, payout_mismatch),
// else its payment's.
//
// A payout's item names no payment (its payment_id is empty): the payout's
// id is the rest of its stream id, and linking with the empty payment id
// led to "/console/payouts/standard/", a 404 (issue 39). An item whose
// subject cannot be told links nowhere ("").
func itemHref(it views.ReconciliationItem) string {
	page, id := itemSubject(it)
	if id == "" {
		return ""
	}
	return Prefix + page + url.PathEscape(it.Provider) + "/" + url.PathEscape(id)
}

// itemSubject is the page kind ("/payments/" or "/payouts/") and the id of
// what an item is about.
func itemSubject(it views.ReconciliationItem) (page, id string) {
	if rest, ok := strings.CutPrefix(it.StreamID, delivery.PayoutStreamPrefix+it.Provider+"-"); ok {
		return "/payouts/", rest
	}
	return "/payments/", it.PaymentID
}

// itemSubjectID is the id itemHref links to, for the link's text.
func itemSubjectID(it views.ReconciliationItem) string {
	_, id := itemSubject(it)
	return id
}

// indentJSON shows stored JSON indented (as it is when it is not JSON).
func indentJSON(b []byte) string {
	var out bytes.Buffer
	if json.Indent(&out, b, "", "  ") != nil {
		return string(b)
	}
	return out.String()
}

// actionForm is what the resolve/reopen form of one item needs.
type actionForm struct {
	Item   views.ReconciliationItem
	CSRF   string
	Return string // where to go back to after acting
	ID     string // unique on the page, for the note's label
}

// page is what every template gets.
type page struct {
	Title    string
	Nav      string
	SignedIn bool
	Actor    string
	Role     string
	CanAct   bool
	CSRF     string
	Notice   string
	// NoticeItem names the item the notice is about ("kind key of
	// stream"), parsed from ?item= as a reconciliation id; "" otherwise.
	NoticeItem string
	Data       any
}

var navTitles = map[string]string{
	"expected": "expected",
	"overview": "overview", "payments": "payments", "payment": "payments", "search": "payments", "reconciliation": "reconciliation",
	"inbox": "inbox", "delivery": "inbox", "redrive": "inbox", "payouts": "payouts", "payout": "payouts", "periods": "periods",
	"projections":   "projections",
	"subscriptions": "subscriptions", "subscription": "subscriptions",
	"bank": "bank", "bankaccount": "bank", // bank.go
	"providerdays": "providerdays", "assertions": "assertions", "adjust": "reconciliation",
}

func (c *consoleServer) render(w http.ResponseWriter, r *http.Request, status int, name, title string, data any) {
	t, ok := c.pages[name]
	if !ok {
		c.errorPage(w, r, fmt.Errorf("console: no template %q", name), http.StatusInternalServerError, "")
		return
	}
	v := viewerOf(r)
	p := page{
		Title: title, Nav: navTitles[name], SignedIn: v.Actor != "", Actor: v.Actor, Role: string(v.Role),
		CanAct: v.CanAct(), CSRF: v.csrf, Data: data, Notice: notices[r.URL.Query().Get("done")],
	}
	if p.Notice != "" {
		if stream, kind, key, err := views.ParseReconciliationID(r.URL.Query().Get("item")); err == nil {
			p.NoticeItem = fmt.Sprintf("%s %s of %s", kind, key, stream)
		}
	}
	var buf bytes.Buffer
	if err := t.t.ExecuteTemplate(&buf, "layout.html", p); err != nil {
		c.cfg.Logger.Error("console: render", "page", name, "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(buf.Bytes())
}

// notices are the fixed messages a redirect after an action may ask for
// (?done=…); nothing from the URL is reflected into the page.
var notices = map[string]string{
	"resolved": "The item was resolved; the action is recorded as an event with your name and note.",
	"reopened": "The item was reopened; the action is recorded as an event with your name and note.",
	// The server is behind (awaitItem): the action is durable, the page
	// does not show it yet.
	"resolved-pending": "The item's resolution is recorded as an event with your name and note; the server is behind and is still applying it: reload in a moment.",
	"reopened-pending": "The item's reopening is recorded as an event with your name and note; the server is behind and is still applying it: reload in a moment.",
	// bulk.go
	"bulk-resolved":         "The items were resolved with your note; each action is recorded as an event with your name.",
	"bulk-reopened":         "The items were reopened with your note; each action is recorded as an event with your name.",
	"bulk-resolved-pending": "The items' resolutions are recorded as events with your name and note; the server is behind and is still applying them: reload in a moment.",
	"bulk-reopened-pending": "The items' reopenings are recorded as events with your name and note; the server is behind and is still applying them: reload in a moment.",
	// periodactions.go
	"period-closed":           "The period was closed: its trial balance is frozen. The action is recorded as an event with your name and note.",
	"period-reopened":         "The period was reopened: entries can be booked into it again. The action is recorded as an event with your name and reason.",
	"period-closed-pending":   "The period's close is recorded as an event with your name and note; the server is behind and is still applying it: reload in a moment.",
	"period-reopened-pending": "The period's reopening is recorded as an event with your name and reason; the server is behind and is still applying it: reload in a moment.",
	// subscriptions.go
	"enabled":   "The subscription was re-enabled: it resumes where it stopped. The action is recorded with your name and note.",
	"replaying": "The replay is under way: those events are sent again with the same ids, beside the live ones. The action is recorded with your name and note.",
	// balances.go
	"adjusted": "The adjustment was posted and resolves the item; it is recorded as an event with your name and note.",
	"opened":   "The opening balance was recorded as an event with your name and note.",
}

var (
	errBadParam      = params.ErrBadParameter
	errNotConfigured = errors.New("not configured on this server")
)

// statusFor maps an error to the console's HTTP status: the one place
// that does.
func statusFor(err error) int {
	switch {
	case errors.Is(err, errBadParam), errors.Is(err, errBadCursor), errors.Is(err, ErrInvalid):
		return http.StatusBadRequest
	case errors.Is(err, ErrNotFound):
		return http.StatusNotFound
	case errors.Is(err, ErrConflict):
		return http.StatusConflict
	case errors.Is(err, errNotConfigured), errors.Is(err, eventstore.ErrUnavailable),
		errors.Is(err, context.DeadlineExceeded):
		return http.StatusServiceUnavailable
	}
	return http.StatusInternalServerError
}

type errorData struct {
	Status  int
	Heading string
	Message string
}

// errorPage answers with an error page. With status 0 the status comes from
// err; msg defaults to err's text for client errors and to a generic
// sentence for server errors (whose detail goes to the log only).
func (c *consoleServer) errorPage(w http.ResponseWriter, r *http.Request, err error, status int, msg string) {
	if status == 0 {
		status = statusFor(err)
	}
	if msg == "" {
		switch {
		case status == http.StatusServiceUnavailable && errors.Is(err, errNotConfigured):
			msg = err.Error()
		case status == http.StatusServiceUnavailable:
			msg = "The ledger's database is unavailable right now; try again shortly."
		case status >= 500:
			msg = "Something went wrong on the server; the details are in its log."
		case err != nil:
			msg = err.Error()
		}
	}
	if status >= 500 && err != nil {
		c.cfg.Logger.Error("console", "path", r.URL.Path, "status", status, "err", err)
	}
	c.render(w, r, status, "error", http.StatusText(status), errorData{Status: status, Heading: http.StatusText(status), Message: msg})
}

// periodFormData is the close or reopen form of one period.
type periodFormData struct {
	Info views.PeriodInfo
	CSRF string
}
