package payment

import (
	"fmt"
	"time"

	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/settlement"
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

// A cumulative refund (Alipay) is reported twice: by its notification,
// whose refund_fee is the trade's refunded total so far, and by its bill
// line, whose amount is the refund's own (docs/reference.md, Alipay: "each
// notification posts the increase over the highest total seen …; the
// bill's per-refund amounts settle the lines without posting again"). The
// trade's refunds posted are p.cumulative, kept equal to the greater of
// the highest total notified and the sum of the refund lines: both are
// refunds the provider made, neither can be counted twice, and with every
// line in the sum is the trade's refunds whatever the notifications (some
// may be dropped). Each report posts the increase it brings, possibly
// nothing, under its own refund id.

// refundCumulative records a refund reported by its trade's refunded total
// (delivery.KindRefundCumulative, Alipay's refund_fee) that no bill line
// reported yet: it posts the increase over the trade's refunded total, as
// RefundPosted (or RefundPending before any capture) under the refund's
// own id, and, when the total is not above it, records the report
// (RefundNoted) so that the refund's line does not open missing_webhook. A
// refund id already reported with another total opens amount_mismatch and
// posts nothing.
func (d *decision) refundCumulative(f delivery.Fact) {
	p := d.p
	if total, ok := p.reported[f.BusinessID]; ok {
		if total != f.Amount {
			d.flagOnce(ReconAmountMismatch, f.BusinessID, fmt.Sprintf("refund %s reported with a refunded total of %s and of %s",
				f.BusinessID, money.FormatMinor(total, f.Currency), money.FormatMinor(f.Amount, f.Currency)))
		}
		return
	}
	if !d.currencyOK(f) {
		return
	}
	inc := RefundIncrease(p.cumulative, f.Amount)
	if inc == 0 && d.reattribute(f) {
		return
	}
	if inc == 0 {
		d.emit(RefundNoted{Meta: d.meta, RefundID: f.BusinessID, Status: string(delivery.KindRefundCumulative),
			Amount: f.Amount, Currency: f.Currency})
		return
	}
	d.postCumulative(f.BusinessID, inc, f.Currency, f.Amount, false, RefundIncrease(p.coupons.cumulative, f.Discount))
}

// cumulativeAfterLine is refundCumulative for a refund its bill line
// recorded first (s): the missing_webhook item clears, and the total posts
// what it adds over the trade's refunded total. A line amount above the
// total notified for the same refund opens settlement_mismatch.
func (d *decision) cumulativeAfterLine(f delivery.Fact, s settledFact) {
	d.clearMissing(f.BusinessID)
	if s.amount > f.Amount && s.originalCurrency == f.Currency {
		d.flagOnce(ReconSettlementMismatch, f.BusinessID, fmt.Sprintf("refund %s settled as %s, above the refunded total of %s its notification reported",
			f.BusinessID, money.FormatMinor(s.amount, f.Currency), money.FormatMinor(f.Amount, f.Currency)))
	}
	d.refundCumulative(f)
}

// settleCumulativeRefund records a cumulative refund's bill line
// (settlement.Line.CumulativeRefund): its amount joined the sum of the
// trade's refund lines when LineSettled was applied, and the increase of
// the trade's refunded total it brings posts, possibly nothing. It opens
// missing_webhook when no notification reported the refund.
func (d *decision) settleCumulativeRefund(l settlement.Line) {
	p := d.p
	id := l.RefundID
	if !d.firstLine(l) {
		return
	}
	amount, cur := abs(l.OriginalAmount), l.OriginalCurrency
	if !d.currencyOK(delivery.Fact{Kind: delivery.KindRefunded, BusinessID: id, Currency: cur}) {
		return // refused (currency_mismatch): nothing of it posts
	}
	if total, notified := p.reported[id]; !notified {
		d.missing(id, l)
	} else if amount > total {
		d.mismatch(l, total, cur)
	}
	if inc := RefundIncrease(p.cumulative, p.settle.cumulativeLines); inc > 0 {
		d.postCumulative(id, inc, cur, 0, true, RefundIncrease(p.coupons.cumulative, p.coupons.lines))
	}
	d.feeSettled(l, l.Fee)
	d.convert(l)
}

// postCumulative posts inc under refund id (pending before any capture):
// a notification's increase (total: the total it reported) or a line's
// (fromLine). A refund already recorded is raised (Increase). coupon is
// the increase of the trade's coupon money returned that the same report
// brings (discount.go): it goes with the refunded total's increase, within
// it, and is never posted alone (a coupon returned is part of a refund).
func (d *decision) postCumulative(id string, inc int64, cur money.Currency, total int64, fromLine bool, coupon int64) {
	p := d.p
	_, again := p.refunds[id]
	if len(p.captures) == 0 {
		d.emit(RefundPending{Meta: d.meta, RefundID: id, Amount: inc, Currency: cur, Total: total, FromLine: fromLine, Increase: again,
			Discount: min(coupon, inc)})
		if k := (reconKey{ReconRefundBeforePayment, id}); !p.open[k] {
			d.emit(Flagged{Meta: d.meta, Kind: k.kind, Key: k.key,
				Details: "refund " + id + " arrived before any capture; posted when a capture arrives"})
		}
		return
	}
	d.emit(RefundPosted{Meta: d.meta, RefundID: id, Amount: inc, Currency: cur, Total: total, FromLine: fromLine, Increase: again,
		Discount: p.couponOf(coupon, inc)})
}

// reattribute books at its own time a refund whose notification arrived
// after a later refund's had posted the trade's refunded total. Alipay's
// asynchronous notification (https://opendocs.alipay.com/open/203/105286,
// 异步通知参数) carries refund_fee, 总退款金额: the trade's refunded total,
// and gmt_refund, 交易退款时间: when the refund was made. Totals only grow
// with time, so a notification saying "total T at t" makes the refund
// T − T_prev, T_prev being the greatest total notified for a refund
// before t; the refund notified next after t (R_next, total ≥ T) posted
// that part when its notification, arriving first, raised the total. The
// part moves: RefundPosted under f's refund at f's time (its meta: the
// ledger's effective_at), and the same amount taken off R_next at
// R_next's own time (RefundPosted, negative, Increase, MovedTo). The
// trade's refunds posted are unchanged; each refund ends booked at its
// own time, in any order of arrival.
//
// Before any capture the same move is made between the two RefundPending
// (each then posts at its own time when a capture arrives).
//
// It moves nothing, and returns false (the caller notes the report), when
// the data cannot tell or the move would take what R_next did not record:
// f's
// refund already recorded (its bill line posted it, at the line's time),
// no time, a total not above T_prev or above R_next's (totals out of
// order), or R_next not recorded with at least the part (its posting was a
// bill line's). The coupon money returned (Alipay: the part of the
// refunded total above receipt_amount, a total too) moves with the part
// only as far as R_next's remaining amount cannot hold R_next's coupon:
// exact when f's refund is the first, and R_next never returns more
// coupon than its amount; the trade's coupon account ends the same.
func (d *decision) reattribute(f delivery.Fact) bool {
	p := d.p
	at := d.meta.OccurredAt
	if at.IsZero() || p.refunds[f.BusinessID] != nil {
		return false
	}
	var prev int64
	next, nextAt := "", time.Time{}
	for id, when := range p.reportedAt {
		switch {
		case when.Before(at):
			prev = max(prev, p.reported[id])
		case when.After(at) && (next == "" || when.Before(nextAt) || (when.Equal(nextAt) && id < next)):
			next, nextAt = id, when
		}
	}
	if next == "" || f.Amount <= prev || p.reported[next] < f.Amount {
		return false
	}
	part := f.Amount - prev
	r := p.refunds[next]
	pending := len(p.captures) == 0
	want := refundPosted
	if pending {
		want = refundPending
	}
	if r == nil || r.state != want || r.amount < part || r.currency != f.Currency {
		return false
	}
	// The coupon part moves only as far as R_next's remaining amount
	// cannot hold it (within what f reports as coupon money returned).
	coupon := min(part, f.Discount, max(0, p.coupons.byRefund[next]-(r.amount-part)))
	m := d.meta
	m.OccurredAt = nextAt
	if pending {
		// No capture yet: both wait, each at its own time (RefundPending's
		// fold keeps it), and post when a capture arrives.
		d.postCumulative(f.BusinessID, part, f.Currency, f.Amount, false, coupon)
		d.emit(RefundPending{Meta: m, RefundID: next, Amount: -part, Currency: f.Currency, Total: p.reported[next], Increase: true,
			Discount: -coupon, MovedTo: f.BusinessID})
		return true
	}
	d.emit(RefundPosted{Meta: d.meta, RefundID: f.BusinessID, Amount: part, Currency: f.Currency, Total: f.Amount, Discount: coupon})
	d.emit(RefundPosted{Meta: m, RefundID: next, Amount: -part, Currency: f.Currency, Total: p.reported[next], Increase: true,
		Discount: -coupon, MovedTo: f.BusinessID})
	return true
}

// reportedWhen keeps the time a refund's first cumulative report gave.
func (p *Payment) reportedWhen(id string, at time.Time) {
	if _, ok := p.reportedAt[id]; !ok && !at.IsZero() {
		put(&p.reportedAt, id, at)
	}
}

// cumulate folds a cumulative refund's event: its reported total, and the
// increase it posted (a notification's, or a line's).
func (p *Payment) cumulate(id string, amount, total int64, fromLine bool, at time.Time) {
	if total != 0 {
		put(&p.reported, id, total)
		p.reportedWhen(id, at)
	}
	if total != 0 || fromLine {
		p.cumulative = p.add(p.cumulative, amount)
	}
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
