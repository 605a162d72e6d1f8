package views

import (
	"errors"
	"slices"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/period"
)

// The shapes of the accounting periods: the periods list, a period's trial
// balance with its late adjustments, and the double-entry journal (GET
// /v1/periods, /v1/periods/{p}/trial-balance, /v1/journal and the console).

// ErrUnknownPeriod: no entry was ever booked into the period and it was
// never closed.
var ErrUnknownPeriod = errors.New("unknown period")

// Period statuses.
const (
	PeriodOpen   = "open"
	PeriodClosed = "closed"
)

// PeriodInfo is one periods row.
type PeriodInfo struct {
	Period       period.Period
	Status       string // PeriodOpen or PeriodClosed
	BooksStart   bool   // the first period ever closed
	Zone         string // reporting time zone it was closed in
	ClosedAt     *time.Time
	ClosedBy     string
	CloseNote    string
	ReopenedAt   *time.Time
	ReopenedBy   string
	ReopenReason string
	ContentHash  string // of the frozen trial balance; "" while open
	Entries      int64  // ledger entries booked into the period
	Adjustments  int64  // of which late adjustments for earlier periods
}

// Adjustment is a late entry booked into a period for an earlier, closed
// one.
type Adjustment struct {
	EventID      uuid.UUID
	PostingIndex int
	StreamID     string
	EventType    string
	Provider     string
	Account      string
	Currency     money.Currency
	Amount       int64
	EffectiveAt  time.Time
	BookedAt     time.Time
	Adjusts      period.Period // the closed period the entry belongs to by its effective time
}

// TrialBalance is a period's figures: frozen (with the content hash) when
// the period is closed, computed from the entries when it is open.
type TrialBalance struct {
	Info        PeriodInfo
	Frozen      bool
	Lines       []period.Balance
	Adjustments []Adjustment
}

// TrialBalanceColumns are the CSV header of a trial balance, in the order
// of TrialBalance.Cells: decimal amounts in major units, then the same in
// minor units.
var TrialBalanceColumns = []string{"period", "account", "currency", "opening", "debits", "credits", "closing",
	"opening_minor", "debits_minor", "credits_minor", "closing_minor"}

// Cells renders the lines as TrialBalanceColumns rows.
func (tb TrialBalance) Cells() [][]string {
	out := make([][]string, len(tb.Lines))
	for i, l := range tb.Lines {
		out[i] = []string{tb.Info.Period.String(), l.Account, string(l.Currency),
			money.FormatMinor(l.Opening, l.Currency), money.FormatMinor(l.Debits, l.Currency),
			money.FormatMinor(l.Credits, l.Currency), money.FormatMinor(l.Closing, l.Currency),
			strconv.FormatInt(l.Opening, 10), strconv.FormatInt(l.Debits, 10),
			strconv.FormatInt(l.Credits, 10), strconv.FormatInt(l.Closing, 10)}
	}
	return out
}

// AdjustmentColumns are the CSV header of a trial balance's adjustments,
// in the order of Adjustment.Cells.
var AdjustmentColumns = []string{"period", "adjusts_period", "account", "currency", "amount", "amount_minor",
	"effective_at", "booked_at", "event_type", "provider", "stream_id", "event_id", "posting_index"}

// Cells renders the adjustment, booked into p, as AdjustmentColumns.
func (a Adjustment) Cells(p period.Period) []string {
	return []string{p.String(), a.Adjusts.String(), a.Account, string(a.Currency),
		money.FormatMinor(a.Amount, a.Currency), strconv.FormatInt(a.Amount, 10),
		a.EffectiveAt.UTC().Format(time.RFC3339Nano), a.BookedAt.UTC().Format(time.RFC3339Nano),
		a.EventType, a.Provider, a.StreamID, a.EventID.String(), strconv.Itoa(a.PostingIndex)}
}

// JournalFilter selects journal rows. Zero values do not filter.
type JournalFilter struct {
	// From and To bound the entries' time, [From, To): effective_at, or
	// booked_at when Booked is set (as_of's time=effective|booked).
	From, To time.Time
	Booked   bool
	// Period keeps only the entries booked into it.
	Period period.Period
	// Zone is the reporting time zone the Date column is in (nil: UTC).
	Zone *time.Location
	// After continues after this entry (the previous page's last) in feed
	// order, the key a rebuild keeps (EntryKey); Limit caps the page
	// (<= 0: 1000).
	After *EntryKey
	Limit int
}

// JournalRow is one line of the double-entry journal: one posting, with
// its amount as a debit or a credit, in minor units and in decimal.
type JournalRow struct {
	ID             int64    // ledger_entries.id (a rebuild renumbers it)
	Key            EntryKey // the order and the page cursor: stable across rebuilds
	Date           string
	Account        string
	Debit, Credit  int64 // minor units, one of them 0
	DebitDecimal   string
	CreditDecimal  string
	Currency       money.Currency
	Memo           string
	Provider       string
	PaymentID      string // "" for payouts
	EventID        uuid.UUID
	EffectiveAt    time.Time
	BookedAt       time.Time
	Period         period.Period
	LateAdjustment bool
	Adjusts        period.Period
	// Actor is who made the entry, for the entries a person made (opening
	// balances, adjustments); "" for the providers' facts.
	Actor string
}

// JournalColumns are the CSV header of the journal, in the order of Cells.
// The first nine are the accounting columns; the rest say when and where
// the entry was booked.
var JournalColumns = []string{"date", "account", "debit", "credit", "currency", "memo", "provider", "payment_id",
	"event_id", "debit_minor", "credit_minor", "effective_at", "booked_at", "period", "late_adjustment", "adjusts_period",
	"actor"}

// Cells renders the row as JournalColumns: amounts in decimal major units
// ("12.50", empty on the other side), then in minor units; times in RFC 3339
// UTC.
func (r JournalRow) Cells() []string {
	minor := func(v int64) string {
		if v == 0 {
			return ""
		}
		return strconv.FormatInt(v, 10)
	}
	return []string{r.Date, r.Account, r.DebitDecimal, r.CreditDecimal, string(r.Currency), r.Memo, r.Provider,
		r.PaymentID, r.EventID.String(), minor(r.Debit), minor(r.Credit),
		r.EffectiveAt.UTC().Format(time.RFC3339Nano), r.BookedAt.UTC().Format(time.RFC3339Nano),
		r.Period.String(), strconv.FormatBool(r.LateAdjustment), r.Adjusts.String(), r.Actor}
}

// PeriodAction is one close or reopen of a period, as the periods stream
// recorded it: the period's history (PeriodInfo keeps only the last of
// each).
type PeriodAction struct {
	Period period.Period
	Action string // "closed" or "reopened"
	Actor  string
	Note   string // the close's note or the reopen's reason
	At     time.Time
}

// Totals sums a period's trial balance per currency: the movements
// (debits and credits) booked into it, by currency.
func (tb TrialBalance) Totals() []CurrencyTrial {
	sums := map[money.Currency]*CurrencyTrial{}
	var out []CurrencyTrial
	var order []money.Currency
	for _, l := range tb.Lines {
		t := sums[l.Currency]
		if t == nil {
			t = &CurrencyTrial{Currency: string(l.Currency)}
			sums[l.Currency] = t
			order = append(order, l.Currency)
		}
		t.Debits += l.Debits
		t.Credits += l.Credits
	}
	slices.Sort(order)
	for _, c := range order {
		out = append(out, *sums[c])
	}
	return out
}
