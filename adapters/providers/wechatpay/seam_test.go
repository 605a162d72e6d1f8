package wechatpay

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/providers/internal/providertest"
)

// The seam of issues 34 and 36: a payment with a merchant-funded no-cash
// coupon (promotion_detail type NOCASH 10.00 on a 100.00 order, payer_total
// 90.00) and a pre-funded CASH coupon beside it, learned by the transaction
// query (the plaintext answer, as 查询订单 shows it, goods_detail included)
// and by the TRANSACTION.SUCCESS notification (the same object, decrypted):
// one fact, the same discount (the NOCASH coupon only) and facts hash,
// whether the answer says SUCCESS or REFUND (paid, refunded since).
func TestNoCashQueryAnswerAndNotificationAreOneFact(t *testing.T) {
	a := adapter(t, nil)
	content := with(transaction(map[string]any{"total": 10000, "payer_total": 8500, "currency": "CNY", "payer_currency": "CNY"}),
		"promotion_detail", []map[string]any{
			{"coupon_id": "109519", "name": "免充值券", "scope": "SINGLE", "type": "NOCASH", "amount": 1000, "stock_id": "931386",
				"wechatpay_contribute": 0, "merchant_contribute": 1000, "other_contribute": 0, "currency": "CNY",
				"goods_detail": []map[string]any{{"goods_id": "M1006", "quantity": 1, "unit_price": 10000, "discount_amount": 1000}}},
			{"coupon_id": "109520", "name": "充值券", "scope": "GLOBAL", "type": "CASH", "amount": 500, "stock_id": "931387",
				"wechatpay_contribute": 500, "merchant_contribute": 0, "other_contribute": 0, "currency": "CNY"},
		})
	note := providertest.ParseOne(t, a, byCert(t, notification(t, apiKey, notifyID, EventTransactionSuccess, content)))
	require.Len(t, note.Facts, 1)
	assert.Equal(t, int64(10000), note.Facts[0].Amount)
	assert.Equal(t, int64(1000), note.Facts[0].Discount, "the NOCASH coupon only: WeChat settles the CASH one")

	for _, state := range []string{"SUCCESS", "REFUND"} {
		answer, err := json.Marshal(with(content, "trade_state", state))
		require.NoError(t, err)
		q, err := a.Query(answer)
		require.NoError(t, err)
		require.Equal(t, QueryPaid, q.State, state)
		assert.Equal(t, note.Facts, q.Event.Facts, state)
		assert.Equal(t, note.FactsHash(), q.Event.FactsHash(), state)
		assert.Equal(t, note.PaymentKey, q.Event.PaymentKey, state)
		assert.Equal(t, note.Type, q.Event.Type, state)
		again, err := a.Renormalize("", q.Event.Raw)
		require.NoError(t, err)
		assert.Equal(t, note.FactsHash(), again.FactsHash(), "a redrive of the stored answer")
	}
}
