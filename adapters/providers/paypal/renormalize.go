package paypal

import (
	"fmt"
	"strings"

	"github.com/onceledger/onceledger/domain/delivery"
)

// Renormalize normalizes a stored webhook's raw body with the current code,
// without verifying a signature: the inbox row was verified when it arrived
// (onceledger redrive). Rows of the IPN channel (keys "ipn:…", form bodies
// whose facts PayPal's postback confirmed) are not re-normalized here.
func (a *Adapter) Renormalize(dedupKey string, raw []byte) (delivery.Event, error) {
	if strings.HasPrefix(dedupKey, "ipn:") {
		return delivery.Event{}, fmt.Errorf("%w: %s is an IPN message; IPN deliveries are not re-normalized", delivery.ErrMalformed, dedupKey)
	}
	return normalize(raw)
}
