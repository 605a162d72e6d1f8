package alipay

import (
	"net/url"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/domain/delivery"
)

// queryAnswer is an alipay.trade.query answer object with query_options
// fund_bill_list and voucher_detail_list, shaped as Alipay's reference for
// alipay.trade.query shows it (a 20.00 merchant coupon on a 100.00 trade).
const queryAnswer = `{"code":"10000","msg":"Success","trade_no":"2026120122001400001","out_trade_no":"ORDER-123",
"buyer_logon_id":"159****5620","trade_status":"TRADE_SUCCESS","total_amount":"100.00","receipt_amount":"80.00",
"buyer_pay_amount":"80.00","point_amount":"0.00","invoice_amount":"80.00","send_pay_date":"2026-12-01 10:05:00",
"fund_bill_list":[{"fund_channel":"ALIPAYACCOUNT","amount":"80.00","real_amount":"80.00"},{"fund_channel":"MDISCOUNT","amount":"20.00"}],
"voucher_detail_list":[{"id":"2026120100826300000000","name":"满100减20","type":"ALIPAY_BIZ_VOUCHER","amount":"20.00","merchant_contribute":"20.00","other_contribute":"0.00"}]}`

// The capture an answer tells is the one the notification of the same
// trade tells: the same payment, business id, amounts (the discount
// included) and facts hash; only the dedup key differs, one per trade and
// status.
func TestQueryAnswerIsTheNotificationsFact(t *testing.T) {
	q, err := Query(appID, []byte(queryAnswer))
	require.NoError(t, err)
	require.Equal(t, QueryPaid, q.State)

	notif := url.Values{"notify_id": {"ac05099524730693a8b330c5ecf72da9786"}, "notify_time": {"2026-12-01 10:05:01"},
		"notify_type": {NotifyTypeTrade}, "charset": {"utf-8"}, "app_id": {appID}, "trade_no": {"2026120122001400001"},
		"out_trade_no": {"ORDER-123"}, "trade_status": {"TRADE_SUCCESS"}, "total_amount": {"100.00"}, "receipt_amount": {"80.00"},
		"buyer_pay_amount": {"80.00"}, "point_amount": {"0.00"}, "invoice_amount": {"80.00"}, "gmt_payment": {"2026-12-01 10:05:00"},
		"fund_bill_list":      {`[{"amount":"80.00","fundChannel":"ALIPAYACCOUNT"},{"amount":"20.00","fundChannel":"MDISCOUNT"}]`},
		"voucher_detail_list": {`[{"amount":"20.00","merchantContribute":"20.00","name":"满100减20","otherContribute":"0.00","type":"ALIPAY_BIZ_VOUCHER","voucherId":"2026120100826300000000"}]`},
	}
	body := []byte(notif.Encode())
	f, err := parseForm(body)
	require.NoError(t, err)
	n, err := decode(f)
	require.NoError(t, err)
	want, err := n.Normalize(body)
	require.NoError(t, err)

	got := q.Event
	assert.Equal(t, want.FactsHash(), got.FactsHash())
	assert.Equal(t, want.PaymentKey, got.PaymentKey)
	assert.Equal(t, want.Facts, got.Facts)
	assert.Equal(t, int64(2000), got.Facts[0].Discount, "the coupon is carried")
	assert.Equal(t, want.References, got.References)
	assert.Equal(t, want.OccurredAt, got.OccurredAt)
	assert.Equal(t, "query:2026120122001400001:TRADE_SUCCESS", got.DedupKey)
	require.NoError(t, got.Validate())

	// The stored raw body re-normalizes like a notification (redrive).
	a := &Adapter{}
	again, err := a.Renormalize("", got.Raw)
	require.NoError(t, err)
	assert.Equal(t, got.FactsHash(), again.FactsHash())
	assert.Equal(t, got.DedupKey, again.DedupKey)
}

func TestQueryAnswerStates(t *testing.T) {
	q, err := Query(appID, []byte(`{"code":"10000","trade_no":"T1","out_trade_no":"O1","trade_status":"WAIT_BUYER_PAY","total_amount":"1.00"}`))
	require.NoError(t, err)
	assert.Equal(t, QueryPending, q.State)
	q, err = Query(appID, []byte(`{"code":"10000","trade_no":"T1","out_trade_no":"O1","trade_status":"TRADE_CLOSED","total_amount":"1.00"}`))
	require.NoError(t, err)
	assert.Equal(t, QueryClosed, q.State, "closed unpaid: nothing recorded")
	q, err = Query(appID, []byte(`{"code":"10000","trade_no":"T1","out_trade_no":"O1","trade_status":"TRADE_CLOSED","total_amount":"1.00","receipt_amount":"1.00","send_pay_date":"2026-12-01 10:05:00"}`))
	require.NoError(t, err)
	require.Equal(t, QueryPaid, q.State, "closed after being paid: its capture")
	require.Len(t, q.Event.Facts, 1)
	assert.Equal(t, delivery.KindCaptured, q.Event.Facts[0].Kind)
	assert.Equal(t, int64(100), q.Event.Facts[0].Amount)
	_, err = Query(appID, []byte(`{"code":"10000","trade_no":"T1","trade_status":"TRADE_SUCCESS","total_amount":"x"}`))
	require.Error(t, err)
}
