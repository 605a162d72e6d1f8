// Package bankline holds what is delivered to a bank account's stream
// (domain/bankstatement): a booked statement line, a statement's header and
// stated balances, a payout the account expects. It is its own package,
// with no dependency but money, so that the normalized deliveries
// (domain/delivery) can carry it without depending on the aggregate.
package bankline

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
	// Reference is what else the provider prints in the bank's
	// remittance text that names this payout alone, as its id does
	// (Adyen's TX…XT batch reference); "" when none.
	Reference string `json:"reference,omitempty"`
	// TraceID is the trace id the provider's banking partner gave the
	// payout (Stripe's trace_id.value, when its status is "supported"):
	// unique, so a line that holds it is this payout's, first of all.
	// Stripe fills it in after the payout is paid ("up to 10 days after
	// arrival_date"), so a payout is often told to the account again,
	// later, with it (docs/accountants.md, "Reconciling the bank
	// account").
	TraceID string `json:"trace_id,omitempty"`
	// Descriptor is the statement descriptor the provider asked the bank
	// to show (Stripe's statement_descriptor). Not unique (a merchant's
	// payouts often share one): it only narrows equal candidates.
	Descriptor string `json:"descriptor,omitempty"`
	// Failed: the provider says the payout failed (or was canceled)
	// before any line banked it: the account stops expecting it.
	Failed bool `json:"failed,omitempty"`
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
