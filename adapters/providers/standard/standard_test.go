package standard_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"

	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/internal/providertest"
	"github.com/onceledger/onceledger/adapters/providers/payload"
	"github.com/onceledger/onceledger/adapters/providers/standard"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/money"
)

var (
	secret    = "whsec_" + base64.StdEncoding.EncodeToString([]byte("onceledger-standard-test-key-32b"))
	oldSecret = "whsec_" + base64.StdEncoding.EncodeToString([]byte("the-previous-key-before-rotation"))
	now       = time.Date(2026, 11, 29, 10, 0, 5, 0, time.UTC)
)

const (
	tolerance = 5 * time.Minute
	msgID     = "msg_2Qh7cK9xXcGq3b0dLf5Yv1TzWnA"
)

// newAdapter returns an adapter for secrets, by default the one secret the
// fixtures are signed with.
func newAdapter(t testing.TB, secrets ...string) *standard.Adapter {
	t.Helper()
	if len(secrets) == 0 {
		secrets = []string{secret}
	}
	return providertest.Adapter(t, func(secrets []string) (*standard.Adapter, error) { return standard.New(secrets, tolerance) }, secrets)
}

// signed builds a request signed by the reference library.
func signed(t testing.TB, body []byte, secret, id string, ts time.Time) providers.Request {
	t.Helper()
	wh, err := standardwebhooks.NewWebhook(secret)
	require.NoError(t, err)
	sig, err := wh.Sign(id, ts, body)
	require.NoError(t, err)
	h := http.Header{}
	h.Set(standardwebhooks.HeaderWebhookID, id)
	h.Set(standardwebhooks.HeaderWebhookTimestamp, fmt.Sprint(ts.Unix()))
	h.Set(standardwebhooks.HeaderWebhookSignature, sig)
	return providers.Request{Header: h, Body: body, Now: now}
}

func TestNew(t *testing.T) {
	for name, secrets := range map[string][]string{
		"none":       nil,
		"blank":      {"", "  "},
		"not base64": {"whsec_not*base64!"},
		"empty key":  {"whsec_"},
	} {
		_, err := standard.New(secrets, tolerance)
		assert.Errorf(t, err, "%s: New succeeded", name)
	}
	_, err := standard.New([]string{secret}, 0)
	assert.Error(t, err, "zero tolerance accepted")
	// The prefix is optional, as in the reference library.
	a := newAdapter(t, strings.TrimPrefix(secret, "whsec_"))
	providertest.ParseOne(t, a, signed(t, providertest.Fixture(t, "payment.captured.json"), secret, msgID, now))
	assert.Equal(t, "standard", a.Name())
}

// The vector published in the reference library's tests (and Svix's docs).
func TestPublishedVector(t *testing.T) {
	const (
		key     = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
		id      = "msg_p5jXN8AQM9LWM0D4loKWxJek"
		want    = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
		payload = `{"test": 2432232314}`
	)
	ts := time.Unix(1614265330, 0)
	h, err := standard.Sign(key, id, ts, []byte(payload))
	require.NoError(t, err)
	assert.Equal(t, want, h.Get("webhook-signature"), "Sign")
	a := newAdapter(t, key)
	hdr := http.Header{}
	hdr.Set("webhook-id", id)
	hdr.Set("webhook-timestamp", "1614265330")
	hdr.Set("webhook-signature", want)
	// The vector's body is not our payload: verification passes and
	// normalization then names the missing field.
	_, err = a.Parse(providers.Request{Header: hdr, Body: []byte(payload), Now: ts.Add(time.Minute)})
	require.ErrorIs(t, err, delivery.ErrMissingField, "want missing type after a passed verification")
	require.ErrorContains(t, err, "type", "want missing type after a passed verification")
	hdr.Set("webhook-signature", "v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=") // the library's "invalid signature" case
	_, err = a.Parse(providers.Request{Header: hdr, Body: []byte(payload), Now: ts})
	require.ErrorIs(t, err, providers.ErrUnauthorized)
}

