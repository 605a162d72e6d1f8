package money_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/domain/money"
)

func TestProviderExponents(t *testing.T) {
	for _, c := range []struct {
		e      money.Exponents
		cur    money.Currency
		in     int64
		want   int64
		digits int
	}{
		{money.StripeAPI, "MGA", 1000, 100000, 0}, {money.StripeAPI, "ISK", 50000, 500, 2},
		{money.StripeAPI, "JPY", 500, 500, 0}, {money.StripeAPI, "HUF", 2000, 2000, 2},
		{money.StripeAPI, "USD", 2000, 2000, 2}, {money.AdyenAPI, "CLP", 150000, 1500, 2},
		{money.AdyenAPI, "IDR", 1500, 150000, 0}, {money.AdyenAPI, "EUR", 1000, 1000, 2},
	} {
		got, err := c.e.ToISO(c.in, c.cur)
		require.NoError(t, err, c.cur)
		assert.Equal(t, c.want, got, c.cur)
		assert.Equal(t, c.digits, c.e.Of(c.cur), c.cur)
	}
	_, err := money.StripeAPI.ToISO(150, "ISK")
	assert.ErrorIs(t, err, money.ErrInvalidAmount, "1.50 kr has no ISO form")
	assert.IsIncreasing(t, money.Currencies())
	assert.Contains(t, money.Currencies(), money.Currency("MGA"))
}
