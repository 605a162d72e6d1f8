package stripe

import (
	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/money"
)

// NormalizeEvent normalizes one Stripe Event object fetched from the API
// (GET /v1/events, as `onceledger backfill stripe` does) exactly as the
// webhook carrying it would be: an Event object is what a webhook body is,
// so the result has the same dedup key (the event id), payment key and
// facts, and a backfilled event and its webhook are one delivery. There is
// no signature to verify: the caller fetched the bytes itself, over TLS,
// authenticated with its own secret key. PayloadHash is over raw, which the
// API renders differently from the webhook's bytes; the inbox must compare
// facts, not bytes, to call the two a duplicate (docs/reference.md).
func NormalizeEvent(raw []byte) ([]delivery.Event, error) {
	return providers.Single(normalize(raw))
}

// MinorFromAPI converts an integer amount as Stripe's API counts it (text,
// as in the JSON) into ISO 4217 minor units of c: Stripe counts ISK in
// hundredths and MGA in whole units, against ISO's 0 and 2 digits.
func MinorFromAPI(amount string, c money.Currency) (int64, error) { return apiToISO(amount, c) }
