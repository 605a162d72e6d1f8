package console

import (
	"cmp"
	"context"
	"net/http"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/onceledger/onceledger/projections/views"
)

// kindCount counts open reconciliation items of one kind, with the
// opening time of the oldest (zero when unknown).
type kindCount struct {
	Kind   string
	Count  int64
	Oldest time.Time
}

// mismatchCap bounds the payouts in mismatch the overview counts (it
// says "at least" beyond).
const mismatchCap = 1000

// settlementImport is the last settlement import of a provider.
type settlementImport struct {
	Provider string
	At       time.Time
}

type overviewData struct {
	Balances []views.Balance
	// AllBalances shows the accounts at zero too (?zero=1); by default
	// they are hidden: a settled provider's accounts at 0.00 filled the
	// overview and hid the ones that hold money (issue 39).
	AllBalances bool
	ZeroHidden  int
	Trial       []views.CurrencyTrial
	Projections []views.ProjectionStatus
	OpenItems   []kindCount
	OpenTotal   int64
	// Mismatched counts payouts in mismatch (at most mismatchCap; Capped
	// when there are more), Unsettled the open unsettled captures.
	Mismatched       int
	MismatchedCapped bool
	Unsettled        int64
	Settlements      []settlementImport
	RebuildRunning   bool
	MaxLag           int64
	InboxProviders   []string
	InboxStatuses    []string
	InboxGrid        map[string]map[string]int64
	VolumeCharts     []chartView
	InboxChart       chartView
	Days             int
	// SubsShown: the viewer may see subscriptions (admin) and they are
	// configured; SubsFailing and SubsDisabled count the subscriptions
	// whose receiver fails or that were disabled (issue 39: they were not
	// under "Needs attention").
	SubsShown    bool
	SubsFailing  int
	SubsDisabled int
}

// allBalances reads every balance with GET /v1/balances's query.
func (c *consoleServer) allBalances(ctx context.Context) ([]views.Balance, error) {
	return collect(func(fn func(views.Balance) error) error {
		return c.cfg.Read.Balances(ctx, views.BalanceFilter{}, fn)
	})
}

func (c *consoleServer) overview(w http.ResponseWriter, r *http.Request) {
	to := c.cfg.Now().UTC().Truncate(24*time.Hour).AddDate(0, 0, 1)
	from := to.AddDate(0, 0, -chartDays)
	var (
		d       = overviewData{InboxGrid: map[string]map[string]int64{}, Days: chartDays}
		status  views.Status
		counts  []views.InboxCount
		open    map[string]int64
		imports map[string]time.Time
		vol     []views.DayVolume
		mix     []views.DayOutcome
	)
	// The reads are independent: side by side, the page takes as long as
	// the slowest.
	g, ctx := errgroup.WithContext(r.Context())
	g.Go(func() (err error) { d.Balances, err = c.allBalances(ctx); return err })
	g.Go(func() (err error) { status, err = c.cfg.Projections.Projections(ctx); return err })
	g.Go(func() (err error) { counts, err = c.cfg.Read.DeliveryCounts(ctx, views.InboxFilter{}); return err })
	g.Go(func() (err error) { open, err = c.cfg.Read.OpenItemCounts(ctx); return err })
	g.Go(func() (err error) { imports, err = c.cfg.Read.LastImports(ctx); return err })
	g.Go(func() (err error) { vol, err = c.cfg.Read.DailyVolume(ctx, from, to); return err })
	g.Go(func() (err error) { mix, err = c.cfg.Read.InboxMix(ctx, from, to); return err })
	g.Go(func() (err error) { d.Mismatched, d.MismatchedCapped, err = c.mismatchedPayouts(ctx); return err })
	if d.SubsShown = viewerOf(r).CanAct() && c.cfg.Subscriptions != nil; d.SubsShown {
		g.Go(func() error {
			subs, err := c.cfg.Subscriptions.ListSubscriptions(ctx)
			for _, s := range subs {
				switch s.State {
				case "failing":
					d.SubsFailing++
				case "disabled":
					d.SubsDisabled++
				}
			}
			return err
		})
	}
	if err := g.Wait(); err != nil {
		c.errorPage(w, r, err, 0, "")
		return
	}
	d.Trial = views.TrialByCurrency(d.Balances)
	d.AllBalances = r.URL.Query().Get("zero") == "1"
	for _, b := range d.Balances {
		if b.Balance == 0 {
			d.ZeroHidden++
		}
	}
	d.Projections = status.Projections
	for _, p := range d.Projections {
		d.RebuildRunning = d.RebuildRunning || p.Status == "rebuilding"
		d.MaxLag = max(d.MaxLag, p.Lag)
	}
	var err error
	if d.OpenItems, err = c.openItems(r.Context(), open); err != nil {
		c.errorPage(w, r, err, 0, "")
		return
	}
	for _, k := range d.OpenItems {
		d.OpenTotal += k.Count
	}
	d.Unsettled = open["unsettled"]
	slices.SortFunc(d.OpenItems, func(a, b kindCount) int {
		return cmp.Or(cmp.Compare(b.Count, a.Count), strings.Compare(a.Kind, b.Kind))
	})
	for prov, at := range imports {
		d.Settlements = append(d.Settlements, settlementImport{Provider: prov, At: at})
	}
	slices.SortFunc(d.Settlements, func(a, b settlementImport) int { return strings.Compare(a.Provider, b.Provider) })
	for _, ic := range counts {
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

// openItems lists the open items per kind with the oldest's opening time
// (the first of GET /v1/reconciliation's order for the kind).
func (c *consoleServer) openItems(ctx context.Context, open map[string]int64) ([]kindCount, error) {
	var out []kindCount
	for kind, n := range open {
		if n == 0 {
			continue
		}
		k := kindCount{Kind: kind, Count: n}
		err := c.cfg.Read.Reconciliation(ctx, views.ReconciliationFilter{Status: "open", Kind: kind, Limit: 1},
			func(it views.ReconciliationItem) error { k.Oldest = it.OpenedAt; return nil })
		if err != nil {
			return nil, err
		}
		out = append(out, k)
	}
	return out, nil
}

// mismatchedPayouts counts the payouts in mismatch with GET /v1/payouts's
// query, up to mismatchCap.
func (c *consoleServer) mismatchedPayouts(ctx context.Context) (n int, capped bool, err error) {
	err = c.cfg.Read.Payouts(ctx, views.PayoutFilter{Status: "mismatch", Limit: mismatchCap + 1},
		func(views.Payout) error { n++; return nil })
	if n > mismatchCap {
		return mismatchCap, true, err
	}
	return n, false, err
}