// Our Sign must be accepted by the reference library's Verify.
func TestSignAcceptedByReferenceLibrary(t *testing.T) {
	body := providertest.Fixture(t, "payment.captured.json")
	ts := time.Now()
	h, err := standard.Sign(secret, msgID, ts, body)
	require.NoError(t, err)
	wh, err := standardwebhooks.NewWebhook(secret)
	require.NoError(t, err)
	require.NoError(t, wh.Verify(body, h), "reference library rejects our signature")
	ref := signed(t, body, secret, msgID, ts).Header
	assert.Equal(t, ref.Get("webhook-signature"), h.Get("webhook-signature"), "Sign, against the reference library")
	assert.Equal(t, ref.Get("webhook-timestamp"), h.Get("webhook-timestamp"), "Sign, against the reference library")
}

func TestParseAcceptsReferenceSignature(t *testing.T) {
	ev := providertest.ParseOne(t, newAdapter(t), signed(t, providertest.Fixture(t, "payment.captured.json"), secret, msgID, now.Add(-time.Minute)))
	assert.Equal(t, msgID, ev.DedupKey, "DedupKey, want webhook-id")
}

func TestSvixHeaders(t *testing.T) {
	body := providertest.Fixture(t, "payment.captured.json")
	r := signed(t, body, secret, msgID, now)
	svix := http.Header{}
	for _, k := range []string{"id", "timestamp", "signature"} {
		svix.Set("svix-"+k, r.Header.Get("webhook-"+k))
	}
	ev := providertest.ParseOne(t, newAdapter(t), providers.Request{Header: svix, Body: body, Now: now})
	assert.Equal(t, msgID, ev.DedupKey, "DedupKey")
	// The sets are not mixed: a webhook-id beside svix-* means webhook-* is used.
	svix.Set("webhook-id", msgID)
	_, err := newAdapter(t).Parse(providers.Request{Header: svix, Body: body, Now: now})
	if assert.ErrorIs(t, err, providers.ErrUnauthorized, "mixed header sets") {
		assert.ErrorContains(t, err, "missing webhook-timestamp", "mixed header sets")
	}
}

func TestVerifyRejects(t *testing.T) {
	body := providertest.Fixture(t, "payment.captured.json")
	good := signed(t, body, secret, msgID, now)
	goodSig := good.Header.Get("webhook-signature")
	with := func(mod func(h http.Header)) providers.Request {
		h := good.Header.Clone()
		mod(h)
		return providers.Request{Header: h, Body: body, Now: now}
	}
	cases := []struct {
		name   string
		req    providers.Request
		reason string
	}{
		{"tampered body", withBody(good, bytes.Replace(body, []byte(`"amount": 1000`), []byte(`"amount": 1001`), 1)), "no valid signature"},
		{"tampered body, byte appended", withBody(good, append(append([]byte{}, body...), '\n')), "no valid signature"},
		{"other webhook-id (id is signed)", with(func(h http.Header) { h.Set("webhook-id", "msg_other") }), "no valid signature"},
		{"other timestamp (timestamp is signed)", with(func(h http.Header) { h.Set("webhook-timestamp", fmt.Sprint(now.Unix()+1)) }), "no valid signature"},
		{"wrong secret", signed(t, body, oldSecret, msgID, now), "no valid signature"},
		{"stale", signed(t, body, secret, msgID, now.Add(-tolerance-time.Second)), "timestamp outside tolerance"},
		{"too far in the future", signed(t, body, secret, msgID, now.Add(tolerance+time.Second)), "timestamp outside tolerance"},
		{"absurd timestamp", signed(t, body, secret, msgID, time.Unix(1<<62, 0)), "timestamp outside tolerance"},
		{"missing id", with(func(h http.Header) { h.Del("webhook-id") }), "missing webhook-id header"},
		{"missing timestamp", with(func(h http.Header) { h.Del("webhook-timestamp") }), "missing webhook-timestamp header"},
		{"missing signature", with(func(h http.Header) { h.Del("webhook-signature") }), "missing webhook-signature header"},
		{"no headers at all", providers.Request{Body: body, Now: now}, "missing webhook-id header"},
		{"timestamp not a number", with(func(h http.Header) { h.Set("webhook-timestamp", "2026-11-29T10:00:00Z") }), "invalid webhook-timestamp header"},
		{"partial signature", with(func(h http.Header) { h.Set("webhook-signature", "v1,") }), "no valid signature"},
		{"other version only", with(func(h http.Header) { h.Set("webhook-signature", "v2,"+strings.TrimPrefix(goodSig, "v1,")) }), "no valid signature"},
		{"v1a only", with(func(h http.Header) { h.Set("webhook-signature", "v1a,"+strings.TrimPrefix(goodSig, "v1,")) }), "no valid signature"},
		{"no version", with(func(h http.Header) { h.Set("webhook-signature", strings.TrimPrefix(goodSig, "v1,")) }), "no valid signature"},
		{"truncated", with(func(h http.Header) { h.Set("webhook-signature", goodSig[:20]) }), "no valid signature"},
	}
	a := newAdapter(t)
	for _, tc := range cases {
		providertest.CheckRefusal(t, a, tc.name, tc.req, tc.reason)
	}
}

