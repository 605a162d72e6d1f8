package payment

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/ledger"
	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/settlement"
)

// partialCaptureLines are Stripe's two lines of a charge authorized for
// 100.00 and captured for 60.00: the charge "for the full amount of the
// authorization" (fee 2.04) and the partial_capture_reversal of 40.00.
func partialCaptureLines() (charge, reversal delivery.Event) {
	base := settlement.Line{Provider: "stripe", PaymentKey: "pi_1", CaptureID: "ch_1", Currency: "USD",
		OriginalCurrency: "USD", PayoutID: "po_1", OccurredAt: t0}
	c := base
	c.Kind, c.SourceType, c.LineID, c.Gross, c.Fee, c.Net, c.OriginalAmount = settlement.KindCharge, "charge", "txn_c", 10000, 204, 9796, 10000
	r := base
	r.Kind, r.SourceType, r.LineID, r.RefundID = settlement.KindAdjustment, settlement.SourcePartialCaptureReversal, "txn_r", "re_1"
	r.Gross, r.Net, r.OriginalAmount = -4000, -4000, -4000
	return delivery.Settled(c, nil), delivery.Settled(r, nil)
}

// Webhook first (issue 24, item 5): the webhook records the 60.00 captured
// (amount_captured); the charge line of the 100.00 authorization is not a
// disagreement once its partial capture reversal is known, whichever of the
// two lines comes first: the fee is booked once, the books are Stripe's
// (captured 60.00), and no item stays open.
func TestPartialCaptureWebhookFirst(t *testing.T) {
	charge, reversal := partialCaptureLines()
	webhook := deliveryOf("evt_captured", capture("ch_1", 6000, 0))
	for name, order := range map[string][]delivery.Event{
		"reversal before charge": {webhook, reversal, charge},
		"charge before reversal": {webhook, charge, reversal},
	} {
		s := &stream{t: t}
		for _, ev := range order {
			s.deliver(ev)
		}
		for _, ev := range order { // a report imported again
			assert.Empty(t, s.deliver(ev), name)
		}
		assert.Equal(t, map[balanceKey]int64{
			{ledger.ProviderBalance("stripe"), money.Currency("USD")}: 6000 - 204,
			{ledger.ProviderFees("stripe"), "USD"}:                    204,
			{ledger.RevenueSales, "USD"}:                              -6000,
		}, balances(s.history), name)
		assert.Empty(t, openItems(s.history), name)
	}
}
