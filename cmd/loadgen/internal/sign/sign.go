// Package sign signs webhook deliveries the way the providers do, so the load
// generator's requests pass the server's verification. It is written from the
// providers' published specifications (docs/providers.md), not shared with
// the server's verifiers, and is checked against the providers' own SDKs in
// its tests: a bug common to signer and verifier cannot hide there.
package sign

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ErrBadSecret reports a secret that cannot be used to sign.
var ErrBadSecret = errors.New("bad signing secret")

// Stripe returns the Stripe-Signature header value for body sent at ts:
// HMAC-SHA256 over "t.body", hex, keyed with the whole secret string
// (including its whsec_ prefix, as Stripe does).
func Stripe(secret string, ts time.Time, body []byte) string {
	t := strconv.FormatInt(ts.Unix(), 10)
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(t))
	mac.Write([]byte{'.'})
	mac.Write(body)
	return "t=" + t + ",v1=" + hex.EncodeToString(mac.Sum(nil))
}

// Standard signs per the Standard Webhooks spec. The key is the base64
// decoding of the part after "whsec_".
type Standard struct{ key []byte }

// NewStandard parses a whsec_<base64> secret.
func NewStandard(secret string) (*Standard, error) {
	raw, ok := strings.CutPrefix(strings.TrimSpace(secret), "whsec_")
	if !ok || raw == "" {
		return nil, fmt.Errorf("%w: a Standard Webhooks secret looks like whsec_<base64>", ErrBadSecret)
	}
	key, err := base64.StdEncoding.DecodeString(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrBadSecret, err)
	}
	return &Standard{key: key}, nil
}

// Headers sets webhook-id, webhook-timestamp and webhook-signature on h:
// HMAC-SHA256 over "id.timestamp.body", base64, as "v1,<sig>".
func (s *Standard) Headers(h http.Header, msgID string, ts time.Time, body []byte) {
	t := strconv.FormatInt(ts.Unix(), 10)
	mac := hmac.New(sha256.New, s.key)
	mac.Write([]byte(msgID))
	mac.Write([]byte{'.'})
	mac.Write([]byte(t))
	mac.Write([]byte{'.'})
	mac.Write(body)
	h.Set("webhook-id", msgID)
	h.Set("webhook-timestamp", t)
	h.Set("webhook-signature", "v1,"+base64.StdEncoding.EncodeToString(mac.Sum(nil)))
}