func withBody(r providers.Request, body []byte) providers.Request {
	r.Body = body
	return r
}

func TestVerifyBeforeParse(t *testing.T) {
	a := newAdapter(t)
	junk := []byte("{not json")
	_, err := a.Parse(withBody(signed(t, providertest.Fixture(t, "payment.captured.json"), secret, msgID, now), junk))
	assert.ErrorIs(t, err, providers.ErrUnauthorized, "unsigned junk")
	_, err = a.Parse(signed(t, junk, secret, msgID, now))
	assert.ErrorIs(t, err, delivery.ErrMalformed, "signed junk")
}

func TestToleranceBoundary(t *testing.T) {
	a := newAdapter(t)
	body := providertest.Fixture(t, "payment.captured.json")
	for _, ts := range []time.Time{now.Add(-tolerance), now.Add(tolerance), now} {
		_, err := a.Parse(signed(t, body, secret, msgID, ts))
		assert.NoErrorf(t, err, "timestamp %v from now", ts.Sub(now))
	}
	r := signed(t, body, secret, msgID, time.Now())
	r.Now = time.Time{} // zero: the wall clock
	_, err := a.Parse(r)
	assert.NoError(t, err, "zero Now")
}

func TestRotation(t *testing.T) {
	body := providertest.Fixture(t, "payment.captured.json")
	both := newAdapter(t, oldSecret, secret)
	t.Run("either configured secret", func(t *testing.T) {
		providertest.ParseOne(t, both, signed(t, body, secret, msgID, now))
		providertest.ParseOne(t, both, signed(t, body, oldSecret, msgID, now))
	})
	t.Run("several signatures in the header", func(t *testing.T) {
		retired := "whsec_" + base64.StdEncoding.EncodeToString([]byte("retired"))
		sOld := signed(t, body, retired, msgID, now).Header.Get("webhook-signature")
		sNew := signed(t, body, secret, msgID, now).Header.Get("webhook-signature")
		r := signed(t, body, secret, msgID, now)
		r.Header.Set("webhook-signature", strings.Join([]string{"v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=", "v2,abc", sOld, "v1,***", sNew}, " "))
		wh, _ := standardwebhooks.NewWebhook(secret)
		require.NoError(t, wh.VerifyIgnoringTimestamp(body, r.Header), "reference library rejects the multi-signature header too")
		providertest.ParseOne(t, newAdapter(t), r)
		// None of the listed signatures is ours: rejected.
		r.Header.Set("webhook-signature", sOld+" v1,Ceo5qEr07ixe2NLpvHk3FH9bwy/WavXrAFQ/9tdO6mc=")
		_, err := both.Parse(r)
		require.ErrorIs(t, err, providers.ErrUnauthorized)
	})
}

