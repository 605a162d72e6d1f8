package outbound

import (
	"time"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/domain/expectation"
	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/payment"
)

// The public types of expected payments (docs/events.md): a shop that
// registers what it expects may ship on expected_payment.paid (one per
// expectation, whichever channel told the capture) as well as on
// payment.captured.
const (
	ExpectedPaymentRegistered = "expected_payment.registered"
	ExpectedPaymentPaid       = "expected_payment.paid"
	ExpectedPaymentOverdue    = "expected_payment.overdue"
	ExpectedPaymentFailed     = "expected_payment.failed"
	ExpectedPaymentCanceled   = "expected_payment.canceled"
)

func init() {
	for stored, pub := range map[string]string{
		expectation.TypeRegistered: ExpectedPaymentRegistered,
		expectation.TypePaid:       ExpectedPaymentPaid,
		expectation.TypeOverdue:    ExpectedPaymentOverdue,
		expectation.TypeFailed:     ExpectedPaymentFailed,
		expectation.TypeCanceled:   ExpectedPaymentCanceled,
	} {
		publicType[stored] = pub
	}
	descriptions[ExpectedPaymentRegistered] = "The merchant's order service registered a payment it expects (`reference` is the id the provider echoes); `id` names it in `/v1/expected-payments`."
	descriptions[ExpectedPaymentPaid] = "A capture for an expected payment was recorded, by webhook, by asking the provider or by a bill: once per expectation. `late` when it had gone overdue; `amount` is what was captured (an `amount_mismatch` item opens when it differs from the amount registered)."
	descriptions[ExpectedPaymentOverdue] = "Nothing was paid by the expected payment's `expires_at`; a `payment_overdue` item opens."
	descriptions[ExpectedPaymentFailed] = "An attempt to pay an expected payment failed; a later capture still pays it."
	descriptions[ExpectedPaymentCanceled] = "The merchant withdrew an expected payment not yet paid."
	sortedTypes = Types()
}

// expectationData is the public data of an expectation's own event; ok is
// false for the reconciliation events of its stream.
func expectationData(e payment.Event, stream string) (time.Time, map[string]any, bool) {
	id, _ := expectation.IDOfStream(stream)
	d := map[string]any{"id": id.String(), "reference": e.Metadata().PaymentKey}
	switch e := e.(type) {
	case expectation.Registered:
		d["expires_at"], d["actor"] = e.ExpiresAt.UTC().Format(time.RFC3339), e.Actor
		return e.OccurredAt, amounts(d, e.Amount, e.Currency), true
	case expectation.Paid:
		d["payment_stream"], d["capture_id"], d["late"] = e.PaymentStream, e.CaptureID, e.Late
		return e.OccurredAt, amounts(d, e.Amount, e.Currency), true
	case expectation.Overdue:
		return e.OccurredAt, d, true
	case expectation.Failed:
		d["payment_stream"], d["reason"] = e.PaymentStream, e.Reason
		return e.OccurredAt, d, true
	case expectation.Canceled:
		d["actor"], d["note"] = e.Actor, e.Note
		return e.OccurredAt, d, true
	}
	return time.Time{}, nil, false
}

// fromExpectation maps an event of an expectation's stream.
func fromExpectation(out Event, r eventstore.RecordedEvent) (Event, error) {
	e, err := expectation.Decode(r.Type, r.Data)
	if err != nil {
		return Event{}, err
	}
	out.Provider = e.Metadata().Provider
	if at, d, ok := expectationData(e, r.StreamID); ok {
		out.OccurredAt, out.Data = at.UTC(), d
		return checked(out, r.Type)
	}
	out.OccurredAt, out.Data = e.Metadata().OccurredAt.UTC(), paymentData(e)
	return checked(out, r.Type)
}

// expectationExamples are one event of each expectation type.
func expectationExamples() []payment.Event {
	m := payment.Meta{Provider: "alipay", PaymentKey: "ORDER-123", OccurredAt: exampleAt}
	return []payment.Event{
		expectation.Registered{Meta: m, ExpectationID: expectation.IDOf("alipay", "ORDER-123"), Amount: 1000,
			Currency: money.Currency("CNY"), ExpiresAt: exampleAt.Add(30 * time.Minute), Actor: "shop"},
		expectation.Paid{Meta: m, PaymentStream: "payment-alipay-2026112922001", CaptureID: "2026112922001", Amount: 1000, Currency: "CNY"},
		expectation.Overdue{Meta: m},
		expectation.Failed{Meta: m, PaymentStream: "payment-alipay-2026112922001", Reason: "TRADE_CLOSED"},
		expectation.Canceled{Meta: m, Actor: "shop", Note: "order withdrawn"},
	}
}

func expectationExampleRecords() ([]eventstore.RecordedEvent, error) {
	stream := expectation.StreamID(expectation.IDOf("alipay", "ORDER-123"))
	var recs []eventstore.RecordedEvent
	for i, e := range expectationExamples() {
		typ, data, err := expectation.Encode(e)
		if err != nil {
			return nil, err
		}
		recs = append(recs, exampleRecord(stream, typ, data, 200+i))
	}
	return recs, nil
}
