package ledger

import (
	"errors"
	"math"
	"testing"
)

func TestAccountNames(t *testing.T) {
	if got := ProviderBalance("stripe"); got != "provider:stripe:balance" {
		t.Error(got)
	}
	if got := ProviderFees("adyen"); got != "expenses:fees:adyen" {
		t.Error(got)
	}
	if got := DisputeReceivable("paypal"); got != "receivable:disputes:paypal" {
		t.Error(got)
	}
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
				if err != nil {
					t.Fatalf("Check = %v, want nil", err)
				}
				return
			}
			var u *Unbalanced
			if !errors.As(err, &u) {
				t.Fatalf("Check = %v, want *Unbalanced", err)
			}
			if string(u.Currency) != tc.cur || u.Sum != tc.sum || u.Overflow != tc.overflow {
				t.Fatalf("Check = %+v, want %s %d overflow=%v", *u, tc.cur, tc.sum, tc.overflow)
			}
			if u.Error() == "" {
				t.Fatal("empty error text")
			}
		})
	}
}
