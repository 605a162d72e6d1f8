package main_test

// The ingestion matrix's duplicate, concurrency, reorder and signature rows
// for Adyen, PayPal, Square and Circle: deliveries signed as each provider
// signs them, through the real HTTP server, recorded in a real Postgres
// database. Each provider's keys include one from its official test vectors
// (Adyen, Square, Circle), so rotation is exercised too.

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/adyen"
	"github.com/onceledger/onceledger/adapters/providers/circle"
	"github.com/onceledger/onceledger/adapters/providers/paypal"
	"github.com/onceledger/onceledger/adapters/providers/paypalipn"
	"github.com/onceledger/onceledger/adapters/providers/square"
	"github.com/onceledger/onceledger/cmd/onceledger/app"
	"github.com/onceledger/onceledger/domain/payment"
)

// Keys. The official ones are the providers' published test vectors (see each
// provider package's tests); the others are this file's own.
const (
	adyenOfficialKey = "DFB1EB5485895CFA84146406857104ABB4CBCABDC8AAF103A624C8F6A3EAAB00" // adyen-php-api-library HmacSignatureTest
	adyenTestKey     = "5A5A0F0F1E1E2D2D3C3C4B4B5A5A69697878878796969A9AABABBCBCCDCDDEDE"
	adyenRogueKey    = "00112233445566778899AABBCCDDEEFF00112233445566778899AABBCCDDEEFF"
	adyenMerchant    = "OnceLedgerECOM"

	paypalWebhookID = "8PT597110X687430LKGECATA"

	squareOfficialKey = "Ibxx_5AKakO-3qeNVR61Dw" // square-java-sdk WebhooksHelperTest
	squareOfficialURL = "https://webhook.site/679a4f3a-dcfa-49ee-bac5-9d0edad886b9"
	squareOfficialSig = "GF4YkrJgGBDZ9NIYbNXBnMzqb2HoL4RW/S6vkZ9/2N4="
	squareTestKey     = "w7Xq9v1c3pLm0ZbN5tRy2A"
	squareRogueKey    = "MCmhFRxGX82xMwg5FsaoQA"

	circleOfficialKeyID = "879dc113-5ca4-4ff7-a6b7-54652083fcf8" // Circle's webhooks.test example
	circleOfficialKey   = "MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAESl76SZPBJemW0mJNN4KTvYkLT8bOT4UGhFhzNk3fJqf6iuPlLQLq533FelXwczJbjg2U1PHTvQTK7qOQnDL2Tg=="
	circleOfficialSig   = "MEQCIBlJPX7t0FDOcozsRK6qIQwik5Fq6mhAtCSSgIB/yQO7AiB9U5lVpdufKvPhk3cz4TH2f5MP7ArnmPRBmhPztpsIFQ=="
	circleTestKeyID     = "0f6a3a4e-8f1b-4c5d-9e2f-3a4b5c6d7e8f"

	ipnReceiver = "seller@onceledger.example"
)

// e2eKeys are generated once per test binary: RSA generation is slow under -race.
type e2eKeys struct {
	paypal, paypalRogue *rsa.PrivateKey
	paypalCertPEM       []byte
	circle, circleRogue *ecdsa.PrivateKey
}

var (
	e2eKeysOnce sync.Once
	e2eKeysVal  e2eKeys
	e2eKeysErr  error
)

func providerKeys(t testing.TB) e2eKeys {
	t.Helper()
	e2eKeysOnce.Do(func() {
		k := &e2eKeysVal
		if k.paypal, e2eKeysErr = rsa.GenerateKey(rand.Reader, 2048); e2eKeysErr != nil {
			return
		}
		if k.paypalRogue, e2eKeysErr = rsa.GenerateKey(rand.Reader, 2048); e2eKeysErr != nil {
			return
		}
		tmpl := &x509.Certificate{
			SerialNumber: big.NewInt(1),
			Subject:      pkix.Name{CommonName: "messageverificationcerts.paypal.com", Organization: []string{"PayPal, Inc."}},
			NotBefore:    time.Now().AddDate(-1, 0, 0),
			NotAfter:     time.Now().AddDate(1, 0, 0),
			KeyUsage:     x509.KeyUsageDigitalSignature,
		}
		var der []byte
		if der, e2eKeysErr = x509.CreateCertificate(rand.Reader, tmpl, tmpl, &k.paypal.PublicKey, k.paypal); e2eKeysErr != nil {
			return
		}
		k.paypalCertPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
		if k.circle, e2eKeysErr = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); e2eKeysErr != nil {
			return
		}
		k.circleRogue, e2eKeysErr = ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	})
	require.NoError(t, e2eKeysErr)
	return e2eKeysVal
}

// e2eStack is serve's app, for the four signed providers and PayPal IPN, on
// a real Postgres database behind a real socket. It is this file's own (the
// matrix's stack runs other providers against both event stores); its
// helpers mirror that one's.
type e2eStack struct {
	t     *testing.T
	dbURL string
	cfg   app.Config
	pool  *pgxpool.Pool
	srv   *httptest.Server
	store eventstore.Store
}

