package money

import "slices"

// Exponents is the one table of a provider API's minor-unit digits where
// they differ from ISO 4217: every path that reads that provider's integer
// amounts (its webhooks, its API lists, its reports) converts through the
// same table, so two paths cannot disagree about a currency.
type Exponents map[Currency]int

// Of is how many minor digits the provider uses for c.
func (e Exponents) Of(c Currency) int {
	if x, ok := e[c]; ok {
		return x
	}
	return c.Exponent()
}

// ToISO converts amount, in the provider's minor units of c, into ISO 4217
// minor units; an amount that would need rounding is an error wrapping
// ErrInvalidAmount (FromProviderMinor).
func (e Exponents) ToISO(amount int64, c Currency) (int64, error) {
	x, ok := e[c]
	if !ok || x == c.Exponent() {
		return amount, nil
	}
	return FromProviderMinor(amount, x, c)
}

// StripeAPI: Stripe's API and webhooks (docs.stripe.com/currencies). Its
// zero-decimal currencies are counted in whole units: BIF, CLP, DJF, GNF,
// JPY, KMF, KRW, MGA, PYG, RWF, UGX, VND, VUV, XAF, XOF, XPF; of them ISO
// gives MGA two digits. Its special cases: ISK stays two-decimal in the API
// ("an ISK amount of 100 will continue to represent 1 króna", to be evenly
// divisible by 100) where ISO gives it none; HUF and TWD are two-decimal in
// the API as in ISO (only payouts must be divisible by 100, still stated in
// hundredths); UGX is on the zero-decimal list, as in ISO.
var StripeAPI = Exponents{
	"BIF": 0, "CLP": 0, "DJF": 0, "GNF": 0, "JPY": 0, "KMF": 0, "KRW": 0, "MGA": 0,
	"PYG": 0, "RWF": 0, "UGX": 0, "VND": 0, "VUV": 0, "XAF": 0, "XOF": 0, "XPF": 0,
	"ISK": 2, "HUF": 2, "TWD": 2,
}

// AdyenAPI: Adyen's API and notifications
// (docs.adyen.com/development-resources/currency-codes: "For CLP, CVE, IDR,
// and ISK the standard has a different number of decimals than shown in
// our currency codes table ... the decimals in the table on this page are
// leading"): CLP 2 (ISO 0), CVE 0 (ISO 2), IDR 0 (ISO 2), ISK 2 (ISO 0).
var AdyenAPI = Exponents{"CLP": 2, "CVE": 0, "IDR": 0, "ISK": 2}

// Currencies lists every currency of the ISO 4217 table, sorted.
func Currencies() []Currency {
	out := make([]Currency, 0, len(exponents))
	for c := range exponents {
		out = append(out, c)
	}
	slices.Sort(out)
	return out
}
