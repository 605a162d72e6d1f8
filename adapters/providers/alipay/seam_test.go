package alipay

import (
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/domain/delivery"
)

// The seam of issues 34 and 36: a couponed trade (total 100.00, a 20.00
// merchant voucher) answered by alipay.trade.query and notified by
// trade_status_sync is one fact, whichever fields carry the coupon. The
// answer's lists are JSON arrays with snake_case keys (fund_channel,
// merchant_contribute, id); the notification's are JSON text with
// camelCase keys (fundChannel, merchantContribute, voucherId), as Alipay's
// notification reference spells them (opendocs.alipay.com 270/105902,
// 异步通知参数: voucher_detail_list
// [{"amount":"0.20","merchantContribute":"0.00","name":"5折券","otherContribute":"0.20",
// "type":"ALIPAY_DISCOUNT_VOUCHER","voucherId":"2016101200073002586200003BQ4"}],
// fund_bill_list [{"amount":"0.80","fundChannel":"ALIPAYACCOUNT"},…]). Each
// shape must give the same discount, facts and facts hash, with and without
// receipt_amount (optional in both).
func TestCouponedQueryAnswerAndNotificationAreOneFact(t *testing.T) {
	const trade = "2026120722001400123"
	answerVouchers := `[{"id":"2026120700826300000001","name":"满100减20","type":"ALIPAY_BIZ_VOUCHER","amount":"20.00","merchant_contribute":"20.00","other_contribute":"0.00"}]`
	answerFunds := `[{"fund_channel":"ALIPAYACCOUNT","amount":"80.00","real_amount":"80.00"},{"fund_channel":"MDISCOUNT","amount":"20.00"}]`
	notifVouchers := `[{"amount":"20.00","merchantContribute":"20.00","name":"满100减20","otherContribute":"0.00","type":"ALIPAY_BIZ_VOUCHER","voucherId":"2026120700826300000001"}]`
	notifFunds := `[{"amount":"80.00","fundChannel":"ALIPAYACCOUNT"},{"amount":"20.00","fundChannel":"MDISCOUNT"}]`
	for name, c := range map[string]struct {
		receipt        bool
		vouchers, fund bool
	}{
		"receipt_amount, vouchers and fund bills": {receipt: true, vouchers: true, fund: true},
		"vouchers and fund bills only":            {vouchers: true, fund: true},
		"vouchers only":                           {vouchers: true},
		"fund bills only":                         {fund: true},
	} {
		t.Run(name, func(t *testing.T) {
			answer := `{"code":"10000","msg":"Success","trade_no":"` + trade + `","out_trade_no":"ORDER-123","trade_status":"TRADE_SUCCESS",` +
				`"total_amount":"100.00","send_pay_date":"2026-12-07 10:05:00"`
			notif := url.Values{"notify_id": {"ac05099524730693a8b330c5ecf72da9786"}, "notify_time": {"2026-12-07 10:05:01"},
				"notify_type": {NotifyTypeTrade}, "charset": {"utf-8"}, "app_id": {appID}, "trade_no": {trade},
				"out_trade_no": {"ORDER-123"}, "trade_status": {"TRADE_SUCCESS"}, "total_amount": {"100.00"},
				"gmt_payment": {"2026-12-07 10:05:00"}}
			if c.receipt {
				answer += `,"receipt_amount":"80.00","buyer_pay_amount":"80.00"`
				notif.Set("receipt_amount", "80.00")
				notif.Set("buyer_pay_amount", "80.00")
			}
			if c.vouchers {
				answer += `,"voucher_detail_list":` + answerVouchers
				notif.Set("voucher_detail_list", notifVouchers)
			}
			if c.fund {
				answer += `,"fund_bill_list":` + answerFunds
				notif.Set("fund_bill_list", notifFunds)
			}
			answer += "}"

			q, err := Query(appID, []byte(answer))
			require.NoError(t, err)
			require.Equal(t, QueryPaid, q.State)
			body := []byte(notif.Encode())
			f, err := parseForm(body)
			require.NoError(t, err)
			n, err := decode(f)
			require.NoError(t, err)
			want, err := n.Normalize(body)
			require.NoError(t, err)

			require.Len(t, want.Facts, 1)
			assert.Equal(t, int64(10000), want.Facts[0].Amount)
			assert.Equal(t, int64(2000), want.Facts[0].Discount, "the notification's merchant coupon")
			assert.Equal(t, want.Facts, q.Event.Facts, "the answer's facts are the notification's")
			assert.Equal(t, want.FactsHash(), q.Event.FactsHash())
			assert.Equal(t, want.PaymentKey, q.Event.PaymentKey)
			assert.Equal(t, want.Type, q.Event.Type)
		})
	}
}

// A voucher naming its merchant contribution in both spellings, with two
// different amounts, is refused naming the voucher, not guessed.
func TestAVoucherWithTwoContributionsIsRefused(t *testing.T) {
	_, err := decodeNotification(map[string]string{"notify_id": "n1", "notify_time": "2026-12-07 10:00:06",
		"notify_type": NotifyTypeTrade, "trade_no": "T1", "trade_status": StatusTradeSuccess, "total_amount": "100.00",
		"voucher_detail_list": `[{"merchantContribute":"20.00","merchant_contribute":"10.00"}]`})
	require.ErrorIs(t, err, delivery.ErrMalformed)
	assert.Contains(t, err.Error(), "voucher_detail_list[0]")
}

// The gateway's answer writes amounts and times as JSON strings. One that
// is not a string (a number, as Alipay's v3 API writes amounts) is refused
// naming the field, never dropped: a dropped receipt_amount would lose the
// merchant's discount the notification carries.
func TestQueryAnswerFieldsOfTheNotificationAreStrings(t *testing.T) {
	for _, field := range []string{`"receipt_amount":80.00`, `"total_amount":100`, `"send_pay_date":20261207100500`, `"trade_status":1`,
		`"buyer_pay_amount":{"v":"80.00"}`} {
		answer := `{"code":"10000","trade_no":"T1","out_trade_no":"O1","trade_status":"TRADE_SUCCESS","total_amount":"100.00",` +
			`"send_pay_date":"2026-12-07 10:05:00",` + field + `}`
		_, err := Query(appID, []byte(answer))
		require.ErrorIs(t, err, delivery.ErrMalformed, field)
		name, _, _ := strings.Cut(strings.Trim(field, `"`), `"`)
		assert.Contains(t, err.Error(), name, field)
	}
}
