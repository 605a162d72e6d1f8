package wechatpay

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/internal/providertest"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/money"
)

var cents = map[string]any{"total": 100, "payer_total": 90, "currency": "CNY", "payer_currency": "CNY"}

func TestFacts(t *testing.T) {
	k := keys(t)
	a := adapter(t, nil)
	paidAt := time.Date(2026, 11, 29, 9, 59, 58, 0, time.UTC)
	refundedAt := time.Date(2026, 11, 29, 10, 30, 0, 0, time.UTC)
	notifiedAt := time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC)
	refundAmount := map[string]any{"total": 100, "refund": 40, "payer_total": 90, "payer_refund": 36}
	capture := []delivery.Fact{{Kind: delivery.KindCaptured, BusinessID: txID, Amount: 100, Currency: "CNY"}}
	for _, c := range []struct {
		name       string
		req        providers.Request
		paymentKey string
		at         time.Time
		facts      []delivery.Fact
	}{
		{"capture, platform certificate", byCert(t, notification(t, apiKey, notifyID, EventTransactionSuccess, transaction(cents))), txID, paidAt, capture},
		{"capture, WeChat Pay public key", signed(t, k.pub, pubKeyID, now, notification(t, apiKey, notifyID, EventTransactionSuccess, transaction(cents))), txID, paidAt, capture},
		{"capture, serial in lower case", signed(t, k.cert, strings.ToLower(certSerial), now, notification(t, apiKey, notifyID, EventTransactionSuccess, transaction(cents))), txID, paidAt, capture},
		{"capture, the older APIv3 key", byCert(t, notification(t, oldAPIKey, notifyID, EventTransactionSuccess, transaction(cents))), txID, paidAt, capture},
		{"capture without a currency: CNY", byCert(t, notification(t, apiKey, notifyID, EventTransactionSuccess, transaction(map[string]any{"total": 100}))), txID, paidAt, capture},
		{"capture in HKD", byCert(t, notification(t, apiKey, notifyID, EventTransactionSuccess, transaction(map[string]any{"total": 100, "currency": "HKD"}))), txID, paidAt,
			[]delivery.Fact{{Kind: delivery.KindCaptured, BusinessID: txID, Amount: 100, Currency: "HKD"}}},
		{"capture without success_time: the notification's time", byCert(t, notification(t, apiKey, notifyID, EventTransactionSuccess, with(transaction(cents), "success_time", nil))), txID, notifiedAt, capture},
		{"refund", byCert(t, notification(t, apiKey, notifyID, EventRefundSuccess, refund("SUCCESS", refundAmount))), txID, refundedAt,
			[]delivery.Fact{{Kind: delivery.KindRefunded, BusinessID: refundID, Amount: 40, Currency: "CNY",
				Discount: 4}}}, // refund 40 − payer_refund 36: coupon money, bounded by the payment's (discount.go)
		{"refund closed: recorded", byCert(t, notification(t, apiKey, notifyID, EventRefundClosed, refund("CLOSED", refundAmount))), txID, notifiedAt,
			[]delivery.Fact{{Kind: delivery.KindRefundClosed, BusinessID: refundID, Amount: 40, Currency: "CNY", Reason: "REFUND.CLOSED"}}},
		{"refund abnormal: recorded, not final", byCert(t, notification(t, apiKey, notifyID, EventRefundAbnormal, refund("ABNORMAL", refundAmount))), txID, notifiedAt,
			[]delivery.Fact{{Kind: delivery.KindRefundAbnormal, BusinessID: refundID, Amount: 40, Currency: "CNY", Reason: "REFUND.ABNORMAL"}}},
		{"another event type: ignored", byCert(t, notification(t, apiKey, notifyID, "MCHTRANSFER.BILL.FINISHED", map[string]any{"mch_id": mchID, "state": "SUCCESS"})), "", notifiedAt, nil},
		{"another type naming no merchant: ignored", byCert(t, notification(t, apiKey, notifyID, "COMPLAINT.CREATE", map[string]any{"complaint_id": "200201820200101080076610000"})), "", notifiedAt, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			ev := providertest.ParseOne(t, a, c.req)
			providertest.CheckEvent(t, c.name, ev, providertest.Want{
				Provider: Name, DedupKey: notifyID, PaymentKey: c.paymentKey, OccurredAt: c.at, Raw: c.req.Body, Facts: c.facts,
			})
			if c.paymentKey != "" {
				assert.Equal(t, "payment-wechatpay-"+txID, ev.StreamID())
			}
		})
	}
}