// newProviderStack is serve's app for the four signed providers and PayPal
// IPN (held in the inbox, applied by a worker), on dbURL. A second call on
// the same URL is a restart.
func newProviderStack(t *testing.T, dbURL string) *e2eStack {
	t.Helper()
	keys := providerKeys(t)
	ad, err := adyen.New([]string{adyenOfficialKey, adyenTestKey})
	require.NoError(t, err)
	pp, err := paypal.New(paypalWebhookID, [][]byte{keys.paypalCertPEM}, 5*time.Minute)
	require.NoError(t, err)
	sq, err := square.New([]string{squareOfficialKey, squareTestKey}, squareOfficialURL)
	require.NoError(t, err)
	ci, err := circle.New(map[string]string{circleOfficialKeyID: circleOfficialKey, circleTestKeyID: spkiB64(t, keys.circle)})
	require.NoError(t, err)
	ipn, err := paypalipn.New([]string{ipnReceiver})
	require.NoError(t, err)

	cfg := app.Config{
		DatabaseURL: dbURL,
		Providers: map[string]providers.Adapter{
			adyen.Name: ad, paypal.Name: pp, square.Name: sq, circle.Name: ci, paypalipn.Name: ipn,
		},
		MaxBodyBytes:        maxBody,
		Logger:              testLogger(),
		IngestTimeout:       5 * time.Second,
		ProviderConcurrency: -1, // more at once than the production cap
	}
	a := newApp(t, cfg)
	srv := httptest.NewServer(a.Handler())
	t.Cleanup(srv.Close)
	return &e2eStack{t: t, dbURL: dbURL, cfg: cfg, pool: a.Pool(), srv: srv, store: a.Events().Store}
}

func spkiB64(t testing.TB, k *ecdsa.PrivateKey) string {
	t.Helper()
	der, err := x509.MarshalPKIXPublicKey(&k.PublicKey)
	require.NoError(t, err)
	return base64.StdEncoding.EncodeToString(der)
}

// e2eProvider builds signed deliveries of one provider. Amounts are minor
// units of USD; ids are the caller's.
type e2eProvider struct {
	name   string
	hasFee bool // whether its capture notifications carry the fee
	// sign returns the headers of a delivery of body (nil for Adyen, whose
	// signatures are inside the body). Called per send: a retry is signed anew.
	sign        func(t testing.TB, body []byte) http.Header
	capture     func(t testing.TB, pay string, amount, fee int64) []byte
	refund      func(t testing.TB, pay, refundID string, amount int64) []byte
	dispute     func(t testing.TB, pay, disputeID string, amount int64) []byte
	disputeLost func(t testing.TB, pay, disputeID string, amount int64) []byte
	// forge returns a capture delivery signed with a key that is not trusted.
	forge func(t testing.TB, pay string) (http.Header, []byte)
	// onePerPayment: the provider holds at most one dispute per payment,
	// and onceledger keys the dispute by the payment (PayPal: "You can only
	// report a problem and dispute a payment once",
	// https://www.paypal.com/il/selfhelp/article/faq801; the REST dispute
	// and the IPN reversal of one chargeback are then one fact).
	onePerPayment bool
}

// disputesOf is how many distinct disputes one payment can have of n asked for.
func (p e2eProvider) disputesOf(n int) int {
	if p.onePerPayment {
		return min(n, 1)
	}
	return n
}

func (p e2eProvider) path() string                      { return "/webhooks/" + p.name }
func (p e2eProvider) stream(pay string) string          { return "payment-" + p.name + "-" + pay }
func (p e2eProvider) send(s *e2eStack, b []byte) answer { return s.post(p.path(), p.sign(s.t, b), b) }

// outcome checks a 200 and returns the reported outcome; Adyen reports none
// ("[accepted]" for everything it should not resend), so "" for Adyen.
func (p e2eProvider) outcome(t *testing.T, a answer) string {
	t.Helper()
	require.Equal(t, http.StatusOK, a.Status, "%s: %s", p.name, a.Body)
	if p.name == adyen.Name {
		require.Equal(t, "[accepted]", a.Body)
		return ""
	}
	return a.outcome(t)
}

// expectOutcome asserts the outcome, or for Adyen only the "[accepted]".
func (p e2eProvider) expectOutcome(t *testing.T, a answer, want string) {
	t.Helper()
	if got := p.outcome(t, a); p.name != adyen.Name {
		assert.Equal(t, want, got)
	}
}

// balancesOf is what one payment's postings must sum to, per docs/reference.md's
// accounts: disputes opened move money from the provider balance to the
// receivable; lost ones from the receivable to expenses.
func (p e2eProvider) balancesOf(captured, fee, refunded, disputed, lost int64) map[string]int64 {
	if !p.hasFee {
		fee = 0
	}
	out := map[string]int64{
		"provider:" + p.name + ":balance USD":    captured - fee - refunded - disputed,
		"expenses:fees:" + p.name + " USD":       fee,
		"revenue:sales USD":                      -captured,
		"revenue:refunds USD":                    refunded,
		"receivable:disputes:" + p.name + " USD": disputed - lost,
		"expenses:disputes USD":                  lost,
	}
	for k, v := range out {
		if v == 0 {
			delete(out, k)
		}
	}
	return out
}

func mustJSON(v any) []byte {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return b
}

// major formats minor units of a two-decimal currency as PayPal and Circle
// write amounts.
func major(minor int64) string { return fmt.Sprintf("%d.%02d", minor/100, minor%100) }

