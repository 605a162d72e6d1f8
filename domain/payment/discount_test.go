package payment

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/settlement"
)

// couponRefundLine is an Alipay 退款 row of trade_1: 商家实收 merchant,
// 商家优惠 coupon.
func couponRefundLine(refund string, merchant, coupon int64) delivery.Event {
	return settled(settlement.Line{Provider: "alipay", Kind: settlement.KindRefund, SourceType: "退款",
		Key: "refund:trade_1:" + refund, PaymentKey: "trade_1", CaptureID: "trade_1", RefundID: refund,
		Gross: -merchant, Net: -merchant, Currency: "CNY", OriginalAmount: -(merchant + coupon), OriginalCurrency: "CNY",
		OccurredAt: t0, CumulativeRefund: true, Discount: coupon})
}

// TestCouponedTradeRefundedInEveryOrder (issue 34 case 1): a 100.00 trade
// with a 20.00 merchant coupon, refunded 60.00 (the merchant's money) then
// 40.00 (20.00 of it and the coupon), told by the cumulative notifications
// (refund_fee 60.00 then 100.00, coupon totals 0 and 20.00) and the bill's
// rows, in every order, either notification dropped or not: the balance
// ends at 0 and the discount reversed, never more coupon returned than the
// capture had.
func TestCouponedTradeRefundedInEveryOrder(t *testing.T) {
	capture := cny(delivery.KindCaptured, "trade_1", 10000)
	capture.Discount = 2000
	n1 := cny(delivery.KindRefundCumulative, "R1", 6000)
	n2 := cny(delivery.KindRefundCumulative, "R2", 10000)
	n2.Discount = 2000
	all := []delivery.Event{
		alipayDelivery("n_pay", capture),
		couponRefundLine("R1", 6000, 0),
		couponRefundLine("R2", 2000, 2000),
		alipayDelivery("n_r1", n1),
		alipayDelivery("n_r2", n2),
	}
	for drop := range 3 { // 0: none; 1: R1's notification; 2: R2's
		var evs []delivery.Event
		for i, ev := range all {
			if drop == 0 || i != 2+drop {
				evs = append(evs, ev)
			}
		}
		permute(evs, func(order []delivery.Event) {
			s := &stream{t: t}
			var names []string
			for _, ev := range order {
				names = append(names, ev.DedupKey)
				s.deliver(ev)
				b := balances(s.history)
				require.GreaterOrEqual(t, b[balanceKey{"expenses:discounts:alipay", "CNY"}], int64(0), "%v", names)
			}
			b := balances(s.history)
			assert.Zero(t, b[balanceKey{"provider:alipay:balance", "CNY"}], "drop %d %v: %v", drop, names, b)
			assert.Zero(t, b[balanceKey{"expenses:discounts:alipay", "CNY"}], "drop %d %v", drop, names)
			assert.Equal(t, int64(10000), b[balanceKey{"revenue:refunds", "CNY"}], "drop %d %v", drop, names)
			assert.Equal(t, fmt.Sprint(drop != 0), fmt.Sprint(len(openItems(s.history)) == 1), "drop %d %v", drop, names)
		})
	}
}

// A refund never returns more coupon than the captures carried and earlier
// refunds did not return (WeChat Pay's payer_refund counts CASH coupons
// too).
func TestRefundCouponBoundedByTheCaptures(t *testing.T) {
	s := &stream{t: t}
	capture := cny(delivery.KindCaptured, "tx", 10000)
	capture.Discount = 1000
	s.deliver(alipayDelivery("n_pay", capture))
	r1 := cny(delivery.KindRefunded, "r1", 5000)
	r1.Discount = 800
	s.deliver(alipayDelivery("n_r1", r1))
	r2 := cny(delivery.KindRefunded, "r2", 5000)
	r2.Discount = 800
	s.deliver(alipayDelivery("n_r2", r2))
	b := balances(s.history)
	assert.Zero(t, b[balanceKey{"expenses:discounts:alipay", "CNY"}], "1000 captured, 800 + 200 returned")
	assert.Equal(t, int64(10000-1000-10000+1000), b[balanceKey{"provider:alipay:balance", "CNY"}])
}
