// Package outbound owns the ledger's public event vocabulary and its pull
// feed: every fact the domain records, mapped in one place (this file) from
// its internal stored type to a public, versioned event with a stable id
// (docs/events.md), and the feed of those events in the global feed's order
// behind an opaque cursor, with type filters and a long poll
// (GET /v1/events, `onceledger events tail`, the JetStream publisher).
// The internal encoding is never exposed: a stored name can change meaning
// only through a data migration, a public one never.
package outbound

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/domain/assertion"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/expectation"
	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/payment"
	"github.com/onceledger/onceledger/domain/period"
)

// Version is the vocabulary's version, carried by every event. A change
// that would alter what an existing public field means is a new version.
const Version = 1

// The public event types (docs/events.md).
const (
	PaymentAuthorized      = "payment.authorized"
	PaymentCaptured        = "payment.captured"
	PaymentFeeRecorded     = "payment.fee_recorded"
	PaymentCaptureReduced  = "payment.capture_reduced"
	PaymentFailed          = "payment.failed"
	PaymentCanceled        = "payment.canceled"
	RefundPending          = "refund.pending"
	RefundSucceeded        = "refund.succeeded"
	RefundFailed           = "refund.failed"
	DisputeOpened          = "dispute.opened"
	DisputeInquiry         = "dispute.inquiry"
	DisputeFundsWithdrawn  = "dispute.funds_withdrawn"
	DisputeFundsReinstated = "dispute.funds_reinstated"
	DisputePending         = "dispute.pending"
	DisputeWon             = "dispute.won"
	DisputeLost            = "dispute.lost"
	PayoutPaid             = "payout.paid"
	PayoutFailed           = "payout.failed"
	PayoutTraced           = "payout.traced"
	PayoutLinesCounted     = "payout.lines_counted"
	SettlementLine         = "settlement.line"
	SettlementFee          = "settlement.fee"
	SettlementConversion   = "settlement.conversion"
	ReconciliationOpened   = "reconciliation.opened"
	ReconciliationCleared  = "reconciliation.cleared"
	ReconciliationResolved = "reconciliation.resolved"
	ReconciliationReopened = "reconciliation.reopened"
	PeriodClosed           = "period.closed"
	PeriodReopened         = "period.reopened"
)

// publicType maps every stored domain type to its public type: the one
// place where the two vocabularies meet. Names that coincide are mapped
// too, so that renaming an internal type can never rename a public one.
var publicType = map[string]string{
	payment.TypeAuthorized:             PaymentAuthorized,
	payment.TypeCaptured:               PaymentCaptured,
	payment.TypeFeeRecorded:            PaymentFeeRecorded,
	payment.TypeCaptureReduced:         PaymentCaptureReduced,
	payment.TypeFailed:                 PaymentFailed,
	payment.TypeCanceled:               PaymentCanceled,
	payment.TypeRefundPending:          RefundPending,
	payment.TypeRefundPosted:           RefundSucceeded,
	payment.TypeRefundReversed:         RefundFailed,
	payment.TypeDisputeOpened:          DisputeOpened,
	payment.TypeDisputeInquiry:         DisputeInquiry,
	payment.TypeDisputeFundsWithdrawn:  DisputeFundsWithdrawn,
	payment.TypeDisputeFundsReinstated: DisputeFundsReinstated,
	payment.TypeDisputePending:         DisputePending,
	payment.TypeDisputeWon:             DisputeWon,
	payment.TypeDisputeLost:            DisputeLost,
	payment.TypePayoutPaid:             PayoutPaid,
	payment.TypePayoutFailed:           PayoutFailed,
	payment.TypePayoutTraced:           PayoutTraced,
	payment.TypePayoutLinesCounted:     PayoutLinesCounted,
	payment.TypeLineSettled:            SettlementLine,
	payment.TypeFeeSettled:             SettlementFee,
	payment.TypeConverted:              SettlementConversion,
	payment.TypeFlagged:                ReconciliationOpened,
	payment.TypeCleared:                ReconciliationCleared,
	payment.TypeResolved:               ReconciliationResolved,
	payment.TypeReopened:               ReconciliationReopened,
	period.TypeClosed:                  PeriodClosed,
	period.TypeReopened:                PeriodReopened,
}

