package views

import (
	"time"

	"github.com/google/uuid"

	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/period"
)

// The shapes of the exports to accountants' tools (GET /v1/export/{format},
// `onceledger export`): the journal of a range of accounting dates, read
// as a stream, with the balances it opens with.

// ExportFilter selects the entries of an export: those whose accounting
// date lies in [From, To) (dates in Zone). The accounting date is where an
// entry is booked: its effective date in the reporting zone, or, for a
// late adjustment, the first day of the period it is booked into. So the
// entries of a closed period's range never change.
type ExportFilter struct {
	From, To time.Time // midnights in Zone
	Zone     *time.Location
	// ByCurrency orders the entries of a day by currency before feed
	// order (one journal per day and currency: Xero, QuickBooks); else a
	// day's entries are in feed order, the postings of an event together.
	ByCurrency bool
	// Deposits, when set, receives, before the entries and from the same
	// snapshot, the settlement lines of every payout paid in the range
	// summed by kind (the Xero and QuickBooks deposit journals): read up
	// front, because nothing else can be read while the entries stream
	// (a pool of N connections would deadlock under N exports).
	Deposits func([]ExportDeposit) error
}

// ExportEntry is one posting of an export, with where it is booked:
// what the formats write, nothing more (a year of them streams through).
type ExportEntry struct {
	Date           string // the accounting date, YYYY-MM-DD in the reporting zone
	Account        string
	Currency       money.Currency
	Amount         int64 // signed: debit positive
	EventType      string
	Provider       string
	StreamID       string
	EventID        uuid.UUID
	EffectiveAt    time.Time
	Period         period.Period // booked into
	LateAdjustment bool
	Adjusts        period.Period // a late adjustment's closed period
}

// ExportOpening is the balance of one account and currency over the
// entries whose accounting date is before an export's From.
type ExportOpening struct {
	Account  string
	Currency money.Currency
	Balance  int64
}

// PayoutLineSum is the sum of one kind of a payout's settlement lines in
// one currency: what an export's deposit journal itemises.
type PayoutLineSum struct {
	Kind            string
	Lines           int64
	Gross, Fee, Net int64
}

// DepositKey names one deposit journal's payout: a payout paid in one
// currency, booked into one period.
type DepositKey struct {
	Provider, PayoutID string
	Currency           money.Currency
	Period             period.Period
}

// ExportDeposit is one kind of the settlement lines of a payout paid in
// an export's range.
type ExportDeposit struct {
	DepositKey
	PayoutLineSum
}
