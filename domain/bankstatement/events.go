package bankstatement

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/onceledger/onceledger/domain/ledger"
	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/payment"
)

// Stable event type names (a change is a data migration). Items are the
// payment aggregate's Flagged and Cleared, so that the reconciliation
// items, and the operators' resolve and reopen, work on a bank stream as on
// any other.
const (
	TypeLineBooked        = "bank.line_booked"
	TypeLineMatched       = "bank.line_matched"
	TypeStatementRecorded = "bank.statement_recorded"
	TypePayoutKnown       = "bank.payout_known"
	TypeLineRematched     = "bank.line_rematched"
)

// Meta of every bank event: Provider "bank", PaymentKey the account name,
// OccurredAt the line's booking date (its effective_at) or the
// statement's date.
type Meta = payment.Meta

// PayoutRef names a payout a line settled, with its amount.
type PayoutRef struct {
	Provider string `json:"provider"`
	ID       string `json:"id"`
	Amount   int64  `json:"amount"`
}

// Key of the payout.
func (r PayoutRef) Key() string { return r.Provider + "/" + r.ID }

// LineBooked: a booked statement line, recorded once. Payouts are the
// payouts it proved banked; Returned the banked payout a reversal debit
// returned; neither: it waits in suspense.
type LineBooked struct {
	Meta
	Account  string      `json:"account"`
	Line     Line        `json:"line"`
	Payouts  []PayoutRef `json:"payouts,omitempty"`
	Returned *PayoutRef  `json:"returned,omitempty"`
	// By is what matched the line to Payouts (ByTraceID, ByReference,
	// ByDescriptor, ByAmount); "" when it matched none.
	By string `json:"by,omitempty"`
}

// Type implements payment.Event.
func (LineBooked) Type() string { return TypeLineBooked }

// Matched reports whether the line posted against bank:payouts.
func (e LineBooked) Matched() bool { return len(e.Payouts) > 0 || e.Returned != nil }

// Postings: bank:NAME takes the line; bank:payouts gives it (a payout
// banked; a return gives it back), else suspense:bank:NAME.
func (e LineBooked) Postings() []ledger.Posting {
	other := Suspense(e.Account)
	if e.Matched() {
		other = ledger.BankPayouts
	}
	return pair(e.Line.Currency, Account(e.Account), other, e.Line.Amount)
}

// LineMatched: a line that waited in suspense proved payouts banked (or a
// return) once they were known.
type LineMatched struct {
	Meta
	Account  string         `json:"account"`
	LineKey  string         `json:"line_key"`
	Amount   int64          `json:"amount"`
	Currency money.Currency `json:"currency"`
	BookedOn time.Time      `json:"booked_on"`
	Payouts  []PayoutRef    `json:"payouts,omitempty"`
	Returned *PayoutRef     `json:"returned,omitempty"`
	By       string         `json:"by,omitempty"`
}

// Type implements payment.Event.
func (LineMatched) Type() string { return TypeLineMatched }

// Postings move the line from suspense to bank:payouts.
func (e LineMatched) Postings() []ledger.Posting {
	return pair(e.Currency, Suspense(e.Account), ledger.BankPayouts, e.Amount)
}

// LineRematched: a line that banked From by a weaker match (the
// tie-break, or a descriptor) banks To instead, because a stronger fact
// arrived since: a payout, or a payout's trace id, that the line names
// (docs/accountants.md, "Reconciling the bank account"). From and To are
// one payout each, of the line's amount, so nothing posts: the money stays
// in bank:payouts; From waits for its line again.
type LineRematched struct {
	Meta
	Account  string         `json:"account"`
	LineKey  string         `json:"line_key"`
	Amount   int64          `json:"amount"`
	Currency money.Currency `json:"currency"`
	BookedOn time.Time      `json:"booked_on"`
	From     []PayoutRef    `json:"from"`
	To       []PayoutRef    `json:"to"`
	By       string         `json:"by"`
}

// Type implements payment.Event.
func (LineRematched) Type() string { return TypeLineRematched }

// Postings: none (bank:payouts gave the line's amount already).
func (LineRematched) Postings() []ledger.Posting { return nil }

// StatementRecorded: a statement's header and stated balances. Posts
// nothing; its balances are what the bank says bank:NAME holds (balance
// assertions on bank:NAME, provider "bank").
type StatementRecorded struct {
	Meta
	Account   string    `json:"account"`
	Statement Statement `json:"statement"`
}

// Type implements payment.Event.
func (StatementRecorded) Type() string { return TypeStatementRecorded }

// PayoutKnown: a paid payout the account expects. Posts nothing.
type PayoutKnown struct {
	Meta
	Account string `json:"account"`
	Payout  Payout `json:"payout"`
}

// Type implements payment.Event.
func (PayoutKnown) Type() string { return TypePayoutKnown }

func pair(c money.Currency, debit, credit string, amount int64) []ledger.Posting {
	if amount == 0 {
		return nil
	}
	return []ledger.Posting{{Account: debit, Currency: c, Amount: amount}, {Account: credit, Currency: c, Amount: -amount}}
}

