// Package bankstatement is the bank account aggregate: one stream per bank
// account (bank-NAME) holds the account's booked statement lines, its
// statements (sequence numbers and stated balances) and the payouts the
// ledger expects to land in it, and decides, whatever the order they
// arrive in, which payouts each line proves banked (CONTRACT "Bank
// statements: payouts proven into the bank"). Pure: no clock, no I/O; the
// caller delivers each fact once through the inbox gate.
//
// Matching, in order (docs/accountants.md, "Reconciling the bank account"):
//
//  1. A credit (or a debit, for a negative payout) matches the unbanked
//     payouts of its amount and currency whose window holds its booking
//     date: from the payout's arrival date through ArrivalDays business days
//     (Monday to Friday) after it. Where the line's remittance text holds
//     a candidate's reference (its payout id, or the reference the
//     provider prints), only such candidates count. Ties go to the
//     earliest arrival date, then the provider's name, then the payout id.
//  2. Else it may settle several payouts of one provider and one arrival
//     date, 2 to 8 of them, whose amounts sum to it exactly: groups are
//     tried by arrival date, then provider; within a group the first
//     subset in the order of the payout ids (the lowest ids first) wins.
//     At most 16 payouts of a group are searched, keeping the search bounded.
//  3. A debit flagged as a reversal (camt RvslInd, MT940 RC, BAI2 return
//     codes) matches a banked payout of its amount (reference first, then
//     the latest banked, then provider and id): the payout is returned.
//
// A line that matches nothing posts to suspense:bank:NAME; a credit opens
// unidentified_deposit. A payout that arrives later (its webhook or report
// after the statement) is matched to the suspended lines then, and the
// item clears, so the final ledger does not depend on the order.
package bankstatement

import (
	"errors"
	"fmt"
	"time"

	"github.com/onceledger/onceledger/domain/money"
)

// Provider is the provider name of every bank delivery and event.
const Provider = "bank"

// StreamPrefix and Stream: the one spelling of a bank account's stream.
const StreamPrefix = "bank-"

// Stream is the stream of the bank account named account.
func Stream(account string) string { return StreamPrefix + account }

// Account names the ledger accounts of a bank account.
func Account(name string) string { return "bank:" + name }

// Suspense is where a bank account's unmatched lines wait.
func Suspense(name string) string { return "suspense:bank:" + name }

// Reconciliation item kinds the aggregate opens.
const (
	ReconUnidentifiedDeposit = "unidentified_deposit"
	ReconPayoutNotReceived   = "payout_not_received"
	ReconPayoutReturned      = "payout_returned"
	ReconStatementGap        = "statement_gap"
)

// ReconKinds lists them.
func ReconKinds() []string {
	return []string{ReconUnidentifiedDeposit, ReconPayoutNotReceived, ReconPayoutReturned, ReconStatementGap}
}

// DefaultArrivalDays is ONCELEDGER_BANK_ARRIVAL_DAYS's default.
const DefaultArrivalDays = 5

// ErrInvalid: an input the aggregate cannot take (a caller's bug or bad
// input the parser let through).
var ErrInvalid = errors.New("invalid bank input")

// Line is one booked statement line. Amount is signed: credits positive.
type Line struct {
	Key       string         `json:"key"` // identity within the account (bankfile.Entry.Key)
	Reference string         `json:"reference,omitempty"`
	Format    string         `json:"format"`
	Statement string         `json:"statement,omitempty"` // the statement it was read from (id), for the record
	BookedOn  time.Time      `json:"booked_on"`
	ValueOn   time.Time      `json:"value_on,omitzero"`
	Amount    int64          `json:"amount"`
	Currency  money.Currency `json:"currency"`
	Reversal  bool           `json:"reversal,omitempty"`
	Code      string         `json:"code,omitempty"`
	Text      string         `json:"text,omitempty"`
}

