package circle

import "github.com/onceledger/onceledger/domain/delivery"

// Renormalize normalizes a stored delivery's raw body with the current code,
// without verifying a signature: the inbox row was verified when it arrived
// (onceledger redrive). The dedup key is in the body.
func (a *Adapter) Renormalize(_ string, raw []byte) (delivery.Event, error) { return normalize(raw) }
