package adyen

import (
	"encoding/json"
	"fmt"

	"github.com/onceledger/onceledger/domain/delivery"
)

// Renormalize normalizes a stored notification item with the current code,
// without verifying its HMAC: the inbox row was verified when it arrived
// (onceledger redrive). The inbox keeps each item of a batch by itself, in
// its canonical form, which is what raw is.
func (a *Adapter) Renormalize(_ string, raw []byte) (delivery.Event, error) {
	var it item
	if err := json.Unmarshal(raw, &it); err != nil {
		return delivery.Event{}, fmt.Errorf("%w: stored NotificationRequestItem: %v", delivery.ErrMalformed, err)
	}
	it.raw = raw
	return normalize(it)
}