func nowRFC3339() string { return time.Now().UTC().Format(time.RFC3339) }

// --- Adyen ---

// adyenItem is one NotificationRequestItem. eventDate is fixed so that the
// same item built twice is the same item (Adyen resends items unchanged).
type adyenItem struct {
	psp, orig, code string
	value           int64
	key             string // signing key
}

func (it adyenItem) json(t testing.TB) map[string]any {
	t.Helper()
	sig, err := adyen.Sign(it.key, it.psp, it.orig, adyenMerchant, "order-"+it.orig, it.value, "USD", it.code, "true")
	require.NoError(t, err)
	m := map[string]any{
		"additionalData":      map[string]any{"hmacSignature": sig},
		"amount":              map[string]any{"value": it.value, "currency": "USD"},
		"eventCode":           it.code,
		"eventDate":           "2026-11-29T10:00:00+01:00",
		"merchantAccountCode": adyenMerchant,
		"merchantReference":   "order-" + it.orig,
		"pspReference":        it.psp,
		"success":             "true",
	}
	if it.orig != "" {
		m["originalReference"] = it.orig
	}
	return map[string]any{"NotificationRequestItem": m}
}

func adyenBatch(t testing.TB, items ...adyenItem) []byte {
	t.Helper()
	list := make([]any, len(items))
	for i, it := range items {
		list[i] = it.json(t)
	}
	return mustJSON(map[string]any{"live": "false", "notificationItems": list})
}

var adyenE2E = e2eProvider{
	name: adyen.Name,
	sign: func(testing.TB, []byte) http.Header { return nil },
	capture: func(t testing.TB, pay string, amount, _ int64) []byte {
		return adyenBatch(t, adyenItem{psp: pay + "C", orig: pay, code: "CAPTURE", value: amount, key: adyenTestKey})
	},
	refund: func(t testing.TB, pay, id string, amount int64) []byte {
		// Signed with the other configured key: rotation.
		return adyenBatch(t, adyenItem{psp: id, orig: pay, code: "REFUND", value: amount, key: adyenOfficialKey})
	},
	dispute: func(t testing.TB, pay, id string, amount int64) []byte {
		// CHARGEBACK is when Adyen debits the amount (NOTIFICATION_OF_CHARGEBACK
		// is an inquiry and moves nothing).
		return adyenBatch(t, adyenItem{psp: id, orig: pay, code: "CHARGEBACK", value: amount, key: adyenTestKey})
	},
	disputeLost: func(t testing.TB, pay, id string, amount int64) []byte {
		return adyenBatch(t, adyenItem{psp: id, orig: pay, code: "SECOND_CHARGEBACK", value: amount, key: adyenTestKey})
	},
	forge: func(t testing.TB, pay string) (http.Header, []byte) {
		return nil, adyenBatch(t, adyenItem{psp: pay + "C", orig: pay, code: "CAPTURE", value: 1000, key: adyenRogueKey})
	},
}

// --- PayPal ---

func paypalHeaders(t testing.TB, key *rsa.PrivateKey, body []byte) http.Header {
	t.Helper()
	h, err := paypal.SignHeaders(key, paypalWebhookID, uniq("tx"), time.Now(), body)
	require.NoError(t, err)
	return h
}

func paypalMoney(minor int64) map[string]any {
	return map[string]any{"currency_code": "USD", "value": major(minor)}
}

func paypalEvent(typ, resourceType string, resource map[string]any) []byte {
	return mustJSON(map[string]any{
		"id": uniq("WH"), "event_version": "1.0", "create_time": nowRFC3339(),
		"resource_type": resourceType, "event_type": typ, "resource": resource,
	})
}

func paypalDispute(typ, pay, id string, amount int64, outcome string) []byte {
	res := map[string]any{
		"dispute_id": id, "reason": "MERCHANDISE_OR_SERVICE_NOT_RECEIVED", "status": "OPEN",
		"dispute_amount":        paypalMoney(amount),
		"disputed_transactions": []any{map[string]any{"seller_transaction_id": pay}},
	}
	if outcome != "" {
		res["status"] = "RESOLVED"
		res["dispute_outcome"] = map[string]any{"outcome_code": outcome}
	}
	return paypalEvent(typ, "dispute", res)
}

func paypalCapture(_ testing.TB, pay string, amount, fee int64) []byte {
	return paypalEvent("PAYMENT.CAPTURE.COMPLETED", "capture", map[string]any{
		"id": pay, "status": "COMPLETED", "amount": paypalMoney(amount), "final_capture": true,
		"seller_receivable_breakdown": map[string]any{
			"gross_amount": paypalMoney(amount), "paypal_fee": paypalMoney(fee), "net_amount": paypalMoney(amount - fee),
		},
	})
}

