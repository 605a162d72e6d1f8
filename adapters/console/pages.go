package console

import (
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"golang.org/x/sync/errgroup"

	"github.com/onceledger/onceledger/adapters/csvexport"
	"github.com/onceledger/onceledger/domain/money"
)

// exportPage is how many rows a CSV export reads per query.
const exportPage = 1000

// ---- parameters ----

type params struct {
	q   url.Values
	err error
}

func paramsOf(r *http.Request) *params { return &params{q: r.URL.Query()} }

func (p *params) fail(name, format string, args ...any) {
	if p.err == nil {
		p.err = fmt.Errorf("%w: %s: %s", errBadParam, name, fmt.Sprintf(format, args...))
	}
}

// text returns a free-text parameter, bounded.
func (p *params) text(name string) string {
	v := strings.TrimSpace(p.q.Get(name))
	if len(v) > 512 || !utf8.ValidString(v) {
		p.fail(name, "too long or not UTF-8")
		return ""
	}
	return v
}

// oneOf returns a parameter that must be one of allowed (or empty).
func (p *params) oneOf(name string, allowed ...string) string {
	v := p.q.Get(name)
	if v != "" && !slices.Contains(allowed, v) {
		p.fail(name, "must be one of %s, got %q", strings.Join(allowed, ", "), v)
		return ""
	}
	return v
}

func (p *params) currency(name string) string {
	v := p.q.Get(name)
	if v == "" {
		return ""
	}
	c, err := money.ParseCurrency(v)
	if err != nil {
		p.fail(name, "%v", err)
		return ""
	}
	return string(c)
}

// day parses a YYYY-MM-DD date (an <input type=date>) as midnight UTC;
// end dates are inclusive, so their bound is the next midnight.
func (p *params) day(name string, end bool) time.Time {
	v := p.q.Get(name)
	if v == "" {
		return time.Time{}
	}
	t, err := time.Parse(time.DateOnly, v)
	if err != nil {
		p.fail(name, "want a date like 2026-11-30, got %q", v)
		return time.Time{}
	}
	if end {
		t = t.AddDate(0, 0, 1)
	}
	return t
}

func (p *params) csv() bool { return p.oneOf("format", "csv") == "csv" }

// filterQuery keeps the filter parameters of a list for its links (next
// page, export), without the cursor.
func filterQuery(q url.Values, names ...string) url.Values {
	out := url.Values{}
	for _, n := range names {
		if v := q.Get(n); v != "" {
			out.Set(n, v)
		}
	}
	return out
}

// list is a page of a list: its rows, the filters, and the links.
type list[T any] struct {
	Rows   []T
	Filter url.Values
	Next   string // URL of the next page, "" on the last
	CSV    string // URL of the CSV export of every matching row
	First  bool   // this is the first page
}

func newList[T any](base string, filter url.Values, rows []T, limit int, key func(T) any, first bool) list[T] {
	l := list[T]{Filter: filter, First: first}
	exp := url.Values{}
	for k, v := range filter {
		exp[k] = v
	}
	exp.Set("format", "csv")
	l.CSV = base + "?" + exp.Encode()
	if len(rows) > limit {
		rows = rows[:limit]
		next := url.Values{}
		for k, v := range filter {
			next[k] = v
		}
		next.Set("cursor", encodeCursor(key(rows[len(rows)-1])))
		l.Next = base + "?" + next.Encode()
	}
	l.Rows = rows
	return l
}

// startCSV sets the headers of a CSV download.
func startCSV(w http.ResponseWriter, name string, cols ...csvexport.Column) *csvexport.Writer {
	w.Header().Set("Content-Type", "text/csv; charset=utf-8; header=present")
	w.Header().Set("Content-Disposition", fmt.Sprintf(`attachment; filename="%s-%s.csv"`, name, time.Now().UTC().Format("20060102T150405Z")))
	return csvexport.NewWriter(w, cols...)
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func dec(n int64, currency string) string {
	if currency == "" {
		return ""
	}
	return money.FormatMinor(n, money.Currency(currency))
}

func rfc3339(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339Nano)
}

// ---- overview ----

type overviewData struct {
	Overview
	RebuildRunning bool
	MaxLag         int64
	InboxProviders []string
	InboxStatuses  []string
	InboxGrid      map[string]map[string]int64
	VolumeCharts   []chartView
	InboxChart     chartView
	Days           int
}

