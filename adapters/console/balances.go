package console

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/onceledger/onceledger/domain/assertion"
	"github.com/onceledger/onceledger/domain/ledger"
	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/projections/views"
)

// Provider balances in the console (docs/reference.md, "Provider
// balances"): the balance assertions, the provider days, the opening
// balance form and "Resolve with an adjustment" on an item.

// BalanceReader reads the balance assertions and the provider days: the
// queries of GET /v1/balance-assertions and GET /v1/provider-days
// (readmodel.Store).
type BalanceReader interface {
	BalanceAssertions(ctx context.Context, f views.AssertionFilter) ([]views.BalanceAssertion, error)
	ProviderDays(ctx context.Context, f views.ProviderDayFilter) ([]views.ProviderDay, error)
}

// BalanceActions posts adjustments and opening balances as events with
// the actor and note (operations.Balances). Its refusals wrap ErrInvalid
// or ErrConflict.
type BalanceActions interface {
	Adjust(ctx context.Context, c assertion.Adjustment) (assertion.Adjusted, error)
	Open(ctx context.Context, c assertion.Opening) (assertion.Opened, error)
}

func (c *consoleServer) balanceRoutes(mux *http.ServeMux) {
	mux.HandleFunc("GET /console/provider-days", c.withSession(c.providerDays))
	mux.HandleFunc("GET /console/balance-assertions", c.withSession(c.balanceAssertions))
	mux.HandleFunc("POST /console/opening-balances", c.withSession(c.acting(c.openingBalance)))
	mux.HandleFunc("GET /console/adjust", c.withSession(c.adminOnly(c.adjustForm)))
	mux.HandleFunc("POST /console/adjust", c.withSession(c.acting(c.adjust)))
}

type providerDaysData struct {
	Provider, From, To string
	Days               []views.ProviderDay
}

func (c *consoleServer) providerDays(w http.ResponseWriter, r *http.Request) {
	if c.cfg.Balances == nil {
		c.errorPage(w, r, fmt.Errorf("provider days are %w", errNotConfigured), 0, "")
		return
	}
	p := paramsOf(r)
	d := providerDaysData{Provider: p.Text("provider"), From: p.Get("from"), To: p.Get("to")}
	if d.To == "" {
		d.To = c.cfg.Now().In(c.cfg.Zone).Format(time.DateOnly)
	}
	to, err := time.Parse(time.DateOnly, d.To)
	if err != nil {
		c.errorPage(w, r, nil, http.StatusBadRequest, "to: a date YYYY-MM-DD.")
		return
	}
	if d.From == "" {
		d.From = to.AddDate(0, 0, -13).Format(time.DateOnly)
	}
	from, err := time.Parse(time.DateOnly, d.From)
	if err != nil || from.After(to) || to.Sub(from) > 400*24*time.Hour {
		c.errorPage(w, r, nil, http.StatusBadRequest, "from: a date YYYY-MM-DD, at most 400 days before to.")
		return
	}
	if p.Err() != nil {
		c.errorPage(w, r, p.Err(), http.StatusBadRequest, "")
		return
	}
	days, err := c.cfg.Balances.ProviderDays(r.Context(), views.ProviderDayFilter{Provider: d.Provider, From: d.From, To: d.To, Zone: c.cfg.Zone})
	if err != nil {
		c.errorPage(w, r, err, 0, "")
		return
	}
	// Newest first: the day to close is at the top.
	for i, j := 0, len(days)-1; i < j; i, j = i+1, j-1 {
		days[i], days[j] = days[j], days[i]
	}
	d.Days = days
	c.render(w, r, http.StatusOK, "providerdays", "Provider days", d)
}

type assertionsData struct {
	Provider, Status string
	Rows             []views.BalanceAssertion
	Return           string
}

