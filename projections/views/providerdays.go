package views

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sort"
	"time"

	"github.com/onceledger/onceledger/adapters/eventstore"
)

// Provider day statuses (GET /v1/provider-days).
const (
	DayAwaitingReport = "awaiting_report"
	DayBalanced       = "balanced"
	DayUnbalanced     = "unbalanced"
)

// ProviderDayRow is one provider_days row: what the projection keeps of
// one provider's day (projections/providerdays.go).
type ProviderDayRow struct {
	Provider            string
	Day                 string // YYYY-MM-DD in Zone
	Zone                string
	Events              int64
	WebhookFacts        int64
	ReportFacts         int64
	ReportLines         int64
	LinesWithoutWebhook int64
	StatedBalances      int64
	// AwaitingReportFacts counts the day's captures and refunds that a
	// webhook (or the API) recorded and no report or bill line has
	// settled yet.
	AwaitingReportFacts int64
	Covered             bool
	ContentHash         []byte
	Last                eventstore.Position
}

// ProviderDay is one provider's day as GET /v1/provider-days answers it:
// the row, the day's differing assertions and open items, and its status.
type ProviderDay struct {
	ProviderDayRow
	// DiffersBalances counts the balances stated as of the day that differ
	// from the ledger now.
	DiffersBalances int64
	// OpenItems counts the open items about the day's facts, by kind.
	OpenItems map[string]int64
	Status    string // DayAwaitingReport, DayBalanced, DayUnbalanced
	Why       []string
}

// ProviderDayFilter selects the days of one provider (all providers when
// empty) from From to To, both YYYY-MM-DD inclusive.
type ProviderDayFilter struct {
	Provider string
	From, To string
	// Zone is the reporting zone: the days of providers other than Alipay
	// and WeChat Pay are counted in it (nil: UTC).
	Zone *time.Location
}

// Decide sets the day's status and why: awaiting_report until an imported
// report or bill covers it, else balanced when every balance stated as of
// the day agrees and no item about its facts is open, else unbalanced,
// naming what stands in the way.
func (d *ProviderDay) Decide() {
	d.Why = nil
	if d.DiffersBalances > 0 {
		d.Why = append(d.Why, fmt.Sprintf("%d stated balances differ from the ledger", d.DiffersBalances))
	}
	kinds := make([]string, 0, len(d.OpenItems))
	for k := range d.OpenItems {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	for _, k := range kinds {
		d.Why = append(d.Why, fmt.Sprintf("%d open %s items", d.OpenItems[k], k))
	}
	switch {
	case !d.Covered:
		d.Status = DayAwaitingReport
	case len(d.Why) > 0:
		d.Status = DayUnbalanced
	default:
		d.Status = DayBalanced
	}
}

// Hash is the day's content hash in hex: only a balanced day carries it.
func (d ProviderDay) Hash() string {
	if d.Status != DayBalanced || len(d.ContentHash) != sha256.Size {
		return ""
	}
	return hex.EncodeToString(d.ContentHash)
}
