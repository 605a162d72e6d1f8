package views

import (
	"slices"
	"time"
)

// DayVolume is one UTC day's volume in one currency, positive minor units:
// captures, refunds (net of reversals) and disputes opened, from the
// journal.
type DayVolume struct {
	Day      time.Time
	Currency string
	Captured int64
	Refunded int64
	Disputed int64
}

// DayOutcome counts the deliveries first seen on one UTC day in one status.
type DayOutcome struct {
	Day    time.Time
	Status string
	Count  int64
}

// CurrencyTrial sums the debit and the credit balances of one currency
// over every account: the books balance when they are equal.
type CurrencyTrial struct {
	Currency string
	Debits   int64 // sum of positive balances
	Credits  int64 // sum of negative balances, as a positive number
}

// Balanced reports debits = credits.
func (t CurrencyTrial) Balanced() bool { return t.Debits == t.Credits }

// TrialByCurrency sums balances into one CurrencyTrial per currency, by
// currency.
func TrialByCurrency(bals []Balance) []CurrencyTrial {
	trial := map[string]*CurrencyTrial{}
	var currencies []string
	for _, b := range bals {
		t := trial[b.Currency]
		if t == nil {
			t = &CurrencyTrial{Currency: b.Currency}
			trial[b.Currency] = t
			currencies = append(currencies, b.Currency)
		}
		if b.Balance > 0 {
			t.Debits += b.Balance
		} else {
			t.Credits -= b.Balance
		}
	}
	slices.Sort(currencies)
	out := make([]CurrencyTrial, 0, len(currencies))
	for _, c := range currencies {
		out = append(out, *trial[c])
	}
	return out
}
