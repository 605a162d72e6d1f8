package paypal

import (
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
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

const webhookID = "1JE4291016473214C"

var now = time.Date(2026, 11, 29, 10, 0, 10, 0, time.UTC)

type signer struct {
	key     *rsa.PrivateKey
	certPEM []byte
}

var (
	signersOnce sync.Once
	signers     [3]signer // 0: PayPal's current cert, 1: next (rotation), 2: untrusted
)

func newSigner(t testing.TB, cn string, notBefore, notAfter time.Time) signer {
	t.Helper()
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: cn, Organization: []string{"PayPal, Inc."}},
		NotBefore:    notBefore,
		NotAfter:     notAfter,
		KeyUsage:     x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	require.NoError(t, err)
	return signer{key: key, certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

func testSigners(t testing.TB) [3]signer {
	signersOnce.Do(func() {
		from, to := now.AddDate(-1, 0, 0), now.AddDate(1, 0, 0)
		signers[0] = newSigner(t, "messageverificationcerts.paypal.com", from, to)
		signers[1] = newSigner(t, "messageverificationcerts.paypal.com", from, to)
		signers[2] = newSigner(t, "attacker.example", from, to)
	})
	return signers
}

func adapter(t testing.TB, certs ...[]byte) *Adapter {
	t.Helper()
	return providertest.Adapter(t, func(certs [][]byte) (*Adapter, error) { return New(webhookID, certs, 5*time.Minute) }, certs)
}

func signed(t testing.TB, s signer, body []byte, at time.Time) http.Header {
	t.Helper()
	h, err := SignHeaders(s.key, webhookID, "0d3bc7b0-cd35-11f0-9d6e-2b6a4c8a1f3e", at, body)
	require.NoError(t, err)
	return h
}

func TestParseSamples(t *testing.T) {
	s := testSigners(t)
	a := adapter(t, s[0].certPEM)
	cases := []struct {
		file, dedup, typ, key string
		facts                 []delivery.Fact
	}{
		{"capture_completed.json", "WH-2WR32451HC0233532-67976317FL4543714", "PAYMENT.CAPTURE.COMPLETED", "42311647XV020574X",
			[]delivery.Fact{{Kind: delivery.KindCaptured, BusinessID: "42311647XV020574X", Amount: 1000, Fee: 79, Currency: "USD"}}},
		{"capture_denied.json", "WH-4SW78779LY2325805-07E03580SX1414828", "PAYMENT.CAPTURE.DENIED", "7NW873794T343360M",
			[]delivery.Fact{{Kind: delivery.KindFailed, Amount: 251, Currency: "AUD", Reason: "BUYER_COMPLAINT"}}},
		{"capture_refunded.json", "WH-1GE84257G0350133W-6RW800890C634293G", "PAYMENT.CAPTURE.REFUNDED", "42311647XV020574X",
			[]delivery.Fact{{Kind: delivery.KindRefunded, BusinessID: "1Y107995YT783435V", Amount: 250, Currency: "USD"}}},
		{"capture_reversed.json", "WH-6F207351SC284371F-0KX52201050121307", "PAYMENT.CAPTURE.REVERSED", "42311647XV020574X", nil},
		{"dispute_created.json", "WH-4M0448861G563140B-9EX36365822141321", "CUSTOMER.DISPUTE.CREATED", "42311647XV020574X",
			[]delivery.Fact{{Kind: delivery.KindDisputeOpened, BusinessID: "reversal-42311647XV020574X", LegacyID: "PP-D-27803", Amount: 1000, Currency: "USD", Reason: "MERCHANDISE_OR_SERVICE_NOT_RECEIVED"}}},
		{"dispute_resolved_buyer.json", "WH-7RY33312CM887224F-2JH03487VM7001928", "CUSTOMER.DISPUTE.RESOLVED", "42311647XV020574X",
			[]delivery.Fact{{Kind: delivery.KindDisputeLost, BusinessID: "reversal-42311647XV020574X", LegacyID: "PP-D-27803", Amount: 1000, Currency: "USD", Reason: "MERCHANDISE_OR_SERVICE_NOT_RECEIVED"}}},
		{"dispute_resolved_seller.json", "WH-0Y1427016C839054U-6D245713ST532084V", "CUSTOMER.DISPUTE.RESOLVED", "42311647XV020574X",
			[]delivery.Fact{{Kind: delivery.KindDisputeWon, BusinessID: "reversal-42311647XV020574X", LegacyID: "PP-D-27803", Amount: 1000, Currency: "USD", Reason: "MERCHANDISE_OR_SERVICE_NOT_RECEIVED"}}},
		{"checkout_order_approved.json", "WH-COC11055RA711503B-4YM959094A144403T", "CHECKOUT.ORDER.APPROVED", "", nil},
	}
	for _, c := range cases {
		body := providertest.Fixture(t, c.file)
		evs, err := a.Parse(providers.Request{Header: signed(t, s[0], body, now), Body: body, Now: now})
		if !assert.NoError(t, err, c.file) {
			continue
		}
		require.Len(t, evs, 1, c.file)
		providertest.CheckEvent(t, c.file, evs[0], providertest.Want{Provider: "paypal", DedupKey: c.dedup, Type: c.typ, PaymentKey: c.key, Raw: body, Facts: c.facts})
	}
}

// All facts of one payment land on one stream: the capture, its refund and
// its dispute.
func TestOneStreamPerCapture(t *testing.T) {
	s := testSigners(t)
	a := adapter(t, s[0].certPEM)
	streams := map[string]bool{}
	for _, f := range []string{"capture_completed.json", "capture_refunded.json", "dispute_created.json", "dispute_resolved_buyer.json"} {
		body := providertest.Fixture(t, f)
		evs, err := a.Parse(providers.Request{Header: signed(t, s[0], body, now), Body: body, Now: now})
		require.NoError(t, err, f)
		streams[evs[0].StreamID()] = true
	}
	require.Equal(t, map[string]bool{"payment-paypal-42311647XV020574X": true}, streams)
}

func TestSignedStringUsesUnsignedDecimalCRC32(t *testing.T) {
	// CRC-32/IEEE("123456789") = 0xCBF43926, the standard check value.
	got := signedString("id", "2026-11-29T10:00:00Z", "WH", []byte("123456789"))
	require.Equal(t, "id|2026-11-29T10:00:00Z|WH|3421780262", got, "signed string")
}

func TestRejections(t *testing.T) {
	s := testSigners(t)
	a := adapter(t, s[0].certPEM)
	body := providertest.Fixture(t, "capture_completed.json")
	good := func() http.Header { return signed(t, s[0], body, now) }
	with := func(k, v string) http.Header {
		h := good()
		if v == "" {
			h.Del(k)
		} else {
			h.Set(k, v)
		}
		return h
	}
	tampered := append([]byte(nil), body...)
	tampered[strings.Index(string(body), `"10.00"`)+1] = '9' // 90.00
	cases := []struct {
		name string
		h    http.Header
		body []byte
		now  time.Time
	}{
		{"tampered body", good(), tampered, now},
		{"trailing byte", good(), append(append([]byte(nil), body...), ' '), now},
		{"untrusted cert", signed(t, s[2], body, now), body, now},
		{"other webhook id", func() http.Header {
			h, _ := SignHeaders(s[0].key, "OTHERWEBHOOK", "t1", now, body)
			return h
		}(), body, now},
		{"transmission id changed", with(HeaderTransmissionID, "another-id"), body, now},
		{"cert url http", with(HeaderCertURL, "http://api.paypal.com/v1/notifications/certs/CERT-1"), body, now},
		{"cert url off domain", with(HeaderCertURL, "https://api.paypal.com.evil.example/v1/notifications/certs/CERT-1"), body, now},
		{"cert url lookalike", with(HeaderCertURL, "https://evilpaypal.com/cert"), body, now},
		{"cert url userinfo", with(HeaderCertURL, "https://api.paypal.com@evil.example/cert"), body, now},
		{"cert url port", with(HeaderCertURL, "https://api.paypal.com:8443/cert"), body, now},
		{"auth algo", with(HeaderAuthAlgo, "SHA1withRSA"), body, now},
		{"missing algo", with(HeaderAuthAlgo, ""), body, now},
		{"missing sig", with(HeaderTransmissionSig, ""), body, now},
		{"sig not base64", with(HeaderTransmissionSig, "%%%"), body, now},
		{"missing id", with(HeaderTransmissionID, ""), body, now},
		{"missing time", with(HeaderTransmissionTime, ""), body, now},
		{"missing cert url", with(HeaderCertURL, ""), body, now},
		{"stale", signed(t, s[0], body, now.Add(-5*time.Minute-time.Second)), body, now},
		{"future", signed(t, s[0], body, now.Add(5*time.Minute+time.Second)), body, now},
		{"no headers", nil, body, now},
	}
	for _, c := range cases {
		evs, err := a.Parse(providers.Request{Header: c.h, Body: c.body, Now: c.now})
		providertest.CheckUnauthorized(t, c.name, evs, err)
	}
	// Within tolerance on both sides passes.
	for _, at := range []time.Time{now.Add(-5 * time.Minute), now.Add(5 * time.Minute)} {
		_, err := a.Parse(providers.Request{Header: signed(t, s[0], body, at), Body: body, Now: now})
		assert.NoErrorf(t, err, "at %v", at)
	}
	// Sandbox and bare paypal.com cert hosts are PayPal's.
	for _, u := range []string{"https://api.sandbox.paypal.com/v1/notifications/certs/CERT-1", "https://API.PAYPAL.COM:443/x"} {
		_, err := a.Parse(providers.Request{Header: with(HeaderCertURL, u), Body: body, Now: now})
		assert.NoErrorf(t, err, "cert url %s", u)
	}
}

func TestCertificateRotationAndExpiry(t *testing.T) {
	s := testSigners(t)
	body := providertest.Fixture(t, "capture_completed.json")
	a := adapter(t, s[0].certPEM, s[1].certPEM)
	_, err := a.Parse(providers.Request{Header: signed(t, s[1], body, now), Body: body, Now: now})
	require.NoError(t, err, "second trusted cert")
	// One file holding both certificates works the same.
	both := append(append([]byte(nil), s[0].certPEM...), s[1].certPEM...)
	_, err = adapter(t, both).Parse(providers.Request{Header: signed(t, s[1], body, now), Body: body, Now: now})
	require.NoError(t, err, "bundle")
	// An expired certificate verifies nothing.
	old := newSigner(t, "messageverificationcerts.paypal.com", now.AddDate(-2, 0, 0), now.AddDate(0, 0, -1))
	_, err = adapter(t, old.certPEM).Parse(providers.Request{Header: signed(t, old, body, now), Body: body, Now: now})
	require.ErrorIs(t, err, providers.ErrUnauthorized, "expired cert")
}

func TestNormalizationErrors(t *testing.T) {
	s := testSigners(t)
	a := adapter(t, s[0].certPEM)
	edit := func(file, old, new string) []byte { return providertest.Edit(t, file, old, new) }
	cases := []struct {
		name   string
		body   []byte
		target error
		field  string
	}{
		{"excess decimals", edit("capture_completed.json", `"value": "10.00"`, `"value": "10.001"`), delivery.ErrInvalidAmount, "resource.amount.value"},
		{"float-like", edit("capture_completed.json", `"value": "10.00"`, `"value": "1e3"`), delivery.ErrInvalidAmount, "resource.amount.value"},
		{"negative", edit("capture_completed.json", `"value": "10.00"`, `"value": "-10.00"`), delivery.ErrInvalidAmount, "resource.amount.value"},
		{"unknown currency", edit("capture_completed.json", `"currency_code": "USD",`, `"currency_code": "ZZZ",`), money.ErrUnknownCurrency, "resource.amount.currency_code"},
		{"fee currency", edit("capture_completed.json", `"paypal_fee": {"currency_code": "USD"`, `"paypal_fee": {"currency_code": "EUR"`), delivery.ErrInvalidAmount, "paypal_fee"},
		{"fee over amount", edit("capture_completed.json", `"value": "0.79"`, `"value": "10.79"`), delivery.ErrInvalidAmount, "fee"},
		{"refund without up link", edit("capture_refunded.json", `"rel": "up"`, `"rel": "related"`), delivery.ErrMissingField, "resource.links"},
		{"dispute without transaction", edit("dispute_created.json", `"seller_transaction_id": "42311647XV020574X",`, ``), delivery.ErrMissingField, "seller_transaction_id"},
		{"dispute without id", edit("dispute_created.json", `"dispute_id": "PP-D-27803",`, ``), delivery.ErrMissingField, "resource.dispute_id"},
		{"resolved without outcome", edit("dispute_resolved_seller.json", `"dispute_outcome": {"outcome_code": "RESOLVED_SELLER_FAVOUR"},`, ``), delivery.ErrMissingField, "outcome_code"},
		{"missing id", edit("capture_completed.json", `"id": "WH-2WR32451HC0233532-67976317FL4543714",`, ``), delivery.ErrMissingField, "id"},
		{"bad create_time", edit("capture_completed.json", `"create_time": "2026-11-29T10:00:07.940Z"`, `"create_time": "today"`), delivery.ErrMalformed, "create_time"},
		{"resource wrong type", edit("capture_completed.json", `"resource": {`, `"resource": [1], "x": {`), delivery.ErrMalformed, "resource"},
		{"not json", []byte(`{"id": "WH-1"`), delivery.ErrMalformed, "body"},
		{"duplicate key", edit("capture_completed.json", `"value": "10.00"`, `"value": "1.00", "value": "10.00"`), payload.ErrDuplicateKey, "resource.amount.value"},
		{"duplicate key in another case", edit("capture_completed.json", `"event_type": "`, `"Event_Type": "PAYMENT.CAPTURE.DENIED", "event_type": "`), payload.ErrDuplicateKey, "event_type"},
	}
	for _, c := range cases {
		evs, err := a.Parse(providers.Request{Header: signed(t, s[0], c.body, now), Body: c.body, Now: now})
		providertest.CheckFieldError(t, c.name, evs, err, c.target, c.field)
	}
}

func TestRefundStatuses(t *testing.T) {
	s := testSigners(t)
	a := adapter(t, s[0].certPEM)
	for status, want := range map[string]delivery.Kind{"PENDING": "", "FAILED": delivery.KindRefundFailed, "CANCELLED": delivery.KindRefundFailed} {
		body := []byte(strings.Replace(string(providertest.Fixture(t, "capture_refunded.json")), `"status": "COMPLETED"`, `"status": "`+status+`"`, 1))
		evs, err := a.Parse(providers.Request{Header: signed(t, s[0], body, now), Body: body, Now: now})
		require.NoError(t, err, status)
		var got delivery.Kind
		if len(evs[0].Facts) > 0 {
			got = evs[0].Facts[0].Kind
		}
		assert.Equalf(t, want, got, "%s: kind", status)
		assert.Equalf(t, "42311647XV020574X", evs[0].PaymentKey, "%s: key", status)
	}
}

func TestNew(t *testing.T) {
	s := testSigners(t)
	_, err := New("", [][]byte{s[0].certPEM}, time.Minute)
	assert.Error(t, err, "empty webhook id accepted")
	_, err = New(webhookID, nil, time.Minute)
	assert.Error(t, err, "no certificate accepted")
	_, err = New(webhookID, [][]byte{[]byte("not pem")}, time.Minute)
	assert.Error(t, err, "non-PEM accepted")
	_, err = New(webhookID, [][]byte{s[0].certPEM}, 0)
	assert.Error(t, err, "zero tolerance accepted")
	a, err := New(webhookID, [][]byte{s[0].certPEM}, time.Minute)
	require.NoError(t, err)
	require.Equal(t, "paypal", a.Name())
}

func FuzzPayPalParse(f *testing.F) {
	s := testSigners(f)
	a := adapter(f, s[0].certPEM)
	for _, name := range []string{"capture_completed.json", "capture_refunded.json", "dispute_created.json", "dispute_resolved_buyer.json", "capture_denied.json"} {
		f.Add(providertest.Fixture(f, name), uint16(0))
	}
	f.Add([]byte(`{"id":"WH-1","event_type":"PAYMENT.CAPTURE.COMPLETED","create_time":"2026-11-29T10:00:00Z","resource":{"id":"C1","amount":{"value":"00.0","currency_code":"jpy"}}}`), uint16(3))
	f.Fuzz(func(t *testing.T, body []byte, flip uint16) {
		h := signed(t, s[0], body, now)
		evs, err := a.Parse(providers.Request{Header: h, Body: body, Now: now})
		require.NotErrorIs(t, err, providers.ErrUnauthorized, "correctly signed body refused as unauthorized")
		if err == nil {
			require.Lenf(t, evs, 1, "accepted an invalid event: %+v", evs)
			require.NoErrorf(t, evs[0].Validate(), "accepted an invalid event: %+v", evs)
		}
		// The same headers over a body with one byte changed never pass.
		_, err = a.Parse(providers.Request{Header: h, Body: providertest.Tampered(body, int(flip), 0x01), Now: now})
		require.ErrorIs(t, err, providers.ErrUnauthorized, "tampered body not refused")
		// A signature from an untrusted key never passes.
		_, err = a.Parse(providers.Request{Header: signed(t, s[2], body, now), Body: body, Now: now})
		require.ErrorIs(t, err, providers.ErrUnauthorized, "untrusted signer accepted")
	})
}
