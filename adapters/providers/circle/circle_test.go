package circle

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"net/http"
	"strings"
	"sync"
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

// Circle's published example ("How-to: Verify webhook signatures" /
// Wallets webhook notifications docs, developers.circle.com): the key Circle
// returns for key id 879dc113-..., and its signature over the documented
// webhooks.test notification (testdata/official_webhooks_test.json, byte for
// byte). The signature was checked against that key independently of this
// package.
const (
	officialKeyID = "879dc113-5ca4-4ff7-a6b7-54652083fcf8"
	officialKey   = "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAESl76SZPBJemW0mJNN4KTvYkLT8bOT4UGhFhzNk3fJqf6iuPlLQLq533FelXwczJbjg2U1PHTvQTK7qOQnDL2Tg=="
	officialSig   = "MEQCIBlJPX7t0FDOcozsRK6qIQwik5Fq6mhAtCSSgIB/yQO7AiB9U5lVpdufKvPhk3cz4TH2f5MP7ArnmPRBmhPztpsIFQ=="
	testKeyID     = "0f6a3a4e-8f1b-4c5d-9e2f-3a4b5c6d7e8f"
)

var (
	keyOnce sync.Once
	testKey *ecdsa.PrivateKey
	rogue   *ecdsa.PrivateKey
)

func keys(t testing.TB) (*ecdsa.PrivateKey, *ecdsa.PrivateKey) {
	keyOnce.Do(func() {
		var err error
		testKey, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		require.NoError(t, err)
		rogue, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		require.NoError(t, err)
	})
	return testKey, rogue
}

func spki(t testing.TB, k *ecdsa.PrivateKey) string {
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	require.NoError(t, err)
	return base64.StdEncoding.EncodeToString(der)
}

func sign(t testing.TB, k *ecdsa.PrivateKey, body []byte) string {
	d := sha256.Sum256(body)
	sig, err := ecdsa.SignASN1(rand.Reader, k, d[:])
	require.NoError(t, err)
	return base64.StdEncoding.EncodeToString(sig)
}

func adapter(t testing.TB) *Adapter {
	k, _ := keys(t)
	return providertest.Adapter(t, New, map[string]string{testKeyID: spki(t, k), officialKeyID: officialKey})
}

func req(keyID, sig string, body []byte) providers.Request {
	h := http.Header{}
	if keyID != "" {
		h.Set("X-Circle-Key-Id", keyID)
	}
	if sig != "" {
		h.Set("X-Circle-Signature", sig)
	}
	return providers.Request{Header: h, Body: body, Now: time.Now()}
}

func TestOfficialVector(t *testing.T) {
	body := providertest.Fixture(t, "official_webhooks_test.json")
	evs, err := adapter(t).Parse(req(officialKeyID, officialSig, body))
	require.NoError(t, err, "Circle's documented notification refused")
	ev := evs[0]
	require.Truef(t, ev.Ignored(), "got %+v", ev)
	require.Equal(t, "00000000-0000-0000-0000-000000000000", ev.DedupKey)
	require.Equal(t, "webhooks.test", ev.Type)
	require.Truef(t, ev.OccurredAt.Equal(time.Date(2024, 1, 26, 18, 22, 19, 779834211, time.UTC)), "OccurredAt %v", ev.OccurredAt)
	// One byte changed, or the documented signature under another key id.
	changed := []byte(strings.Replace(string(body), "world", "World", 1))
	_, err = adapter(t).Parse(req(officialKeyID, officialSig, changed))
	require.ErrorIs(t, err, providers.ErrUnauthorized, "changed body")
	_, err = adapter(t).Parse(req(testKeyID, officialSig, body))
	require.ErrorIs(t, err, providers.ErrUnauthorized, "other key")
}

