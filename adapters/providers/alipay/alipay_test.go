package alipay

import (
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/internal/providertest"
	"github.com/onceledger/onceledger/domain/delivery"
)

// The published vector: a real TRADE_SUCCESS notification Alipay signed, and
// the Alipay public key that verifies it, from alipay/alipay-sdk-nodejs-all
// test/alipay.test.ts, "checkNotifySign" / "verify sign should delete
// sign_type" / "with sign_type arguments verify success" (MIT licence). The
// test there passes an object; fund_bill_list is an array in it, which the
// SDK signs as its JSON.stringify, the string Alipay posts. Here it is
// encoded as the form Alipay posts.
const vectorKey = "MIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKCAQEAqObrdC7hrgAVM98tK0nv3hSQRGGKT4lBsQjHiGjeYZjOPIPHR5knm2jnnz/YGIXIofVHkA/tAlBAd5DrY7YpvI4tP5EONLtZKC2ghBMx7McI2wRD0xiqzxOQr1FuhZGJ8/AUokBzJrzY+aGX2xcOrxFYRlFilvVLTXg4LWjR1tdPkO6+i7wQZAIVMClPkwVRZEbaERRHlKqTzv2gGv5rDU8gRoe1LeaN+6BlbTqHWkQcNCUNrA8C6l17XAXGKDsm/9TFWwO8EPHHHCaQdjtV5/FdcWIt+L8SR1ss7EXTjYDFtxcKVv9rEoY1lX8T4mX+GbXfZHraG5NCF1+XioL5JwIDAQAB"

var vectorParams = []kv{
	{"gmt_create", "2019-08-15 15:56:22"}, {"charset", "utf-8"}, {"seller_email", "z97-yuquerevenue@service.aliyun.com"},
	{"subject", "语雀空间 500人规模"},
	{"sign", "QfTb8tqE1BMhS5qAnXtvsF3/jBkEvu9q9en0pdbBUDDjvKycZhQb7h8GDs4FKfi049PynaNuatxSgLb/nLWZpXyyh0LEWdK2S6Ri7nPwrVgOs08zugLO20vOQz44y3ti2Ncm8/wZts1Fr2gZ7pShnVX3d1B50hbsXnObT1r/U8ONNQjWXd0HIul4TG+Q3fm3svmSvFEy0WnzuhcyHPX5Gm4ELNctL6Qd5YniGJFNcc7kopHYtI/XD9YCKCH6Ct02rzUs9i11C9CsadtZn+WhxF26Dqt9sGEFajkJ8cxUTLi8+VCpLHsgPE8P0y095uQcDdK0YjCh4x7wVSov+lrmOQ=="},
	{"buyer_id", "2088102534368455"}, {"invoice_amount", "0.10"}, {"notify_id", "2019081500222155624068450559358070"},
	{"fund_bill_list", `[{"amount":"0.10","fundChannel":"ALIPAYACCOUNT"}]`}, {"notify_type", "trade_status_sync"},
	{"trade_status", "TRADE_SUCCESS"}, {"receipt_amount", "0.10"}, {"buyer_pay_amount", "0.10"}, {"sign_type", "RSA2"},
	{"app_id", "2019073166072302"}, {"seller_id", "2088531891668739"}, {"gmt_payment", "2019-08-15 15:56:24"},
	{"notify_time", "2019-08-15 15:56:25"}, {"version", "1.0"}, {"out_trade_no", "20190815155618536-564-57"},
	{"total_amount", "0.10"}, {"trade_no", "2019081522001468450512505578"}, {"auth_app_id", "2019073166072302"},
	{"buyer_logon_id", "xud***@126.com"}, {"point_amount", "0.00"},
}

func encodeForm(ps []kv) []byte {
	parts := make([]string, len(ps))
	for i, p := range ps {
		parts[i] = url.QueryEscape(p.k) + "=" + url.QueryEscape(p.v)
	}
	return []byte(strings.Join(parts, "&"))
}

func vectorAdapter(t *testing.T) *Adapter {
	t.Helper()
	pemKey := "-----BEGIN PUBLIC KEY-----\n" + vectorKey + "\n-----END PUBLIC KEY-----\n"
	a, err := New([][]byte{[]byte(pemKey)}, []string{"2019073166072302"})
	require.NoError(t, err)
	return a
}

