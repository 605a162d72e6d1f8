package payment

import "github.com/onceledger/onceledger/domain/delivery"

// failedOf is the Failed event of a failure fact. The attempted amount is
// kept only with its currency: an amount in no known currency says nothing
// an accountant could read. It posts nothing either way.
func failedOf(m Meta, f delivery.Fact) Failed {
	e := Failed{Meta: m, Reason: delivery.TruncateReason(f.Reason)}
	if f.Currency != "" {
		e.Amount, e.Currency = f.Amount, f.Currency
	}
	return e
}
