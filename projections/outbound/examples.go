package outbound

import (
	"fmt"
	"time"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/payment"
	"github.com/onceledger/onceledger/domain/period"
	"github.com/onceledger/onceledger/domain/settlement"
)

// TypeInfo is one public type with an example event (GET /v1/events/types,
// docs/events.md).
type TypeInfo struct {
	Type        string `json:"type"`
	Description string `json:"description"`
	Example     Event  `json:"example"`
}

// exampleAt is the examples' fixed time, so that they never change.
var exampleAt = time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)

// exampleEvents is one domain event of every stored type, as a stream would
// hold it.
func exampleEvents() []struct {
	stream string
	event  payment.Event
} {
	m := payment.Meta{Provider: "stripe", PaymentKey: "pi_123", DedupKey: "evt_1", OccurredAt: exampleAt}
	po := payment.Meta{Provider: "stripe", PaymentKey: "po_456", DedupKey: "evt_2", OccurredAt: exampleAt}
	line := settlement.Line{Provider: "stripe", Kind: settlement.KindCharge, SourceType: "charge", LineID: "txn_1",
		PaymentKey: "pi_123", CaptureID: "ch_1", Gross: 1000, Fee: 59, Net: 941, Currency: "USD", PayoutID: "po_456",
		OccurredAt: exampleAt, AvailableOn: exampleAt.AddDate(0, 0, 2)}
	pay, payout := delivery.PaymentStream("stripe", "pi_123"), delivery.PayoutStream("stripe", "po_456")
	type ex = struct {
		stream string
		event  payment.Event
	}
	return []ex{
		{pay, payment.Authorized{Meta: m, AuthorizationID: "pi_123", Amount: 1000, Currency: "USD"}},
		{pay, payment.Captured{Meta: m, CaptureID: "ch_1", Amount: 1000, Fee: 59, Currency: "USD"}},
		{pay, payment.FeeRecorded{Meta: m, CaptureID: "ch_1", Fee: 59, Currency: "USD"}},
		{pay, payment.Failed{Meta: m, Reason: "card_declined", Amount: 1000, Currency: "USD"}},
		{pay, payment.Canceled{Meta: m, Reason: "requested_by_customer"}},
		{pay, payment.RefundPending{Meta: m, RefundID: "re_1", Amount: 400, Currency: "USD"}},
		{pay, payment.RefundPosted{Meta: m, RefundID: "re_1", Amount: 400, Currency: "USD"}},
		{pay, payment.RefundReversed{Meta: m, RefundID: "re_1", Amount: 400, Currency: "USD"}},
		{pay, payment.DisputeOpened{Meta: m, DisputeID: "du_1", Amount: 1000, Currency: "USD"}},
		{pay, payment.DisputeInquiry{Meta: m, DisputeID: "du_1", Amount: 1000, Currency: "USD", Reason: "fraudulent"}},
		{pay, payment.DisputeFundsWithdrawn{Meta: m, DisputeID: "du_1", Amount: 1000, Currency: "USD"}},
		{pay, payment.DisputeFundsReinstated{Meta: m, DisputeID: "du_1", Amount: 1000, Currency: "USD"}},
		{pay, payment.DisputePending{Meta: m, DisputeID: "du_1", Fact: "dispute_opened", Amount: 1000, Currency: "USD"}},
		{pay, payment.DisputeWon{Meta: m, DisputeID: "du_1", Amount: 1000, Currency: "USD"}},
		{pay, payment.DisputeLost{Meta: m, DisputeID: "du_1", Amount: 1000, Currency: "USD"}},
		{payout, payment.PayoutPaid{Meta: po, PayoutID: "po_456", Amount: 941, Currency: "USD"}},
		{payout, payment.PayoutFailed{Meta: po, PayoutID: "po_456", Amount: 941, Currency: "USD", Reason: "account_closed", WasPaid: true}},
		{payout, payment.PayoutLinesCounted{Meta: po, PayoutID: "po_456", Currency: "USD", Lines: []settlement.Counted{{Key: "txn_1", Net: 941}}}},
		{pay, payment.LineSettled{Meta: m, Line: line}},
		{pay, payment.FeeSettled{Meta: m, LineID: "txn_1", Fee: 59, Currency: "USD"}},
		{pay, payment.Converted{Meta: m, LineID: "txn_1", OriginalAmount: 1000, OriginalCurrency: "EUR", SettledAmount: 1085, SettledCurrency: "USD", ExchangeRate: "1.085"}},
		{pay, payment.Flagged{Meta: m, Kind: payment.ReconOverRefund, Key: "refunds", Details: "refunds exceed captures"}},
		{pay, payment.Cleared{Meta: m, Kind: payment.ReconOverRefund, Key: "refunds", Details: "captures caught up"}},
		{pay, payment.Resolved{Meta: payment.Meta{Provider: "stripe", PaymentKey: "pi_123", OccurredAt: exampleAt}, Kind: payment.ReconOverRefund, Key: "refunds", Actor: "alice", Note: "refunded by hand"}},
		{pay, payment.Reopened{Meta: payment.Meta{Provider: "stripe", PaymentKey: "pi_123", OccurredAt: exampleAt}, Kind: payment.ReconOverRefund, Key: "refunds", Actor: "alice", Note: "not settled after all"}},
		// Last, so that the examples before keep their ids.
		{pay, payment.CaptureReduced{Meta: m, CaptureID: "ch_1", Amount: 400, Currency: "USD", LineID: "txn_2"}},
		{payout, payment.PayoutTraced{Meta: po, PayoutID: "po_456", TraceID: "091000015550001"}},
	}
}

// Examples returns every public type with an example, sorted by type.
func Examples() ([]TypeInfo, error) {
	var recs []eventstore.RecordedEvent
	for i, ex := range exampleEvents() {
		typ, data, err := payment.Encode(ex.event)
		if err != nil {
			return nil, err
		}
		recs = append(recs, exampleRecord(ex.stream, typ, data, i))
	}
	nov := period.MustParse("2026-11")
	for i, e := range []period.Event{
		period.Closed{Period: nov, Zone: "UTC", Actor: "alice", Note: "month end", At: exampleAt},
		period.Reopened{Period: nov, Actor: "alice", Reason: "late refund", At: exampleAt},
	} {
		typ, data, err := period.Encode(e)
		if err != nil {
			return nil, err
		}
		recs = append(recs, exampleRecord(period.StreamID, typ, data, 100+i))
	}
	recs = append(recs, assertionExamples()...) // assertions.go
	more, err := expectationExampleRecords()    // expectations.go
	if err != nil {
		return nil, err
	}
	recs = append(recs, more...)
	byType := map[string]TypeInfo{}
	for _, r := range recs {
		e, err := FromRecorded(r)
		if err != nil {
			return nil, err
		}
		byType[e.Type] = TypeInfo{Type: e.Type, Description: descriptions[e.Type], Example: e}
	}
	out := make([]TypeInfo, 0, len(byType))
	for _, t := range Types() {
		info, ok := byType[t]
		if !ok {
			return nil, fmt.Errorf("public type %s has no example", t)
		}
		out = append(out, info)
	}
	return out, nil
}

func exampleRecord(stream, typ string, data []byte, i int) eventstore.RecordedEvent {
	return eventstore.RecordedEvent{
		ID: payment.EventID("example", typ, i), StreamID: stream, Type: typ, Data: data,
		RecordedAt: exampleAt.Add(1234 * time.Millisecond),
	}
}
