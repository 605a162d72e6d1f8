package outbound

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/onceledger/onceledger/domain/payment"
)

// payment.failed carries the attempted amount when the provider reported
// it, as every amount of the vocabulary (minor units, decimal, currency),
// and no amount when it did not.
func TestPaymentFailedCarriesItsAmount(t *testing.T) {
	d := paymentData(payment.Failed{Reason: "card_declined", Amount: 900, Currency: "USD"})
	assert.Equal(t, map[string]any{"reason": "card_declined", "amount": int64(900), "amount_decimal": "9.00", "currency": "USD"}, d)
	d = paymentData(payment.Failed{Reason: "card_declined"})
	assert.Equal(t, map[string]any{"reason": "card_declined"}, d)
}
