package payment

import (
	"fmt"

	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/money"
)

// RefundIncrease is what a cumulative refund report posts: the part of
// reported (the trade's refunded total the report states) above the highest
// total already seen for the trade, or nothing. Posting it keeps the refunds
// posted equal to the highest total seen, so after any order of arrival,
// duplicates included, they end equal to the highest total reported and
// never exceed it.
func RefundIncrease(highestSoFar, reported int64) int64 {
	if reported <= highestSoFar {
		return 0
	}
	return reported - highestSoFar
}

// refundCumulative records a refund reported by its trade's refunded total
// (delivery.KindRefundCumulative, Alipay's refund_fee): it posts the
// increase over the highest total seen, as RefundPosted (or RefundPending
// before any capture) under the refund's own id, and nothing when the total
// is not above it. A refund id already recorded with another total opens
// amount_mismatch and posts nothing.
func (d *decision) refundCumulative(f delivery.Fact) {
	p := d.p
	if r, ok := p.refunds[f.BusinessID]; ok {
		if r.total != f.Amount {
			d.flagOnce(ReconAmountMismatch, f.BusinessID, fmt.Sprintf("refund %s reported with a refunded total of %s and of %s",
				f.BusinessID, money.FormatMinor(r.total, r.currency), money.FormatMinor(f.Amount, f.Currency)))
		}
		return
	}
	inc := RefundIncrease(p.cumulative, f.Amount)
	if inc == 0 || !d.currencyOK(f) {
		return
	}
	if len(p.captures) == 0 {
		d.emit(RefundPending{Meta: d.meta, RefundID: f.BusinessID, Amount: inc, Currency: f.Currency, Total: f.Amount})
		d.emit(Flagged{Meta: d.meta, Kind: ReconRefundBeforePayment, Key: f.BusinessID,
			Details: "refund " + f.BusinessID + " arrived before any capture; posted when a capture arrives"})
		return
	}
	d.emit(RefundPosted{Meta: d.meta, RefundID: f.BusinessID, Amount: inc, Currency: f.Currency, Total: f.Amount})
}

// refundNoted records a refund status that moves no money (WeChat Pay
// REFUND.ABNORMAL, REFUND.CLOSED), once per refund and status. The refund
// itself is untouched: an abnormal refund is not final, and the success
// reported after it posts.
func (d *decision) refundNoted(f delivery.Fact) {
	if d.p.noted[f.BusinessID+"/"+string(f.Kind)] || !d.currencyOK(f) {
		return
	}
	d.emit(RefundNoted{Meta: d.meta, RefundID: f.BusinessID, Status: string(f.Kind), Amount: f.Amount, Currency: f.Currency})
}