func (c *consoleServer) overview(w http.ResponseWriter, r *http.Request) {
	to := c.cfg.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 1)
	from := to.AddDate(0, 0, -chartDays)
	var (
		ov  Overview
		vol []DayVolume
		mix []DayOutcome
	)
	// The three reads are independent: side by side, the page takes as
	// long as the slowest.
	g, ctx := errgroup.WithContext(r.Context())
	g.Go(func() (err error) { ov, err = c.cfg.Read.Overview(ctx); return err })
	g.Go(func() (err error) { vol, err = c.cfg.Read.DailyVolume(ctx, from, to); return err })
	g.Go(func() (err error) { mix, err = c.cfg.Read.InboxMix(ctx, from, to); return err })
	if err := g.Wait(); err != nil {
		c.errorPage(w, r, err, 0, "")
		return
	}
	d := overviewData{Overview: ov, InboxGrid: map[string]map[string]int64{}, Days: chartDays}
	for _, p := range ov.Projections {
		d.RebuildRunning = d.RebuildRunning || p.Status == "rebuilding"
		d.MaxLag = max(d.MaxLag, p.Lag)
	}
	for _, ic := range ov.Inbox {
		if d.InboxGrid[ic.Provider] == nil {
			d.InboxGrid[ic.Provider] = map[string]int64{}
			d.InboxProviders = append(d.InboxProviders, ic.Provider)
		}
		d.InboxGrid[ic.Provider][ic.Status] += ic.Count
		if !slices.Contains(d.InboxStatuses, ic.Status) {
			d.InboxStatuses = append(d.InboxStatuses, ic.Status)
		}
	}
	slices.Sort(d.InboxProviders)
	slices.Sort(d.InboxStatuses)
	d.VolumeCharts = volumeCharts(from, vol)
	d.InboxChart = inboxChart(from, mix)
	c.render(w, r, http.StatusOK, "overview", "Overview", d)
}

// ---- payments ----

var paymentStatuses = []string{"pending", "authorized", "failed", "canceled", "captured", "partially_refunded", "refunded", "disputed", "dispute_lost"}

type paymentsData struct {
	list[Payment]
	Statuses []string
}

func (c *consoleServer) payments(w http.ResponseWriter, r *http.Request) {
	p := paramsOf(r)
	f := PaymentFilter{
		Provider: p.text("provider"), PaymentID: p.text("payment_id"), Status: p.oneOf("status", paymentStatuses...),
		Currency: p.currency("currency"), From: p.day("from", false), To: p.day("to", true),
	}
	after, err := decodeCursor[PaymentKey](p.q.Get("cursor"))
	asCSV := p.csv()
	if p.err != nil || err != nil {
		c.errorPage(w, r, firstErr(p.err, err), 0, "")
		return
	}
	if asCSV {
		c.exportPayments(w, r, f)
		return
	}
	f.After, f.Limit = after, c.cfg.PageSize+1
	rows, err := c.cfg.Read.Payments(r.Context(), f)
	if err != nil {
		c.errorPage(w, r, err, 0, "")
		return
	}
	filter := filterQuery(p.q, "provider", "payment_id", "status", "currency", "from", "to")
	l := newList(Prefix+"/payments", filter, rows, c.cfg.PageSize, func(x Payment) any { return x.Key() }, after == nil)
	c.render(w, r, http.StatusOK, "payments", "Payments", paymentsData{list: l, Statuses: paymentStatuses})
}

func (c *consoleServer) exportPayments(w http.ResponseWriter, r *http.Request, f PaymentFilter) {
	out := startCSV(w, "payments",
		csvexport.Text("provider"), csvexport.Text("payment_id"), csvexport.Text("status"), csvexport.Text("currency"),
		csvexport.Amount("authorized"), csvexport.Amount("captured"), csvexport.Amount("fee"), csvexport.Amount("refunded"),
		csvexport.Amount("refund_pending"), csvexport.Amount("dispute_open"), csvexport.Amount("dispute_lost"),
		csvexport.Text("version"), csvexport.Text("updated_at"))
	f.Limit = exportPage
	for {
		rows, err := c.cfg.Read.Payments(r.Context(), f)
		if err != nil {
			c.cfg.Logger.Error("console: export payments", "err", err)
			return // the download ends short; the status is already sent
		}
		for _, x := range rows {
			_ = out.Write(x.Provider, x.PaymentID, x.Status, x.Currency, itoa(x.Authorized), itoa(x.Captured), itoa(x.Fee),
				itoa(x.Refunded), itoa(x.RefundPending), itoa(x.DisputeOpen), itoa(x.DisputeLost),
				strconv.FormatUint(x.Version, 10), rfc3339(x.UpdatedAt))
		}
		if len(rows) < exportPage {
			break
		}
		k := rows[len(rows)-1].Key()
		f.After = &k
	}
	_ = out.Flush()
}

