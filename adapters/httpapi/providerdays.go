package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/onceledger/onceledger/projections/views"
)

// ProviderDayQuery reads the provider days (readmodel.Store).
type ProviderDayQuery interface {
	ProviderDays(ctx context.Context, f views.ProviderDayFilter) ([]views.ProviderDay, error)
}

// maxProviderDays bounds one answer's range: a year and a bit.
const maxProviderDays = 400

type providerDayJSON struct {
	Provider            string           `json:"provider"`
	Day                 string           `json:"day"`
	Zone                string           `json:"zone"`
	Status              string           `json:"status"`
	ContentHash         string           `json:"content_hash,omitempty"`
	Why                 []string         `json:"why,omitempty"`
	Covered             bool             `json:"covered"`
	Events              int64            `json:"events"`
	WebhookFacts        int64            `json:"webhook_facts"`
	ReportFacts         int64            `json:"report_facts"`
	ReportLines         int64            `json:"report_lines"`
	LinesWithoutWebhook int64            `json:"lines_without_webhook"`
	AwaitingReportFacts int64            `json:"awaiting_report_facts"`
	StatedBalances      int64            `json:"stated_balances"`
	DifferingBalances   int64            `json:"differing_balances"`
	OpenItems           map[string]int64 `json:"open_items"`
}

// GET /v1/provider-days?provider=&from=YYYY-MM-DD&to=YYYY-MM-DD (both
// inclusive; default the last 31 days of the reporting zone).
func (s *server) queryProviderDays(w http.ResponseWriter, r *http.Request) {
	q := newQuery(r)
	f := views.ProviderDayFilter{Provider: q.Text("provider"), From: q.Get("from"), To: q.Get("to"), Zone: s.zone()}
	if f.To == "" {
		f.To = s.cfg.Now().In(s.zone()).Format(time.DateOnly)
	}
	to, err := time.Parse(time.DateOnly, f.To)
	if err != nil {
		q.Fail("to: a date YYYY-MM-DD, got %q", f.To)
	}
	if f.From == "" {
		f.From = to.AddDate(0, 0, -30).Format(time.DateOnly)
	}
	from, err := time.Parse(time.DateOnly, f.From)
	if err != nil {
		q.Fail("from: a date YYYY-MM-DD, got %q", f.From)
	}
	switch {
	case q.Err() != nil:
	case from.After(to):
		q.Fail("to: must not be before from")
	case to.Sub(from) > maxProviderDays*24*time.Hour:
		q.Fail("from, to: at most %d days at once", maxProviderDays)
	}
	if q.Err() != nil {
		s.queryError(w, r, q.Err())
		return
	}
	if s.cfg.ProviderDays == nil {
		fail(w, errQueryNotConfigured)
		return
	}
	days, err := s.cfg.ProviderDays.ProviderDays(r.Context(), f)
	if err != nil {
		s.queryError(w, r, err)
		return
	}
	out := make([]providerDayJSON, len(days))
	for i, d := range days {
		items := d.OpenItems
		if items == nil {
			items = map[string]int64{}
		}
		out[i] = providerDayJSON{Provider: d.Provider, Day: d.Day, Zone: d.Zone, Status: d.Status, ContentHash: d.Hash(), Why: d.Why,
			Covered: d.Covered, Events: d.Events, WebhookFacts: d.WebhookFacts, ReportFacts: d.ReportFacts, ReportLines: d.ReportLines,
			LinesWithoutWebhook: d.LinesWithoutWebhook, AwaitingReportFacts: d.AwaitingReportFacts, StatedBalances: d.StatedBalances, DifferingBalances: d.DiffersBalances,
			OpenItems: items}
	}
	writeJSON(w, http.StatusOK, map[string]any{"days": out})
}
