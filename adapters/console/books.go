package console

import (
	"net/http"
	"slices"

	"github.com/onceledger/onceledger/adapters/csvexport"
	"github.com/onceledger/onceledger/domain/period"
	"github.com/onceledger/onceledger/projections"

	"github.com/onceledger/onceledger/projections/views"
)

// consolePeriods bounds how many periods the periods page shows (the most
// recent): two years of monthly periods.
const consolePeriods = 24

type periodsData struct {
	Trial           []views.CurrencyTrial
	Periods         []periodView
	HasPeriodReader bool
}

// periodView is one period's section: its trial balance with its totals
// per currency, and its close and reopen history (projections.PeriodHistory).
type periodView struct {
	views.TrialBalance
	History []views.PeriodAction
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
		var history []views.PeriodAction
		if c.cfg.Events != nil {
			if history, err = projections.PeriodHistory(r.Context(), c.cfg.Events); err != nil {
				c.errorPage(w, r, err, 0, "")
				return
			}
		}
		slices.Reverse(infos)
		for _, pi := range infos[:min(len(infos), consolePeriods)] {
			tb, err := c.cfg.Periods.TrialBalance(r.Context(), pi.Period)
			if err != nil {
				c.errorPage(w, r, err, 0, "")
				return
			}
			pv := periodView{TrialBalance: tb}
			for _, a := range history {
				if a.Period == pi.Period {
					pv.History = append(pv.History, a)
				}
			}
			d.Periods = append(d.Periods, pv)
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

// periodParam reads {period} (YYYY-MM) of a period export's path; false
// when the console has no periods or the period is malformed (answered).
func (c *consoleServer) periodParam(w http.ResponseWriter, r *http.Request) (period.Period, bool) {
	if c.cfg.Periods == nil {
		c.errorPage(w, r, nil, http.StatusNotFound, "Accounting periods are not configured on this server.")
		return period.Period{}, false
	}
	p, err := period.Parse(r.PathValue("period"))
	if err != nil {
		c.errorPage(w, r, nil, http.StatusBadRequest, "A period is written YYYY-MM.")
		return period.Period{}, false
	}
	return p, true
}

// periodTrialCSV exports a period's trial balance with the columns of
// GET /v1/periods/{p}/trial-balance?format=csv.
func (c *consoleServer) periodTrialCSV(w http.ResponseWriter, r *http.Request) {
	p, ok := c.periodParam(w, r)
	if !ok {
		return
	}
	tb, err := c.cfg.Periods.TrialBalance(r.Context(), p)
	if err != nil {
		c.errorPage(w, r, err, 0, "")
		return
	}
	out := startCSV(w, "trial-balance-"+p.String(), columns(views.TrialBalanceColumns, 3)...)
	for _, rec := range tb.Cells() {
		_ = out.Write(rec...)
	}
	_ = out.Flush()
}

// periodJournalCSV exports the journal of what is booked into a period:
// GET /v1/journal?period=…&format=csv's query and columns.
func (c *consoleServer) periodJournalCSV(w http.ResponseWriter, r *http.Request) {
	p, ok := c.periodParam(w, r)
	if !ok {
		return
	}
	cols := make([]csvexport.Column, len(views.JournalColumns))
	for i, n := range views.JournalColumns {
		cols[i] = csvexport.Text(n)
		if n == "debit" || n == "credit" || n == "debit_minor" || n == "credit_minor" {
			cols[i] = csvexport.Amount(n)
		}
	}
	out := startCSV(w, "journal-"+p.String(), cols...)
	exportPages(c, "journal", func(after *views.EntryKey, limit int) ([]views.JournalRow, error) {
		return c.cfg.Periods.Journal(r.Context(), views.JournalFilter{Period: p, Zone: c.cfg.Zone, After: after, Limit: limit})
	}, func(x views.JournalRow) views.EntryKey { return x.Key }, func(x views.JournalRow) { _ = out.Write(x.Cells()...) })
	_ = out.Flush()
}

// columns makes CSV columns of names, those from index amountsFrom on
// numeric.
func columns(names []string, amountsFrom int) []csvexport.Column {
	out := make([]csvexport.Column, len(names))
	for i, n := range names {
		out[i] = csvexport.Text(n)
		if i >= amountsFrom {
			out[i] = csvexport.Amount(n)
		}
	}
	return out
}
