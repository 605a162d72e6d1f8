package payment

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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

// permutations returns every order of evs.
func permutations(evs []delivery.Event) [][]delivery.Event {
	if len(evs) <= 1 {
		return [][]delivery.Event{append([]delivery.Event(nil), evs...)}
	}
	var out [][]delivery.Event
	for i := range evs {
		rest := append(append([]delivery.Event(nil), evs[:i]...), evs[i+1:]...)
		for _, p := range permutations(rest) {
			out = append(out, append([]delivery.Event{evs[i]}, p...))
		}
	}
	return out
}

// Report first, and every other order (issue 24, item 5): a capture
// recorded from its charge line at the 100.00 authorization is reduced by
// the 40.00 its partial capture reversal line reversed (CaptureReduced),
// or recorded at 60.00 when the reversal came first; a webhook reporting
// the 60.00 captured, before or after, agrees or has its settlement_mismatch
// cleared. Whatever the order of the two lines and the webhooks
// (payment_intent.succeeded's amount_received, charge.captured's
// amount_captured), the books are Stripe's: captured 60.00, the fee once,
// and no item open once a webhook came.
func TestPartialCaptureEveryOrder(t *testing.T) {
	charge, reversal := partialCaptureLines()
	succeeded := deliveryOf("evt_pi_succeeded", capture("ch_1", 6000, 0))
	captured := deliveryOf("evt_ch_captured", capture("ch_1", 6000, 0))
	want := map[balanceKey]int64{
		{ledger.ProviderBalance("stripe"), money.Currency("USD")}: 6000 - 204,
		{ledger.ProviderFees("stripe"), "USD"}:                    204,
		{ledger.RevenueSales, "USD"}:                              -6000,
	}
	for _, set := range [][]delivery.Event{
		{charge, reversal},
		{charge, reversal, succeeded},
		{charge, reversal, succeeded, captured},
	} {
		for _, order := range permutations(set) {
			name := ""
			for _, ev := range order {
				name += ev.DedupKey + " "
			}
			s := &stream{t: t}
			for _, ev := range order {
				s.deliver(ev)
			}
			for _, ev := range order { // a report and its webhooks delivered again
				assert.Empty(t, s.deliver(ev), name)
			}
			assert.Equal(t, want, balances(s.history), name)
			var sum Summary
			for _, e := range s.history {
				sum.Apply(e)
			}
			assert.Equal(t, int64(6000), sum.Captured, name)
			assert.Equal(t, int64(204), sum.Fees, name)
			open := openItems(s.history)
			if len(set) == 2 {
				assert.Equal(t, map[reconKey]bool{{ReconMissingWebhook, "ch_1"}: true}, open, name)
				continue
			}
			assert.Empty(t, open, name)
		}
	}
}

// A capture recorded from its charge line is reduced once by its reversal
// line, with the reversal's postings; the reduced state decides what comes
// next (a webhook of 60.00 agrees and clears missing_webhook, one of
// 100.00 is a settlement_mismatch).
func TestCaptureReducedByReversalLine(t *testing.T) {
	charge, reversal := partialCaptureLines()
	s := &stream{t: t}
	s.deliver(charge)
	out := s.deliver(reversal)
	var reduced []CaptureReduced
	for _, e := range out {
		if r, ok := e.(CaptureReduced); ok {
			reduced = append(reduced, r)
		}
	}
	require.Len(t, reduced, 1)
	assert.Equal(t, CaptureReduced{Meta: reduced[0].Meta, CaptureID: "ch_1", Amount: 4000, Currency: "USD", LineID: "settle:txn_r"}, reduced[0])
	assert.ElementsMatch(t, []ledger.Posting{
		{Account: ledger.RevenueSales, Currency: "USD", Amount: 4000},
		{Account: ledger.ProviderBalance("stripe"), Currency: "USD", Amount: -4000},
	}, Postings(reduced[0]))
	out = s.deliver(deliveryOf("evt_60", capture("ch_1", 6000, 0)))
	require.Len(t, out, 1, "the webhook agrees with the reduced capture")
	assert.Equal(t, ReconMissingWebhook, out[0].(Cleared).Kind)
	assert.Empty(t, openItems(s.history))
	out = s.deliver(deliveryOf("evt_100", capture("ch_1", 10000, 0)))
	require.Len(t, out, 1)
	assert.Equal(t, ReconSettlementMismatch, out[0].(Flagged).Kind, "a webhook of the authorization disagrees with the reduced capture")
}