func (c *consoleServer) balanceAssertions(w http.ResponseWriter, r *http.Request) {
	if c.cfg.Balances == nil {
		c.errorPage(w, r, fmt.Errorf("balance assertions are %w", errNotConfigured), 0, "")
		return
	}
	p := paramsOf(r)
	f := views.AssertionFilter{Provider: p.Text("provider"), Status: p.OneOf("status", views.AssertionAgreed, views.AssertionDiffers),
		Limit: 500}
	if p.Err() != nil {
		c.errorPage(w, r, p.Err(), http.StatusBadRequest, "")
		return
	}
	rows, err := c.cfg.Balances.BalanceAssertions(r.Context(), f)
	if err != nil {
		c.errorPage(w, r, err, 0, "")
		return
	}
	c.render(w, r, http.StatusOK, "assertions", "Balance assertions",
		assertionsData{Provider: f.Provider, Status: f.Status, Rows: rows, Return: r.URL.RequestURI()})
}

func (c *consoleServer) openingBalance(w http.ResponseWriter, r *http.Request) {
	if c.cfg.BalanceActs == nil {
		c.errorPage(w, r, fmt.Errorf("opening balances are %w", errNotConfigured), 0, "")
		return
	}
	f := r.PostForm
	cur, err := money.ParseCurrency(strings.TrimSpace(f.Get("currency")))
	if err != nil {
		c.errorPage(w, r, nil, http.StatusBadRequest, "currency: an ISO 4217 currency with minor units.")
		return
	}
	amount, err := money.ParseMajor(strings.TrimSpace(f.Get("amount")), cur)
	if err != nil {
		c.errorPage(w, r, nil, http.StatusBadRequest, fmt.Sprintf("amount: a decimal in major units with at most %d decimals.", cur.Exponent()))
		return
	}
	asOf, err := time.Parse(time.RFC3339, strings.TrimSpace(f.Get("as_of")))
	if err != nil {
		c.errorPage(w, r, nil, http.StatusBadRequest, "as_of: an RFC 3339 time (2026-11-01T00:00:00Z).")
		return
	}
	note := strings.TrimSpace(f.Get("note"))
	if note == "" || utf8.RuneCountInString(note) > maxNote {
		c.errorPage(w, r, nil, http.StatusBadRequest, "note: required, at most 1000 characters.")
		return
	}
	if _, err := c.cfg.BalanceActs.Open(r.Context(), assertion.Opening{Account: strings.TrimSpace(f.Get("account")), Currency: cur,
		AsOf: asOf, Amount: amount, Actor: viewerOf(r).Actor, Note: note}); err != nil {
		c.errorPage(w, r, err, 0, "")
		return
	}
	http.Redirect(w, r, Prefix+"/balance-assertions?done=opened", http.StatusSeeOther)
}

// postingRows is how many posting rows the adjustment form offers.
const postingRows = 4

type adjustData struct {
	Item     views.ReconciliationItem
	ItemID   string
	Rows     []postingRow
	Note     string
	At       string
	Problem  string
	Accounts []string
}

type postingRow struct{ Account, Currency, Amount string }

// adjustForm shows "Resolve with an adjustment" for an item.
func (c *consoleServer) adjustForm(w http.ResponseWriter, r *http.Request) {
	id := r.URL.Query().Get("item")
	d, ok := c.adjustData(w, r, id)
	if !ok {
		return
	}
	d.Rows = make([]postingRow, postingRows)
	if acct, cur, ok := strings.Cut(d.Item.Key, "/"); ok && d.Item.Kind == assertion.ReconBalanceMismatch {
		d.Rows[0] = postingRow{Account: acct, Currency: cur}
		d.Rows[1] = postingRow{Account: assertion.Writeoffs, Currency: cur}
	}
	c.render(w, r, http.StatusOK, "adjust", "Resolve with an adjustment", d)
}