var paypalE2E = e2eProvider{
	name:          paypal.Name,
	hasFee:        true,
	onePerPayment: true,
	sign: func(t testing.TB, body []byte) http.Header {
		return paypalHeaders(t, providerKeys(t).paypal, body)
	},
	// A PayPal payment's stream is keyed by its capture id: pay is the capture.
	capture: paypalCapture,
	refund: func(_ testing.TB, pay, id string, amount int64) []byte {
		return paypalEvent("PAYMENT.CAPTURE.REFUNDED", "refund", map[string]any{
			"id": id, "status": "COMPLETED", "amount": paypalMoney(amount),
			"links": []any{
				map[string]any{"href": "https://api.paypal.com/v2/payments/refunds/" + id, "rel": "self", "method": "GET"},
				map[string]any{"href": "https://api.paypal.com/v2/payments/captures/" + pay, "rel": "up", "method": "GET"},
			},
		})
	},
	dispute: func(_ testing.TB, pay, id string, amount int64) []byte {
		return paypalDispute("CUSTOMER.DISPUTE.CREATED", pay, id, amount, "")
	},
	disputeLost: func(_ testing.TB, pay, id string, amount int64) []byte {
		return paypalDispute("CUSTOMER.DISPUTE.RESOLVED", pay, id, amount, "RESOLVED_BUYER_FAVOUR")
	},
	forge: func(t testing.TB, pay string) (http.Header, []byte) {
		b := paypalCapture(t, pay, 1000, 0)
		return paypalHeaders(t, providerKeys(t).paypalRogue, b), b
	},
}

// --- Square ---

func squareMoney(minor int64) map[string]any {
	return map[string]any{"amount": minor, "currency": "USD"}
}

func squareEvent(typ, objType, id string, object map[string]any) []byte {
	return mustJSON(map[string]any{
		"merchant_id": "MLEFBHHSJGVHD", "type": typ, "event_id": uniq("sq-evt"), "created_at": nowRFC3339(),
		"data": map[string]any{"type": objType, "id": id, "object": map[string]any{objType: object}},
	})
}

func squareDispute(typ, pay, id, state string, amount int64) []byte {
	return squareEvent(typ, "dispute", id, map[string]any{
		"id": id, "state": state, "reason": "NOT_AS_DESCRIBED", "amount_money": squareMoney(amount),
		"disputed_payment": map[string]any{"payment_id": pay},
	})
}

func squareCapture(_ testing.TB, pay string, amount, fee int64) []byte {
	return squareEvent("payment.updated", "payment", pay, map[string]any{
		"id": pay, "status": "COMPLETED", "amount_money": squareMoney(amount), "total_money": squareMoney(amount),
		"processing_fee": []any{map[string]any{"amount_money": squareMoney(fee), "type": "INITIAL"}},
	})
}

var squareE2E = e2eProvider{
	name:   square.Name,
	hasFee: true,
	sign: func(_ testing.TB, body []byte) http.Header {
		// Signed over the subscribed URL, not the test server's.
		return http.Header{square.SignatureHeader: {square.Sign(squareTestKey, squareOfficialURL, body)}}
	},
	capture: squareCapture,
	refund: func(_ testing.TB, pay, id string, amount int64) []byte {
		return squareEvent("refund.updated", "refund", id, map[string]any{
			"id": id, "status": "COMPLETED", "amount_money": squareMoney(amount), "payment_id": pay,
		})
	},
	dispute: func(_ testing.TB, pay, id string, amount int64) []byte {
		return squareDispute("dispute.created", pay, id, "EVIDENCE_REQUIRED", amount)
	},
	disputeLost: func(_ testing.TB, pay, id string, amount int64) []byte {
		return squareDispute("dispute.state.updated", pay, id, "LOST", amount)
	},
	forge: func(t testing.TB, pay string) (http.Header, []byte) {
		b := squareCapture(t, pay, 1000, 0)
		return http.Header{square.SignatureHeader: {square.Sign(squareRogueKey, squareOfficialURL, b)}}, b
	},
}

// --- Circle ---

func circleHeaders(t testing.TB, keyID string, key *ecdsa.PrivateKey, body []byte) http.Header {
	t.Helper()
	digest := sha256.Sum256(body)
	sig, err := ecdsa.SignASN1(rand.Reader, key, digest[:])
	require.NoError(t, err)
	return http.Header{circle.HeaderKeyID: {keyID}, circle.HeaderSignature: {base64.StdEncoding.EncodeToString(sig)}}
}

func circleMoney(minor int64) map[string]any {
	return map[string]any{"amount": major(minor), "currency": "USD"}
}

func circleEvent(typ string, notification map[string]any) []byte {
	return mustJSON(map[string]any{
		"subscriptionId": "e1b4a1c2-6b4d-4f5a-9a3c-2f1d0e9c8b7a", "notificationId": uniq("ci-ntf"),
		"notificationType": typ, "notification": notification, "timestamp": nowRFC3339(), "version": 2,
	})
}

func circleChargeback(pay, id string, amount int64, stages ...string) []byte {
	var history []any
	for _, s := range stages {
		history = append(history, map[string]any{"type": s, "amount": circleMoney(amount), "createDate": nowRFC3339()})
	}
	return circleEvent("chargebacks", map[string]any{
		"id": id, "paymentId": pay, "merchantId": "fc988ed5-c129-4f70-a064-e5beb7eb8e32",
		"reasonCode": "10.4", "category": "Fraud", "history": history, "reason": "Fraud",
	})
}

func circleCapture(_ testing.TB, pay string, amount, fee int64) []byte {
	return circleEvent("payments", map[string]any{
		"id": pay, "type": "payment", "amount": circleMoney(amount), "status": "paid", "fees": circleMoney(fee),
	})
}

