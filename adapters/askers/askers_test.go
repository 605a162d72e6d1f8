package askers_test

import (
	"context"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/askers"
	"github.com/onceledger/onceledger/adapters/expectations"
	"github.com/onceledger/onceledger/adapters/providers/stripe/stripeapi"
	"github.com/onceledger/onceledger/adapters/providers/stripe/stripeapi/stripefake"
	"github.com/onceledger/onceledger/adapters/providers/wechatpay"
	"github.com/onceledger/onceledger/adapters/providers/wechatpay/wechatpayapi"
	"github.com/onceledger/onceledger/adapters/providers/wechatpay/wechatpayapi/wechatpayfake"
)

// The Stripe asker against the double: each state, a wrong object, 429
// with Retry-After, 5xx.
func TestStripeAsker(t *testing.T) {
	fake := stripefake.New("sk_test_1")
	srv := httptest.NewServer(fake)
	defer srv.Close()
	client, err := stripeapi.New(srv.URL, "sk_test_1", nil)
	require.NoError(t, err)
	a := askers.Stripe{Client: client}
	ctx := context.Background()

	ans, err := a.Ask(ctx, "pi_new")
	require.NoError(t, err)
	assert.Equal(t, expectations.OutcomeNotExist, ans.Outcome)

	fake.SetPaymentIntent("pi_wait", stripefake.PaymentIntent{Status: "processing", Amount: 1000, Currency: "usd", Created: 1764410000})
	ans, err = a.Ask(ctx, "pi_wait")
	require.NoError(t, err)
	assert.Equal(t, expectations.OutcomePending, ans.Outcome)

	fake.SetPaymentIntent("pi_paid", stripefake.PaymentIntent{Status: "succeeded", Amount: 1000, Currency: "usd", ChargeID: "ch_paid", Created: 1764410000})
	ans, err = a.Ask(ctx, "pi_paid")
	require.NoError(t, err)
	require.Equal(t, expectations.OutcomePaid, ans.Outcome)
	assert.Equal(t, "pi_paid", ans.Event.PaymentKey)
	assert.Equal(t, "ch_paid", ans.Event.Facts[0].BusinessID)
	assert.Equal(t, int64(1000), ans.Event.Facts[0].Amount)

	fake.SetPaymentIntent("pi_gone", stripefake.PaymentIntent{Status: "canceled", Amount: 1000, Currency: "usd", Created: 1})
	ans, err = a.Ask(ctx, "pi_gone")
	require.NoError(t, err)
	assert.Equal(t, expectations.OutcomeClosed, ans.Outcome)

	fake.SetPaymentIntent("pi_odd", stripefake.PaymentIntent{Status: "succeeded", Amount: 1, Currency: "usd", ChargeID: "ch", Created: 1, WrongID: true})
	_, err = a.Ask(ctx, "pi_odd")
	require.ErrorIs(t, err, expectations.ErrForged)

	fake.SetPaymentIntent("pi_busy", stripefake.PaymentIntent{HTTPStatus: http.StatusTooManyRequests, RetryAfter: "2"})
	_, err = a.Ask(ctx, "pi_busy")
	var ra *expectations.RetryAfterError
	require.ErrorAs(t, err, &ra)
	assert.Positive(t, ra.After)

	fake.SetPaymentIntent("pi_down", stripefake.PaymentIntent{HTTPStatus: http.StatusInternalServerError})
	_, err = a.Ask(ctx, "pi_down")
	require.Error(t, err)
	assert.NotErrorIs(t, err, expectations.ErrForged)
}

