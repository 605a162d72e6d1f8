package projections_test

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/domain/assertion"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/ledger"
	"github.com/onceledger/onceledger/domain/payment"
	"github.com/onceledger/onceledger/projections/views"
)

func (f *fixture) appendAssertion(ctx context.Context, stream string, evs ...assertion.Event) {
	f.t.Helper()
	data := make([]eventstore.EventData, len(evs))
	for i, e := range evs {
		typ, body, err := assertion.Encode(e)
		require.NoError(f.t, err)
		data[i] = eventstore.EventData{ID: uuid.New(), Type: typ, Data: body}
	}
	f.appendRaw(ctx, stream, data...)
}

func (f *fixture) capture(ctx context.Context, id string, at time.Time, amount, fee int64) {
	f.appendEvents(ctx, delivery.PaymentStream("stripe", id), payment.Captured{
		Meta:      payment.Meta{Provider: "stripe", PaymentKey: id, DedupKey: "evt_" + id, OccurredAt: at},
		CaptureID: "ch_" + id, Amount: amount, Fee: fee, Currency: "USD"})
}

func stated(at time.Time, key string, amount int64) assertion.Stated {
	return assertion.Stated{Provider: "stripe", Account: ledger.ProviderBalance("stripe"), Currency: "USD", Source: "test",
		At: at, Points: []assertion.Point{{Key: key, AsOf: at, Amount: amount}}}
}

func (f *fixture) mismatchItem(ctx context.Context) (views.ReconciliationItem, bool) {
	f.t.Helper()
	var out views.ReconciliationItem
	found := false
	require.NoError(f.t, f.db.Reconciliation(ctx, views.ReconciliationFilter{Kind: assertion.ReconBalanceMismatch},
		func(it views.ReconciliationItem) error { out, found = it, true; return nil }))
	return out, found
}

// An assertion is compared with the ledger as of its moment; a late fact
// makes a differing one agree and resolves the account's one item by
// itself; a later differing assertion opens it again, naming the
// difference; an adjustment effective before it resolves it, and its
// postings reach the ledger.
func TestAssertionsFollowTheLedger(t *testing.T) {
	ctx := ctxT(t)
	f := newFixture(t)
	stop := f.run(ctx)
	defer func() { require.NoError(t, stop()) }()
	t0 := time.Date(2026, 11, 2, 10, 0, 0, 0, time.UTC)
	acct := ledger.ProviderBalance("stripe")
	stream := assertion.StreamID(acct, "USD")

	f.capture(ctx, "pi_1", t0, 1000, 30)
	f.appendAssertion(ctx, stream, stated(t0.Add(time.Hour), "a1", 970), stated(t0.Add(3*time.Hour), "a3", 1970))
	f.waitCaughtUp(ctx)
	rows, err := f.db.BalanceAssertions(ctx, views.AssertionFilter{Provider: "stripe"})
	require.NoError(t, err)
	require.Len(t, rows, 2)
	assert.Equal(t, views.AssertionAgreed, rows[0].Status())
	assert.Equal(t, int64(970), rows[1].Ledger)
	assert.Equal(t, int64(-1000), rows[1].Difference())
	it, ok := f.mismatchItem(ctx)
	require.True(t, ok)
	assert.Equal(t, "open", it.Status)
	assert.Contains(t, it.Details, "difference -10.00")

	// The capture no webhook delivered in time, at 2h: the 3h assertion
	// agrees now, the 1h one is untouched.
	f.capture(ctx, "pi_2", t0.Add(2*time.Hour), 1000, 0)
	f.waitCaughtUp(ctx)
	rows, err = f.db.BalanceAssertions(ctx, views.AssertionFilter{Status: views.AssertionDiffers})
	require.NoError(t, err)
	assert.Empty(t, rows)
	it, _ = f.mismatchItem(ctx)
	assert.Equal(t, "resolved", it.Status)
	assert.Empty(t, it.ResolvedBy)

	// A later statement differs: the item opens again, naming it.
	f.appendAssertion(ctx, stream, stated(t0.Add(5*time.Hour), "a5", 1900))
	f.waitCaughtUp(ctx)
	it, _ = f.mismatchItem(ctx)
	assert.Equal(t, "open", it.Status)
	assert.Contains(t, it.Details, "difference 0.70")

	// An adjustment at 4h writes off the 0.70 and resolves the item.
	f.appendAssertion(ctx, stream, assertion.Adjusted{ID: uuid.New(), ItemID: it.ID(), Provider: "stripe",
		EffectiveAt: t0.Add(4 * time.Hour), Actor: "alice", Note: "fee charged without a webhook", At: t0.Add(6 * time.Hour),
		Postings: []ledger.Posting{{Account: "expenses:fees:stripe", Currency: "USD", Amount: 70}, {Account: acct, Currency: "USD", Amount: -70}}})
	f.waitCaughtUp(ctx)
	rows, err = f.db.BalanceAssertions(ctx, views.AssertionFilter{Account: acct, Currency: "USD"})
	require.NoError(t, err)
	require.Len(t, rows, 3)
	for _, r := range rows {
		assert.Equal(t, views.AssertionAgreed, r.Status(), "%+v", r)
	}
	it, _ = f.mismatchItem(ctx)
	assert.Equal(t, "resolved", it.Status)
	assert.Equal(t, "alice", it.ResolvedBy)
	assert.Equal(t, int64(1900), f.balances(ctx)[acctCur{acct, "USD"}])
}