var circleE2E = e2eProvider{
	name:   circle.Name,
	hasFee: true,
	sign: func(t testing.TB, body []byte) http.Header {
		return circleHeaders(t, circleTestKeyID, providerKeys(t).circle, body)
	},
	capture: circleCapture,
	refund: func(_ testing.TB, pay, id string, amount int64) []byte {
		return circleEvent("refunds", map[string]any{
			"id": id, "type": "refund", "amount": circleMoney(amount), "status": "paid",
			"originalPayment": map[string]any{"id": pay, "type": "payment"},
		})
	},
	dispute: func(_ testing.TB, pay, id string, amount int64) []byte {
		return circleChargeback(pay, id, amount, "First Chargeback")
	},
	disputeLost: func(_ testing.TB, pay, id string, amount int64) []byte {
		return circleChargeback(pay, id, amount, "First Chargeback", "Second Chargeback")
	},
	forge: func(t testing.TB, pay string) (http.Header, []byte) {
		b := circleCapture(t, pay, 1000, 0)
		return circleHeaders(t, circleTestKeyID, providerKeys(t).circleRogue, b), b
	},
}

var e2eProviders = []e2eProvider{adyenE2E, paypalE2E, squareE2E, circleE2E}

// forEachProvider runs row once per provider, on one database (each
// provider's rows and streams are its own; assertions are scoped to them).
func forEachProvider(t *testing.T, row func(t *testing.T, p e2eProvider, s *e2eStack)) {
	shared := newProviderStack(t, pgtest.NewDatabase(t))
	for _, p := range e2eProviders {
		t.Run(p.name, func(t *testing.T) {
			row(t, p, shared.in(t))
		})
	}
}

// in returns s with its helpers failing t: a subtest must not fail its
// parent from its own goroutine.
func (s *e2eStack) in(t *testing.T) *e2eStack {
	c := *s
	c.t = t
	return &c
}

// inboxRows and events count what p stored.
func (s *e2eStack) inboxRows(p e2eProvider) int64 {
	s.t.Helper()
	return s.scalar(`SELECT count(*) FROM webhook_inbox WHERE provider = $1`, p.name)
}

func (s *e2eStack) events(p e2eProvider) int64 {
	s.t.Helper()
	return s.scalar(`SELECT count(*) FROM events WHERE stream_id LIKE $1`, "payment-"+p.name+"-%")
}

func (s *e2eStack) deliveryCount(providerName string) int64 {
	s.t.Helper()
	return s.scalar(`SELECT COALESCE(sum(delivery_count), 0) FROM webhook_inbox WHERE provider = $1`, providerName)
}

func countTypes(types []string) map[string]int {
	out := map[string]int{}
	for _, ty := range types {
		out[ty]++
	}
	return out
}

// Row: the same event delivered twice → accepted then duplicate, one set of
// events. Adyen answers "[accepted]" to both (anything else makes it resend).
func TestProvidersSameEventDeliveredTwice(t *testing.T) {
	forEachProvider(t, func(t *testing.T, p e2eProvider, s *e2eStack) {
		pay := uniq("pay")
		body := p.capture(t, pay, 1000, 30)

		p.expectOutcome(t, p.send(s, body), "accepted")
		p.expectOutcome(t, p.send(s, body), "duplicate") // signed anew, as a retry is

		assert.Equal(t, []string{payment.TypeCaptured}, s.streamTypes(p.stream(pay)))
		assert.Equal(t, p.balancesOf(1000, 30, 0, 0, 0), s.balances(p.stream(pay)))
		assert.EqualValues(t, 1, s.inboxRows(p))
		assert.EqualValues(t, 2, s.deliveryCount(p.name))
		assert.EqualValues(t, 1, s.events(p))
	})
}

// Row: 20 identical deliveries at the same moment → exactly one applied, no 5xx.
func TestProvidersTwentyIdenticalDeliveriesAtOnce(t *testing.T) {
	forEachProvider(t, func(t *testing.T, p e2eProvider, s *e2eStack) {
		pay := uniq("pay")
		body := p.capture(t, pay, 2500, 75)
		header := p.sign(t, body)

		const n = 20
		answers := make([]answer, n)
		start := make(chan struct{})
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				<-start
				answers[i] = s.post(p.path(), header, body)
			})
		}
		close(start)
		wg.Wait()

		outcomes := map[string]int{}
		for _, a := range answers {
			outcomes[p.outcome(t, a)]++ // requires 200: a duplicate never gets a 5xx
		}
		if p.name == adyen.Name {
			assert.Equal(t, map[string]int{"": n}, outcomes)
		} else {
			assert.Equal(t, map[string]int{"accepted": 1, "duplicate": n - 1}, outcomes)
		}
		assert.Equal(t, []string{payment.TypeCaptured}, s.streamTypes(p.stream(pay)))
		assert.Equal(t, p.balancesOf(2500, 75, 0, 0, 0), s.balances(p.stream(pay)))
		assert.EqualValues(t, n, s.deliveryCount(p.name))
		assert.EqualValues(t, 1, s.inboxRows(p))
	})
}

