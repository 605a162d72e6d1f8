package alipay

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/domain/delivery"
)

// Issue 34: the merchant-funded part of a trade and the coupon money in a
// refunded total, from Alipay's own fields.
func TestCouponsFromAlipaysFields(t *testing.T) {
	base := func(extra map[string]string) map[string]string {
		v := map[string]string{"notify_id": "n1", "notify_time": "2026-11-29 10:00:06", "notify_type": NotifyTypeTrade,
			"trade_no": "T1", "out_trade_no": "O1", "trade_status": StatusTradeSuccess, "total_amount": "100.00"}
		for k, x := range extra {
			v[k] = x
		}
		return v
	}
	vouchers := `[{"id":"V1","type":"ALIPAY_BIZ_VOUCHER","amount":"20.00","merchant_contribute":"20.00","other_contribute":"0.00"}]`
	for name, c := range map[string]struct {
		v                map[string]string
		discount, refund int64
	}{
		"receipt_amount":      {base(map[string]string{"receipt_amount": "80.00"}), 2000, 0},
		"voucher_detail_list": {base(map[string]string{"voucher_detail_list": vouchers}), 2000, 0},
		"fund_bill_list MDISCOUNT (notification spelling)": {base(map[string]string{
			"fund_bill_list": `[{"amount":"80.00","fundChannel":"ALIPAYACCOUNT"},{"amount":"20.00","fundChannel":"MDISCOUNT"}]`}), 2000, 0},
		"fund_bill_list MDISCOUNT (query spelling)": {base(map[string]string{
			"fund_bill_list": `[{"amount":"20.00","fund_channel":"MDISCOUNT"}]`}), 2000, 0},
		"Alipay's own coupon is no discount": {base(map[string]string{"receipt_amount": "100.00",
			"voucher_detail_list": `[{"amount":"20.00","merchant_contribute":"0.00","other_contribute":"20.00"}]`}), 0, 0},
		// alipay.trade.refund refund_amount: the buyer's own money first.
		"a first refund of 60.00 is the merchant's money": {base(map[string]string{"receipt_amount": "80.00",
			"refund_fee": "60.00", "out_biz_no": "R1"}), 2000, 0},
		"the refunded total of 100.00 returns the 20.00 coupon": {base(map[string]string{"receipt_amount": "80.00",
			"refund_fee": "100.00", "out_biz_no": "R2", "trade_status": StatusTradeClosed}), 2000, 2000},
	} {
		t.Run(name, func(t *testing.T) {
			n, err := decodeNotification(c.v)
			require.NoError(t, err)
			assert.Equal(t, c.discount, n.Discount)
			assert.Equal(t, c.refund, n.RefundDiscount)
			ev, err := n.Normalize([]byte("raw"))
			require.NoError(t, err)
			require.NoError(t, ev.Validate())
			for _, f := range ev.Facts {
				switch f.Kind {
				case delivery.KindCaptured:
					assert.Equal(t, c.discount, f.Discount)
				case delivery.KindRefundCumulative:
					assert.Equal(t, c.refund, f.Discount)
				}
			}
		})
	}
	_, err := decodeNotification(base(map[string]string{"voucher_detail_list": `[{"merchant_contribute":"120.00"}]`}))
	assert.ErrorIs(t, err, delivery.ErrInvalidAmount, "a merchant contribution above the order")
	_, err = decodeNotification(base(map[string]string{"voucher_detail_list": `{`}))
	assert.ErrorIs(t, err, delivery.ErrMalformed)
}
