package console

import (
	"net/http"
	"slices"

	"github.com/onceledger/onceledger/projections/views"
)

// consolePeriods bounds how many periods the periods page shows (the most
// recent): two years of monthly periods.
const consolePeriods = 24

type periodsData struct {
	Trial           []views.CurrencyTrial
	Periods         []views.TrialBalance
	HasPeriodReader bool
}

// periods shows the trial balance of the whole ledger, and the most recent
// periods with theirs (frozen when closed) and their late adjustments:
// GET /v1/periods and /v1/periods/{p}/trial-balance's queries.
func (c *consoleServer) periods(w http.ResponseWriter, r *http.Request) {
	bals, err := c.allBalances(r.Context())
	if err != nil {
		c.errorPage(w, r, err, 0, "")
		return
	}
	d := periodsData{Trial: views.TrialByCurrency(bals), HasPeriodReader: c.cfg.Periods != nil}
	if c.cfg.Periods != nil {
		infos, err := c.cfg.Periods.Periods(r.Context())
		if err != nil {
			c.errorPage(w, r, err, 0, "")
			return
		}
		slices.Reverse(infos)
		for _, pi := range infos[:min(len(infos), consolePeriods)] {
			tb, err := c.cfg.Periods.TrialBalance(r.Context(), pi.Period)
			if err != nil {
				c.errorPage(w, r, err, 0, "")
				return
			}
			d.Periods = append(d.Periods, tb)
		}
	}
	c.render(w, r, http.StatusOK, "periods", "Periods", d)
}

type projectionsData struct {
	Projections    []views.ProjectionStatus
	RebuildRunning bool
}

// projections shows GET /v1/projections's reading.
func (c *consoleServer) projections(w http.ResponseWriter, r *http.Request) {
	st, err := c.cfg.Projections.Projections(r.Context())
	if err != nil {
		c.errorPage(w, r, err, 0, "")
		return
	}
	d := projectionsData{Projections: st.Projections}
	for _, p := range st.Projections {
		d.RebuildRunning = d.RebuildRunning || p.Status == "rebuilding"
	}
	c.render(w, r, http.StatusOK, "projections", "Projections", d)
}
