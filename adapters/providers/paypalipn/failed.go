package paypalipn

import (
	"github.com/onceledger/onceledger/adapters/providers/payload"
	"github.com/onceledger/onceledger/domain/delivery"
)

// failedAmount gives a Denied or Failed message's fact the attempted
// amount (mc_gross in mc_currency), when both read: a failure posts
// nothing, and a message that was always accepted without them still is.
func failedAmount(f *delivery.Fact, fields map[string]string) {
	c, err := payload.Currency("mc_currency", fields["mc_currency"])
	if err != nil || fields["mc_gross"] == "" {
		return
	}
	if v, err := amount(fields["mc_gross"], "mc_gross", c, true); err == nil {
		f.Amount, f.Currency = v, c
	}
}
