package model

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func mustApply(t *testing.T, l *Ledger, fs ...Fact) {
	t.Helper()
	for _, f := range fs {
		require.NoError(t, l.Apply(f), "apply %+v", f)
	}
}

// A hand-computed lifecycle, one line per docs/reference.md table row.
func TestLifecycleByHand(t *testing.T) {
	l := New()
	mustApply(t, l,
		Fact{Provider: "stripe", Kind: Capture, Currency: "USD", Amount: 10000, Fee: 320},
		Fact{Provider: "stripe", Kind: Refund, Currency: "USD", Amount: 2500},
		Fact{Provider: "stripe", Kind: Refund, Currency: "USD", Amount: 1000},
		Fact{Provider: "stripe", Kind: DisputeOpened, Currency: "USD", Amount: 6000},
		Fact{Provider: "stripe", Kind: DisputeLost, Currency: "USD", Amount: 6000},
		Fact{Provider: "stripe", Kind: DisputeOpened, Currency: "USD", Amount: 500},
		Fact{Provider: "stripe", Kind: DisputeWon, Currency: "USD", Amount: 500},
		Fact{Provider: "stripe", Kind: Payout, Currency: "USD", Amount: 400},
		Fact{Provider: "standard", Kind: Capture, Currency: "JPY", Amount: 5000}, // no fee
	)
	want := map[Key]int64{
		{"provider:stripe:balance", "USD"}:   10000 - 320 - 2500 - 1000 - 6000 - 500 + 500 - 400, // -220
		{"expenses:fees:stripe", "USD"}:      320,
		{"revenue:sales", "USD"}:             -10000,
		{"revenue:refunds", "USD"}:           3500,
		{"expenses:disputes", "USD"}:         6000,
		{"bank:payouts", "USD"}:              400,
		{"provider:standard:balance", "JPY"}: 5000,
		{"revenue:sales", "JPY"}:             -5000,
		// receivable:disputes:stripe nets to 0 and is not listed.
	}
	assert.Equal(t, want, l.Balances(), "balances")
	assert.Equal(t, int64(-220), l.Balance(Key{"provider:stripe:balance", "USD"}), "provider balance")
	assert.Empty(t, l.Unbalanced(), "unbalanced")
}

func TestEveryFactBalancesAndIsOrderIndependent(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 7))
	kinds := []Kind{Capture, Refund, DisputeOpened, DisputeWon, DisputeLost, Payout}
	var facts []Fact
	for range 2000 {
		a := 1 + rng.Int64N(1_000_000)
		f := Fact{Provider: []string{"stripe", "standard"}[rng.IntN(2)], Kind: kinds[rng.IntN(len(kinds))],
			Currency: []string{"USD", "EUR", "JPY"}[rng.IntN(3)], Amount: a}
		if f.Kind == Capture {
			f.Fee = rng.Int64N(a + 1)
		}
		ps, err := Postings(f)
		require.NoError(t, err)
		var sum int64
		for _, p := range ps {
			sum += p.Amount
			require.Equal(t, f.Currency, p.Currency, "posting in %s for a %s fact", p.Currency, f.Currency)
		}
		require.Zero(t, sum, "%+v postings sum to %d", f, sum)
		facts = append(facts, f)
	}
	a, b := New(), New()
	mustApply(t, a, facts...)
	rng.Shuffle(len(facts), func(i, j int) { facts[i], facts[j] = facts[j], facts[i] })
	mustApply(t, b, facts...)
	assert.Empty(t, Diff(a, b), "order changed the balances")
	assert.Empty(t, a.Unbalanced(), "unbalanced")
}

func TestInvalidFacts(t *testing.T) {
	for _, f := range []Fact{
		{Provider: "", Kind: Capture, Currency: "USD", Amount: 1},
		{Provider: "p", Kind: Capture, Currency: "", Amount: 1},
		{Provider: "p", Kind: Capture, Currency: "USD", Amount: 0},
		{Provider: "p", Kind: Refund, Currency: "USD", Amount: -5},
		{Provider: "p", Kind: Capture, Currency: "USD", Amount: 10, Fee: 11},
		{Provider: "p", Kind: Capture, Currency: "USD", Amount: 10, Fee: -1},
		{Provider: "p", Kind: Kind(99), Currency: "USD", Amount: 10},
	} {
		assert.ErrorIs(t, New().Apply(f), ErrInvalidFact, "%+v", f)
	}
}

func TestOverflowIsRefused(t *testing.T) {
	l := New()
	mustApply(t, l, Fact{Provider: "p", Kind: Payout, Currency: "USD", Amount: math.MaxInt64})
	require.ErrorIs(t, l.Apply(Fact{Provider: "p", Kind: Payout, Currency: "USD", Amount: 1}), ErrOverflow)
	// The refused fact must not have half-applied: bank:payouts still at max.
	assert.Equal(t, int64(math.MaxInt64), l.Balance(Key{BankPayouts, "USD"}), "bank:payouts")
}

func TestSubAndDiff(t *testing.T) {
	base, end := New(), New()
	k1, k2, k3 := Key{"a", "USD"}, Key{"b", "USD"}, Key{"a", "EUR"}
	_ = base.Add(k1, 100)
	_ = base.Add(k2, -7)
	_ = end.Add(k1, 150)
	_ = end.Add(k2, -7)
	_ = end.Add(k3, 3)
	delta, err := end.Sub(base)
	require.NoError(t, err)
	want := map[Key]int64{k1: 50, k3: 3}
	require.Equal(t, want, delta.Balances(), "delta")
	expected := New()
	_ = expected.Add(k1, 50)
	_ = expected.Add(k2, 1)
	d := Diff(expected, delta)
	// k1 agrees; sorted by account, then currency ("EUR" < "USD").
	wantD := []Difference{{Key: k3, Expected: 0, Actual: 3}, {Key: k2, Expected: 1, Actual: 0}}
	assert.Equal(t, wantD, d, "diff")
	assert.Empty(t, Diff(delta, delta), "self diff")
}
