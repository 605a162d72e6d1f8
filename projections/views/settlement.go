package views

import "time"

// Payout statuses (payouts.status, docs/reference.md).
const (
	PayoutPaid       = "paid"       // paid, no settlement line counted yet
	PayoutFailed     = "failed"     // failed or returned after it was paid
	PayoutReconciled = "reconciled" // its lines' nets sum to its amount
	PayoutMismatch   = "mismatch"   // they do not; Difference says by how much
)

// PayoutStatuses lists the statuses, for filters.
func PayoutStatuses() []string {
	return []string{PayoutPaid, PayoutFailed, PayoutReconciled, PayoutMismatch}
}

// Payout is one payouts row: a payout known from a webhook (payout.paid),
// from a report line, or both (one payout), with the settlement lines
// counted in it.
type Payout struct {
	Provider string
	PayoutID string
	Amount   int64  // what was paid out; 0 while no report of it has arrived
	Currency string // "" while unknown
	// ArrivalDate is the day the provider says the payout reaches the
	// bank (payment.PayoutPaid.ArrivalDate), else when it was reported
	// paid (its payout.paid or its payout line); zero while unknown.
	ArrivalDate time.Time
	Status      string
	LineCount   int64 // settlement lines counted in the payout (not the payout line itself)
	LinesNet    int64 // the sum of their nets
	// Difference is LinesNet − Amount: what the lines say should have
	// been paid beyond what was (0 when reconciled).
	Difference int64
	UpdatedAt  time.Time
	// BankLine is the bank statement line that banked the payout (nil:
	// not banked, or returned by the bank since).
	BankLine *PayoutBankLine
}

// PayoutBankLine is the statement line that proved a payout banked
// (bank_payouts): the account, the line's reference, booking date and
// amount (a line may bank several payouts).
type PayoutBankLine struct {
	Account   string
	Reference string
	BookedOn  time.Time
	Amount    int64
}

// PayoutFilter selects payouts, by arrival date (unknown first), then
// provider and payout id; Newest reverses the order. Empty fields do not
// filter.
type PayoutFilter struct {
	Provider string
	Status   string
	Currency string
	From, To time.Time // arrival_date >= From, < To, when not zero
	// Banked, when set, keeps the payouts a bank line banked (true) or
	// those none did, or whose bank returned them (false).
	Banked *bool
	Newest bool // most recent first (unknown last)
	// After is the keyset (nil: from the first in the order); Limit caps
	// the page (<= 0: every payout).
	After *PayoutKey
	Limit int
}

// PayoutKey is a position in the payouts order. Its JSON is the console's
// cursor.
type PayoutKey struct {
	ArrivalDate time.Time `json:"t"` // zero: unknown
	Provider    string    `json:"p"`
	PayoutID    string    `json:"i"`
}

// Key returns the payout's position in the payouts order.
func (p Payout) Key() PayoutKey {
	return PayoutKey{ArrivalDate: p.ArrivalDate, Provider: p.Provider, PayoutID: p.PayoutID}
}

// SettlementLine is one settlement_lines row: a report line as recorded.
type SettlementLine struct {
	Provider         string
	LineKey          string // the line's dedup key
	Kind             string
	SourceType       string
	LineID           string
	PaymentID        string
	CaptureID        string
	RefundID         string
	DisputeID        string
	Gross, Fee, Net  int64
	Currency         string
	OriginalAmount   int64
	OriginalCurrency string
	ExchangeRate     string
	PayoutID         string
	OccurredAt       time.Time
	AvailableOn      time.Time // zero if not reported
	StreamID         string
}
