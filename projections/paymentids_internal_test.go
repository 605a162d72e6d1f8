package projections

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/domain/payment"
	"github.com/onceledger/onceledger/domain/settlement"
	"github.com/onceledger/onceledger/projections/views"
)

// The ids the search finds a payment by: each business id its events
// carry, once, settlement lines' included; the payment's own id is the
// payments row's; other streams are left alone.
func TestPaymentIDsOfABatch(t *testing.T) {
	m := payment.Meta{Provider: "stripe", PaymentKey: "pi_1", DedupKey: "evt_1"}
	const s = "payment-stripe-pi_1"
	env := func(stream string, e payment.Event) Envelope {
		return Envelope{Recorded: eventstore.RecordedEvent{StreamID: stream}, Event: e}
	}
	batch := []Envelope{
		env(s, payment.Authorized{Meta: m, AuthorizationID: "pi_1", Amount: 100, Currency: "USD"}),
		env(s, payment.Captured{Meta: m, CaptureID: "ch_1", Amount: 100, Currency: "USD"}),
		env(s, payment.FeeRecorded{Meta: m, CaptureID: "ch_1", Fee: 3, Currency: "USD"}),
		env(s, payment.RefundPosted{Meta: m, RefundID: "re_1", Amount: 10, Currency: "USD"}),
		env(s, payment.DisputeOpened{Meta: m, DisputeID: "du_1", Amount: 10, Currency: "USD"}),
		env(s, payment.LineSettled{Meta: m, Line: settlement.Line{LineID: "txn_1", CaptureID: "ch_1"}}),
		{Recorded: eventstore.RecordedEvent{StreamID: s, Metadata: []byte(`{"provider":"stripe","references":["order_77","ch_1"]}`)},
			Event: payment.Captured{Meta: m, CaptureID: "ch_1", Amount: 100, Currency: "USD"}},
		env("payout-stripe-po_1", payment.PayoutPaid{Meta: m, PayoutID: "po_1", Amount: 1, Currency: "USD"}),
	}
	got := paymentIDs(batch, map[string]bool{s: true})
	assert.ElementsMatch(t, []views.PaymentID{
		{BusinessID: "ch_1", StreamID: s, Kind: IDCapture},
		{BusinessID: "re_1", StreamID: s, Kind: IDRefund},
		{BusinessID: "du_1", StreamID: s, Kind: IDDispute},
		{BusinessID: "txn_1", StreamID: s, Kind: IDSettlementLine},
		{BusinessID: "order_77", StreamID: s, Kind: IDMerchantReference},
		{BusinessID: "ch_1", StreamID: s, Kind: IDMerchantReference},
	}, got)
}
