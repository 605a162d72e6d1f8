package views

import (
	"time"

	"github.com/google/uuid"
)

// Statuses of a balance assertion: the ledger's balance as of its moment
// equals the stated amount, or not.
const (
	AssertionAgreed  = "agreed"
	AssertionDiffers = "differs"
)

// BalanceAssertion is one row of balance_assertions: a balance stated for
// an account and currency at AsOf, and the ledger's balance as of then
// (entries with effective_at <= AsOf).
type BalanceAssertion struct {
	StreamID   string // the account and currency's stream (assertion.StreamID)
	Key        string // the point's key within it
	Provider   string // the account's provider; "bank" for bank:NAME
	Account    string
	Currency   string
	AsOf       time.Time
	Stated     int64
	Ledger     int64
	Source     string
	Actor      string // who stated it ("" for a provider's file or API)
	Note       string
	RecordedAt time.Time
	EventID    uuid.UUID
}

// Difference is ledger − stated.
func (a BalanceAssertion) Difference() int64 { return a.Ledger - a.Stated }

// Status is AssertionAgreed or AssertionDiffers.
func (a BalanceAssertion) Status() string {
	if a.Ledger == a.Stated {
		return AssertionAgreed
	}
	return AssertionDiffers
}

// AssertionFilter selects balance assertions, by as_of then stream and
// key. Empty fields do not filter.
type AssertionFilter struct {
	Provider string
	Account  string // exact
	Currency string
	Status   string    // AssertionAgreed or AssertionDiffers
	From     time.Time // as_of >= From
	To       time.Time // as_of < To
	// After is the keyset (nil: from the earliest); Limit caps the page
	// (<= 0: every row).
	After *AssertionKey
	Limit int
}

// AssertionKey is a position in the assertions order.
type AssertionKey struct {
	AsOf     time.Time `json:"t"`
	StreamID string    `json:"s"`
	Key      string    `json:"k"`
}

// Position is the assertion's position in the assertions order.
func (a BalanceAssertion) Position() AssertionKey {
	return AssertionKey{AsOf: a.AsOf, StreamID: a.StreamID, Key: a.Key}
}
