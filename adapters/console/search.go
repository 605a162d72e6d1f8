package console

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"github.com/onceledger/onceledger/projections/views"
)

// PaymentSearcher finds payments by any id a provider gives them
// (readmodel.Store.SearchPayments).
type PaymentSearcher interface {
	SearchPayments(ctx context.Context, id string, limit int) ([]views.PaymentHit, error)
}

// searchLimit caps the payments one search lists: an id names one payment,
// rarely a few (an id two providers happen to share).
const searchLimit = 100

type searchData struct {
	Query string
	Hits  []views.PaymentHit
}

// search finds a payment by any provider id (docs/reference.md, "Console"):
// a single hit redirects to the payment, several are listed, none says so.
func (c *consoleServer) search(w http.ResponseWriter, r *http.Request) {
	q := strings.TrimSpace(r.URL.Query().Get("q"))
	d := searchData{Query: q}
	if q != "" {
		hits, err := c.cfg.Read.SearchPayments(r.Context(), q, searchLimit)
		if err != nil {
			c.errorPage(w, r, err, 0, "")
			return
		}
		if len(hits) == 1 {
			p := hits[0]
			http.Redirect(w, r, Prefix+"/payments/"+url.PathEscape(p.Provider)+"/"+url.PathEscape(p.PaymentID), http.StatusSeeOther)
			return
		}
		d.Hits = hits
	}
	c.render(w, r, http.StatusOK, "search", "Search", d)
}