// Row: many different events of one payment (a capture, refunds, disputes
// opened, one of them lost) at once, each also delivered twice → every event
// applied once, versions contiguous, balances exact whatever the order.
func TestProvidersDifferentEventsForOnePaymentAtOnce(t *testing.T) {
	forEachProvider(t, func(t *testing.T, p e2eProvider, s *e2eStack) {
		pay := uniq("pay")
		const (
			captured      = 10000
			fee           = 320
			refunds       = 7
			refundAmount  = 400
			disputeAmount = 700
		)
		disputes := p.disputesOf(3)
		bodies := [][]byte{p.capture(t, pay, captured, fee)}
		for i := range refunds {
			bodies = append(bodies, p.refund(t, pay, fmt.Sprintf("%s-re%d", pay, i), refundAmount))
		}
		for i := range disputes {
			bodies = append(bodies, p.dispute(t, pay, fmt.Sprintf("%s-dp%d", pay, i), disputeAmount))
		}
		// The first dispute is also lost, possibly before its opening arrives.
		bodies = append(bodies, p.disputeLost(t, pay, pay+"-dp0", disputeAmount))

		type sent struct {
			event int
			a     answer
		}
		var (
			mu      sync.Mutex
			answers []sent
			wg      sync.WaitGroup
		)
		start := make(chan struct{})
		for i, b := range bodies {
			for range 2 {
				h := p.sign(t, b)
				wg.Go(func() {
					<-start
					a := s.post(p.path(), h, b)
					mu.Lock()
					answers = append(answers, sent{i, a})
					mu.Unlock()
				})
			}
		}
		close(start)
		wg.Wait()

		accepted := map[int]int{}
		for _, x := range answers {
			if p.outcome(t, x.a) == "accepted" {
				accepted[x.event]++
			}
		}
		if p.name != adyen.Name {
			for i := range bodies {
				assert.Equal(t, 1, accepted[i], "event %d accepted exactly once", i)
			}
		}
		stream := p.stream(pay)
		assert.Equal(t, p.balancesOf(captured, fee, refunds*refundAmount, int64(disputes)*disputeAmount, disputeAmount), s.balances(stream))
		count := countTypes(s.streamTypes(stream)) // asserts contiguous versions
		assert.Equal(t, 1, count[payment.TypeCaptured])
		assert.Equal(t, refunds, count[payment.TypeRefundPosted])
		// A dispute after the capture is opened; one that raced ahead of it
		// waits (dispute.pending) and its funds are withdrawn when the
		// capture arrives. Either way, once per dispute.
		assert.Equal(t, disputes, count[payment.TypeDisputeOpened]+count[payment.TypeDisputeFundsWithdrawn])
		assert.Equal(t, 1, count[payment.TypeDisputeLost])
		flagged, cleared := s.reconItems(stream)
		assert.Equal(t, count[payment.TypeRefundPending], cleared[payment.ReconRefundBeforePayment],
			"every refund that raced ahead of the capture is cleared by it")
		assert.Equal(t, count[payment.TypeDisputeFundsWithdrawn], cleared[payment.ReconDisputeBeforePayment],
			"every dispute that raced ahead of the capture is cleared by it")
		assert.Equal(t, flagged, cleared, "nothing left open")
		assert.EqualValues(t, len(bodies), s.scalar(`SELECT count(*) FROM webhook_inbox WHERE provider = $1 AND status = 'applied'`, p.name))
		assert.EqualValues(t, 2*len(bodies), s.deliveryCount(p.name))
	})
}

// Row: a refund before its capture → pending (posts nothing), then posted
// exactly once when the capture arrives; the refund's later redelivery, or
// the same refund reported under a new event id, changes nothing.
func TestProvidersRefundBeforeItsCapture(t *testing.T) {
	forEachProvider(t, func(t *testing.T, p e2eProvider, s *e2eStack) {
		pay := uniq("pay")
		stream := p.stream(pay)
		refund := p.refund(t, pay, pay+"-re1", 400)

		p.expectOutcome(t, p.send(s, refund), "accepted")
		assert.Empty(t, s.balances(stream), "a refund of an unknown payment posts nothing yet")
		assert.Equal(t, []string{payment.TypeRefundPending, payment.TypeFlagged}, s.streamTypes(stream))

		p.expectOutcome(t, p.send(s, p.capture(t, pay, 1000, 25)), "accepted")
		want := p.balancesOf(1000, 25, 400, 0, 0)
		assert.Equal(t, want, s.balances(stream))
		count := countTypes(s.streamTypes(stream))
		assert.Equal(t, 1, count[payment.TypeRefundPosted])
		assert.Equal(t, 1, count[payment.TypeCleared])

		p.expectOutcome(t, p.send(s, refund), "duplicate")
		again := p.refund(t, pay, pay+"-re1", 400) // a new event id, except for Adyen
		p.expectOutcome(t, p.send(s, again), "accepted")
		assert.Equal(t, want, s.balances(stream))
		assert.Equal(t, 1, countTypes(s.streamTypes(stream))[payment.TypeRefundPosted])
	})
}

