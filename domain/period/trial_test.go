package period_test

import (
	"math"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/domain/ledger"
	"github.com/onceledger/onceledger/domain/period"
)

func entry(account string, amount int64, booked, effective string) period.Entry {
	b, e := period.MustParse(booked), period.MustParse(effective)
	return period.Entry{Posting: ledger.Posting{Account: account, Currency: "USD", Amount: amount}, Booked: b, Effective: e, Late: b != e}
}

func TestComputeTrialBalance(t *testing.T) {
	entries := []period.Entry{
		entry("provider:stripe:balance", 970, "2026-11", "2026-11"),
		entry("expenses:fees:stripe", 30, "2026-11", "2026-11"),
		entry("revenue:sales", -1000, "2026-11", "2026-11"),
		// A dispute of November booked into December.
		entry("receivable:disputes:stripe", 400, "2026-12", "2026-11"),
		entry("provider:stripe:balance", -400, "2026-12", "2026-11"),
		entry("revenue:sales", -50, "2027-01", "2027-01"), // after: ignored
	}
	tb, err := period.Compute(period.MustParse("2026-12"), entries)
	require.NoError(t, err)
	assert.Equal(t, []period.Balance{
		{Account: "expenses:fees:stripe", Currency: "USD", Opening: 30, Closing: 30},
		{Account: "provider:stripe:balance", Currency: "USD", Opening: 970, Credits: 400, Closing: 570},
		{Account: "receivable:disputes:stripe", Currency: "USD", Debits: 400, Closing: 400},
		{Account: "revenue:sales", Currency: "USD", Opening: -1000, Closing: -1000},
	}, tb.Lines)
	assert.Equal(t, entries[3:5], tb.Adjustments)

	// The books model gives the same figures.
	assert.Len(t, period.Hash(tb.Period, tb.Lines), 64)
}

func TestHashIsCanonical(t *testing.T) {
	p := period.MustParse("2026-11")
	a := period.Balance{Account: "a", Currency: "USD", Debits: 5, Closing: 5}
	b := period.Balance{Account: "b", Currency: "USD", Credits: 5, Closing: -5}
	assert.Equal(t, period.Hash(p, []period.Balance{a, b}), period.Hash(p, []period.Balance{b, a}), "order does not matter")
	assert.NotEqual(t, period.Hash(p, []period.Balance{a, b}), period.Hash(p.Next(), []period.Balance{a, b}), "the period is hashed")
	b.Credits, b.Closing = 6, -6
	assert.NotEqual(t, period.Hash(p, []period.Balance{a}), period.Hash(p, []period.Balance{a, b}))
	// Pinned: changing the canonical form must be deliberate (a new
	// version). printf 'onceledger/trial-balance/v1\n2026-11\na\tUSD\t0\t5\t0\t5\n' | sha256sum
	assert.Equal(t, "eb39f8224f30a45ba2c0aea4646cf1dca670c25c10727cda57f3e27619ab1f01", period.Hash(p, []period.Balance{a}))
}

func TestLinesOverflow(t *testing.T) {
	_, err := period.Lines([]period.Sum{{Account: "a", Currency: "USD", Opening: math.MaxInt64, Debits: 1}})
	assert.ErrorIs(t, err, period.ErrOverflow)
	ls, err := period.Lines([]period.Sum{{Account: "a", Currency: "USD"}})
	require.NoError(t, err)
	assert.Empty(t, ls, "an account with nothing in it is left out")
}