func TestServiceProvider(t *testing.T) {
	a := adapter(t, nil)
	sp := with(transaction(cents), "mchid", nil, "sp_mchid", spMchID, "sub_mchid", subMchID, "sp_appid", "wx8888888888888888")
	req := byCert(t, notification(t, apiKey, notifyID, EventTransactionSuccess, sp))
	n, err := a.Notification(req)
	require.NoError(t, err)
	assert.Equal(t, Merchant{SpMchID: spMchID, SubMchID: subMchID}, n.Merchant)
	require.NotNil(t, n.Transaction)
	assert.Equal(t, subMchID, n.Transaction.SubMchID)
	ev := providertest.ParseOne(t, a, req)
	assert.Equal(t, []delivery.Fact{{Kind: delivery.KindCaptured, BusinessID: txID, Amount: 100, Currency: "CNY"}}, ev.Facts)
	assert.Equal(t, subMchID, ev.SubMerchant, "the sub-merchant is recorded on the payment")

	r := with(refund("SUCCESS", map[string]any{"total": 100, "refund": 100}), "mchid", nil, "sp_mchid", spMchID, "sub_mchid", subMchID)
	ev = providertest.ParseOne(t, a, byCert(t, notification(t, apiKey, notifyID, EventRefundSuccess, r)))
	assert.Equal(t, []delivery.Fact{{Kind: delivery.KindRefunded, BusinessID: refundID, Amount: 100, Currency: "CNY"}}, ev.Facts)

	// The service provider must be ours; the sub-merchant is whoever it
	// acts for, and must be named.
	providertest.CheckRefusal(t, a, "another service provider", byCert(t, notification(t, apiKey, notifyID, EventTransactionSuccess,
		with(sp, "sp_mchid", "1900009999"))), `sp_mchid "1900009999" is not a configured merchant`)
	evs, err := a.Parse(byCert(t, notification(t, apiKey, notifyID, EventTransactionSuccess, with(sp, "sub_mchid", nil))))
	providertest.CheckFieldError(t, "no sub_mchid", evs, err, delivery.ErrMissingField, "sub_mchid")
}