func TestParseSamples(t *testing.T) {
	k, _ := keys(t)
	a := adapter(t)
	const pay = "b8627ae8-732b-4d25-b947-1df8f4007a29"
	cases := []struct {
		file, dedup, key string
		facts            []delivery.Fact
	}{
		{"payment_confirmed.json", "5f1e9f0a-3e7b-4c0e-9d2b-1a8c7e6f5d40", pay,
			[]delivery.Fact{{Kind: delivery.KindAuthorized, Amount: 1000, Currency: "USD"}}},
		{"payment_paid.json", "7c2d8e1f-4a5b-4c6d-8e9f-0a1b2c3d4e5f", pay,
			[]delivery.Fact{{Kind: delivery.KindCaptured, BusinessID: pay, Amount: 1000, Fee: 59, Currency: "USD"}}},
		{"payment_failed.json", "9e8d7c6b-5a4f-4e3d-2c1b-0a9f8e7d6c5b", "d1c4a3b2-0f9e-4d8c-b7a6-5e4f3a2b1c0d",
			[]delivery.Fact{{Kind: delivery.KindFailed, Amount: 1000, Currency: "USD", Reason: "card_not_honored"}}},
		{"refund_paid.json", "3a4b5c6d-7e8f-4a0b-9c1d-2e3f4a5b6c7d", pay,
			[]delivery.Fact{{Kind: delivery.KindRefunded, BusinessID: "2cdc2e29-0c3a-4b51-8f1f-5d9a4e6c7b80", Amount: 250, Currency: "USD"}}},
		{"chargeback_first.json", "6b7c8d9e-0f1a-4b2c-8d3e-4f5a6b7c8d9e", pay,
			[]delivery.Fact{{Kind: delivery.KindDisputeOpened, BusinessID: "72b6e8b3-6d43-4f3e-8d9f-3c7e2b1a0f99", Amount: 1000, Currency: "USD", Reason: "Fraud"}}},
		{"chargeback_reversal.json", "8d9e0f1a-2b3c-4d4e-9f5a-6b7c8d9e0f1a", pay,
			[]delivery.Fact{{Kind: delivery.KindDisputeWon, BusinessID: "72b6e8b3-6d43-4f3e-8d9f-3c7e2b1a0f99", Amount: 1000, Currency: "USD", Reason: "Fraud"}}},
		{"payout_complete.json", "1f2e3d4c-5b6a-4798-8a7b-6c5d4e3f2a1b", "",
			[]delivery.Fact{{Kind: delivery.KindPayoutPaid, BusinessID: "b8627ae8-732b-4d25-b947-1df8f4007a30", Amount: 100000, Currency: "USD"}}},
		{"transactions_inbound.json", "2a3b4c5d-6e7f-4809-9a1b-2c3d4e5f6a7b", "", nil},
	}
	for _, c := range cases {
		body := providertest.Fixture(t, c.file)
		evs, err := a.Parse(req(testKeyID, sign(t, k, body), body))
		if !assert.NoError(t, err, c.file) {
			continue
		}
		providertest.CheckEvent(t, c.file, evs[0], providertest.Want{Provider: "circle", DedupKey: c.dedup, PaymentKey: c.key, Raw: body, Facts: c.facts})
	}
	body := providertest.Fixture(t, "payout_complete.json")
	evs, _ := a.Parse(req(testKeyID, sign(t, k, body), body))
	assert.Equal(t, "payout-circle-b8627ae8-732b-4d25-b947-1df8f4007a30", evs[0].StreamID(), "payout stream")
}

func TestVerification(t *testing.T) {
	k, r := keys(t)
	a := adapter(t)
	body := providertest.Fixture(t, "payment_paid.json")
	good := sign(t, k, body)
	tampered := []byte(strings.Replace(string(body), `"0.59"`, `"0.05"`, 1))
	for name, rq := range map[string]providers.Request{
		"tampered body":  req(testKeyID, good, tampered),
		"rogue key":      req(testKeyID, sign(t, r, body), body),
		"unknown key id": req("not-configured", good, body),
		"no key id":      req("", good, body),
		"no signature":   req(testKeyID, "", body),
		"not base64":     req(testKeyID, "@@@", body),
		"not DER":        req(testKeyID, base64.StdEncoding.EncodeToString([]byte("garbage")), body),
		"nil header":     {Body: body},
	} {
		evs, err := a.Parse(rq)
		providertest.CheckUnauthorized(t, name, evs, err)
	}
}

