package ledger

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestAccountNames(t *testing.T) {
	assert.Equal(t, "provider:stripe:balance", ProviderBalance("stripe"))
	assert.Equal(t, "expenses:fees:adyen", ProviderFees("adyen"))
	assert.Equal(t, "receivable:disputes:paypal", DisputeReceivable("paypal"))
}

func TestCheck(t *testing.T) {
	const max, min = math.MaxInt64, math.MinInt64
	cases := []struct {
		name     string
		ps       []Posting
		cur      string
		sum      int64
		overflow bool
	}{
		{name: "empty"},
		{name: "balanced", ps: []Posting{{"a", "USD", 970}, {"b", "USD", 30}, {"c", "USD", -1000}}},
		{name: "two currencies balanced", ps: []Posting{{"a", "USD", 5}, {"a", "EUR", 7}, {"b", "EUR", -7}, {"b", "USD", -5}}},
		{name: "unbalanced", ps: []Posting{{"a", "USD", 5}, {"b", "USD", -4}}, cur: "USD", sum: 1},
		{name: "first currency in code order", ps: []Posting{{"a", "USD", 5}, {"a", "EUR", -2}}, cur: "EUR", sum: -2},
		{name: "other currency does not offset", ps: []Posting{{"a", "USD", 5}, {"b", "EUR", -5}}, cur: "EUR", sum: -5},
		// MaxInt64 + MaxInt64 + 2 wraps to 0 in int64 arithmetic.
		{name: "wrap to zero is caught", ps: []Posting{{"a", "USD", max}, {"b", "USD", max}, {"c", "USD", 2}}, cur: "USD", sum: max, overflow: true},
		{name: "negative overflow", ps: []Posting{{"a", "USD", min}, {"b", "USD", min}}, cur: "USD", sum: min, overflow: true},
		{name: "large but balanced", ps: []Posting{{"a", "USD", max}, {"b", "USD", max}, {"c", "USD", min}, {"d", "USD", min}, {"e", "USD", 2}}},
		{name: "intermediate overflow, final fits", ps: []Posting{{"a", "USD", max}, {"b", "USD", 10}, {"c", "USD", min}}, cur: "USD", sum: 9},
		{name: "min int", ps: []Posting{{"a", "USD", min}}, cur: "USD", sum: min},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := Check(tc.ps)
			if tc.cur == "" {
				require.NoError(t, err, "Check")
				return
			}
			var u *Unbalanced
			require.ErrorAs(t, err, &u, "Check")
			require.Equal(t, tc.cur, string(u.Currency), "currency")
			require.Equal(t, tc.sum, u.Sum, "sum")
			require.Equal(t, tc.overflow, u.Overflow, "overflow")
			require.NotEmpty(t, u.Error(), "empty error text")
		})
	}
}
