// Package stripe verifies Stripe webhooks and normalizes them into
// delivery.Events.
//
// Verification follows Stripe's v1 scheme on the raw bytes: header
// "Stripe-Signature: t=<unix>,v1=<hex>[,v1=<hex>...]", HMAC-SHA256 over
// t + "." + body keyed with the whole signing secret (including "whsec_").
// Several secrets may be configured (rotation) and Stripe may send several v1
// signatures while it rolls a secret; any match passes. The payload is parsed
// by this package, not by stripe.ConstructEvent: that function also rejects
// events whose API version differs from the SDK's, which is not our concern
// (we read a handful of fields that are stable across versions).
//
// The payload must not name a key twice in one object, at any depth (400):
// see payload.UniqueKeys.
//
// Payment key (the stream). A payment is keyed by its PaymentIntent id
// (pi_...): data.object.id on payment_intent.*, data.object.payment_intent
// on charge.*, refund.* and charge.dispute.*. A charge made through the
// legacy Charges API has no PaymentIntent (payment_intent null), and
// neither have its refunds and disputes; such a payment is keyed by its
// charge id (ch_... or py_...): data.object.id on charge.*,
// data.object.charge on refunds and disputes. Both rules name the same
// charge, so a legacy charge, its refunds and its disputes share one
// stream. (Stripe sets payment_intent on a charge's refunds and disputes
// whenever the charge has one, so a PaymentIntent payment never falls back.)
//
// API versions. Accounts pinned to a version before 2022-11-15 send
// payment_intent.succeeded without latest_charge but with the list
// charges.data; the captured charge is then taken from that list (the
// succeeded, captured entry when it holds several). If neither names a
// charge, the delivery is recorded with no facts rather than refused:
// charge.succeeded reports the same capture, under the charge id.
package stripe

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/domain/delivery"
)

// Name is the provider name in URLs, stream ids and the inbox.
const Name = "stripe"

// Adapter verifies and normalizes Stripe webhooks. It is safe for concurrent use.
type Adapter struct {
	secrets   [][]byte
	tolerance time.Duration
}

var _ providers.Adapter = (*Adapter)(nil)

// New returns an adapter accepting signatures made with any of secrets (the
// whole "whsec_..." strings; blank entries are skipped) whose timestamp lies
// within ±tolerance of the receive time. A timestamp too far in the future is
// rejected like a stale one: it would otherwise extend the replay window.
func New(secrets []string, tolerance time.Duration) (*Adapter, error) {
	keys, _ := providers.Keys(secrets, nil) // raw bytes: cannot fail
	a := &Adapter{secrets: keys, tolerance: tolerance}
	if len(a.secrets) == 0 {
		return nil, errors.New("stripe: no signing secret configured")
	}
	if tolerance <= 0 {
		return nil, fmt.Errorf("stripe: tolerance must be positive, got %v", tolerance)
	}
	return a, nil
}

// Name implements providers.Adapter.
func (a *Adapter) Name() string { return Name }

// Parse implements providers.Adapter: verify first, on the raw bytes, then
// normalize. It returns exactly one event.
func (a *Adapter) Parse(r providers.Request) ([]delivery.Event, error) {
	if err := a.verify(r.Header.Get("Stripe-Signature"), r.Body, r.ReceivedAt()); err != nil {
		return nil, err
	}
	return providers.Single(normalize(r.Body))
}

// Sign returns a Stripe-Signature header value for body signed with secret at
// t, as Stripe would send it. For tests and local tooling; production code
// only verifies.
func Sign(secret string, t time.Time, body []byte) string {
	return fmt.Sprintf("t=%d,v1=%s", t.Unix(), hex.EncodeToString(mac([]byte(secret), t.Unix(), body)))
}

func mac(secret []byte, t int64, body []byte) []byte {
	var ts [20]byte
	return providers.MACSHA256(secret, strconv.AppendInt(ts[:0], t, 10), dot, body)
}

var dot = []byte(".")

// verify checks the signature before the timestamp, so that "timestamp
// outside tolerance" is only ever said about an authentic delivery (useful to
// spot clock skew), never confirmed to a forger.
func (a *Adapter) verify(header string, body []byte, now time.Time) error {
	if header == "" {
		return providers.Unauthorized("missing Stripe-Signature header")
	}
	var (
		ts    int64
		haveT bool
		sigs  [][]byte
	)
	for _, part := range strings.Split(header, ",") {
		k, v, ok := strings.Cut(strings.TrimSpace(part), "=")
		if !ok {
			return providers.Unauthorized("invalid Stripe-Signature header")
		}
		switch k {
		case "t":
			if haveT {
				return providers.Unauthorized("invalid Stripe-Signature header: several timestamps")
			}
			t, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				return providers.Unauthorized("invalid Stripe-Signature header: bad timestamp")
			}
			ts, haveT = t, true
		case "v1":
			sig, err := hex.DecodeString(v)
			if err != nil || len(sig) != sha256.Size {
				continue // a garbled entry must not hide a valid one beside it
			}
			sigs = append(sigs, sig)
		default:
			// v0 and future schemes: not ours to trust.
		}
	}
	if !haveT {
		return providers.Unauthorized("invalid Stripe-Signature header: no timestamp")
	}
	if len(sigs) == 0 {
		return providers.Unauthorized("no valid signature")
	}
	if !providers.MatchAny(a.secrets, func(secret []byte) []byte { return mac(secret, ts, body) }, sigs...) {
		return providers.Unauthorized("no valid signature")
	}
	// Sub saturates instead of overflowing, so absurd timestamps still compare.
	if d := now.Sub(time.Unix(ts, 0)); d > a.tolerance || d < -a.tolerance {
		return providers.Unauthorized("timestamp outside tolerance")
	}
	return nil
}
