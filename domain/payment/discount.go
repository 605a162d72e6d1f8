package payment

// Coupons and discounts (docs/reference.md, "Money and accounts"): a
// capture with a merchant-funded discount or no-cash coupon D (Alipay
// total_amount − receipt_amount, WeChat Pay NOCASH promotions) posts
// expenses:discounts:p D and provider:p:balance A−D−F, since the provider
// pays out only A−D; a refund R of it, of which C is coupon money
// returned, takes only R−C from the balance and credits C back to
// expenses:discounts:p.
//
// C is what the provider's own refund fields say (delivery.Fact.Discount:
// Alipay's refunded total above receipt_amount, WeChat Pay's refund −
// settlement_refund or − payer_refund; a bill line's Discount), never a
// split of the ledger's own. The aggregate only bounds it: a refund never
// returns more coupon than its own amount, nor more than the payment's
// captures carried and earlier refunds have not returned yet. That bound is
// what keeps the provider balance equal to what the provider pays out when
// a provider's field counts other money as coupon (WeChat's payer_refund
// leaves out CASH coupons too, which the provider did pay out).

// couponState is what the payment remembers of coupons.
type couponState struct {
	captured int64 // the captures' discounts
	returned int64 // coupon money returned by posted refunds, net of reversals
	// cumulative: the coupon money of the cumulative refunds
	// (delivery.KindRefundCumulative and their bill lines), pending or
	// posted: the trade's coupon returned so far, as the refunded total
	// is p.cumulative.
	cumulative int64
	// lines: the cumulative refund lines' coupons, one per refund (the
	// coupon part of p.settle.cumulativeLines).
	lines    int64
	byRefund map[string]int64 // each refund's coupon, pending or posted
}

// applyCoupons folds e, before apply's own fold sees it (so the refund's
// state and the captures are those before e).
func (p *Payment) applyCoupons(e Event) {
	c := &p.coupons
	if c.byRefund == nil {
		c.byRefund = map[string]int64{}
	}
	switch e := e.(type) {
	case Captured:
		if _, ok := p.captures[e.CaptureID]; !ok {
			c.captured = p.add(c.captured, e.Discount)
		}
	case RefundPending:
		if e.Increase {
			c.byRefund[e.RefundID] = p.add(c.byRefund[e.RefundID], e.Discount)
		} else {
			c.byRefund[e.RefundID] = e.Discount
		}
		if e.Total != 0 || e.FromLine {
			c.cumulative = p.add(c.cumulative, e.Discount)
		}
	case RefundPosted:
		c.returned = p.add(c.returned, e.Discount)
		if e.Increase {
			c.byRefund[e.RefundID] = p.add(c.byRefund[e.RefundID], e.Discount)
		} else {
			c.byRefund[e.RefundID] = e.Discount
		}
		if !e.WasPending && (e.Total != 0 || e.FromLine) {
			c.cumulative = p.add(c.cumulative, e.Discount)
		}
	case RefundReversed:
		if r, ok := p.refunds[e.RefundID]; ok && !e.WasPending && r.state == refundPosted {
			c.returned = p.add(c.returned, -e.Discount)
		}
	}
}

// couponOf is the coupon part of a refund posting of amount whose
// provider said want: within the amount and the coupons not yet returned.
func (p *Payment) couponOf(want, amount int64) int64 {
	return max(0, min(want, amount, p.coupons.captured-p.coupons.returned))
}

// couponLine folds a cumulative refund line's coupon (settle.go, once per
// refund).
func (p *Payment) couponLine(discount int64) {
	p.coupons.lines = p.add(p.coupons.lines, discount)
}
