package console

import (
	"context"
	"net/http"

	"github.com/onceledger/onceledger/domain/expectation"
	"github.com/onceledger/onceledger/projections/views"
)

// ExpectedReader lists expected payments: GET /v1/expected-payments's
// query (readmodel.Store).
type ExpectedReader interface {
	ExpectedPayments(ctx context.Context, f views.ExpectedPaymentFilter, fn func(views.ExpectedPayment) error) error
}

type expectedData struct {
	Rows     []views.ExpectedPayment
	Status   string
	Provider string
	Statuses []string
	More     bool
}

// expected is the expected payments page: the newest PageSize of those
// the status (and provider) filter selects, each with the status its own
// events gave it (expected, paid — late or not —, overdue, failed,
// canceled) and, when paid, the capture that paid it.
func (c *consoleServer) expected(w http.ResponseWriter, r *http.Request) {
	if c.cfg.Expected == nil {
		c.errorPage(w, r, nil, http.StatusServiceUnavailable, "Expected payments are not configured on this server.")
		return
	}
	statuses := make([]string, 0, 5)
	for _, s := range expectation.Statuses() {
		statuses = append(statuses, string(s))
	}
	p := paramsOf(r)
	d := expectedData{Status: p.OneOf("status", statuses...), Provider: p.OneOf("provider", expectation.Providers()...), Statuses: statuses}
	if err := p.Err(); err != nil {
		c.errorPage(w, r, err, 0, "")
		return
	}
	rows, err := collect(func(fn func(views.ExpectedPayment) error) error {
		return c.cfg.Expected.ExpectedPayments(r.Context(), views.ExpectedPaymentFilter{Status: d.Status, Provider: d.Provider,
			Limit: c.cfg.PageSize + 1}, fn)
	})
	if err != nil {
		c.errorPage(w, r, err, 0, "")
		return
	}
	if len(rows) > c.cfg.PageSize {
		rows, d.More = rows[:c.cfg.PageSize], true
	}
	d.Rows = rows
	c.render(w, r, http.StatusOK, "expected", "Expected payments", d)
}