// factView is a fact with the deliveries that carried it.
type factView struct {
	Fact
	Deliveries []Delivery
}

type paymentData struct {
	Timeline
	Facts []factView
	// Other deliveries: those that carried no fact of their own.
	Other []Delivery
}

func (c *consoleServer) payment(w http.ResponseWriter, r *http.Request) {
	provider, id := r.PathValue("provider"), r.PathValue("id")
	t, found, err := c.cfg.Read.Timeline(r.Context(), provider, id)
	if err != nil {
		c.errorPage(w, r, err, 0, "")
		return
	}
	if !found {
		c.errorPage(w, r, nil, http.StatusNotFound, fmt.Sprintf("No payment %s of provider %s.", id, provider))
		return
	}
	d := paymentData{Timeline: t}
	used := map[string]bool{}
	for _, f := range t.Facts {
		fv := factView{Fact: f}
		for _, dl := range t.Deliveries {
			if f.DedupKey != "" && dl.DedupKey == f.DedupKey {
				fv.Deliveries = append(fv.Deliveries, dl)
				used[dl.DedupKey] = true
			}
		}
		d.Facts = append(d.Facts, fv)
	}
	for _, dl := range t.Deliveries {
		if !used[dl.DedupKey] {
			d.Other = append(d.Other, dl)
		}
	}
	c.render(w, r, http.StatusOK, "payment", "Payment "+t.Payment.PaymentID, d)
}

// ---- reconciliation ----

var reconKinds = []string{
	"refund_before_payment", "dispute_before_payment", "over_refund", "over_reversal", "conflicting_redelivery",
	"currency_mismatch", "amount_mismatch", "dispute_outcome_conflict", "missing_webhook", "unsettled",
	"fee_mismatch", "settlement_mismatch", "payout_mismatch",
}

type reconData struct {
	list[ReconItem]
	Kinds  []string
	Status string
	Ages   []ageOption
	Return string
}

type ageOption struct {
	Value, Label string
}

var ages = []ageOption{{"", "any age"}, {"1", "older than 1 day"}, {"7", "older than 7 days"}, {"30", "older than 30 days"}}

func (c *consoleServer) reconciliation(w http.ResponseWriter, r *http.Request) {
	p := paramsOf(r)
	status := p.oneOf("status", "open", "resolved", "all")
	if status == "" {
		status = "open"
		p.q.Set("status", status)
	}
	f := ReconFilter{Kind: p.text("kind"), Provider: p.text("provider")}
	if status != "all" {
		f.Status = status
	}
	if days := p.oneOf("age", "1", "7", "30"); days != "" {
		n, _ := strconv.Atoi(days)
		f.OpenedBefore = c.cfg.Now().Add(-time.Duration(n) * 24 * time.Hour)
	}
	after, err := decodeCursor[ReconKey](p.q.Get("cursor"))
	asCSV := p.csv()
	if p.err != nil || err != nil {
		c.errorPage(w, r, firstErr(p.err, err), 0, "")
		return
	}
	if asCSV {
		c.exportRecon(w, r, f)
		return
	}
	f.After, f.Limit = after, c.cfg.PageSize+1
	rows, err := c.cfg.Read.ReconItems(r.Context(), f)
	if err != nil {
		c.errorPage(w, r, err, 0, "")
		return
	}
	filter := filterQuery(p.q, "status", "kind", "provider", "age")
	l := newList(Prefix+"/reconciliation", filter, rows, c.cfg.PageSize, func(x ReconItem) any { return x.Key() }, after == nil)
	c.render(w, r, http.StatusOK, "reconciliation", "Reconciliation", reconData{
		list: l, Kinds: reconKinds, Status: status, Ages: ages, Return: r.URL.RequestURI(),
	})
}

