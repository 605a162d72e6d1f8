package sign

import (
	"net/http"
	"testing"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
	require.NoError(t, webhook.ValidatePayloadIgnoringTolerance(body, header, stripeSecret), "stripe-go rejects our signature %q", header)
	// Same bytes, fresh timestamp: what the SDK checks by default.
	require.NoError(t, webhook.ValidatePayload(body, Stripe(stripeSecret, time.Now(), body), stripeSecret), "fresh signature rejected")
	tampered := append([]byte{}, body...)
	tampered[len(tampered)-3] = '9'
	assert.Error(t, webhook.ValidatePayloadIgnoringTolerance(tampered, header, stripeSecret), "tampered body accepted")
	assert.Error(t, webhook.ValidatePayloadIgnoringTolerance(body, header, stripeSecret+"x"), "signature valid under another secret")
}

func TestStandardSignatureVerifiesWithReferenceLibrary(t *testing.T) {
	s, err := NewStandard(standardSecret)
	require.NoError(t, err)
	ref, err := standardwebhooks.NewWebhook(standardSecret)
	require.NoError(t, err)
	body := []byte(`{"type":"payment.captured","timestamp":"2026-11-29T10:00:00Z","data":{"payment_id":"pay_1","capture_id":"cap_1","amount":1000,"currency":"USD","fee":30}}`)
	h := http.Header{}
	s.Headers(h, "msg_1", time.Now(), body)
	require.NoError(t, ref.Verify(body, h), "reference library rejects our headers %v", h)
	// The reference signer must produce exactly our header.
	ts := time.Unix(1764410400, 0)
	s.Headers(h, "msg_2", ts, body)
	want, err := ref.Sign("msg_2", ts, body)
	require.NoError(t, err)
	require.Equal(t, want, h.Get("webhook-signature"), "signature, reference")
	h.Set("webhook-id", "msg_3") // the id is signed
	assert.Error(t, ref.VerifyIgnoringTimestamp(body, h), "signature survived a changed webhook-id")
}

func TestStandardRejectsBadSecrets(t *testing.T) {
	for _, s := range []string{"", "whsec_", "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "whsec_not base64!"} {
		_, err := NewStandard(s)
		assert.ErrorIs(t, err, ErrBadSecret, "NewStandard(%q)", s)
	}
}
