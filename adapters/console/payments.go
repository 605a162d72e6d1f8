package console

import (
	"fmt"
	"net/http"
	"strconv"

	"github.com/onceledger/onceledger/adapters/csvexport"
	"github.com/onceledger/onceledger/projections"
	"github.com/onceledger/onceledger/projections/views"
)

var paymentStatuses = []string{"pending", "authorized", "failed", "canceled", "captured", "partially_refunded", "refunded", "disputed", "dispute_lost"}

type paymentsData struct {
	list[views.Payment]
	Statuses []string
}

func (c *consoleServer) payments(w http.ResponseWriter, r *http.Request) {
	p := paramsOf(r)
	f := views.PaymentFilter{
		Provider: p.Text("provider"), PaymentID: p.Text("payment_id"), Status: p.OneOf("status", paymentStatuses...),
		Currency: p.Currency("currency"), From: p.Day("from", nil, false), To: p.Day("to", nil, true),
	}
	size := p.Limit(c.cfg.PageSize, maxPageSize)
	after, asCSV, err := listParams[views.PaymentKey](p)
	if err != nil {
		c.errorPage(w, r, err, 0, "")
		return
	}
	if asCSV {
		c.exportPayments(w, r, f)
		return
	}
	f.After, f.Limit = after, size+1
	rows, err := c.cfg.Read.Payments(r.Context(), f)
	if err != nil {
		c.errorPage(w, r, err, 0, "")
		return
	}
	filter := filterQuery(p.Values, "provider", "payment_id", "status", "currency", "from", "to", "limit")
	l := newList(Prefix+"/payments", filter, rows, size, func(x views.Payment) any { return x.Key() }, after == nil)
	c.render(w, r, http.StatusOK, "payments", "Payments", paymentsData{list: l, Statuses: paymentStatuses})
}

func (c *consoleServer) exportPayments(w http.ResponseWriter, r *http.Request, f views.PaymentFilter) {
	out := startCSV(w, "payments",
		csvexport.Text("provider"), csvexport.Text("payment_id"), csvexport.Text("status"), csvexport.Text("currency"),
		csvexport.Amount("authorized"), csvexport.Amount("captured"), csvexport.Amount("fee"), csvexport.Amount("refunded"),
		csvexport.Amount("refund_pending"), csvexport.Amount("dispute_open"), csvexport.Amount("dispute_lost"),
		csvexport.Text("version"), csvexport.Text("updated_at"), csvexport.Amount("failed_attempt"))
	exportPages(c, "payments", func(after *views.PaymentKey, limit int) ([]views.Payment, error) {
		f.After, f.Limit = after, limit
		return c.cfg.Read.Payments(r.Context(), f)
	}, views.Payment.Key, func(x views.Payment) {
		s := x.Summary
		_ = out.Write(x.Provider, x.PaymentID, x.Status, string(s.Currency), itoa(s.Authorized), itoa(s.Captured), itoa(s.Fees),
			itoa(s.Refunded), itoa(s.RefundsPending), itoa(s.DisputeOpen), itoa(s.DisputeLost),
			strconv.FormatUint(x.Version, 10), rfc3339(x.UpdatedAt), itoa(s.FailedAmount))
	})
	_ = out.Flush()
}

// factView is a fact with the deliveries that carried it.
type factView struct {
	Fact
	Deliveries []views.Delivery
}

type paymentData struct {
	Timeline
	Facts []factView
	// Other deliveries: those that carried no fact of their own.
	Other []views.Delivery
}

// timeline reads a payment with the query /v1 answers
// GET /v1/payments/{provider}/{payment_id} with, then its deliveries and
// its reconciliation items.
func (c *consoleServer) timeline(r *http.Request, provider, id string) (Timeline, bool, error) {
	ctx := r.Context()
	h, found, err := projections.PaymentHistory(ctx, c.cfg.Read, c.cfg.Events, provider, id)
	if err != nil || !found {
		return Timeline{}, false, err
	}
	t := Timeline{Payment: h.Payment, Fees: h.Fees}
	for _, e := range h.Events {
		t.Facts = append(t.Facts, fact(e))
	}
	stream := h.Payment.StreamID
	if t.Deliveries, err = c.cfg.Read.StreamDeliveries(ctx, stream); err != nil {
		return t, false, err
	}
	t.Items, err = collect(func(fn func(views.ReconciliationItem) error) error {
		return c.cfg.Read.Reconciliation(ctx, views.ReconciliationFilter{StreamID: stream}, fn)
	})
	for _, it := range t.Items {
		if it.Status == "open" {
			t.OpenItems++
		} else {
			t.ReconciledItems++
		}
	}
	return t, true, err
}

func (c *consoleServer) payment(w http.ResponseWriter, r *http.Request) {
	provider, id := r.PathValue("provider"), r.PathValue("id")
	t, found, err := c.timeline(r, provider, id)
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
