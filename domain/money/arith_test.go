package money

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAddIsChecked(t *testing.T) {
	s, err := Add(math.MaxInt64-1, 1)
	require.NoError(t, err)
	assert.Equal(t, int64(math.MaxInt64), s)
	_, err = Add(math.MaxInt64, 1)
	assert.ErrorIs(t, err, ErrOverflow)
	_, err = Add(math.MinInt64, -1)
	assert.ErrorIs(t, err, ErrOverflow)
	s, err = Add(math.MinInt64, math.MaxInt64)
	require.NoError(t, err)
	assert.Equal(t, int64(-1), s)
}

func TestSaturatingAdd(t *testing.T) {
	assert.Equal(t, int64(math.MaxInt64), SaturatingAdd(math.MaxInt64, 5))
	assert.Equal(t, int64(math.MinInt64), SaturatingAdd(math.MinInt64, -5))
	assert.Equal(t, int64(7), SaturatingAdd(3, 4))
}

func TestFromProviderMinor(t *testing.T) {
	// Stripe: "ISK will remain a two-decimal currency in the Stripe API, and
	// an ISK amount of 100 will continue to represent 1 króna"; ISO 4217 has
	// no minor unit for ISK.
	v, err := FromProviderMinor(50000, 2, "ISK")
	require.NoError(t, err)
	assert.Equal(t, int64(500), v)
	_, err = FromProviderMinor(50050, 2, "ISK")
	assert.ErrorIs(t, err, ErrInvalidAmount, "a fraction of a króna is not representable")

	// Adyen: CVE has 0 decimals at Adyen, 2 in ISO.
	v, err = FromProviderMinor(125, 0, "CVE")
	require.NoError(t, err)
	assert.Equal(t, int64(12500), v)
	_, err = FromProviderMinor(math.MaxInt64/10, 0, "CVE")
	assert.ErrorIs(t, err, ErrInvalidAmount)

	v, err = FromProviderMinor(1000, 2, "USD")
	require.NoError(t, err)
	assert.Equal(t, int64(1000), v)

	_, err = FromProviderMinor(1, 2, "XXX")
	assert.ErrorIs(t, err, ErrUnknownCurrency)
}