// wire is the stored form: the meta under the payment events' own names.
type wire[T any] struct {
	Provider   string `json:"provider"`
	PaymentKey string `json:"payment_key"`
	DedupKey   string `json:"dedup_key"`
	OccurredAt string `json:"occurred_at"`
	Body       T      `json:"body"`
}

func encodeWire[T any](m Meta, body T) ([]byte, error) {
	return json.Marshal(wire[T]{Provider: m.Provider, PaymentKey: m.PaymentKey, DedupKey: m.DedupKey,
		OccurredAt: m.OccurredAt.UTC().Format(time.RFC3339Nano), Body: body})
}

func decodeWire[T any](typ string, data []byte) (Meta, T, error) {
	var w wire[T]
	if err := json.Unmarshal(data, &w); err != nil {
		return Meta{}, w.Body, fmt.Errorf("decode %s: %w", typ, err)
	}
	at, err := time.Parse(time.RFC3339Nano, w.OccurredAt)
	if err != nil {
		return Meta{}, w.Body, fmt.Errorf("decode %s: occurred_at: %w", typ, err)
	}
	return Meta{Provider: w.Provider, PaymentKey: w.PaymentKey, DedupKey: w.DedupKey, OccurredAt: at}, w.Body, nil
}

type lineBookedBody struct {
	Account  string      `json:"account"`
	Line     Line        `json:"line"`
	Payouts  []PayoutRef `json:"payouts,omitempty"`
	Returned *PayoutRef  `json:"returned,omitempty"`
	By       string      `json:"by,omitempty"`
}

type lineMatchedBody struct {
	Account  string         `json:"account"`
	LineKey  string         `json:"line_key"`
	Amount   int64          `json:"amount"`
	Currency money.Currency `json:"currency"`
	BookedOn time.Time      `json:"booked_on"`
	Payouts  []PayoutRef    `json:"payouts,omitempty"`
	Returned *PayoutRef     `json:"returned,omitempty"`
	By       string         `json:"by,omitempty"`
}

type lineRematchedBody struct {
	Account  string         `json:"account"`
	LineKey  string         `json:"line_key"`
	Amount   int64          `json:"amount"`
	Currency money.Currency `json:"currency"`
	BookedOn time.Time      `json:"booked_on"`
	From     []PayoutRef    `json:"from"`
	To       []PayoutRef    `json:"to"`
	By       string         `json:"by"`
}

type statementBody struct {
	Account   string    `json:"account"`
	Statement Statement `json:"statement"`
}

type payoutBody struct {
	Account string `json:"account"`
	Payout  Payout `json:"payout"`
}

// Encode returns a bank event's stored type and data; ok false for an
// event that is not one.
func Encode(e payment.Event) (string, []byte, bool, error) {
	var data []byte
	var err error
	switch e := e.(type) {
	case LineBooked:
		data, err = encodeWire(e.Meta, lineBookedBody{e.Account, e.Line, e.Payouts, e.Returned, e.By})
	case LineMatched:
		data, err = encodeWire(e.Meta, lineMatchedBody{e.Account, e.LineKey, e.Amount, e.Currency, e.BookedOn, e.Payouts, e.Returned, e.By})
	case LineRematched:
		data, err = encodeWire(e.Meta, lineRematchedBody{e.Account, e.LineKey, e.Amount, e.Currency, e.BookedOn, e.From, e.To, e.By})
	case StatementRecorded:
		data, err = encodeWire(e.Meta, statementBody{e.Account, e.Statement})
	case PayoutKnown:
		data, err = encodeWire(e.Meta, payoutBody{e.Account, e.Payout})
	default:
		return "", nil, false, nil
	}
	return e.Type(), data, true, err
}

// Decode decodes a stored bank event.
func Decode(typ string, data []byte) (payment.Event, error) {
	switch typ {
	case TypeLineBooked:
		m, b, err := decodeWire[lineBookedBody](typ, data)
		return LineBooked{Meta: m, Account: b.Account, Line: b.Line, Payouts: b.Payouts, Returned: b.Returned, By: b.By}, err
	case TypeLineMatched:
		m, b, err := decodeWire[lineMatchedBody](typ, data)
		return LineMatched{Meta: m, Account: b.Account, LineKey: b.LineKey, Amount: b.Amount, Currency: b.Currency,
			BookedOn: b.BookedOn, Payouts: b.Payouts, Returned: b.Returned, By: b.By}, err
	case TypeLineRematched:
		m, b, err := decodeWire[lineRematchedBody](typ, data)
		return LineRematched{Meta: m, Account: b.Account, LineKey: b.LineKey, Amount: b.Amount, Currency: b.Currency,
			BookedOn: b.BookedOn, From: b.From, To: b.To, By: b.By}, err
	case TypeStatementRecorded:
		m, b, err := decodeWire[statementBody](typ, data)
		return StatementRecorded{Meta: m, Account: b.Account, Statement: b.Statement}, err
	case TypePayoutKnown:
		m, b, err := decodeWire[payoutBody](typ, data)
		return PayoutKnown{Meta: m, Account: b.Account, Payout: b.Payout}, err
	}
	return nil, fmt.Errorf("%w: %q", payment.ErrUnknownEventType, typ)
}

func init() {
	payment.RegisterExtension(payment.Extension{Prefix: "bank.", Decode: Decode, Encode: Encode, ReconKinds: ReconKinds()})
}