func TestRefusals(t *testing.T) {
	k := keys(t)
	var unknown serials
	a := adapter(t, &unknown)
	body := notification(t, apiKey, notifyID, EventTransactionSuccess, transaction(cents))
	good := byCert(t, body)
	edit := func(name, value string) providers.Request {
		r := byCert(t, body)
		r.Header = r.Header.Clone()
		if value == "" {
			r.Header.Del(name)
		} else {
			r.Header.Set(name, value)
		}
		return r
	}
	providertest.CheckRefusal(t, a, "probe", edit(HeaderSignature, ProbePrefix+"0e4ab3c2"), "signature probe")
	assert.Empty(t, unknown.list(), "a probe is not an unknown serial")
	providertest.CheckRefusal(t, a, "unknown serial", signed(t, k.rogue, "7132D72A03E93CDDF8C03BBD1F37EEDF6C0B8A10", now, body), "names no configured")
	assert.Equal(t, []string{"7132D72A03E93CDDF8C03BBD1F37EEDF6C0B8A10"}, unknown.list(), "the hook names the serial")
	providertest.CheckRefusal(t, a, "unknown public key id", signed(t, k.pub, "PUB_KEY_ID_0000000000000024101100397200000006", now, body), "names no configured")
	assert.Len(t, unknown.list(), 2)
	long := strings.Repeat("F", 300)
	providertest.CheckRefusal(t, a, "unknown serial, long", signed(t, k.rogue, long, now, body), "names no configured")
	assert.Equal(t, long[:64]+"…", unknown.list()[2], "the sender's text is cut")

	providertest.CheckRefusal(t, a, "stale", signed(t, k.cert, certSerial, now.Add(-DefaultTolerance-time.Second), body), "timestamp outside tolerance")
	providertest.CheckRefusal(t, a, "future", signed(t, k.cert, certSerial, now.Add(DefaultTolerance+time.Second), body), "timestamp outside tolerance")
	providertest.CheckRefusal(t, a, "far future", signed(t, k.cert, certSerial, now.Add(100*365*24*time.Hour), body), "timestamp outside tolerance")
	for _, d := range []time.Duration{-DefaultTolerance, DefaultTolerance} {
		providertest.ParseOne(t, a, signed(t, k.cert, certSerial, now.Add(d), body))
	}
	providertest.CheckRefusal(t, a, "signed by another key", signed(t, k.rogue, certSerial, now, body), "does not verify")
	providertest.CheckRefusal(t, a, "the public key's signature under the certificate's serial", signed(t, k.pub, certSerial, now, body), "does not verify")
	providertest.CheckRefusal(t, a, "signature not base64", edit(HeaderSignature, "not base64!"), "not base64")
	providertest.CheckRefusal(t, a, "another nonce", edit(HeaderNonce, "other"), "does not verify")
	providertest.CheckRefusal(t, a, "another timestamp", edit(HeaderTimestamp, "1764410401"), "does not verify")
	for i := 0; i < len(body); i += 97 {
		r := good
		r.Body = providertest.Tampered(body, i, 0x01)
		providertest.CheckRefusal(t, a, "tampered body", r, "")
	}
	for _, h := range []string{HeaderTimestamp, HeaderNonce, HeaderSignature, HeaderSerial} {
		providertest.CheckRefusal(t, a, "without "+h, edit(h, ""), "missing "+h)
		r := byCert(t, body)
		r.Header.Add(h, r.Header.Get(h))
		providertest.CheckRefusal(t, a, "two "+h, r, "several "+h)
	}
	providertest.CheckRefusal(t, a, "no headers", providers.Request{Body: body, Now: now}, "missing")
	refusedContent(t, a)
}

// refusedContent: signed correctly, but not for us.
func refusedContent(t *testing.T, a *Adapter) {
	pt, err := json.Marshal(transaction(cents))
	require.NoError(t, err)
	wrongKey := "ZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZ"
	providertest.CheckRefusal(t, a, "another APIv3 key", byCert(t, notification(t, wrongKey, notifyID, EventTransactionSuccess, transaction(cents))), "does not decrypt")
	r := encrypt(t, apiKey, pt, "transaction")
	for name, edit := range map[string]func(Resource) Resource{
		"another algorithm":       func(r Resource) Resource { r.Algorithm = "AEAD_AES_128_GCM"; return r },
		"another associated data": func(r Resource) Resource { r.AssociatedData = "refund"; return r },
		"another nonce":           func(r Resource) Resource { r.Nonce = "Kj7QIyUiYx1r"; return r },
		"a short nonce":           func(r Resource) Resource { r.Nonce = "Kj7Q"; return r },
		"ciphertext not base64":   func(r Resource) Resource { r.Ciphertext = "%%%"; return r },
		"ciphertext cut":          func(r Resource) Resource { r.Ciphertext = r.Ciphertext[:8]; return r },
		"empty ciphertext":        func(r Resource) Resource { r.Ciphertext = ""; return r },
	} {
		providertest.CheckRefusal(t, a, name, byCert(t, envelopeWith(t, notifyID, EventTransactionSuccess, edit(r))), "resource")
	}
	for name, content := range map[string]map[string]any{
		"mchid not configured":              with(transaction(cents), "mchid", "1900000999"),
		"sp_mchid not configured":           with(transaction(cents), "mchid", nil, "sp_mchid", "1900000999", "sub_mchid", subMchID),
		"mchid ours, sp_mchid not":          with(transaction(cents), "sp_mchid", "1900000999", "sub_mchid", subMchID),
		"no merchant named":                 with(transaction(cents), "mchid", nil),
		"refund of another merchant":        with(refund("SUCCESS", map[string]any{"refund": 1}), "mchid", "1900000999"),
		"an ignored type, another merchant": {"mchid": "1900000999"},
	} {
		typ := EventTransactionSuccess
		if strings.HasPrefix(name, "refund") {
			typ = EventRefundSuccess
		} else if strings.HasPrefix(name, "an ignored") {
			typ = "PAYSCORE.USER_OPEN_SERVICE"
		}
		providertest.CheckRefusal(t, a, name, byCert(t, notification(t, apiKey, notifyID, typ, content)), "merchant")
	}
}

