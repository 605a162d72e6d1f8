package money

import (
	"math"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExponentTable(t *testing.T) {
	want := map[Currency]int{
		"USD": 2, "EUR": 2, "GBP": 2, "CHF": 2, "XCD": 2, "XCG": 2, "ZWG": 2, "SLE": 2, "VES": 2, "VED": 2,
		"BHD": 3, "IQD": 3, "JOD": 3, "KWD": 3, "LYD": 3, "OMR": 3, "TND": 3,
		"CLF": 4, "UYW": 4,
		"JPY": 0, "KRW": 0, "VND": 0, "CLP": 0, "ISK": 0, "UGX": 0, "XAF": 0, "XOF": 0, "XPF": 0,
		"PYG": 0, "RWF": 0, "KMF": 0, "GNF": 0, "DJF": 0, "BIF": 0, "VUV": 0, "UYI": 0,
	}
	for c, e := range want {
		if !assert.Truef(t, c.Known(), "%s missing from the table", c) {
			continue
		}
		assert.Equalf(t, e, c.Exponent(), "%s exponent", c)
	}
	// Withdrawn codes and codes without a minor unit are not accepted.
	for _, c := range []Currency{"HRK", "ZWL", "VEF", "STD", "MRO", "LTL", "XAU", "XDR", "XTS", "XXX"} {
		assert.Falsef(t, c.Known(), "%s should not be in the table", c)
	}
	assert.GreaterOrEqualf(t, len(exponents), 150, "table has only %d codes", len(exponents))
	for c, e := range exponents {
		assert.Lenf(t, c, 3, "malformed code %q", c)
		assert.Equalf(t, strings.ToUpper(string(c)), string(c), "malformed code %q", c)
		assert.Truef(t, e >= 0 && e <= 4, "%s: implausible exponent %d", c, e)
	}
}

func TestParseCurrency(t *testing.T) {
	for _, in := range []string{"usd", "USD", "Usd", "kwd"} {
		c, err := ParseCurrency(in)
		if assert.NoErrorf(t, err, "ParseCurrency(%q)", in) {
			assert.Equalf(t, strings.ToUpper(in), string(c), "ParseCurrency(%q)", in)
		}
	}
	for _, in := range []string{"", "US", "USDD", "ABC", " usd", "xau", "hrk"} {
		_, err := ParseCurrency(in)
		checkRefused(t, err, ErrUnknownCurrency, in, "ParseCurrency(%q)", in)
	}
}

// checkRefused fails the test unless err wraps target and names the refused
// input in quotes. msgAndArgs say what was called.
func checkRefused(t *testing.T, err, target error, in string, msgAndArgs ...any) {
	t.Helper()
	if assert.ErrorIs(t, err, target, msgAndArgs...) {
		assert.ErrorContains(t, err, `"`+in+`"`, "the error names the input")
	}
}

func TestParseMajor(t *testing.T) {
	ok := []struct {
		in   string
		c    Currency
		want int64
	}{
		{"10.00", "USD", 1000},
		{"10", "USD", 1000},
		{"10.5", "USD", 1050},
		{"0.01", "USD", 1},
		{"0", "USD", 0},
		{"-0.00", "USD", 0},
		{"-10.05", "USD", -1005},
		{"-0.05", "USD", -5},
		{"007.10", "USD", 710},
		{"10.000", "USD", 1000}, // zero excess digits state the same amount
		{"10.5000000", "USD", 1050},
		{"1000", "JPY", 1000},
		{"1000.0", "JPY", 1000},
		{"1.234", "KWD", 1234},
		{"1.2", "KWD", 1200},
		{"1.2345", "CLF", 12345},
		{"92233720368547758.07", "USD", math.MaxInt64},
		{"-92233720368547758.08", "USD", math.MinInt64},
		{"9223372036854775807", "JPY", math.MaxInt64},
		{"-9223372036854775808", "JPY", math.MinInt64},
	}
	for _, tc := range ok {
		got, err := ParseMajor(tc.in, tc.c)
		if assert.NoErrorf(t, err, "ParseMajor(%q, %s)", tc.in, tc.c) {
			assert.Equalf(t, tc.want, got, "ParseMajor(%q, %s)", tc.in, tc.c)
		}
	}
	bad := []struct {
		in string
		c  Currency
	}{
		{"", "USD"}, {"-", "USD"}, {".", "USD"}, {".5", "USD"}, {"5.", "USD"}, {"-.5", "USD"},
		{"10.001", "USD"}, {"10.0001", "USD"}, {"5.5", "JPY"}, {"1.2345", "KWD"},
		{"+10", "USD"}, {"--10", "USD"}, {" 10", "USD"}, {"10 ", "USD"}, {"1 000", "USD"},
		{"1,000.00", "USD"}, {"1e3", "USD"}, {"1E3", "USD"}, {"0x10", "USD"}, {"1.2.3", "USD"},
		{"10..0", "USD"}, {"NaN", "USD"}, {"Inf", "USD"}, {"١٠", "USD"}, {"10-", "USD"},
		{"92233720368547758.08", "USD"}, {"-92233720368547758.09", "USD"},
		{"9223372036854775808", "JPY"}, {"99999999999999999999999", "USD"},
	}
	for _, tc := range bad {
		_, err := ParseMajor(tc.in, tc.c)
		checkRefused(t, err, ErrInvalidAmount, tc.in, "ParseMajor(%q, %s)", tc.in, tc.c)
	}
	_, err := ParseMajor("10.00", "XYZ")
	assert.ErrorIs(t, err, ErrUnknownCurrency, "unknown currency")
}

func TestFormatMinor(t *testing.T) {
	cases := []struct {
		a    int64
		c    Currency
		want string
	}{
		{1000, "USD", "10.00"},
		{-5, "USD", "-0.05"},
		{5, "USD", "0.05"},
		{0, "USD", "0.00"},
		{1000, "JPY", "1000"},
		{-1000, "JPY", "-1000"},
		{0, "JPY", "0"},
		{1, "KWD", "0.001"},
		{12345, "CLF", "1.2345"},
		{math.MaxInt64, "USD", "92233720368547758.07"},
		{math.MinInt64, "USD", "-92233720368547758.08"},
		{math.MinInt64, "JPY", "-9223372036854775808"},
	}
	for _, tc := range cases {
		assert.Equalf(t, tc.want, FormatMinor(tc.a, tc.c), "FormatMinor(%d, %s)", tc.a, tc.c)
	}
}

var fuzzCurrencies = []Currency{"USD", "JPY", "KWD", "CLF", "EUR"}

func FuzzParseMajor(f *testing.F) {
	for _, s := range []string{"10.00", "-0.05", "1000", "1.234", "92233720368547758.07", "-92233720368547758.08", "1e3", "", "10.000", ".5"} {
		f.Add(s, uint8(0), int64(0))
	}
	f.Add("1", uint8(1), int64(math.MinInt64))
	f.Add("1", uint8(3), int64(math.MaxInt64))
	f.Fuzz(func(t *testing.T, s string, ci uint8, a int64) {
		c := fuzzCurrencies[int(ci)%len(fuzzCurrencies)]
		// Every int64 formats to a string that parses back to it.
		back, err := ParseMajor(FormatMinor(a, c), c)
		require.NoErrorf(t, err, "FormatMinor(%d, %s) = %q", a, c, FormatMinor(a, c))
		require.Equalf(t, a, back, "FormatMinor(%d, %s) = %q parses back", a, c, FormatMinor(a, c))
		// Arbitrary input never panics; what parses is canonicalised by
		// FormatMinor to a string that parses to the same value.
		v, err := ParseMajor(s, c)
		if err != nil {
			require.ErrorIsf(t, err, ErrInvalidAmount, "ParseMajor(%q, %s): unexpected error class", s, c)
			return
		}
		canon := FormatMinor(v, c)
		again, err := ParseMajor(canon, c)
		require.NoErrorf(t, err, "ParseMajor(%q) = %d, canonical %q", s, v, canon)
		require.Equalf(t, v, again, "ParseMajor(%q) = %d, canonical %q parses back", s, v, canon)
		// The accepted input and its canonical form differ only in leading
		// zeros, trailing fraction zeros and a sign on zero.
		require.Falsef(t, strings.ContainsAny(s, " +eE,"), "ParseMajor accepted %q", s)
	})
}