// Row: a tampered body, a tampered signature, an untrusted key → 401 and
// nothing stored.
func TestProvidersTamperedSignature(t *testing.T) {
	forEachProvider(t, func(t *testing.T, p e2eProvider, s *e2eStack) {
		pay := uniq("pay")
		body := p.capture(t, pay, 1000, 30)
		header := p.sign(t, body)

		type delivery struct {
			h http.Header
			b []byte
		}
		cases := map[string]delivery{
			// The payment id is signed by every provider (Adyen: originalReference).
			"body changed after signing": {header, bytes.ReplaceAll(body, []byte(pay), []byte(pay+"X"))},
		}
		fh, fb := p.forge(t, pay)
		cases["untrusted key"] = delivery{fh, fb}
		if p.name == adyen.Name {
			// A valid signature, but of other content (another amount).
			sig, err := adyen.Sign(adyenTestKey, pay+"C", pay, adyenMerchant, "order-"+pay, 1000, "USD", "CAPTURE", "true")
			require.NoError(t, err)
			other, err := adyen.Sign(adyenTestKey, pay+"C", pay, adyenMerchant, "order-"+pay, 1001, "USD", "CAPTURE", "true")
			require.NoError(t, err)
			swapped := bytes.Replace(body, []byte(sig), []byte(other), 1)
			require.NotEqual(t, body, swapped)
			cases["signature of other content"] = delivery{nil, swapped}
		} else {
			for _, name := range []string{paypal.HeaderTransmissionSig, square.SignatureHeader, circle.HeaderSignature} {
				if header.Get(name) == "" {
					continue
				}
				tampered := header.Clone()
				sig := []byte(tampered.Get(name))
				sig[len(sig)/2] ^= 0x01
				tampered.Set(name, string(sig))
				cases["signature flipped"] = delivery{tampered, body}
			}
			require.Contains(t, cases, "signature flipped")
			cases["no signature"] = delivery{http.Header{}, body}
		}
		for name, c := range cases {
			a := s.post(p.path(), c.h, c.b)
			assert.Equal(t, http.StatusUnauthorized, a.Status, "%s: %s", name, a.Body)
			assert.Contains(t, a.Body, "error", name)
		}
		assert.Zero(t, s.inboxRows(p), "nothing stored")
		assert.Zero(t, s.events(p), "nothing stored")

		// The genuine delivery still goes through afterwards.
		p.expectOutcome(t, s.post(p.path(), header, body), "accepted")
		assert.Equal(t, []string{payment.TypeCaptured}, s.streamTypes(p.stream(pay)))
	})
}

// Adyen batches: one forged item refuses the whole batch; N good items are N
// inbox rows; the same items redelivered in another batch layout are
// duplicates, not conflicts.
func TestAdyenBatches(t *testing.T) {
	s := newProviderStack(t, pgtest.NewDatabase(t))
	pay := uniq("pay")
	stream := adyenE2E.stream(pay)
	items := []adyenItem{
		{psp: pay, code: "AUTHORISATION", value: 5000, key: adyenOfficialKey},
		{psp: pay + "C", orig: pay, code: "CAPTURE", value: 5000, key: adyenTestKey},
		{psp: pay + "R1", orig: pay, code: "REFUND", value: 1000, key: adyenTestKey},
		{psp: pay + "R2", orig: pay, code: "REFUND", value: 500, key: adyenOfficialKey},
		// The chargeback's notice is an inquiry (posts nothing); Adyen debits
		// the amount at CHARGEBACK.
		{psp: pay + "D1", orig: pay, code: "NOTIFICATION_OF_CHARGEBACK", value: 2000, key: adyenTestKey},
		{psp: pay + "D1", orig: pay, code: "CHARGEBACK", value: 2000, key: adyenTestKey},
		{psp: pay + "X", orig: pay, code: "REPORT_AVAILABLE", value: 0, key: adyenTestKey}, // recorded, posts nothing
	}

	t.Run("one bad item refuses the batch", func(t *testing.T) {
		s := s.in(t)
		bad := append([]adyenItem(nil), items...)
		bad[3].key = adyenRogueKey
		a := s.post("/webhooks/adyen", nil, adyenBatch(t, bad...))
		assert.Equal(t, http.StatusUnauthorized, a.Status, a.Body)
		assert.Contains(t, a.Body, "notificationItems[3]")
		assert.Zero(t, s.inboxCount(), "nothing stored, not even the good items")
		assert.Zero(t, s.eventCount())
	})

	t.Run("N good items are N inbox rows", func(t *testing.T) {
		s := s.in(t)
		a := s.post("/webhooks/adyen", nil, adyenBatch(t, items...))
		require.Equal(t, http.StatusOK, a.Status, a.Body)
		assert.Equal(t, "[accepted]", a.Body)
		assert.EqualValues(t, len(items), s.inboxCount())
		assert.EqualValues(t, len(items), s.scalar(`SELECT count(*) FROM webhook_inbox WHERE provider = 'adyen' AND dedup_key LIKE $1 || '%'`, pay))
		assert.Equal(t, map[string]int64{
			"provider:adyen:balance USD":    5000 - 1500 - 2000,
			"revenue:sales USD":             -5000,
			"revenue:refunds USD":           1500,
			"receivable:disputes:adyen USD": 2000,
		}, s.balances(stream))
	})

	t.Run("redelivered in another layout: duplicates", func(t *testing.T) {
		s := s.in(t)
		events := s.eventCount()
		// Reversed and split in two requests, sent at once.
		var rev []adyenItem
		for i := len(items) - 1; i >= 0; i-- {
			rev = append(rev, items[i])
		}
		var wg sync.WaitGroup
		answers := make([]answer, 2)
		for i, part := range [][]adyenItem{rev[:2], rev[2:]} {
			wg.Go(func() { answers[i] = s.post("/webhooks/adyen", nil, adyenBatch(t, part...)) })
		}
		wg.Wait()
		for _, a := range answers {
			require.Equal(t, http.StatusOK, a.Status, a.Body)
			assert.Equal(t, "[accepted]", a.Body)
		}
		assert.Equal(t, events, s.eventCount(), "nothing new")
		assert.EqualValues(t, len(items), s.inboxCount())
		assert.EqualValues(t, 2*len(items), s.deliveryCount(adyen.Name))
		assert.Zero(t, s.scalar(`SELECT COALESCE(sum(conflict_count), 0) FROM webhook_inbox`), "the same items, whatever the batch")
	})
}