func (c *consoleServer) adjustData(w http.ResponseWriter, r *http.Request, id string) (adjustData, bool) {
	stream, kind, key, err := views.ParseReconciliationID(id)
	if err != nil {
		c.errorPage(w, r, nil, http.StatusBadRequest, "The form names no reconciliation item.")
		return adjustData{}, false
	}
	var item *views.ReconciliationItem
	err = c.cfg.Read.Reconciliation(r.Context(), views.ReconciliationFilter{StreamID: stream, Kind: kind}, func(it views.ReconciliationItem) error {
		if it.Key == key {
			item = &it
		}
		return nil
	})
	if err != nil {
		c.errorPage(w, r, err, 0, "")
		return adjustData{}, false
	}
	if item == nil {
		c.errorPage(w, r, nil, http.StatusNotFound, "No such reconciliation item.")
		return adjustData{}, false
	}
	return adjustData{Item: *item, ItemID: id, Accounts: []string{ledger.RevenueSales, ledger.RevenueRefunds, assertion.Writeoffs,
		"expenses:fees:" + item.Provider, "provider:" + item.Provider + ":balance", assertion.OpeningBalances}}, true
}

// adjust posts the adjustment; postings that do not balance per currency
// bring the form back with what was typed and why, nothing recorded.
func (c *consoleServer) adjust(w http.ResponseWriter, r *http.Request) {
	if c.cfg.BalanceActs == nil {
		c.errorPage(w, r, fmt.Errorf("adjustments are %w", errNotConfigured), 0, "")
		return
	}
	f := r.PostForm
	d, ok := c.adjustData(w, r, f.Get("item"))
	if !ok {
		return
	}
	d.Note, d.At = strings.TrimSpace(f.Get("note")), strings.TrimSpace(f.Get("effective_at"))
	cmd := assertion.Adjustment{ItemID: d.ItemID, Actor: viewerOf(r).Actor, Note: d.Note, Provider: d.Item.Provider}
	for i := range postingRows {
		row := postingRow{Account: strings.TrimSpace(f.Get(fmt.Sprintf("account%d", i))),
			Currency: strings.TrimSpace(f.Get(fmt.Sprintf("currency%d", i))), Amount: strings.TrimSpace(f.Get(fmt.Sprintf("amount%d", i)))}
		d.Rows = append(d.Rows, row)
		if row.Account == "" && row.Amount == "" {
			continue
		}
		if d.Problem != "" {
			continue
		}
		cur, err := money.ParseCurrency(row.Currency)
		if err != nil {
			d.Problem = fmt.Sprintf("row %d: currency %q is not an ISO 4217 currency with minor units", i+1, row.Currency)
			continue
		}
		amount, err := money.ParseMajor(row.Amount, cur)
		if err != nil {
			d.Problem = fmt.Sprintf("row %d: amount %q: a decimal in major units, at most %d decimals, debit positive", i+1, row.Amount, cur.Exponent())
			continue
		}
		cmd.Postings = append(cmd.Postings, ledger.Posting{Account: row.Account, Currency: cur, Amount: amount})
	}
	if d.Problem == "" && d.At != "" {
		t, err := time.Parse(time.RFC3339, d.At)
		if err != nil {
			d.Problem = "effective_at: an RFC 3339 time, or empty"
		}
		cmd.EffectiveAt = t
	}
	if d.Problem == "" && d.Note == "" {
		d.Problem = "note: required: say why"
	}
	if d.Problem == "" {
		// The postings must balance before anything is sent.
		if err := assertion.CheckPostings(cmd.Postings); err != nil {
			d.Problem = err.Error()
		}
	}
	if d.Problem != "" {
		c.render(w, r, http.StatusBadRequest, "adjust", "Resolve with an adjustment", d)
		return
	}
	if _, err := c.cfg.BalanceActs.Adjust(r.Context(), cmd); err != nil {
		c.errorPage(w, r, err, 0, "")
		return
	}
	http.Redirect(w, r, backTo(Prefix+"/reconciliation", "adjusted", d.ItemID), http.StatusSeeOther)
}