func (c *consoleServer) exportRecon(w http.ResponseWriter, r *http.Request, f ReconFilter) {
	out := startCSV(w, "reconciliation",
		csvexport.Text("stream_id"), csvexport.Text("kind"), csvexport.Text("item_key"), csvexport.Text("status"),
		csvexport.Text("provider"), csvexport.Text("payment_id"), csvexport.Text("details"),
		csvexport.Text("opened_at"), csvexport.Text("resolved_at"))
	f.Limit = exportPage
	for {
		rows, err := c.cfg.Read.ReconItems(r.Context(), f)
		if err != nil {
			c.cfg.Logger.Error("console: export reconciliation", "err", err)
			return
		}
		for _, x := range rows {
			_ = out.Write(x.Ref.StreamID, x.Ref.Kind, x.Ref.Key, x.Status, x.Provider, x.PaymentID, x.Details,
				rfc3339(x.OpenedAt), rfc3339(x.ResolvedAt))
		}
		if len(rows) < exportPage {
			break
		}
		k := rows[len(rows)-1].Key()
		f.After = &k
	}
	_ = out.Flush()
}

func (c *consoleServer) resolve(w http.ResponseWriter, r *http.Request) { c.reconAction(w, r, true) }
func (c *consoleServer) reopen(w http.ResponseWriter, r *http.Request)  { c.reconAction(w, r, false) }

// maxNote bounds a note: it is stored in an event forever.
const maxNote = 1000

func (c *consoleServer) reconAction(w http.ResponseWriter, r *http.Request, resolve bool) {
	if c.cfg.Recon == nil {
		c.errorPage(w, r, fmt.Errorf("resolving and reopening reconciliation items is %w", errNotConfigured), 0, "")
		return
	}
	f := r.PostForm
	ref := ItemRef{StreamID: f.Get("stream_id"), Kind: f.Get("kind"), Key: f.Get("item_key")}
	note := strings.TrimSpace(f.Get("note"))
	switch {
	case ref.StreamID == "" || ref.Kind == "" || ref.Key == "":
		c.errorPage(w, r, nil, http.StatusBadRequest, "The form names no reconciliation item.")
		return
	case note == "":
		c.errorPage(w, r, nil, http.StatusBadRequest, "A note is required: say why.")
		return
	case utf8.RuneCountInString(note) > maxNote || !utf8.ValidString(note):
		c.errorPage(w, r, nil, http.StatusBadRequest, fmt.Sprintf("The note must be UTF-8 text of at most %d characters.", maxNote))
		return
	}
	actor := viewerOf(r).Actor
	var err error
	done := "resolved"
	if resolve {
		err = c.cfg.Recon.Resolve(r.Context(), ref, actor, note)
	} else {
		done = "reopened"
		err = c.cfg.Recon.Reopen(r.Context(), ref, actor, note)
	}
	if err != nil {
		c.errorPage(w, r, err, 0, "")
		return
	}
	c.cfg.Logger.Info("console: reconciliation item "+done, "actor", actor, "stream", ref.StreamID, "kind", ref.Kind, "key", ref.Key)
	back := f.Get("return")
	if !strings.HasPrefix(back, Prefix+"/") || strings.HasPrefix(back, "//") || strings.ContainsAny(back, "\\\r\n") {
		back = Prefix + "/reconciliation"
	}
	u, err := url.Parse(back)
	if err != nil || u.Host != "" || u.Scheme != "" {
		u, _ = url.Parse(Prefix + "/reconciliation")
	}
	q := u.Query()
	q.Set("done", done)
	u.RawQuery = q.Encode()
	http.Redirect(w, r, u.String(), http.StatusSeeOther)
}

// ---- inbox ----

var inboxStatuses = []string{"received", "applied", "ignored", "unverified", "invalid", "failed"}

type inboxData struct {
	list[inboxRowView]
	Statuses []string
	Counts   []StatusCount
}

type inboxRowView struct {
	InboxRow
	Token string // the row's checkbox value
}

type inboxRef struct {
	Provider string `json:"p"`
	DedupKey string `json:"k"`
}

func (c *consoleServer) inboxFilter(p *params) InboxFilter {
	return InboxFilter{
		Provider: p.text("provider"), Status: p.oneOf("status", inboxStatuses...), Type: p.text("type"),
		From: p.day("from", false), To: p.day("to", true),
	}
}

