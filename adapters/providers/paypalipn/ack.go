package paypalipn

import "github.com/onceledger/onceledger/adapters/providers"

var (
	_ providers.Acknowledger = (*Adapter)(nil)
	_ providers.Holder       = (*Adapter)(nil)
)

// Acknowledge implements providers.Acknowledger: PayPal's IPN listener
// contract asks for an empty HTTP 200; the message is verified afterwards by
// posting it back.
func (a *Adapter) Acknowledge(string) providers.Ack { return providers.Ack{} }

// HoldsDeliveries implements providers.Holder: an IPN message carries no
// signature, so it is stored unverified and applied only after PayPal's
// postback answers VERIFIED.
func (a *Adapter) HoldsDeliveries() bool { return true }