// The WeChat Pay asker: a direct merchant's reference is the out_trade_no;
// a service provider's "{sub_mchid}/{out_trade_no}" asks the partner
// variant, and the capture names the sub-merchant.
func TestWechatPayAsker(t *testing.T) {
	fake, a := newWechatPayAsker(t)
	ctx := context.Background()

	fake.SetTransaction("WX-1", wechatpayfake.Transaction{State: "SUCCESS", Total: 300, TransactionID: "4200000001",
		SuccessTime: "2026-12-07T18:00:05+08:00"})
	ans, err := a.Ask(ctx, "WX-1")
	require.NoError(t, err)
	require.Equal(t, expectations.OutcomePaid, ans.Outcome)
	assert.Equal(t, "4200000001", ans.Event.PaymentKey)
	assert.Empty(t, ans.Event.SubMerchant)

	fake.SetTransaction("WX-2", wechatpayfake.Transaction{State: "SUCCESS", Total: 400, TransactionID: "4200000002",
		SuccessTime: "2026-12-07T18:00:05+08:00", SubMchID: "1900000201"})
	ans, err = a.Ask(ctx, "1900000201/WX-2")
	require.NoError(t, err)
	require.Equal(t, expectations.OutcomePaid, ans.Outcome)
	assert.Equal(t, "1900000201", ans.Event.SubMerchant, "the partner variant, for the sub-merchant")

	fake.SetTransaction("WX-3", wechatpayfake.Transaction{State: "NOTPAY", Total: 1})
	ans, err = a.Ask(ctx, "WX-3")
	require.NoError(t, err)
	assert.Equal(t, expectations.OutcomePending, ans.Outcome)
	ans, err = a.Ask(ctx, "WX-404")
	require.NoError(t, err)
	assert.Equal(t, expectations.OutcomeNotExist, ans.Outcome)
	fake.SetTransaction("WX-F", wechatpayfake.Transaction{State: "SUCCESS", Total: 1, TransactionID: "4", SuccessTime: "2026-12-07T18:00:05+08:00", BadSign: true})
	_, err = a.Ask(ctx, "WX-F")
	require.ErrorIs(t, err, expectations.ErrForged)
	fake.SetTransaction("WX-429", wechatpayfake.Transaction{HTTPStatus: http.StatusTooManyRequests, RetryAfter: "5"})
	_, err = a.Ask(ctx, "WX-429")
	var ra *expectations.RetryAfterError
	require.ErrorAs(t, err, &ra)
	assert.Equal(t, 5*time.Second, ra.After)
}

// A service provider's two sub-merchants may each have an order of the
// same out_trade_no (it is unique within one merchant only): the
// references "{sub_mchid}/{out_trade_no}" ask the partner query with each
// one's own sub_mchid, and each answer is that sub-merchant's order.
func TestWechatPayAskerSubMerchantsSameOutTradeNo(t *testing.T) {
	fake, a := newWechatPayAsker(t)
	ctx := context.Background()

	fake.SetTransaction("WX-SAME", wechatpayfake.Transaction{State: "SUCCESS", Total: 400, TransactionID: "4200000201",
		SuccessTime: "2026-12-07T18:00:05+08:00", SubMchID: "1900000201"})
	fake.SetTransaction("WX-SAME", wechatpayfake.Transaction{State: "SUCCESS", Total: 500, TransactionID: "4200000202",
		SuccessTime: "2026-12-07T18:00:06+08:00", SubMchID: "1900000202"})
	for _, c := range []struct {
		sub, txn string
		total    int64
	}{{"1900000201", "4200000201", 400}, {"1900000202", "4200000202", 500}} {
		ans, err := a.Ask(ctx, c.sub+"/WX-SAME")
		require.NoError(t, err)
		require.Equal(t, expectations.OutcomePaid, ans.Outcome)
		assert.Equal(t, c.txn, ans.Event.PaymentKey, "sub-merchant %s's own order", c.sub)
		assert.Equal(t, c.sub, ans.Event.SubMerchant)
		require.Len(t, ans.Event.Facts, 1)
		assert.Equal(t, c.total, ans.Event.Facts[0].Amount)
		assert.Equal(t, 1, fake.Queries(c.sub+"/WX-SAME"), "asked with sub_mchid %s", c.sub)
	}
	// A third sub-merchant has no such order; nor does the direct merchant.
	ans, err := a.Ask(ctx, "1900000203/WX-SAME")
	require.NoError(t, err)
	assert.Equal(t, expectations.OutcomeNotExist, ans.Outcome)
	ans, err = a.Ask(ctx, "WX-SAME")
	require.NoError(t, err)
	assert.Equal(t, expectations.OutcomeNotExist, ans.Outcome)
}

// newWechatPayAsker is the asker against wechatpayfake on a real socket,
// as merchant (or service provider) 1900000100.
func newWechatPayAsker(t *testing.T) (*wechatpayfake.Fake, askers.WechatPay) {
	t.Helper()
	mk, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	const mchID, serial = "1900000100", "5157F09EFDC096DE15EBE81A47057A7232F1B8E1"
	fake, err := wechatpayfake.New(mchID, serial, &mk.PublicKey)
	require.NoError(t, err)
	srv := httptest.NewServer(fake)
	t.Cleanup(srv.Close)
	der, err := x509.MarshalPKCS8PrivateKey(mk)
	require.NoError(t, err)
	platform := map[string][]byte{wechatpayfake.KeyID: fake.PublicKeyPEM()}
	client, err := wechatpayapi.New(srv.URL, mchID, serial, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), platform, nil)
	require.NoError(t, err)
	adapter, err := wechatpay.New(platform, [][]byte{[]byte("0123456789abcdefghijklmnopqrstuv")}, []string{mchID}, 0)
	require.NoError(t, err)
	return fake, askers.WechatPay{Client: client, Adapter: adapter}
}