func readProviderTestdata(t *testing.T, provider, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "adapters", "providers", provider, "testdata", name))
	require.NoError(t, err)
	return b
}

// The providers' own published vectors pass the real server unchanged, and
// are recorded once.
func TestProviderOfficialVectorsThroughHTTP(t *testing.T) {
	s := newProviderStack(t, pgtest.NewDatabase(t))

	t.Run("adyen", func(t *testing.T) {
		s := s.in(t)
		// adyen-php-api-library's item, with its published signature.
		body := []byte(`{"live":"false","notificationItems":[{"NotificationRequestItem":{"additionalData":{"hmacSignature":"Ny9gS2veKo5E4w8/OL6xz1/wvT/hYkAXy1xNc/QvO4I="},"amount":{"currency":"EUR","value":1130},"eventCode":"AUTHORISATION","eventDate":"2026-11-29T10:00:00+01:00","merchantAccountCode":"TestMerchant","merchantReference":"TestPayment-1407325143704","pspReference":"7914073381342284","success":"true"}}]}`)
		for range 2 {
			a := s.post("/webhooks/adyen", nil, body)
			require.Equal(t, http.StatusOK, a.Status, a.Body)
			assert.Equal(t, "[accepted]", a.Body)
		}
		assert.Equal(t, []string{payment.TypeAuthorized}, s.streamTypes("payment-adyen-7914073381342284"))
		assert.EqualValues(t, 2, s.scalar(`SELECT delivery_count FROM webhook_inbox WHERE provider = 'adyen' AND dedup_key = '7914073381342284:AUTHORISATION:true'`))
	})
	t.Run("square", func(t *testing.T) {
		s := s.in(t)
		body := readProviderTestdata(t, "square", "official_test_notification.json")
		h := http.Header{square.SignatureHeader: {squareOfficialSig}}
		a := s.post("/webhooks/square", h, body)
		require.Equal(t, http.StatusOK, a.Status, a.Body)
		assert.Equal(t, "ignored", a.outcome(t))
		assert.Equal(t, "duplicate", s.post("/webhooks/square", h, body).outcome(t))
		assert.Equal(t, "ignored", s.scalarText(`SELECT status FROM webhook_inbox WHERE provider = 'square' AND dedup_key = 'ac3ac95b-f97d-458c-a6e6-18981597e05f'`))
	})
	t.Run("circle", func(t *testing.T) {
		s := s.in(t)
		body := readProviderTestdata(t, "circle", "official_webhooks_test.json")
		h := http.Header{circle.HeaderKeyID: {circleOfficialKeyID}, circle.HeaderSignature: {circleOfficialSig}}
		a := s.post("/webhooks/circle", h, body)
		require.Equal(t, http.StatusOK, a.Status, a.Body)
		assert.Equal(t, "ignored", a.outcome(t))
		// The official signature under the other configured key id is refused.
		h.Set(circle.HeaderKeyID, circleTestKeyID)
		assert.Equal(t, http.StatusUnauthorized, s.post("/webhooks/circle", h, body).Status)
	})
	assert.EqualValues(t, 1, s.eventCount(), "test notifications post nothing")
}

func (s *e2eStack) post(path string, header http.Header, body []byte) answer {
	return postTo(s.srv, path, header, body)
}

func (s *e2eStack) do(req *http.Request) answer { return doRequest(s.srv, req) }

func (s *e2eStack) balances(streams ...string) map[string]int64 {
	return streamBalances(s.t, s.store, streams...)
}

func (s *e2eStack) streamTypes(stream string) []string { return streamTypes(s.t, s.store, stream) }

// reconItems counts the stream's reconciliation items flagged and cleared,
// by kind.
func (s *e2eStack) reconItems(stream string) (flagged, cleared map[string]int) {
	s.t.Helper()
	evs, err := s.store.ReadStream(context.Background(), stream)
	require.NoError(s.t, err)
	flagged, cleared = map[string]int{}, map[string]int{}
	for _, r := range evs {
		e, err := payment.Decode(r.Type, r.Data)
		require.NoError(s.t, err)
		switch e := e.(type) {
		case payment.Flagged:
			flagged[e.Kind]++
		case payment.Cleared:
			cleared[e.Kind]++
		}
	}
	return flagged, cleared
}

func (s *e2eStack) scalar(q string, args ...any) int64 { return queryInt(s.t, s.pool, q, args...) }

func (s *e2eStack) scalarText(q string, args ...any) string {
	return queryText(s.t, s.pool, q, args...)
}

func (s *e2eStack) inboxCount() int64 { return s.scalar(`SELECT count(*) FROM webhook_inbox`) }
func (s *e2eStack) eventCount() int64 { return s.scalar(`SELECT count(*) FROM events`) }