func TestPublishedVector(t *testing.T) {
	a := vectorAdapter(t)
	body := encodeForm(vectorParams)
	evs, err := parse(a, body)
	require.NoError(t, err)
	require.Len(t, evs, 1)
	providertest.CheckEvent(t, "vector", evs[0], providertest.Want{
		Provider: "alipay", DedupKey: "2019081500222155624068450559358070", Type: "TRADE_SUCCESS",
		PaymentKey: "2019081522001468450512505578", OccurredAt: cst("2019-08-15 15:56:24"), Raw: body,
		Facts: []delivery.Fact{{Kind: delivery.KindCaptured, BusinessID: "2019081522001468450512505578", Amount: 10, Currency: "CNY"}},
	})

	// The same key as a bare base64 file, as Alipay's console shows it.
	bare, err := New([][]byte{[]byte(vectorKey + "\n")}, []string{"2019073166072302"})
	require.NoError(t, err)
	_, err = parse(bare, body)
	assert.NoError(t, err, "bare base64 key")

	// One changed value (the vector's own "verify fail" changes a whole
	// notification; one byte is enough).
	tampered := encodeForm(replace(vectorParams, "total_amount", "0.11"))
	_, err = parse(a, tampered)
	assert.ErrorIs(t, err, providers.ErrUnauthorized)

	// The SDK defaults a missing sign_type to RSA2; a notification always
	// sends it, and without it nothing says the scheme is not the retired
	// RSA: refused.
	_, err = parse(a, encodeForm(without(vectorParams, "sign_type")))
	assert.ErrorIs(t, err, providers.ErrUnauthorized)
	assert.ErrorContains(t, err, "sign_type")
}

func replace(ps []kv, k, v string) []kv {
	out := append([]kv(nil), ps...)
	for i := range out {
		if out[i].k == k {
			out[i].v = v
		}
	}
	return out
}

func without(ps []kv, k string) []kv {
	var out []kv
	for _, p := range ps {
		if p.k != k {
			out = append(out, p)
		}
	}
	return out
}

const tradeNo = "2026112922001400000000000001"

// verified returns the typed notification and its normalized event for a
// body signed by the test's Alipay key, without Validate.
func verified(t *testing.T, a *Adapter, body []byte) (Notification, delivery.Event) {
	t.Helper()
	n, err := a.Verify(body)
	require.NoError(t, err)
	ev, err := n.Normalize(body)
	require.NoError(t, err)
	return n, ev
}

func TestFacts(t *testing.T) {
	a := newAdapter(t)
	capture := delivery.Fact{Kind: delivery.KindCaptured, BusinessID: tradeNo, Amount: 8800, Currency: "CNY"}
	refund := func(id string, fen int64) delivery.Fact {
		return delivery.Fact{Kind: delivery.KindRefundCumulative, BusinessID: id, Amount: fen, Currency: "CNY"}
	}
	refundParams := []kv{{"out_biz_no", "refund-2"}, {"refund_fee", "30.50"}, {"gmt_refund", "2026-11-30 09:00:00.123"}}
	cases := []struct {
		name  string
		with  []kv
		typ   string
		at    string
		facts []delivery.Fact
	}{
		{"success", nil, "TRADE_SUCCESS", "2026-11-29 10:00:05", []delivery.Fact{capture}},
		{"success without gmt_payment", []kv{{"gmt_payment", ""}}, "TRADE_SUCCESS", "2026-11-29 10:00:06", []delivery.Fact{capture}},
		{"finished", []kv{{"trade_status", "TRADE_FINISHED"}}, "TRADE_FINISHED", "2026-11-29 10:00:05", []delivery.Fact{capture}},
		{"closed unpaid", []kv{{"trade_status", "TRADE_CLOSED"}, {"gmt_payment", ""}, {"gmt_close", "2026-11-29 10:30:00"}}, "TRADE_CLOSED",
			"2026-11-29 10:30:00", []delivery.Fact{{Kind: delivery.KindCanceled, Reason: closedReason}}},
		{"wait buyer pay", []kv{{"trade_status", "WAIT_BUYER_PAY"}}, "WAIT_BUYER_PAY", "2026-11-29 10:00:06", nil},
		{"unknown status", []kv{{"trade_status", "SOMETHING_NEW"}}, "SOMETHING_NEW", "2026-11-29 10:00:06", nil},
		{"other notify type", []kv{{"notify_type", "fund_auth_freeze"}}, "fund_auth_freeze", "2026-11-29 10:00:06", nil},
		{"partial refund", refundParams, "TRADE_SUCCESS", "2026-11-30 09:00:00.123", []delivery.Fact{refund("refund-2", 3050)}},
		{"full refund", append([]kv{{"trade_status", "TRADE_CLOSED"}, {"refund_fee", "88.00"}}, refundParams[0], refundParams[2]),
			"TRADE_CLOSED", "2026-11-30 09:00:00.123", []delivery.Fact{refund("refund-2", 8800)}},
		{"finished after refunds", append([]kv{{"trade_status", "TRADE_FINISHED"}}, refundParams...), "TRADE_FINISHED",
			"2026-11-30 09:00:00.123", []delivery.Fact{capture, refund("refund-2", 3050)}},
	}
	for _, c := range cases {
		body := signedBody(t, notification(c.with...), signOpts{})
		_, ev := verified(t, a, body)
		at := cst(c.at)
		assert.Equal(t, "alipay", ev.Provider, c.name)
		assert.Equal(t, "2026112900222100000000000000000001", ev.DedupKey, c.name)
		assert.Equal(t, tradeNo, ev.PaymentKey, c.name)
		assert.Equal(t, c.typ, ev.Type, c.name)
		assert.True(t, at.Equal(ev.OccurredAt), "%s: occurred %v, want %v", c.name, ev.OccurredAt, at)
		assert.Equal(t, c.facts, ev.Facts, c.name)
		assert.Equal(t, body, ev.Raw, c.name)
		assert.Equal(t, providers.PayloadHash(body), ev.PayloadHash, c.name)
		evs, err := parse(a, body)
		if assert.NoError(t, err, c.name) {
			assert.Equal(t, ev, evs[0], c.name)
		}
	}
}