func TestMalformed(t *testing.T) {
	a := adapter(t, nil)
	for _, c := range []struct {
		name, eventType string
		content         map[string]any
		target          error
		field           string
	}{
		{"no transaction_id", EventTransactionSuccess, with(transaction(cents), "transaction_id", nil), delivery.ErrMissingField, "transaction_id"},
		{"no trade_state", EventTransactionSuccess, with(transaction(cents), "trade_state", nil), delivery.ErrMissingField, "trade_state"},
		{"trade_state not SUCCESS", EventTransactionSuccess, with(transaction(cents), "trade_state", "REFUND"), delivery.ErrMalformed, "trade_state"},
		{"no amount", EventTransactionSuccess, with(transaction(cents), "amount", nil), delivery.ErrMissingField, "amount"},
		{"no amount.total", EventTransactionSuccess, transaction(map[string]any{"payer_total": 1}), delivery.ErrMissingField, "amount.total"},
		{"unknown currency", EventTransactionSuccess, transaction(map[string]any{"total": 1, "currency": "XYZ"}), money.ErrUnknownCurrency, "amount.currency"},
		{"bad success_time", EventTransactionSuccess, with(transaction(cents), "success_time", "2026-11-29 18:00:00"), delivery.ErrMalformed, "success_time"},
		{"no refund_id", EventRefundSuccess, with(refund("SUCCESS", map[string]any{"refund": 1}), "refund_id", nil), delivery.ErrMissingField, "refund_id"},
		{"refund without transaction_id", EventRefundSuccess, with(refund("SUCCESS", map[string]any{"refund": 1}), "transaction_id", nil), delivery.ErrMissingField, "transaction_id"},
		{"no amount.refund", EventRefundSuccess, refund("SUCCESS", map[string]any{"total": 1}), delivery.ErrMissingField, "amount.refund"},
		{"refund_status contradicts", EventRefundSuccess, refund("CLOSED", map[string]any{"refund": 1}), delivery.ErrMalformed, "refund_status"},
		{"abnormal with status SUCCESS", EventRefundAbnormal, refund("SUCCESS", map[string]any{"refund": 1}), delivery.ErrMalformed, "refund_status"},
	} {
		evs, err := a.Parse(byCert(t, notification(t, apiKey, notifyID, c.eventType, c.content)))
		providertest.CheckFieldError(t, c.name, evs, err, c.target, c.field)
	}
	for _, c := range []struct{ name, body, field string }{
		{"no id", `{"create_time":"2026-11-29T18:00:00+08:00","event_type":"TRANSACTION.SUCCESS","resource":RES}`, "id"},
		{"no event_type", `{"id":"EV-1","create_time":"2026-11-29T18:00:00+08:00","resource":RES}`, "event_type"},
		{"no create_time", `{"id":"EV-1","event_type":"TRANSACTION.SUCCESS","resource":RES}`, "create_time"},
		{"no resource", `{"id":"EV-1","create_time":"2026-11-29T18:00:00+08:00","event_type":"TRANSACTION.SUCCESS"}`, "resource"},
		{"a repeated key", `{"id":"EV-1","id":"EV-2","create_time":"2026-11-29T18:00:00+08:00","event_type":"TRANSACTION.SUCCESS","resource":RES}`, "id"},
		{"not JSON", `id=EV-1`, "body"},
	} {
		res, err := json.Marshal(encrypt(t, apiKey, mustJSON(t, transaction(cents)), "transaction"))
		require.NoError(t, err)
		body := strings.Replace(c.body, "RES", string(res), 1)
		evs, err := a.Parse(byCert(t, []byte(body)))
		target := delivery.ErrMissingField
		if c.name == "a repeated key" || c.name == "not JSON" {
			target = delivery.ErrMalformed
		}
		providertest.CheckFieldError(t, c.name, evs, err, target, c.field)
	}
	badContent(t, a)
}

