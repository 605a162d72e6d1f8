package payment

import (
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/settlement"
)

// A refund the provider closed never posts from a bill line. WeChat Pay
// lists a refund in the trade bill (交易账单, 交易状态 REFUND) on the day it
// is initiated, with the 退款状态 of that moment (PROCESSING), and never
// updates the row; REFUND.CLOSED ("退款关闭") says the refund failed and
// no money left. So, whichever comes first:
//
//   - CLOSED first: the refund is noted closed (RefundNoted, refund_closed);
//     its bill line is recorded and posts nothing: no refund, no fee, no
//     missing_webhook (its notification did arrive).
//   - The line first: it posted the refund (and its fee) as any refund
//     line no webhook reported, with missing_webhook; CLOSED then reverses
//     the refund (RefundReversed), returns the line's fee (FeeSettled of
//     the opposite sign) and clears the item.
//
// A refund a REFUND.SUCCESS notification reported is not reversed by a
// CLOSED one: the provider said it paid.

// closedKey is the noted key of a refund the provider closed.
func closedKey(id string) string { return id + "/" + string(delivery.KindRefundClosed) }

// refundClosed decides REFUND.CLOSED (delivery.KindRefundClosed).
func (d *decision) refundClosed(f delivery.Fact) {
	p := d.p
	d.refundNoted(f) // cumulative.go
	r, ok := p.refunds[f.BusinessID]
	k := reconKey{ReconMissingWebhook, f.BusinessID}
	if !ok || !p.open[k] {
		return // not posted, or posted by a notification that said it succeeded
	}
	if r.state == refundPosted || r.state == refundPending {
		d.refundFailed(f)
		if s, ok := p.settle.settled[reconKey{string(settlement.KindRefund), f.BusinessID}]; ok && s.fee != 0 &&
			s.currency == r.currency {
			d.emit(FeeSettled{Meta: d.meta, LineID: s.line, Fee: -s.fee, Currency: s.currency})
		}
	}
	d.emit(Cleared{Meta: d.meta, Kind: k.kind, Key: k.key, Details: "the provider closed the refund: it failed, and its bill line is undone"})
}

// closedBeforeLine reports whether the refund of a bill line was closed by
// the provider before the line came: then the line posts nothing.
func (d *decision) closedBeforeLine(id string) bool { return d.p.noted[closedKey(id)] }
