package sign

import (
	"errors"
	"net/http"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stripe/stripe-go/v82/webhook"
)

const (
	stripeSecret   = "whsec_test_loadgen_0123456789"
	standardSecret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
)

func TestStripeSignatureVerifiesWithStripeSDK(t *testing.T) {
	body := []byte(`{"id":"evt_1","object":"event","type":"payout.paid","created":1764410400,"data":{"object":{"id":"po_1","amount":100,"currency":"usd"}}}`)
	ts := time.Unix(1764410400, 0)
	header := Stripe(stripeSecret, ts, body)
	if err := webhook.ValidatePayloadIgnoringTolerance(body, header, stripeSecret); err != nil {
		t.Fatalf("stripe-go rejects our signature %q: %v", header, err)
	}
	// Same bytes, fresh timestamp: what the SDK checks by default.
	if err := webhook.ValidatePayload(body, Stripe(stripeSecret, time.Now(), body), stripeSecret); err != nil {
		t.Fatalf("fresh signature rejected: %v", err)
	}
	tampered := append([]byte{}, body...)
	tampered[len(tampered)-3] = '9'
	if err := webhook.ValidatePayloadIgnoringTolerance(tampered, header, stripeSecret); err == nil {
		t.Fatal("tampered body accepted")
	}
	if err := webhook.ValidatePayloadIgnoringTolerance(body, header, stripeSecret+"x"); err == nil {
		t.Fatal("signature valid under another secret")
	}
}

func TestStandardSignatureVerifiesWithReferenceLibrary(t *testing.T) {
	s, err := NewStandard(standardSecret)
	if err != nil {
		t.Fatal(err)
	}
	ref, err := standardwebhooks.NewWebhook(standardSecret)
	if err != nil {
		t.Fatal(err)
	}
	body := []byte(`{"type":"payment.captured","timestamp":"2026-11-29T10:00:00Z","data":{"payment_id":"pay_1","capture_id":"cap_1","amount":1000,"currency":"USD","fee":30}}`)
	h := http.Header{}
	s.Headers(h, "msg_1", time.Now(), body)
	if err := ref.Verify(body, h); err != nil {
		t.Fatalf("reference library rejects our headers %v: %v", h, err)
	}
	// The reference signer must produce exactly our header.
	ts := time.Unix(1764410400, 0)
	s.Headers(h, "msg_2", ts, body)
	want, err := ref.Sign("msg_2", ts, body)
	if err != nil {
		t.Fatal(err)
	}
	if got := h.Get("webhook-signature"); got != want {
		t.Fatalf("signature %q, reference %q", got, want)
	}
	h.Set("webhook-id", "msg_3") // the id is signed
	if err := ref.VerifyIgnoringTimestamp(body, h); err == nil {
		t.Fatal("signature survived a changed webhook-id")
	}
}

func TestStandardRejectsBadSecrets(t *testing.T) {
	for _, s := range []string{"", "whsec_", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_not base64!"} {
		if _, err := NewStandard(s); !errors.Is(err, ErrBadSecret) {
			t.Errorf("NewStandard(%q) err = %v", s, err)
		}
	}
}