// badContent: amounts that are not a whole number of fen, and content that
// is not JSON, all signed and encrypted correctly.
func badContent(t *testing.T, a *Adapter) {
	for name, amount := range map[string]string{
		"negative":         `-1`,
		"a fraction":       `1.5`,
		"a whole fraction": `100.0`,
		"an exponent":      `1e2`,
		"a string":         `"100"`,
		"a leading zero":   `0100`,
		"beyond int64":     `99999999999999999999`,
		"above the limit":  `1000000000000000001`,
		"a boolean":        `true`,
	} {
		pt := `{"mchid":"` + mchID + `","transaction_id":"` + txID + `","trade_state":"SUCCESS","amount":{"total":` + amount + `,"currency":"CNY"}}`
		evs, err := a.Parse(byCert(t, envelopeWith(t, notifyID, EventTransactionSuccess, encrypt(t, apiKey, []byte(pt), "transaction"))))
		if name == "a leading zero" {
			// Not JSON at all: the decoder refuses it first.
			providertest.CheckFieldError(t, name, evs, err, delivery.ErrMalformed, "resource")
			continue
		}
		providertest.CheckFieldError(t, name, evs, err, delivery.ErrInvalidAmount, "amount")
	}
	for name, pt := range map[string]string{
		"not JSON":       `mchid=1900000109`,
		"an array":       `[1,2]`,
		"a repeated key": `{"mchid":"` + mchID + `","mchid":"1900000999"}`,
		"folded repeat":  `{"mchid":"` + mchID + `","MchID":"1900000999"}`,
	} {
		evs, err := a.Parse(byCert(t, envelopeWith(t, notifyID, EventTransactionSuccess, encrypt(t, apiKey, []byte(pt), "transaction"))))
		providertest.CheckFieldError(t, name, evs, err, delivery.ErrMalformed, "")
	}
}

func mustJSON(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	require.NoError(t, err)
	return b
}

// A redelivery is the same notification id: whatever its bytes, one dedup
// key; a stored delivery renormalizes to the event it made.
func TestRedeliveryAndRenormalize(t *testing.T) {
	a := adapter(t, nil)
	first := byCert(t, notification(t, apiKey, notifyID, EventTransactionSuccess, transaction(cents)))
	again := signed(t, keys(t).pub, pubKeyID, now.Add(time.Minute), notification(t, oldAPIKey, notifyID, EventTransactionSuccess, transaction(cents)))
	again.Now = now.Add(time.Minute)
	e1, e2 := providertest.ParseOne(t, a, first), providertest.ParseOne(t, a, again)
	assert.Equal(t, e1.DedupKey, e2.DedupKey)
	assert.Equal(t, e1.Facts, e2.Facts)
	assert.NotEqual(t, e1.PayloadHash, e2.PayloadHash)

	re, err := a.Renormalize("ignored", first.Body)
	require.NoError(t, err)
	assert.Equal(t, e1, re)
	_, err = a.Renormalize("", providertest.Tampered(first.Body, len(first.Body)/2, 0x20))
	assert.Error(t, err, "a stored body that no longer decrypts")
}

func TestAnswers(t *testing.T) {
	a := adapter(t, nil)
	for _, o := range []string{"accepted", "duplicate", "ignored"} {
		assert.Equal(t, providers.Ack{Status: http.StatusNoContent}, a.Acknowledge(o), o)
	}
	assert.JSONEq(t, `{"code":"FAIL","message":"signature verification failed"}`, string(FailureBody("signature verification failed")))
	assert.JSONEq(t, `{"code":"FAIL","message":"FAIL"}`, string(FailureBody("")))
	long := FailureBody(strings.Repeat("验", 30)) // 90 bytes: cut at a character
	var m map[string]string
	require.NoError(t, json.Unmarshal(long, &m))
	assert.Equal(t, strings.Repeat("验", 21), m["message"])
	f := a.Failure(providers.Unauthorized("timestamp outside tolerance"))
	assert.Equal(t, "application/json", f.ContentType)
	assert.JSONEq(t, `{"code":"FAIL","message":"signature verification failed: timestamp outside tolerance"}`, string(f.Body))
}
