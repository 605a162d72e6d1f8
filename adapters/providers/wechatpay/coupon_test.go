package wechatpay

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/domain/delivery"
)

// Issue 34: a payment's NOCASH promotions are its discount (CASH ones are
// settled and are none); a refund's coupon money is refund −
// settlement_refund when said, else refund − payer_refund. The query
// answers go through the same decoding as the notifications.
func TestCouponsFromWechatsFields(t *testing.T) {
	tx := func(promos string) Transaction {
		var out Transaction
		raw := `{"transaction_id":"4200","trade_state":"SUCCESS","amount":{"total":10000,"payer_total":8500,"currency":"CNY"},"promotion_detail":` + promos + `}`
		a, err := decodeContent([]byte(raw), &out)
		require.NoError(t, err)
		out.Amount = a
		return out
	}
	ev := delivery.Event{Type: EventTransactionSuccess}
	require.NoError(t, transactionFacts(&ev, tx(`[{"type":"NOCASH","amount":1000,"merchant_contribute":1000},{"type":"CASH","amount":500,"wechatpay_contribute":500}]`)))
	assert.Equal(t, int64(1000), ev.Facts[0].Discount, "NOCASH only")
	ev = delivery.Event{Type: EventTransactionSuccess}
	assert.ErrorIs(t, transactionFacts(&ev, tx(`[{"type":"NOCASH","amount":10001}]`)), delivery.ErrInvalidAmount)

	refund := func(amount string) *Amount {
		a, err := decodeAmount(json.RawMessage(amount))
		require.NoError(t, err)
		return a
	}
	assert.Equal(t, int64(1000), refundCoupon(refund(`{"total":10000,"refund":10000,"payer_refund":9000}`), 10000))
	assert.Equal(t, int64(1000), refundCoupon(refund(`{"total":10000,"refund":10000,"payer_refund":8500,"settlement_refund":9000,"from":[{"account":"AVAILABLE","amount":9000}]}`), 10000),
		"settlement_refund says which coupon money is no-cash")
	assert.Zero(t, refundCoupon(refund(`{"total":10000,"refund":10000}`), 10000), "silent: none")
}
