package payment

import (
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/settlement"
)

// Reversals a settlement report tells (settlement.Line.Reversal): the
// provider undid a fact after it posted, and the line is the money it
// moved. They post what they did to the money whether a webhook or only a
// report tells them (docs/reference.md), once:
//
//   - A refund that came back (Stripe refund_failure, Adyen
//     RefundedReversed) is the refund's failure, as refund.failed or
//     REFUNDED_REVERSED report it (refundFailed): a posted refund is
//     reversed (provider:p:balance R / revenue:refunds R), a pending one
//     dropped, one not reported yet will never post. The webhook of the
//     same failure, before or after, finds it reversed and adds nothing.
//   - A captured charge that failed (Stripe charge_failure: "a charge that
//     failed after it was captured", an ACH debit returned) takes the
//     capture back out of the balance: CaptureReduced (revenue:sales A /
//     provider:p:balance A). No webhook posts this (charge.failed records a
//     failure that moves nothing), so the line is its only report.
//
// The line's own fee posts as any line's, and a settlement currency other
// than the original posts its conversion.
func (d *decision) settleReversal(l settlement.Line) {
	switch l.Reversal {
	case settlement.ReversalRefund:
		d.refundFailed(delivery.Fact{Kind: delivery.KindRefundFailed, BusinessID: l.RefundID,
			Amount: abs(l.OriginalAmount), Currency: l.OriginalCurrency})
	case settlement.ReversalCapture:
		p := d.p
		amount := abs(l.OriginalAmount)
		if c, ok := p.captures[l.CaptureID]; ok && amount > c {
			amount = c // never more than was captured
		}
		if amount > 0 {
			d.emit(CaptureReduced{Meta: d.meta, CaptureID: l.CaptureID, Amount: amount, Currency: l.OriginalCurrency,
				LineID: l.DedupKey(), Failed: true})
		}
	}
	d.feeSettled(l, l.Fee)
	d.convert(l)
}