func (c *consoleServer) inbox(w http.ResponseWriter, r *http.Request) {
	p := paramsOf(r)
	f := c.inboxFilter(p)
	after, err := decodeCursor[InboxKey](p.q.Get("cursor"))
	asCSV := p.csv()
	if p.err != nil || err != nil {
		c.errorPage(w, r, firstErr(p.err, err), 0, "")
		return
	}
	if asCSV {
		c.exportInbox(w, r, f)
		return
	}
	counts, err := c.cfg.Read.InboxCounts(r.Context(), f)
	if err != nil {
		c.errorPage(w, r, err, 0, "")
		return
	}
	f.After, f.Limit = after, c.cfg.PageSize+1
	rows, err := c.cfg.Read.Inbox(r.Context(), f)
	if err != nil {
		c.errorPage(w, r, err, 0, "")
		return
	}
	views := make([]inboxRowView, len(rows))
	for i, x := range rows {
		views[i] = inboxRowView{InboxRow: x, Token: encodeCursor(inboxRef{Provider: x.Provider, DedupKey: x.DedupKey})}
	}
	filter := filterQuery(p.q, "provider", "status", "type", "from", "to")
	l := newList(Prefix+"/inbox", filter, views, c.cfg.PageSize, func(x inboxRowView) any { return x.Key() }, after == nil)
	c.render(w, r, http.StatusOK, "inbox", "Inbox", inboxData{list: l, Statuses: inboxStatuses, Counts: counts})
}

func (c *consoleServer) exportInbox(w http.ResponseWriter, r *http.Request, f InboxFilter) {
	out := startCSV(w, "inbox",
		csvexport.Text("provider"), csvexport.Text("dedup_key"), csvexport.Text("event_type"), csvexport.Text("stream_id"),
		csvexport.Text("status"), csvexport.Text("delivery_count"), csvexport.Text("conflict_count"), csvexport.Text("attempts"),
		csvexport.Text("last_error"), csvexport.Text("first_seen_at"), csvexport.Text("last_seen_at"), csvexport.Text("applied_at"))
	f.Limit = exportPage
	for {
		rows, err := c.cfg.Read.Inbox(r.Context(), f)
		if err != nil {
			c.cfg.Logger.Error("console: export inbox", "err", err)
			return
		}
		for _, x := range rows {
			_ = out.Write(x.Provider, x.DedupKey, x.EventType, x.StreamID, x.Status, strconv.Itoa(x.DeliveryCount),
				strconv.Itoa(x.ConflictCount), strconv.Itoa(x.Attempts), x.LastError, rfc3339(x.FirstSeenAt),
				rfc3339(x.LastSeenAt), rfc3339(x.AppliedAt))
		}
		if len(rows) < exportPage {
			break
		}
		k := rows[len(rows)-1].Key()
		f.After = &k
	}
	_ = out.Flush()
}

func (c *consoleServer) delivery(w http.ResponseWriter, r *http.Request) {
	p := paramsOf(r)
	provider, key := p.q.Get("provider"), p.q.Get("key")
	if provider == "" || key == "" {
		c.errorPage(w, r, nil, http.StatusBadRequest, "Name the delivery: provider and key.")
		return
	}
	d, found, err := c.cfg.Read.Delivery(r.Context(), provider, key)
	if err != nil {
		c.errorPage(w, r, err, 0, "")
		return
	}
	if !found {
		c.errorPage(w, r, nil, http.StatusNotFound, "No such delivery.")
		return
	}
	c.render(w, r, http.StatusOK, "delivery", "Delivery "+d.DedupKey, d)
}

type redriveData struct {
	Filter      url.Values
	Selected    int
	All         bool
	Before      []StatusCount
	After       []StatusCount
	Result      RedriveResult
	BackToInbox string
}

func (c *consoleServer) redrive(w http.ResponseWriter, r *http.Request) {
	if c.cfg.Redrive == nil {
		c.errorPage(w, r, fmt.Errorf("redriving deliveries is %w", errNotConfigured), 0, "")
		return
	}
	// The filter travels in the form's hidden fields, as the inbox page
	// had it.
	p := &params{q: r.PostForm}
	f := c.inboxFilter(p)
	if p.err != nil {
		c.errorPage(w, r, p.err, 0, "")
		return
	}
	req := RedriveRequest{Actor: viewerOf(r).Actor, Filter: f}
	all := r.PostForm.Get("scope") == "all"
	if !all {
		for _, tok := range r.PostForm["key"] {
			ref, err := decodeCursor[inboxRef](tok)
			if err != nil || ref == nil {
				c.errorPage(w, r, fmt.Errorf("%w: key: not a delivery this console listed", errBadParam), 0, "")
				return
			}
			req.Keys = append(req.Keys, DeliveryRef{Provider: ref.Provider, DedupKey: ref.DedupKey})
		}
		if len(req.Keys) == 0 {
			c.errorPage(w, r, nil, http.StatusBadRequest, "Select the deliveries to redrive, or redrive all matching.")
			return
		}
	}
	before, err := c.cfg.Read.InboxCounts(r.Context(), f)
	if err != nil {
		c.errorPage(w, r, err, 0, "")
		return
	}
	res, err := c.cfg.Redrive.Redrive(r.Context(), req)
	if err != nil {
		c.errorPage(w, r, err, 0, "")
		return
	}
	c.cfg.Logger.Info("console: redrive", "actor", req.Actor, "selected", res.Selected, "recorded", res.Recorded)
	after, err := c.cfg.Read.InboxCounts(r.Context(), f)
	if err != nil {
		c.errorPage(w, r, err, 0, "")
		return
	}
	filter := filterQuery(r.PostForm, "provider", "status", "type", "from", "to")
	c.render(w, r, http.StatusOK, "redrive", "Redrive", redriveData{
		Filter: filter, Selected: len(req.Keys), All: all, Before: before, After: after, Result: res,
		BackToInbox: Prefix + "/inbox?" + filter.Encode(),
	})
}

