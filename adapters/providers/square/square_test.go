package square

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/internal/providertest"
	"github.com/onceledger/onceledger/adapters/providers/payload"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/money"
)

const (
	testKey = "w7Xq9v1c3pLm0ZbN5tRy2A"
	testURL = "https://ledger.example.com/webhooks/square"
)

func mustNew(t testing.TB, keys []string, url string) *Adapter {
	t.Helper()
	return providertest.Adapter(t, func(keys []string) (*Adapter, error) { return New(keys, url) }, keys)
}

func req(sig string, body []byte) providers.Request {
	h := http.Header{}
	if sig != "" {
		h.Set("x-square-hmacsha256-signature", sig)
	}
	return providers.Request{Header: h, Body: body, Now: time.Now()}
}

// The vectors of Square's own SDK tests (square/square-java-sdk,
// src/test/java/com/squareup/square/utilities/WebhooksHelperTest.java),
// generated there with a real test notification from the Developer Portal.
func TestOfficialVectors(t *testing.T) {
	const (
		sig = "GF4YkrJgGBDZ9NIYbNXBnMzqb2HoL4RW/S6vkZ9/2N4="
		key = "Ibxx_5AKakO-3qeNVR61Dw"
		url = "https://webhook.site/679a4f3a-dcfa-49ee-bac5-9d0edad886b9"
	)
	body := providertest.Fixture(t, "official_test_notification.json")
	evs, err := mustNew(t, []string{key}, url).Parse(req(sig, body))
	require.NoError(t, err, "official test notification refused")
	require.Lenf(t, evs, 1, "got %+v", evs)
	require.Truef(t, evs[0].Ignored(), "got %+v", evs)
	require.Equal(t, "ac3ac95b-f97d-458c-a6e6-18981597e05f", evs[0].DedupKey)
	require.Equal(t, "webhooks.test_notification", evs[0].Type)
	assert.Truef(t, evs[0].OccurredAt.Equal(time.Date(2022, 7, 13, 20, 30, 59, 37339943, time.UTC)), "OccurredAt %v", evs[0].OccurredAt)
	// The SDK's negative cases: another URL, another key, another signature,
	// another body (one digit of the date), the same JSON re-formatted.
	bad := []struct {
		name      string
		key, url  string
		sig, body string
	}{
		{"url mismatch", key, "https://webhook.site/79a4f3a-dcfa-49ee-bac5-9d0edad886b9", sig, string(body)},
		{"other key", "MCmhFRxGX82xMwg5FsaoQA", url, sig, string(body)},
		{"other signature", key, url, "1z2n3DEJJiUPKcPzQo1ftvbxGdw=", string(body)},
		{"body changed", key, url, sig, strings.Replace(string(body), "2022-07-13", "2022-06-13", 1)},
		{"body re-formatted", key, url, sig, strings.ReplaceAll(string(body), ",", ", ")},
	}
	for _, c := range bad {
		_, err := mustNew(t, []string{c.key}, c.url).Parse(req(c.sig, []byte(c.body)))
		assert.ErrorIs(t, err, providers.ErrUnauthorized, c.name)
	}
	// The SDK's escaping vector: the signature is over the bytes, '<' and '>'
	// untouched. It verifies; the body then lacks an event id (400, not 401).
	esc := []byte(`{"data":{"type":"webhooks","id":">id<"}}`)
	_, err = mustNew(t, []string{"signature-key"}, "https://webhook.site/webhooks").
		Parse(req("Cxt7+aTi4rKgcA0bC4g9EHdVtLSDWdqccmL5MvihU4U=", esc))
	require.ErrorIs(t, err, delivery.ErrMissingField, "escaping vector: want verified then ErrMissingField")
}

