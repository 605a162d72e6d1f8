package console

import (
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/onceledger/onceledger/adapters/csvexport"
	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/payment"
	"github.com/onceledger/onceledger/projections/views"
)

type reconData struct {
	list[views.ReconciliationItem]
	Kinds  []string
	Status string
	Ages   []ageOption
	Return string
	// Legend says what each kind on the page means and what to do.
	Legend []kindHelp
	// BulkCap bounds a bulk action (bulk.go).
	BulkCap int
	// Differs is, per conflicting redelivery on the page (by item id),
	// what changed, field by field ("data.amount 1000 → 1200"), in place of
	// the two payload hashes its details name.
	Differs map[string]string
}

type ageOption struct {
	Value, Label string
}

var ages = []ageOption{{"", "any age"}, {"1", "older than 1 day"}, {"7", "older than 7 days"}, {"30", "older than 30 days"}}

func (c *consoleServer) reconciliation(w http.ResponseWriter, r *http.Request) {
	p := paramsOf(r)
	status := p.OneOf("status", "open", "resolved", "all")
	if status == "" {
		status = "open"
		p.Values.Set("status", status)
	}
	f := views.ReconciliationFilter{Kind: p.Text("kind"), Provider: p.Text("provider")}
	if status != "all" {
		f.Status = status
	}
	if days := p.OneOf("age", "1", "7", "30"); days != "" {
		n, _ := strconv.Atoi(days)
		f.OpenedBefore = c.cfg.Now().Add(-time.Duration(n) * 24 * time.Hour)
	}
	if cur, min := p.Currency("currency"), p.Text("min_amount"); min != "" || cur != "" {
		switch minor, err := money.ParseMajor(min, money.Currency(cur)); {
		case cur == "":
			p.Fail("min_amount: name the currency of the amount (currency)")
		case min == "":
			f.AtStakeCurrency = cur
		case err != nil:
			p.Fail("min_amount: %v", err)
		default:
			f.AtStakeCurrency, f.MinAtStake = cur, minor
		}
	}
	after, asCSV, err := listParams[views.ReconciliationKey](p)
	if err != nil {
		c.errorPage(w, r, err, 0, "")
		return
	}
	if asCSV {
		c.exportRecon(w, r, f)
		return
	}
	f.After, f.Limit = after, c.cfg.PageSize+1
	rows, err := collect(func(fn func(views.ReconciliationItem) error) error {
		return c.cfg.Read.Reconciliation(r.Context(), f, fn)
	})
	if err != nil {
		c.errorPage(w, r, err, 0, "")
		return
	}
	filter := filterQuery(p.Values, "status", "kind", "provider", "age", "currency", "min_amount")
	l := newList(Prefix+"/reconciliation", filter, rows, c.cfg.PageSize,
		func(x views.ReconciliationItem) any { return x.Position() }, after == nil)
	var onPage []string
	differs := map[string]string{}
	for _, it := range l.Rows {
		onPage = append(onPage, it.Kind)
		if d := c.whatDiffers(r, it); d != "" {
			differs[it.ID()] = d
		}
	}
	c.render(w, r, http.StatusOK, "reconciliation", "Reconciliation", reconData{
		list: l, Kinds: payment.ReconKinds(), Status: status, Ages: ages, Return: r.URL.RequestURI(),
		Legend: legendOf(onPage), BulkCap: bulkCap, Differs: differs,
	})
}

// exportRecon streams every matching item (no paging: the read port
// streams).
func (c *consoleServer) exportRecon(w http.ResponseWriter, r *http.Request, f views.ReconciliationFilter) {
	out := startCSV(w, "reconciliation",
		csvexport.Text("stream_id"), csvexport.Text("kind"), csvexport.Text("item_key"), csvexport.Text("status"),
		csvexport.Text("provider"), csvexport.Text("payment_id"), csvexport.Text("details"),
		csvexport.Text("opened_at"), csvexport.Text("resolved_at"))
	err := c.cfg.Read.Reconciliation(r.Context(), f, func(x views.ReconciliationItem) error {
		return out.Write(x.StreamID, x.Kind, x.Key, x.Status, x.Provider, x.PaymentID, itemDetails(x),
			rfc3339(x.OpenedAt), rfc3339(x.ResolvedAt))
	})
	if err != nil {
		c.cfg.Logger.Error("console: export reconciliation", "err", err)
		return // the download ends short; the status is already sent
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
	want := "resolved"
	if !resolve {
		want = "open"
	}
	if !c.awaitItem(r.Context(), ref, want) {
		done += "-pending"
	}
	http.Redirect(w, r, backTo(f.Get("return"), done, views.ReconciliationID(ref.StreamID, ref.Kind, ref.Key)), http.StatusSeeOther)
}

// backTo is where an action's redirect goes: the console page the form
// came from (never elsewhere), with done=… and item=… (the item's id) for
// its notice, which names the item.
func backTo(back, done, item string) string {
	if !strings.HasPrefix(back, Prefix+"/") || strings.HasPrefix(back, "//") || strings.ContainsAny(back, "\\\r\n") {
		back = Prefix + "/reconciliation"
	}
	u, err := url.Parse(back)
	if err != nil || u.Host != "" || u.Scheme != "" {
		u, _ = url.Parse(Prefix + "/reconciliation")
	}
	q := u.Query()
	q.Set("done", done)
	q.Set("item", item)
	u.RawQuery = q.Encode()
	return u.String()
}

// whatDiffers reads a conflicting redelivery's delivery (one read per such
// item on the page, at most a page's worth) and says which fields its
// redeliveries changed, old → new; "" for other kinds, or when the bodies
// are no longer kept or are not JSON.
func (c *consoleServer) whatDiffers(r *http.Request, it views.ReconciliationItem) string {
	i := strings.LastIndex(it.Key, "@")
	if it.Kind != payment.ReconConflictingRedelivery || i <= 0 {
		return ""
	}
	d, found, err := c.cfg.Read.Delivery(r.Context(), it.Provider, it.Key[:i])
	if err != nil || !found {
		return ""
	}
	var parts []string
	for _, cf := range d.Conflicts {
		for _, f := range compareFields(d.Raw, cf.Raw) {
			if f.Differs {
				parts = append(parts, fmt.Sprintf("%s %s → %s", f.Path, orNone(f.First), orNone(f.Second)))
			}
		}
	}
	return strings.Join(parts, "; ")
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}
