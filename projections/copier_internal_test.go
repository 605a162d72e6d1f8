package projections

import (
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/period"
)

// periodSumsOf is what readmodel periodSums adds up from stored entries
// (the reference): the opening from prev's frozen lines if given, else
// every entry booked before p; the debits and credits of p.
func periodSumsOf(entries []LedgerEntry, p period.Period, prevFrozen []period.Balance, frozen bool) []period.Sum {
	type ac struct {
		a string
		c money.Currency
	}
	out := map[ac]*period.Sum{}
	get := func(k ac) *period.Sum {
		if out[k] == nil {
			out[k] = &period.Sum{Account: k.a, Currency: k.c}
		}
		return out[k]
	}
	if frozen {
		for _, l := range prevFrozen {
			get(ac{l.Account, l.Currency}).Opening = l.Closing
		}
	}
	for _, e := range entries {
		k := ac{e.Account, e.Currency}
		switch c := e.Period.Compare(p); {
		case c < 0 && !frozen:
			get(k).Opening += e.Amount
		case c == 0 && e.Amount > 0:
			get(k).Debits += e.Amount
		case c == 0 && e.Amount < 0:
			get(k).Credits -= e.Amount
		case c == 0:
			get(k)
		}
	}
	var res []period.Sum
	for _, s := range out {
		res = append(res, *s)
	}
	return res
}

func sortedSums(ss []period.Sum) []period.Sum {
	slices.SortFunc(ss, func(a, b period.Sum) int {
		return strings.Compare(a.Account+"/"+string(a.Currency), b.Account+"/"+string(b.Currency))
	})
	return ss
}

// The checksum pass's period sums (in memory) are the sums the database
// adds up from the stored entries: before and after a frozen close, after
// a reopen; a sum leaving int64 makes the pass give way to the stored
// replay.
func TestPeriodTotalsAddUpAsTheStoredEntries(t *testing.T) {
	oct, nov, dec := period.MustParse("2026-10"), period.MustParse("2026-11"), period.MustParse("2026-12")
	entries := []LedgerEntry{
		{Period: oct, Account: "cash", Currency: "USD", Amount: 100},
		{Period: oct, Account: "revenue", Currency: "USD", Amount: -100},
		{Period: oct, Account: "cash", Currency: "EUR", Amount: 5},
		{Period: oct, Account: "fees", Currency: "EUR", Amount: -5},
		{Period: nov, Account: "cash", Currency: "USD", Amount: 40},
		{Period: nov, Account: "cash", Currency: "USD", Amount: -15},
		{Period: nov, Account: "revenue", Currency: "USD", Amount: -25},
		{Period: nov, Account: "zero", Currency: "USD", Amount: 0},
		{Period: dec, Account: "cash", Currency: "USD", Amount: 7},
		{Period: dec, Account: "revenue", Currency: "USD", Amount: -7},
	}
	pt := newPeriodTotals()
	pt.add(entries[:4])
	pt.add(entries[4:])
	for _, p := range []period.Period{oct, nov, dec} {
		got, err := pt.periodSums(p)
		require.NoError(t, err)
		assert.Equal(t, sortedSums(periodSumsOf(entries, p, nil, false)), sortedSums(got), "%s, nothing frozen", p)
	}
	// October frozen (with a figure the entries do not give: the opening
	// must come from it), November's opening is its closing.
	frozen := []period.Balance{{Account: "cash", Currency: "USD", Closing: 99}, {Account: "bank", Currency: "USD", Closing: -99}}
	pt.freeze(PeriodClose{Period: oct, Lines: frozen})
	got, err := pt.periodSums(nov)
	require.NoError(t, err)
	assert.Equal(t, sortedSums(periodSumsOf(entries, nov, frozen, true)), sortedSums(got), "after October's close")
	got, err = pt.periodSums(dec)
	require.NoError(t, err)
	assert.Equal(t, sortedSums(periodSumsOf(entries, dec, nil, false)), sortedSums(got), "December: November is not frozen")
	pt.reopen(PeriodReopen{Period: oct})
	got, err = pt.periodSums(nov)
	require.NoError(t, err)
	assert.Equal(t, sortedSums(periodSumsOf(entries, nov, nil, false)), sortedSums(got), "after the reopen")

	pt.add([]LedgerEntry{{Period: oct, Account: "cash", Currency: "USD", Amount: math.MaxInt64}})
	_, err = pt.periodSums(nov)
	require.ErrorIs(t, err, errChecksumPassUnfit)
}

// The balance totals the ledger lane hands to FinishBulk are exact sums
// per account and currency, and none at all once a sum leaves int64 (the
// database then adds up the loaded entries itself).
func TestEntryTotalsAddUpOrStepAside(t *testing.T) {
	tt := newEntryTotals()
	tt.add([]LedgerEntry{
		{Account: "cash", Currency: "USD", Amount: 500},
		{Account: "cash", Currency: "USD", Amount: -200},
		{Account: "cash", Currency: "EUR", Amount: 7},
	})
	got := tt.balances()
	slices.SortFunc(got, func(a, b BalanceTotal) int { return strings.Compare(string(a.Currency), string(b.Currency)) })
	assert.Equal(t, []BalanceTotal{
		{Account: "cash", Currency: "EUR", Balance: 7, Entries: 1},
		{Account: "cash", Currency: "USD", Balance: 300, Entries: 2},
	}, got)

	tt.add([]LedgerEntry{{Account: "cash", Currency: "EUR", Amount: math.MaxInt64}})
	assert.Nil(t, tt.balances(), "a sum past int64 must not be handed over")
}