func TestParseSamples(t *testing.T) {
	a := mustNew(t, []string{testKey}, testURL)
	const pay = "KkAkhdMsgzn59SM8A89WgKwekxLZY"
	const ref = "KkAkhdMsgzn59SM8A89WgKwekxLZY_ptr5VvdsEK8yRaTwTVQxJ5IcqkTk4jZ7kX9A3ryqXUO"
	cases := []struct {
		file, dedup, key string
		facts            []delivery.Fact
	}{
		{"payment_created_approved.json", "13b867cf-db3d-4b1c-90b6-2f32a9d78124", pay,
			[]delivery.Fact{{Kind: delivery.KindAuthorized, Amount: 1000, Currency: "USD"}}},
		{"payment_updated_completed.json", "6a8f5f28-54a1-4eb0-a98a-3111513fd4fc", pay,
			[]delivery.Fact{{Kind: delivery.KindCaptured, BusinessID: pay, Amount: 1200, Fee: 65, Currency: "USD"}}},
		{"payment_updated_failed.json", "d5f2c0b4-44d4-4d2b-9a07-2b7f4a5de9d1", pay,
			[]delivery.Fact{{Kind: delivery.KindFailed, Amount: 1000, Currency: "USD"}}},
		{"payment_updated_canceled.json", "0c2a7f61-9f6b-4f52-8d3e-7a1c4b9e2f10", pay,
			[]delivery.Fact{{Kind: delivery.KindCanceled}}},
		{"refund_created_pending.json", "d9b6f1a0-5bd8-4f3e-bb0a-5f0d12b3c1e2", pay, nil},
		{"refund_updated_completed.json", "7e4c8d2a-1b3f-4a5e-9c6d-8f0a1b2c3d4e", pay,
			[]delivery.Fact{{Kind: delivery.KindRefunded, BusinessID: ref, Amount: 300, Currency: "USD"}}},
		{"refund_updated_rejected.json", "a1f0e2d3-c4b5-4a69-8877-665544332211", pay,
			[]delivery.Fact{{Kind: delivery.KindRefundFailed, BusinessID: ref, Amount: 300, Currency: "USD", Reason: "REJECTED"}}},
		{"dispute_created.json", "b4d8c9e1-7f2a-4c3b-a5d6-e7f8091a2b3c", pay,
			[]delivery.Fact{{Kind: delivery.KindDisputeOpened, BusinessID: "XDgyFu7yo1E2S5lQGGpYn", Amount: 1200, Currency: "USD", Reason: "NOT_AS_DESCRIBED"}}},
		{"dispute_state_updated_won.json", "c0ffee00-1234-4cde-8f00-abcdefabcdef", pay,
			[]delivery.Fact{{Kind: delivery.KindDisputeWon, BusinessID: "XDgyFu7yo1E2S5lQGGpYn", Amount: 1200, Currency: "USD", Reason: "NOT_AS_DESCRIBED"}}},
	}
	for _, c := range cases {
		body := providertest.Fixture(t, c.file)
		evs, err := a.Parse(req(Sign(testKey, testURL, body), body))
		if !assert.NoError(t, err, c.file) {
			continue
		}
		providertest.CheckEvent(t, c.file, evs[0], providertest.Want{Provider: "square", DedupKey: c.dedup, PaymentKey: c.key, Raw: body, Facts: c.facts})
	}
}

func TestVerification(t *testing.T) {
	body := providertest.Fixture(t, "payment_updated_completed.json")
	good := Sign(testKey, testURL, body)
	// Rotation: the second key verifies.
	_, err := mustNew(t, []string{"old-key", testKey}, testURL).Parse(req(good, body))
	require.NoError(t, err, "rotation")
	// With no configured URL, the request's URL is what was signed.
	r := req(good, body)
	r.URL = testURL
	_, err = mustNew(t, []string{testKey}, "").Parse(r)
	require.NoError(t, err, "request URL")
	a := mustNew(t, []string{testKey}, testURL)
	tampered := []byte(strings.Replace(string(body), `"amount": 1200`, `"amount": 9200`, 1))
	for name, rq := range map[string]providers.Request{
		"tampered body":    req(good, tampered),
		"no signature":     req("", body),
		"not base64":       req("***", body),
		"other key":        req(Sign("other", testURL, body), body),
		"other url":        req(Sign(testKey, testURL+"/", body), body),
		"sha1 legacy only": {Header: http.Header{"X-Square-Signature": {good}}, Body: body},
		"nil header":       {Body: body},
	} {
		evs, err := a.Parse(rq)
		providertest.CheckUnauthorized(t, name, evs, err)
	}
	_, err = mustNew(t, []string{testKey}, "").Parse(req(good, body))
	assert.ErrorIs(t, err, providers.ErrUnauthorized, "no URL anywhere")
}

