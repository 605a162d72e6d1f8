package money

import (
	"errors"
	"fmt"
	"math"
)

// ErrOverflow is returned (wrapped) when a sum of amounts leaves int64.
var ErrOverflow = errors.New("amount overflows int64 minor units")

// Add returns a+b, or an error wrapping ErrOverflow when the sum does not
// fit in int64: a ledger total must never wrap around.
func Add(a, b int64) (int64, error) {
	s := a + b
	// Overflow iff both operands have the same sign and the sum's differs.
	if (a >= 0) == (b >= 0) && (s >= 0) != (a >= 0) {
		return 0, fmt.Errorf("%w: %d + %d", ErrOverflow, a, b)
	}
	return s, nil
}

// SaturatingAdd returns a+b clamped to [MinInt64, MaxInt64]. Read models use
// it: a projection that met an overflowing sum must not stop for good (it
// would retry the same event forever), and a pinned total is visibly wrong
// where a wrapped one would look plausible.
func SaturatingAdd(a, b int64) int64 {
	s, err := Add(a, b)
	if err == nil {
		return s
	}
	if a > 0 {
		return math.MaxInt64
	}
	return math.MinInt64
}

// FromProviderMinor converts an amount a provider states in its own minor
// units, with exponent providerExp, into ISO 4217 minor units of c. Some
// providers' APIs keep an exponent that ISO has changed (Stripe carries ISK
// as two-decimal; Adyen CLP two-decimal, CVE zero-decimal). An amount that
// would need rounding (Stripe ISK 150 = 1.50 kr, and ISK has no minor unit)
// or does not fit in int64 is an error wrapping ErrInvalidAmount.
func FromProviderMinor(amount int64, providerExp int, c Currency) (int64, error) {
	exp, ok := exponents[c]
	if !ok {
		return 0, fmt.Errorf("%w: %q", ErrUnknownCurrency, string(c))
	}
	switch {
	case providerExp > exp:
		div := pow10(providerExp - exp)
		if amount%div != 0 {
			return 0, fmt.Errorf("%w: %d in units of 10^-%d %s is not a whole number of %s minor units (exponent %d)",
				ErrInvalidAmount, amount, providerExp, c, c, exp)
		}
		return amount / div, nil
	case providerExp < exp:
		mul := pow10(exp - providerExp)
		if amount > math.MaxInt64/mul || amount < math.MinInt64/mul {
			return 0, fmt.Errorf("%w: %d %s out of range in ISO minor units", ErrInvalidAmount, amount, c)
		}
		return amount * mul, nil
	}
	return amount, nil
}

func pow10(n int) int64 {
	p := int64(1)
	for i := 0; i < n; i++ {
		p *= 10
	}
	return p
}