// ---------------------------------------------------------------------------
// Normalization

func TestNormalize(t *testing.T) {
	usd := money.Currency("USD")
	cases := []struct {
		file       string
		paymentKey string
		occurred   time.Time
		facts      []delivery.Fact
	}{
		{"payment.authorized.json", "pay_123", time.Date(2026, 11, 29, 9, 59, 0, 0, time.UTC), []delivery.Fact{{Kind: delivery.KindAuthorized, Amount: 1000, Currency: usd}}},
		{"payment.captured.json", "pay_123", time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC), []delivery.Fact{{Kind: delivery.KindCaptured, BusinessID: "cap_1", Amount: 1000, Fee: 30, Currency: usd}}},
		{"payment.captured.nofee.json", "pay_jpy", time.Date(2026, 11, 29, 9, 0, 0, 250e6, time.UTC), []delivery.Fact{{Kind: delivery.KindCaptured, BusinessID: "cap_jpy", Amount: 1500, Currency: "JPY"}}},
		{"payment.failed.json", "pay_456", time.Date(2026, 11, 29, 10, 1, 0, 0, time.UTC), []delivery.Fact{{Kind: delivery.KindFailed, Amount: 2500, Currency: "EUR", Reason: "card_declined"}}},
		{"payment.failed.bare.json", "pay_457", time.Date(2026, 11, 29, 10, 1, 30, 0, time.UTC), []delivery.Fact{{Kind: delivery.KindFailed}}},
		{"refund.succeeded.json", "pay_123", time.Date(2026, 11, 30, 8, 0, 0, 0, time.UTC), []delivery.Fact{{Kind: delivery.KindRefunded, BusinessID: "ref_1", Amount: 400, Currency: usd}}},
		{"dispute.opened.json", "pay_123", time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC), []delivery.Fact{{Kind: delivery.KindDisputeOpened, BusinessID: "dsp_1", Amount: 600, Currency: usd, Reason: "fraudulent"}}},
		{"dispute.won.json", "pay_123", time.Date(2026, 12, 20, 12, 0, 0, 0, time.UTC), []delivery.Fact{{Kind: delivery.KindDisputeWon, BusinessID: "dsp_1", Amount: 600, Currency: usd}}},
		{"dispute.lost.json", "pay_123", time.Date(2026, 12, 20, 12, 0, 0, 0, time.UTC), []delivery.Fact{{Kind: delivery.KindDisputeLost, BusinessID: "dsp_2", Amount: 600, Currency: usd}}},
		{"payout.paid.json", "", time.Date(2026, 12, 1, 6, 0, 0, 0, time.UTC), []delivery.Fact{{Kind: delivery.KindPayoutPaid, BusinessID: "po_1", Amount: 570, Currency: usd}}},
		{"customer.updated.json", "", time.Date(2026, 11, 29, 10, 0, 0, 0, time.UTC), nil},
	}
	a := newAdapter(t)
	for _, tc := range cases {
		t.Run(tc.file, func(t *testing.T) {
			body := providertest.Fixture(t, tc.file)
			var hdr struct{ Type string }
			require.NoError(t, json.Unmarshal(body, &hdr))
			id := "msg_" + strings.TrimSuffix(tc.file, ".json")
			ev := providertest.ParseOne(t, a, signed(t, body, secret, id, now))
			providertest.CheckEvent(t, tc.file, ev, providertest.Want{
				Provider: "standard", DedupKey: id, Type: hdr.Type, PaymentKey: tc.paymentKey, OccurredAt: tc.occurred, Raw: body, Facts: tc.facts,
			})
		})
	}
}