func TestDiscount(t *testing.T) {
	a := newAdapter(t)
	n, ev := verified(t, a, signedBody(t, notification(kv{"receipt_amount", "80.00"}, kv{"buyer_pay_amount", "80.00"}), signOpts{}))
	assert.Equal(t, int64(800), n.Discount)
	assert.Equal(t, Amount{Fen: 8000, Set: true}, n.ReceiptAmount)
	assert.Equal(t, Amount{Fen: 8800, Set: true}, n.TotalAmount)
	assert.Equal(t, int64(8800), ev.Facts[0].Amount, "the capture is of total_amount")
	assert.Equal(t, int64(800), ev.Facts[0].Discount, "the capture carries the discount")

	n, _ = verified(t, a, signedBody(t, notification(kv{"receipt_amount", ""}), signOpts{}))
	assert.Zero(t, n.Discount, "no receipt_amount, no discount")
}

func TestTypedNotification(t *testing.T) {
	a := newAdapter(t)
	n, _ := verified(t, a, signedBody(t, notification(kv{"out_biz_no", "r-1"}, kv{"refund_fee", "1.5"},
		kv{"gmt_refund", "2026-11-30 09:00:00"}, kv{"gmt_close", "2026-11-30 09:00:01"}), signOpts{}))
	assert.Equal(t, Notification{
		NotifyID: "2026112900222100000000000000000001", NotifyType: "trade_status_sync", Charset: "utf-8",
		NotifyTime: cst("2026-11-29 10:00:06"), AppID: appID, AuthAppID: appID, SellerID: "2088531891668739",
		TradeNo: tradeNo, OutTradeNo: "order-1", OutBizNo: "r-1", TradeStatus: "TRADE_SUCCESS",
		TotalAmount: Amount{8800, true}, ReceiptAmount: Amount{8800, true}, BuyerPayAmount: Amount{8800, true},
		InvoiceAmount: Amount{8800, true}, PointAmount: Amount{0, true}, RefundFee: Amount{150, true},
		GmtCreate: cst("2026-11-29 10:00:00"), GmtPayment: cst("2026-11-29 10:00:05"),
		GmtRefund: cst("2026-11-30 09:00:00"), GmtClose: cst("2026-11-30 09:00:01"),
	}, n)
}

func TestAcknowledge(t *testing.T) {
	a := newAdapter(t)
	for _, outcome := range []string{"accepted", "duplicate", "ignored"} {
		ack := a.Acknowledge(outcome)
		assert.Equal(t, "success", string(ack.Body), outcome)
		assert.True(t, strings.HasPrefix(ack.ContentType, "text/plain"), outcome)
	}
	assert.Equal(t, "alipay", a.Name())
}

func TestRenormalizeEqualsParse(t *testing.T) {
	a := newAdapter(t)
	body := signedBody(t, notification(), signOpts{})
	evs, err := parse(a, body)
	require.NoError(t, err)
	ev, err := a.Renormalize("ignored", body)
	require.NoError(t, err)
	assert.Equal(t, evs[0], ev)
}