func TestNormalizationErrors(t *testing.T) {
	k, _ := keys(t)
	a := adapter(t)
	edit := func(file, old, new string) []byte { return providertest.Edit(t, file, old, new) }
	cases := []struct {
		name   string
		body   []byte
		target error
		field  string
	}{
		{"excess decimals", edit("payment_paid.json", `"amount": "10.00"`, `"amount": "10.005"`), delivery.ErrInvalidAmount, "notification.amount.amount"},
		{"number not string", edit("payment_paid.json", `"amount": "10.00"`, `"amount": 10.00`), delivery.ErrMalformed, "notification"},
		{"crypto currency", edit("payment_paid.json", `"currency": "USD"`, `"currency": "USDC"`), money.ErrUnknownCurrency, "notification.amount.currency"},
		{"fee over amount", edit("payment_paid.json", `"amount": "0.59"`, `"amount": "11.00"`), delivery.ErrInvalidAmount, "fee"},
		{"refund without original", edit("refund_paid.json", `"originalPayment": {`, `"original": {`), delivery.ErrMissingField, "notification.originalPayment.id"},
		{"chargeback without history", edit("chargeback_first.json", `"history": [`, `"historyX": [`), delivery.ErrMissingField, "notification.history"},
		{"missing notificationId", edit("payment_paid.json", `"notificationId": "7c2d8e1f-4a5b-4c6d-8e9f-0a1b2c3d4e5f",`, ``), delivery.ErrMissingField, "notificationId"},
		{"bad timestamp", edit("payment_paid.json", `"timestamp": "2026-11-29T10:30:00.456Z"`, `"timestamp": "soon"`), delivery.ErrMalformed, "timestamp"},
		{"no notification", edit("payment_paid.json", `"notification": {`, `"notificationX": {`), delivery.ErrMissingField, "notification"},
		{"duplicate key", edit("payment_paid.json", `"amount": "10.00"`, `"amount": "1.00", "amount": "10.00"`), payload.ErrDuplicateKey, "notification.amount.amount"},
		{"duplicate key in another case", edit("payment_paid.json", `"notificationId": "`, `"NotificationID": "x", "notificationId": "`), payload.ErrDuplicateKey, "notificationId"},
	}
	for _, c := range cases {
		evs, err := a.Parse(req(testKeyID, sign(t, k, c.body), c.body))
		providertest.CheckFieldError(t, c.name, evs, err, c.target, c.field)
	}
}

func TestNew(t *testing.T) {
	_, err := New(nil)
	assert.Error(t, err, "no keys accepted")
	_, err = New(map[string]string{"k": "%%"})
	assert.Error(t, err, "non-base64 key accepted")
	_, err = New(map[string]string{"k": base64.StdEncoding.EncodeToString([]byte("junk"))})
	assert.Error(t, err, "non-SPKI key accepted")
	p384, _ := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	_, err = New(map[string]string{"k": spki(t, p384)})
	assert.Error(t, err, "P-384 key accepted")
	a, err := New(map[string]string{officialKeyID: officialKey})
	require.NoError(t, err)
	require.Equal(t, "circle", a.Name())
}

func FuzzCircleParse(f *testing.F) {
	for _, name := range []string{"payment_paid.json", "refund_paid.json", "chargeback_reversal.json", "payout_complete.json", "official_webhooks_test.json"} {
		f.Add(providertest.Fixture(f, name), uint16(11))
	}
	k, r := keys(f)
	a := adapter(f)
	f.Fuzz(func(t *testing.T, body []byte, flip uint16) {
		sig := sign(t, k, body)
		evs, err := a.Parse(req(testKeyID, sig, body))
		require.NotErrorIs(t, err, providers.ErrUnauthorized, "signed body refused")
		if err == nil {
			require.Lenf(t, evs, 1, "invalid event accepted: %+v", evs)
			require.NoErrorf(t, evs[0].Validate(), "invalid event accepted: %+v", evs)
		}
		_, err = a.Parse(req(testKeyID, sig, providertest.Tampered(body, int(flip), 0x04)))
		require.ErrorIs(t, err, providers.ErrUnauthorized, "tampered body accepted")
		_, err = a.Parse(req(testKeyID, sign(t, r, body), body))
		require.ErrorIs(t, err, providers.ErrUnauthorized, "rogue signature accepted")
		_, err = a.Parse(req("", "", body))
		require.ErrorIs(t, err, providers.ErrUnauthorized, "unsigned accepted")
	})
}