// Event is one outbound event in its public JSON shape (docs/events.md).
type Event struct {
	ID         uuid.UUID      `json:"id"`
	Type       string         `json:"type"`
	Version    int            `json:"version"`
	OccurredAt time.Time      `json:"occurred_at"`
	RecordedAt time.Time      `json:"recorded_at"`
	Provider   string         `json:"provider,omitempty"`
	PaymentID  string         `json:"payment_id,omitempty"`
	Data       map[string]any `json:"data"`
	// Position is where the event is in the feed: a cursor after it
	// (Cursor) resumes after it. Not part of the public shape.
	Position eventstore.Position `json:"-"`
	// Stream is the stored stream the fact belongs to (a payment, a
	// payout, the periods): push subscriptions keep its order. Not part
	// of the public shape.
	Stream string `json:"-"`
}

// IDNamespace is the UUIDv5 namespace of public event ids. Fixed forever:
// the id of a fact must never change.
var IDNamespace = uuid.MustParse("5b0c1f7e-4a53-4c2a-9d1e-6f0f1d9e8a31")

// PublicID is the public id of the fact stored with event id stored. The
// stored id is deterministic (payment.EventID: provider, delivery, index),
// the same in both event stores and through every rebuild, restart and
// replay, so this one is too; it is derived rather than copied so that the
// public id is a name of the public vocabulary, free to stay put even if
// one fact ever maps to several public events.
func PublicID(stored uuid.UUID) uuid.UUID { return uuid.NewSHA1(IDNamespace, stored[:]) }

// ErrUnmapped is returned (wrapped) for a stored type with no public type.
var ErrUnmapped = errors.New("stored event type has no public type")

// PublicType returns the public type of a stored domain type.
func PublicType(stored string) (string, bool) {
	t, ok := publicType[stored]
	return t, ok
}

// sortedTypes is Types, computed once.
var sortedTypes = Types()

// Types lists the public types, sorted.
func Types() []string {
	out := make([]string, 0, len(publicType))
	for _, t := range publicType {
		out = append(out, t)
	}
	sortStrings(out)
	return out
}

// FromRecorded maps a stored event to its public event.
func FromRecorded(r eventstore.RecordedEvent) (Event, error) {
	typ, ok := publicType[r.Type]
	if !ok {
		return Event{}, fmt.Errorf("%w: %q", ErrUnmapped, r.Type)
	}
	out := Event{ID: PublicID(r.ID), Type: typ, Version: Version, RecordedAt: r.RecordedAt.UTC(), Position: r.Position, Stream: r.StreamID}
	if r.StreamID == period.StreamID {
		e, err := period.Decode(r.Type, r.Data)
		if err != nil {
			return Event{}, err
		}
		out.OccurredAt, out.Data = periodData(e)
		return checked(out, r.Type)
	}
	if assertion.IsStream(r.StreamID) {
		return fromAssertion(out, r) // assertions.go
	}
	if strings.HasPrefix(r.StreamID, expectation.StreamPrefix) {
		return fromExpectation(out, r) // expectations.go
	}
	e, err := payment.Decode(r.Type, r.Data)
	if err != nil {
		return Event{}, err
	}
	m := e.Metadata()
	out.OccurredAt, out.Provider = m.OccurredAt.UTC(), m.Provider
	if strings.HasPrefix(r.StreamID, delivery.PaymentStreamPrefix) {
		out.PaymentID = m.PaymentKey
	}
	out.Data = paymentData(e)
	return checked(out, r.Type)
}

// checked fails an event whose data no case of the mapping built: a type
// listed in publicType without its data is a mapping not finished.
func checked(e Event, stored string) (Event, error) {
	if e.Data == nil {
		return Event{}, fmt.Errorf("%w: no data mapping for %q", ErrUnmapped, stored)
	}
	return e, nil
}

// amounts returns the data fields of an amount in minor units: the integer,
// its decimal text in the currency's exponent, and the currency.
func amounts(d map[string]any, amount int64, c money.Currency) map[string]any {
	d["amount"], d["amount_decimal"], d["currency"] = amount, money.FormatMinor(amount, c), string(c)
	return d
}

func periodData(e period.Event) (time.Time, map[string]any) {
	switch e := e.(type) {
	case period.Closed:
		return e.At.UTC(), map[string]any{"period": e.Period.String(), "zone": e.Zone, "actor": e.Actor, "note": e.Note}
	case period.Reopened:
		return e.At.UTC(), map[string]any{"period": e.Period.String(), "actor": e.Actor, "reason": e.Reason}
	}
	return time.Time{}, nil
}