// ---- payouts, periods, projections ----

func (c *consoleServer) payouts(w http.ResponseWriter, r *http.Request) {
	p := paramsOf(r)
	f := PayoutFilter{Provider: p.text("provider"), Currency: p.currency("currency"), From: p.day("from", false), To: p.day("to", true)}
	after, err := decodeCursor[PayoutKey](p.q.Get("cursor"))
	asCSV := p.csv()
	if p.err != nil || err != nil {
		c.errorPage(w, r, firstErr(p.err, err), 0, "")
		return
	}
	if asCSV {
		out := startCSV(w, "payouts", csvexport.Text("provider"), csvexport.Text("payout_id"), csvexport.Amount("amount"),
			csvexport.Text("currency"), csvexport.Text("paid_at"), csvexport.Text("status"), csvexport.Text("lines"),
			csvexport.Amount("difference"))
		f.Limit = exportPage
		for {
			rows, err := c.cfg.Read.Payouts(r.Context(), f)
			if err != nil {
				c.cfg.Logger.Error("console: export payouts", "err", err)
				return
			}
			for _, x := range rows {
				_ = out.Write(x.Provider, x.PayoutID, itoa(x.Amount), x.Currency, rfc3339(x.At), x.Status, strconv.Itoa(x.Lines), itoa(x.Difference))
			}
			if len(rows) < exportPage {
				break
			}
			k := rows[len(rows)-1].Key()
			f.After = &k
		}
		_ = out.Flush()
		return
	}
	f.After, f.Limit = after, c.cfg.PageSize+1
	rows, err := c.cfg.Read.Payouts(r.Context(), f)
	if err != nil {
		c.errorPage(w, r, err, 0, "")
		return
	}
	filter := filterQuery(p.q, "provider", "currency", "from", "to")
	l := newList(Prefix+"/payouts", filter, rows, c.cfg.PageSize, func(x Payout) any { return x.Key() }, after == nil)
	c.render(w, r, http.StatusOK, "payouts", "Payouts", l)
}

type periodsData struct {
	Trial           []TrialBalance
	Periods         []PeriodBalance
	HasPeriodReader bool
}

func (c *consoleServer) periods(w http.ResponseWriter, r *http.Request) {
	trial, err := c.cfg.Read.TrialBalance(r.Context())
	if err != nil {
		c.errorPage(w, r, err, 0, "")
		return
	}
	d := periodsData{Trial: trial, HasPeriodReader: c.cfg.Periods != nil}
	if c.cfg.Periods != nil {
		if d.Periods, err = c.cfg.Periods.Periods(r.Context()); err != nil {
			c.errorPage(w, r, err, 0, "")
			return
		}
	}
	c.render(w, r, http.StatusOK, "periods", "Periods", d)
}

type projectionsData struct {
	Projections    []Projection
	RebuildRunning bool
}

func (c *consoleServer) projections(w http.ResponseWriter, r *http.Request) {
	ps, err := c.cfg.Read.Projections(r.Context())
	if err != nil {
		c.errorPage(w, r, err, 0, "")
		return
	}
	d := projectionsData{Projections: ps}
	for _, p := range ps {
		d.RebuildRunning = d.RebuildRunning || p.Status == "rebuilding"
	}
	c.render(w, r, http.StatusOK, "projections", "Projections", d)
}

func firstErr(errs ...error) error {
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
