// Package provider defines the normalized form every verified webhook takes
// before it reaches the payment state machine. Provider adapters (one package
// per provider under adapters/providers) produce an Event; the domain decides
// on it. Nothing here knows how a provider signs or shapes its payloads.
package provider

import (
	"errors"
	"fmt"
	"time"

	"github.com/onceledger/onceledger/domain/money"
)

// Kind is the business meaning of one fact, independent of the provider's
// own event type names.
type Kind string

// The fact kinds the ledger understands. They are stable strings: they are
// stored in the inbox for audit.
const (
	KindAuthorized    Kind = "authorized"     // funds reserved; posts nothing
	KindCaptured      Kind = "captured"       // money moved to us; BusinessID = capture/charge id
	KindFailed        Kind = "failed"         // payment attempt failed; posts nothing
	KindCanceled      Kind = "canceled"       // authorization voided; posts nothing
	KindRefunded      Kind = "refunded"       // BusinessID = refund id
	KindRefundFailed  Kind = "refund_failed"  // a previously reported refund did not happen
	KindDisputeOpened Kind = "dispute_opened" // BusinessID = dispute id
	KindDisputeWon    Kind = "dispute_won"
	KindDisputeLost   Kind = "dispute_lost"
	KindPayoutPaid    Kind = "payout_paid" // BusinessID = payout id; has no payment
)

// Fact is one business fact carried by a delivery. Most deliveries carry one;
// some carry several (a Stripe charge.refunded lists its refunds).
type Fact struct {
	Kind       Kind
	BusinessID string // capture, refund, dispute or payout id; required for money facts
	Amount     int64  // minor units, >= 0
	Fee        int64  // minor units, >= 0, captures only
	Currency   money.Currency
	Reason     string // free text for failures, cancellations; optional
}

// Event is one verified, normalized delivery.
type Event struct {
	Provider    string // "stripe", "standard", "adyen", ...
	DedupKey    string // the provider's event id, or a derived key; never empty
	Type        string // the provider's own event type, kept for audit ("charge.succeeded")
	PaymentKey  string // the payment the facts belong to; empty only for payouts and ignored events
	OccurredAt  time.Time
	PayloadHash string // hex SHA-256 of the bytes this delivery was verified on
	Raw         []byte // the verified bytes, kept in the inbox
	Facts       []Fact // empty: a type we do not handle ("ignored")
}

// Sentinel errors for normalization; adapters wrap them with %w and the
// detail that names the problem.
var (
	ErrMalformed     = errors.New("malformed payload")
	ErrMissingField  = errors.New("missing required field")
	ErrInvalidAmount = errors.New("invalid amount")
)

// Ignored reports whether the delivery carries no fact the ledger handles.
func (e Event) Ignored() bool { return len(e.Facts) == 0 }

// IsPayout reports whether the delivery is about a payout rather than a payment.
func (e Event) IsPayout() bool {
	return len(e.Facts) > 0 && e.Facts[0].Kind == KindPayoutPaid
}

// StreamID names the event stream the delivery's facts belong to:
// payment-{provider}-{payment key}, or payout-{provider}-{payout id}.
func (e Event) StreamID() string {
	if e.IsPayout() {
		return "payout-" + e.Provider + "-" + e.Facts[0].BusinessID
	}
	return "payment-" + e.Provider + "-" + e.PaymentKey
}

// Validate checks what every provider adapter must guarantee, so that a
// mistake in one adapter is bad input rather than a corrupt ledger.
func (e Event) Validate() error {
	if e.Provider == "" {
		return fmt.Errorf("%w: provider", ErrMissingField)
	}
	if e.DedupKey == "" {
		return fmt.Errorf("%w: event id (dedup key)", ErrMissingField)
	}
	if e.Ignored() {
		return nil
	}
	payout := e.IsPayout()
	if !payout && e.PaymentKey == "" {
		return fmt.Errorf("%w: payment id", ErrMissingField)
	}
	for i, f := range e.Facts {
		if (f.Kind == KindPayoutPaid) != payout {
			return fmt.Errorf("%w: fact %d mixes payout and payment facts", ErrMalformed, i)
		}
		if f.Amount < 0 {
			return fmt.Errorf("%w: amount %d is negative", ErrInvalidAmount, f.Amount)
		}
		if f.Fee < 0 {
			return fmt.Errorf("%w: fee %d is negative", ErrInvalidAmount, f.Fee)
		}
		if f.Fee > f.Amount {
			return fmt.Errorf("%w: fee %d exceeds amount %d", ErrInvalidAmount, f.Fee, f.Amount)
		}
		switch f.Kind {
		case KindAuthorized, KindFailed, KindCanceled:
			// may carry no id and no amount
		case KindCaptured, KindRefunded, KindRefundFailed, KindDisputeOpened, KindDisputeWon, KindDisputeLost, KindPayoutPaid:
			if f.BusinessID == "" {
				return fmt.Errorf("%w: %s id", ErrMissingField, f.Kind)
			}
			if f.Currency == "" {
				return fmt.Errorf("%w: currency for %s", ErrMissingField, f.Kind)
			}
		default:
			return fmt.Errorf("%w: unknown fact kind %q", ErrMalformed, f.Kind)
		}
		if f.Currency != "" {
			if _, err := money.ParseCurrency(string(f.Currency)); err != nil {
				return err
			}
		}
	}
	return nil
}
