package standard

import "github.com/onceledger/onceledger/domain/delivery"

// Renormalize normalizes a stored delivery's raw body with the current code,
// without verifying a signature: the inbox row was verified when it arrived
// (onceledger redrive). The dedup key is the row's: Standard Webhooks carry
// it in the webhook-id header, which is not stored.
func (a *Adapter) Renormalize(dedupKey string, raw []byte) (delivery.Event, error) {
	return normalize(dedupKey, raw)
}
