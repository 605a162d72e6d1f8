// Package money holds exact amounts: int64 minor units with an ISO 4217
// currency. Decimal strings in major units (PayPal, Circle) are converted with
// the currency's exponent and never rounded.
package money

import (
	"errors"
	"fmt"
	"math"
	"strings"
)

// Currency is an upper-case ISO 4217 alphabetic code.
type Currency string

var (
	ErrUnknownCurrency = errors.New("unknown currency")
	ErrInvalidAmount   = errors.New("invalid amount")
)

// ParseCurrency accepts a code in any case and returns it upper-cased, or an
// error wrapping ErrUnknownCurrency that names the input. Surrounding spaces
// are not trimmed: a provider that pads its currency sends a malformed
// payload, and we would rather see that than guess.
func ParseCurrency(s string) (Currency, error) {
	c := Currency(strings.ToUpper(s))
	if _, ok := exponents[c]; !ok {
		return "", fmt.Errorf("%w: %q", ErrUnknownCurrency, s)
	}
	return c, nil
}

// Known reports whether c is an active ISO 4217 code with a minor unit.
func (c Currency) Known() bool {
	_, ok := exponents[c]
	return ok
}

// Exponent is the number of minor-unit digits (JPY 0, USD 2, KWD 3). It is 0
// for an unknown code; validate with ParseCurrency or Known first.
func (c Currency) Exponent() int { return exponents[c] }

// ParseMajor converts an exact decimal amount in major units ("10.50") into
// minor units of c (1050).
//
// Accepted: an optional leading '-' (PayPal IPN reports refunds with a negative
// mc_gross), one or more digits, and optionally a '.' followed by one or more
// digits. Fraction digits beyond the currency's exponent are accepted only when
// they are zeros ("10.500" USD is 1050), because they then state the same
// amount exactly; any non-zero excess digit ("10.001" USD, "5.5" JPY) would
// need rounding and is rejected. Everything else is rejected: empty input, a
// '+' sign, spaces, exponent notation, thousands separators, several dots, a
// bare dot (".5", "5."), and values outside int64 minor units.
//
// Errors wrap ErrInvalidAmount or ErrUnknownCurrency and quote the input.
func ParseMajor(s string, c Currency) (int64, error) {
	exp, ok := exponents[c]
	if !ok {
		return 0, fmt.Errorf("%w: %q", ErrUnknownCurrency, string(c))
	}
	bad := func(why string) (int64, error) {
		return 0, fmt.Errorf("%w: %q (%s): %s", ErrInvalidAmount, s, c, why)
	}
	rest := s
	neg := false
	if strings.HasPrefix(rest, "-") {
		neg = true
		rest = rest[1:]
	}
	intPart, frac, hasDot := strings.Cut(rest, ".")
	if intPart == "" {
		return bad("no digits before the decimal point")
	}
	if hasDot && frac == "" {
		return bad("no digits after the decimal point")
	}
	if !allDigits(intPart) || !allDigits(frac) {
		return bad("not a plain decimal number")
	}
	if len(frac) > exp {
		if strings.Trim(frac[exp:], "0") != "" {
			return bad(fmt.Sprintf("more than %d decimal places", exp))
		}
		frac = frac[:exp]
	}
	// Accumulate the magnitude in uint64 so that the most negative int64
	// (whose magnitude is MaxInt64+1) is representable.
	limit := uint64(math.MaxInt64)
	if neg {
		limit++
	}
	var mag uint64
	push := func(d byte) bool {
		v := uint64(d - '0')
		if mag > (limit-v)/10 {
			return false
		}
		mag = mag*10 + v
		return true
	}
	for i := 0; i < len(intPart); i++ {
		if !push(intPart[i]) {
			return bad("out of range")
		}
	}
	for i := 0; i < exp; i++ {
		d := byte('0')
		if i < len(frac) {
			d = frac[i]
		}
		if !push(d) {
			return bad("out of range")
		}
	}
	if neg {
		// Two's complement negation of the magnitude; correct for MinInt64 too.
		return int64(-mag), nil
	}
	return int64(mag), nil
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// FormatMinor renders minor units of c as a decimal in major units with
// exactly the currency's exponent digits: 1000 USD "10.00", -5 USD "-0.05",
// 1000 JPY "1000". ParseMajor(FormatMinor(a, c), c) == a for every a.
func FormatMinor(amount int64, c Currency) string {
	exp := c.Exponent()
	neg := amount < 0
	mag := uint64(amount)
	if neg {
		mag = -mag // correct for MinInt64 as well
	}
	digits := fmt.Sprintf("%0*d", exp+1, mag)
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	b.WriteString(digits[:len(digits)-exp])
	if exp > 0 {
		b.WriteByte('.')
		b.WriteString(digits[len(digits)-exp:])
	}
	return b.String()
}