// Balance is a stated balance: signed minor units at the end of Date.
type Balance struct {
	Amount int64     `json:"amount"`
	Date   time.Time `json:"date"`
	Code   string    `json:"code,omitempty"`
}

// Statement is one statement's header and stated balances.
type Statement struct {
	Format   string         `json:"format"`
	ID       string         `json:"id,omitempty"`
	Seq      int64          `json:"seq,omitempty"` // 0: the format numbers none
	Page     int64          `json:"page,omitempty"`
	Currency money.Currency `json:"currency,omitempty"`
	Opening  *Balance       `json:"opening,omitempty"`
	Closing  *Balance       `json:"closing,omitempty"`
	// Covers is the last booking date the statement covers (its closing
	// balance's date, else its latest line's booking date).
	Covers  time.Time `json:"covers,omitzero"`
	Entries int       `json:"entries"`
}

// Payout is a payout the ledger knows paid, told to the account so that a
// line can prove it banked. ArrivalOn is the provider's own arrival date
// (for Adyen the booking date of its MerchantPayout line); where the
// provider gives none, the date of the payout's event.
type Payout struct {
	Provider  string         `json:"provider"`
	ID        string         `json:"id"`
	Amount    int64          `json:"amount"`
	Currency  money.Currency `json:"currency"`
	ArrivalOn time.Time      `json:"arrival_on"`
	// Reference is what the provider prints in the bank's remittance
	// text besides the payout id (Stripe's statement descriptor or trace
	// id, Adyen's TX…XT batch reference); "" when none.
	Reference string `json:"reference,omitempty"`
}

// Key names a payout within the account.
func (p Payout) Key() string { return p.Provider + "/" + p.ID }

// Input is one delivery to an account's stream: exactly one of its fields.
type Input struct {
	Line      *Line      `json:"line,omitempty"`
	Statement *Statement `json:"statement,omitempty"`
	Payout    *Payout    `json:"payout,omitempty"`
}

// Validate checks an input whole.
func (in Input) Validate() error {
	n := 0
	for _, set := range []bool{in.Line != nil, in.Statement != nil, in.Payout != nil} {
		if set {
			n++
		}
	}
	if n != 1 {
		return fmt.Errorf("%w: a bank delivery holds one line, statement or payout (%d)", ErrInvalid, n)
	}
	switch {
	case in.Line != nil:
		l := in.Line
		if l.Key == "" || l.BookedOn.IsZero() || l.Amount == 0 || !l.Currency.Known() {
			return fmt.Errorf("%w: a line needs its key, booking date, a non-zero amount and a known currency", ErrInvalid)
		}
		if l.Amount > maxAmount || l.Amount < -maxAmount {
			return fmt.Errorf("%w: line amount %d is above 10^15 minor units", ErrInvalid, l.Amount)
		}
	case in.Payout != nil:
		p := in.Payout
		if p.Provider == "" || p.ID == "" || p.Amount == 0 || !p.Currency.Known() || p.ArrivalOn.IsZero() {
			return fmt.Errorf("%w: a payout needs its provider, id, a non-zero amount, a known currency and its arrival date", ErrInvalid)
		}
		if p.Amount > maxAmount || p.Amount < -maxAmount {
			return fmt.Errorf("%w: payout amount %d is above 10^15 minor units", ErrInvalid, p.Amount)
		}
	}
	return nil
}

const maxAmount int64 = 1_000_000_000_000_000

// Day is t's calendar date (UTC midnight): lines and payouts are compared
// by date, never by time of day.
func Day(t time.Time) time.Time {
	y, m, d := t.Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
}

// AddBusinessDays returns the date n business days (Monday to Friday)
// after d. A holiday calendar is later work: a bank holiday counts as a
// business day.
func AddBusinessDays(d time.Time, n int) time.Time {
	d = Day(d)
	for n > 0 {
		d = d.AddDate(0, 0, 1)
		if wd := d.Weekday(); wd != time.Saturday && wd != time.Sunday {
			n--
		}
	}
	return d
}
