package console

import (
	"fmt"
	"net/http"

	"github.com/onceledger/onceledger/adapters/csvexport"
	"github.com/onceledger/onceledger/projections/views"
)

// The payouts pages read the payouts read model through the queries of
// GET /v1/payouts and /v1/payouts/{provider}/{payout_id}: the same status
// (paid, failed, reconciled, mismatch), line count, difference and lines.

type payoutsData struct {
	list[views.Payout]
	Statuses []string
}

func (c *consoleServer) payouts(w http.ResponseWriter, r *http.Request) {
	p := paramsOf(r)
	f := views.PayoutFilter{Provider: p.Text("provider"), Status: p.OneOf("status", views.PayoutStatuses()...),
		Currency: p.Currency("currency"), From: p.Day("from", nil, false), To: p.Day("to", nil, true), Newest: true}
	after, asCSV, err := listParams[views.PayoutKey](p)
	if err != nil {
		c.errorPage(w, r, err, 0, "")
		return
	}
	if asCSV {
		c.exportPayouts(w, r, f)
		return
	}
	f.After, f.Limit = after, c.cfg.PageSize+1
	rows, err := collect(func(fn func(views.Payout) error) error { return c.cfg.Read.Payouts(r.Context(), f, fn) })
	if err != nil {
		c.errorPage(w, r, err, 0, "")
		return
	}
	filter := filterQuery(p.Values, "provider", "status", "currency", "from", "to")
	l := newList(Prefix+"/payouts", filter, rows, c.cfg.PageSize, func(x views.Payout) any { return x.Key() }, after == nil)
	c.render(w, r, http.StatusOK, "payouts", "Payouts", payoutsData{list: l, Statuses: views.PayoutStatuses()})
}

// exportPayouts streams every matching payout.
func (c *consoleServer) exportPayouts(w http.ResponseWriter, r *http.Request, f views.PayoutFilter) {
	out := startCSV(w, "payouts", csvexport.Text("provider"), csvexport.Text("payout_id"), csvexport.Amount("amount"),
		csvexport.Text("currency"), csvexport.Text("paid_at"), csvexport.Text("status"), csvexport.Text("lines"),
		csvexport.Amount("difference"))
	err := c.cfg.Read.Payouts(r.Context(), f, func(x views.Payout) error {
		return out.Write(x.Provider, x.PayoutID, itoa(x.Amount), x.Currency, rfc3339(x.ArrivalDate), x.Status,
			itoa(x.LineCount), itoa(x.Difference))
	})
	if err != nil {
		c.cfg.Logger.Error("console: export payouts", "err", err)
		return // the download ends short; the status is already sent
	}
	_ = out.Flush()
}

type payoutData struct {
	Payout views.Payout
	Lines  []views.SettlementLine
}

func (c *consoleServer) payout(w http.ResponseWriter, r *http.Request) {
	provider, id := r.PathValue("provider"), r.PathValue("id")
	po, found, err := c.cfg.Read.Payout(r.Context(), provider, id)
	if err != nil {
		c.errorPage(w, r, err, 0, "")
		return
	}
	if !found {
		c.errorPage(w, r, nil, http.StatusNotFound, fmt.Sprintf("No payout %s of provider %s.", id, provider))
		return
	}
	d := payoutData{Payout: po}
	d.Lines, err = collect(func(fn func(views.SettlementLine) error) error {
		return c.cfg.Read.SettlementLines(r.Context(), provider, id, fn)
	})
	if err != nil {
		c.errorPage(w, r, err, 0, "")
		return
	}
	c.render(w, r, http.StatusOK, "payout", "Payout "+po.PayoutID, d)
}