func TestNormalizationErrors(t *testing.T) {
	a := mustNew(t, []string{testKey}, testURL)
	edit := func(file, old, new string) []byte { return providertest.Edit(t, file, old, new) }
	cases := []struct {
		name   string
		body   []byte
		target error
		field  string
	}{
		{"negative amount", edit("payment_updated_completed.json", `"total_money": {"amount": 1200`, `"total_money": {"amount": -1200`), delivery.ErrInvalidAmount, "total_money.amount"},
		{"unknown currency", edit("payment_updated_completed.json", `"total_money": {"amount": 1200, "currency": "USD"}`, `"total_money": {"amount": 1200, "currency": "QQQ"}`), money.ErrUnknownCurrency, "total_money.currency"},
		{"fee currency", edit("payment_updated_completed.json", `"amount_money": {"amount": 65, "currency": "USD"}`, `"amount_money": {"amount": 65, "currency": "EUR"}`), delivery.ErrInvalidAmount, "processing_fee[0]"},
		{"fractional amount", edit("payment_updated_completed.json", `"total_money": {"amount": 1200`, `"total_money": {"amount": 12.5`), delivery.ErrMalformed, "data.object.payment"},
		{"missing payment", edit("payment_updated_completed.json", `"payment": {`, `"paymentX": {`), delivery.ErrMissingField, "data.object.payment"},
		{"refund without payment_id", edit("refund_updated_completed.json", `"payment_id": "KkAkhdMsgzn59SM8A89WgKwekxLZY",`, ``), delivery.ErrMissingField, "payment_id"},
		{"missing event_id", edit("payment_updated_completed.json", `"event_id": "6a8f5f28-54a1-4eb0-a98a-3111513fd4fc",`, ``), delivery.ErrMissingField, "event_id"},
		{"bad created_at", edit("payment_updated_completed.json", `"created_at": "2026-11-29T10:01:02.615Z"`, `"created_at": "later"`), delivery.ErrMalformed, "created_at"},
		{"not json", []byte(`{"event_id":`), delivery.ErrMalformed, "body"},
		{"duplicate key", edit("payment_updated_completed.json", `"total_money": {"amount": 1200`, `"total_money": {"amount": 1, "amount": 1200`), payload.ErrDuplicateKey, "data.object.payment.total_money.amount"},
	}
	for _, c := range cases {
		evs, err := a.Parse(req(Sign(testKey, testURL, c.body), c.body))
		providertest.CheckFieldError(t, c.name, evs, err, c.target, c.field)
	}
}

func TestNew(t *testing.T) {
	_, err := New(nil, testURL)
	assert.Error(t, err, "no keys accepted")
	_, err = New([]string{" "}, testURL)
	assert.Error(t, err, "blank key accepted")
	a, err := New([]string{testKey}, testURL)
	require.NoError(t, err)
	require.Equal(t, "square", a.Name())
}

func FuzzSquareParse(f *testing.F) {
	for _, name := range []string{"payment_updated_completed.json", "refund_updated_completed.json", "dispute_created.json", "official_test_notification.json"} {
		f.Add(providertest.Fixture(f, name), uint16(7))
	}
	a := mustNew(f, []string{testKey}, testURL)
	f.Fuzz(func(t *testing.T, body []byte, flip uint16) {
		sig := Sign(testKey, testURL, body)
		evs, err := a.Parse(req(sig, body))
		require.NotErrorIs(t, err, providers.ErrUnauthorized, "signed body refused")
		if err == nil {
			require.Lenf(t, evs, 1, "invalid event accepted: %+v", evs)
			require.NoErrorf(t, evs[0].Validate(), "invalid event accepted: %+v", evs)
		}
		_, err = a.Parse(req(sig, providertest.Tampered(body, int(flip), 0x20)))
		require.ErrorIs(t, err, providers.ErrUnauthorized, "tampered body accepted")
		_, err = a.Parse(req(Sign("not-the-key", testURL, body), body))
		require.ErrorIs(t, err, providers.ErrUnauthorized, "wrong key accepted")
		_, err = a.Parse(req("", body))
		require.ErrorIs(t, err, providers.ErrUnauthorized, "unsigned accepted")
	})
}
