package adyen

import "github.com/onceledger/onceledger/adapters/providers"

var _ providers.Acknowledger = (*Adapter)(nil)

// Acknowledge implements providers.Acknowledger. Adyen treats a notification
// as delivered only when the answer's body is exactly "[accepted]"; anything
// else is retried ("Accept notifications", Adyen webhook docs).
func (a *Adapter) Acknowledge(string) providers.Ack {
	return providers.Ack{ContentType: "text/plain; charset=utf-8", Body: []byte("[accepted]")}
}