// The same capture under two webhook-ids: two dedup keys, one business id
// and one stream, so the domain records it once.
func TestSameFactUnderTwoWebhookIDs(t *testing.T) {
	a := newAdapter(t)
	body := providertest.Fixture(t, "payment.captured.json")
	e1 := providertest.ParseOne(t, a, signed(t, body, secret, "msg_1", now))
	e2 := providertest.ParseOne(t, a, signed(t, body, secret, "msg_2", now))
	assert.NotEqual(t, e1.DedupKey, e2.DedupKey, "dedup keys")
	assert.Equal(t, e1.Facts[0], e2.Facts[0], "facts")
	assert.Equal(t, e1.StreamID(), e2.StreamID(), "streams")
	assert.Equal(t, "payment-standard-pay_123", e1.StreamID(), "StreamID")
	po := providertest.ParseOne(t, a, signed(t, providertest.Fixture(t, "payout.paid.json"), secret, "msg_3", now))
	assert.Equal(t, "payout-standard-po_1", po.StreamID(), "payout StreamID")
}

func TestBadInput(t *testing.T) {
	captured := func(data string) []byte {
		return []byte(`{"type":"payment.captured","timestamp":"2026-11-29T10:00:00Z","data":` + data + `}`)
	}
	cases := []struct {
		name  string
		body  string
		want  error
		field string
	}{
		{"invalid JSON", `{"type":`, delivery.ErrMalformed, "invalid JSON"},
		{"not an object", `"payment.captured"`, delivery.ErrMalformed, "not a JSON object"},
		{"trailing data", `{"type":"x","timestamp":"2026-11-29T10:00:00Z"} {}`, delivery.ErrMalformed, "invalid JSON"},
		{"missing type", `{"timestamp":"2026-11-29T10:00:00Z","data":{}}`, delivery.ErrMissingField, "type"},
		{"type not a string", `{"type":7,"timestamp":"2026-11-29T10:00:00Z"}`, delivery.ErrMalformed, "type must be a string"},
		{"missing timestamp", `{"type":"payment.captured","data":{}}`, delivery.ErrMissingField, "timestamp"},
		{"timestamp not RFC 3339", `{"type":"payment.captured","timestamp":"29/11/2026","data":{}}`, delivery.ErrMalformed, "timestamp"},
		{"missing data", `{"type":"payment.captured","timestamp":"2026-11-29T10:00:00Z"}`, delivery.ErrMissingField, "data"},
		{"data not an object", `{"type":"payment.captured","timestamp":"2026-11-29T10:00:00Z","data":[]}`, delivery.ErrMalformed, "data must be an object"},
		{"missing payment_id", string(captured(`{"capture_id":"cap_1","amount":1000,"currency":"USD"}`)), delivery.ErrMissingField, "data.payment_id"},
		{"empty payment_id", string(captured(`{"payment_id":"","capture_id":"cap_1","amount":1000,"currency":"USD"}`)), delivery.ErrMissingField, "data.payment_id"},
		{"missing capture_id", string(captured(`{"payment_id":"pay_1","amount":1000,"currency":"USD"}`)), delivery.ErrMissingField, "data.capture_id"},
		{"missing amount", string(captured(`{"payment_id":"pay_1","capture_id":"cap_1","currency":"USD"}`)), delivery.ErrMissingField, "data.amount"},
		{"fractional amount", string(captured(`{"payment_id":"pay_1","capture_id":"cap_1","amount":10.5,"currency":"USD"}`)), delivery.ErrInvalidAmount, "data.amount"},
		{"amount 10.0", string(captured(`{"payment_id":"pay_1","capture_id":"cap_1","amount":10.0,"currency":"USD"}`)), delivery.ErrInvalidAmount, "data.amount"},
		{"exponent amount", string(captured(`{"payment_id":"pay_1","capture_id":"cap_1","amount":1e3,"currency":"USD"}`)), delivery.ErrInvalidAmount, "data.amount"},
		{"quoted amount", string(captured(`{"payment_id":"pay_1","capture_id":"cap_1","amount":"1000","currency":"USD"}`)), delivery.ErrInvalidAmount, "data.amount"},
		{"negative amount", string(captured(`{"payment_id":"pay_1","capture_id":"cap_1","amount":-1000,"currency":"USD"}`)), delivery.ErrInvalidAmount, "data.amount"},
		{"overflowing amount", string(captured(`{"payment_id":"pay_1","capture_id":"cap_1","amount":9223372036854775808,"currency":"USD"}`)), delivery.ErrInvalidAmount, "overflows"},
		{"negative fee", string(captured(`{"payment_id":"pay_1","capture_id":"cap_1","amount":1000,"currency":"USD","fee":-1}`)), delivery.ErrInvalidAmount, "data.fee"},
		{"fractional fee", string(captured(`{"payment_id":"pay_1","capture_id":"cap_1","amount":1000,"currency":"USD","fee":0.3}`)), delivery.ErrInvalidAmount, "data.fee"},
		{"fee above amount", string(captured(`{"payment_id":"pay_1","capture_id":"cap_1","amount":1000,"currency":"USD","fee":1001}`)), delivery.ErrInvalidAmount, "fee"},
		{"unknown currency", string(captured(`{"payment_id":"pay_1","capture_id":"cap_1","amount":1000,"currency":"XXQ"}`)), money.ErrUnknownCurrency, "data.currency"},
		{"missing currency", string(captured(`{"payment_id":"pay_1","capture_id":"cap_1","amount":1000}`)), delivery.ErrMissingField, "data.currency"},
		{"failed with bad currency", `{"type":"payment.failed","timestamp":"2026-11-29T10:00:00Z","data":{"payment_id":"pay_1","currency":"usdd"}}`, money.ErrUnknownCurrency, "data.currency"},
		{"refund without refund_id", `{"type":"refund.succeeded","timestamp":"2026-11-29T10:00:00Z","data":{"payment_id":"pay_1","amount":1,"currency":"USD"}}`, delivery.ErrMissingField, "data.refund_id"},
		{"dispute without dispute_id", `{"type":"dispute.lost","timestamp":"2026-11-29T10:00:00Z","data":{"payment_id":"pay_1","amount":1,"currency":"USD"}}`, delivery.ErrMissingField, "data.dispute_id"},
		{"payout without payout_id", `{"type":"payout.paid","timestamp":"2026-11-29T10:00:00Z","data":{"amount":1,"currency":"USD"}}`, delivery.ErrMissingField, "data.payout_id"},
		{"authorized without payment_id", `{"type":"payment.authorized","timestamp":"2026-11-29T10:00:00Z","data":{"amount":1,"currency":"USD"}}`, delivery.ErrMissingField, "data.payment_id"},
		// A key named twice in one object, at any depth: the audit's
		// "amount":1,"amount":2 was recorded as 2.
		{"amount twice", string(captured(`{"payment_id":"pay_1","capture_id":"cap_1","amount":1,"amount":2,"currency":"USD"}`)), payload.ErrDuplicateKey, "data.amount"},
		{"amount twice, escaped", string(captured(`{"payment_id":"pay_1","capture_id":"cap_1","amount":1,"\u0061mount":2,"currency":"USD"}`)), payload.ErrDuplicateKey, "data.amount"},
		{"type twice", `{"type":"payment.failed","type":"payment.captured","timestamp":"2026-11-29T10:00:00Z","data":{}}`, payload.ErrDuplicateKey, "type"},
		{"data twice", `{"type":"payment.captured","timestamp":"2026-11-29T10:00:00Z","data":{},"data":{}}`, payload.ErrDuplicateKey, "data"},
		{"deep in an unread list", string(captured(`{"payment_id":"pay_1","capture_id":"cap_1","amount":1,"currency":"USD","lines":[{"sku":"a"},{"sku":"a","sku":"b"}]}`)), payload.ErrDuplicateKey, "data.lines[1].sku"},
		{"ignored type", `{"type":"customer.updated","timestamp":"2026-11-29T10:00:00Z","data":{"x":{"y":1,"y":2}}}`, payload.ErrDuplicateKey, "data.x.y"},
	}
	a := newAdapter(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			evs, err := a.Parse(signed(t, []byte(tc.body), secret, msgID, now))
			providertest.CheckFieldError(t, tc.name, evs, err, tc.want, tc.field)
		})
	}
}
