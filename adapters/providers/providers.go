// Package providers is the seam between the HTTP layer and the per-provider
// adapters (one package each under adapters/providers). An adapter verifies a
// webhook on the exact bytes received, before anything is parsed, and then
// normalizes it into delivery.Event values the domain understands. The HTTP
// layer maps ErrUnauthorized to 401 (nothing stored) and the provider/money
// normalization errors to 400. What differs between providers beyond that is
// declared here too, so the HTTP layer names no provider: how a recorded
// delivery is acknowledged (Acknowledger) and whether deliveries are held
// until the provider confirms them (Holder).
package providers

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"
	"unicode/utf8"

	"github.com/onceledger/onceledger/domain/delivery"
)

// Adapter verifies a request's signature on the raw bytes and normalizes it.
type Adapter interface {
	// Name is the provider name used in URLs, stream ids and the inbox
	// ("stripe", "standard", ...).
	Name() string
	// Parse verifies (constant time, key rotation, replay window) and then
	// normalizes. Errors wrap ErrUnauthorized (→ 401, nothing stored) or
	// delivery.ErrMalformed / delivery.ErrMissingField /
	// delivery.ErrInvalidAmount / money.ErrUnknownCurrency (→ 400). Most
	// providers return exactly one event; batch providers (Adyen) several.
	// Every returned event has passed Validate.
	Parse(r Request) ([]delivery.Event, error)
}

// Request is what an adapter needs from one HTTP delivery. Body must be the
// bytes exactly as received: signatures are over them, not over a re-encoding.
type Request struct {
	Header http.Header
	Body   []byte
	Now    time.Time // the receive time replay windows are measured against
	URL    string    // the URL as subscribed, for schemes that sign it (Square)
}

// ReceivedAt is the time the delivery's replay window is measured against:
// Now, or the wall clock when Now is unset.
func (r Request) ReceivedAt() time.Time {
	if r.Now.IsZero() {
		return time.Now()
	}
	return r.Now
}

// ErrUnauthorized is wrapped by every verification failure: missing or bad
// signature headers, no matching signature, timestamp outside the window.
var ErrUnauthorized = errors.New("signature verification failed")

// Unauthorized returns a verification failure (wrapping ErrUnauthorized)
// saying why.
func Unauthorized(why string) error {
	return fmt.Errorf("%w: %s", ErrUnauthorized, why)
}

// Single is the result of Parse for a provider that sends one event per
// delivery: the normalized event, once it passes Validate, or the error.
func Single(ev delivery.Event, err error) ([]delivery.Event, error) {
	if err != nil {
		return nil, err
	}
	if err := ev.Validate(); err != nil {
		return nil, err
	}
	return []delivery.Event{ev}, nil
}

// PayloadHash is the hex SHA-256 of the bytes a delivery was verified on. The
// inbox compares it on redelivery to tell an exact duplicate from a conflict.
func PayloadHash(b []byte) string {
	sum := sha256.Sum256(b)
	var text [2 * sha256.Size]byte
	hex.Encode(text[:], sum[:])
	return string(text[:]) // one allocation: EncodeToString makes two
}

// FallbackKey derives a dedup key for providers whose events carry no id:
// "fp:" + hex SHA-256 of the canonical JSON, so a redelivery that differs only
// in key order or whitespace gets the same key. Numbers keep their literal
// text (decoded as json.Number): decoding into float64 would make distinct
// large amounts collide, turning a new event into a false duplicate.
// Bytes that are not valid UTF-8 JSON are hashed as they are, because
// re-encoding would replace invalid bytes and could merge distinct payloads.
func FallbackKey(raw []byte) string {
	if canon, ok := canonicalJSON(raw); ok {
		return "fp:" + PayloadHash(canon)
	}
	return "fp:" + PayloadHash(raw)
}

func canonicalJSON(raw []byte) ([]byte, bool) {
	if !utf8.Valid(raw) {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, false // trailing data: not one JSON value
	}
	// encoding/json sorts map keys, which is what makes the form canonical.
	out, err := json.Marshal(v)
	if err != nil {
		return nil, false
	}
	return out, true
}

// Ack is an answer the adapter shapes: Status with Body, and ContentType
// when set (an empty body needs none). Status 0 is 200 for a recorded
// delivery; a Refuser's failure answer has its status set by the HTTP
// layer, which decides every error's status in one place.
type Ack struct {
	Status      int
	ContentType string
	Body        []byte
}

// Acknowledger is implemented by an adapter whose provider expects a
// particular answer to a delivery it will not send again. Adapters without
// it are answered 200 with JSON {"status": outcome}.
type Acknowledger interface {
	// Acknowledge returns the answer for a delivery recorded with outcome
	// ("accepted", "duplicate", "ignored").
	Acknowledge(outcome string) Ack
}

// Refuser is implemented by an adapter whose provider expects failures in
// its own shape (WeChat Pay: {"code":"FAIL","message":…}). The HTTP layer
// writes the body Failure returns with the 4xx/5xx status it maps err to;
// adapters without it get the JSON {"error":…} every endpoint answers.
type Refuser interface {
	// Failure returns the body of the answer refusing a delivery with err;
	// its Status is ignored.
	Failure(err error) Ack
}

// Holder is implemented by an adapter whose deliveries carry no signature
// (PayPal IPN): they are stored unverified and applied only once the
// provider confirmed them (postback).
type Holder interface {
	// HoldsDeliveries reports whether deliveries are held for verification.
	HoldsDeliveries() bool
}

// Holds reports whether a's deliveries are held for verification.
func Holds(a Adapter) bool {
	h, ok := a.(Holder)
	return ok && h.HoldsDeliveries()
}
