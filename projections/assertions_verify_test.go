package projections_test

import (
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/domain/assertion"
	"github.com/onceledger/onceledger/domain/ledger"
	"github.com/onceledger/onceledger/domain/period"
	"github.com/onceledger/onceledger/projections"
)

// Opening balances and adjustments are entries like the providers' facts:
// a period closed over them freezes them, verify recomputes the same
// figures from history (it books them too) and finds their postings
// balanced.
func TestVerifyBooksOpeningBalancesAndAdjustments(t *testing.T) {
	ctx := ctxT(t)
	f := newPeriodsFixture(t, "UTC")
	stop := f.run(ctx)
	defer func() { assert.NoError(t, stop()) }()
	acct := ledger.ProviderBalance("stripe")
	f.appendAssertion(ctx, assertion.StreamID(acct, "USD"),
		assertion.Opened{ID: uuid.New(), Provider: "stripe", Account: acct, Currency: "USD", AsOf: at("2026-11-03T00:00:00Z"),
			Amount: 7000, Actor: "alice", Note: "before the ledger", At: at("2026-11-20T00:00:00Z")},
		assertion.Adjusted{ID: uuid.New(), ItemID: "x/balance_mismatch/y", Provider: "stripe", EffectiveAt: at("2026-11-04T00:00:00Z"),
			Postings: []ledger.Posting{{Account: "expenses:writeoffs", Currency: "USD", Amount: 50}, {Account: acct, Currency: "USD", Amount: -50}},
			Actor:    "alice", Note: "fee", At: at("2026-11-20T00:00:00Z")})
	f.waitHead(ctx)
	f.clock = at("2026-12-02T09:00:00Z")
	_, err := f.ops.ClosePeriod(ctx, period.MustParse("2026-11"), "alice", "November books")
	require.NoError(t, err)
	f.waitHead(ctx)
	nov := f.trialBalance(ctx, "2026-11")
	require.True(t, nov.Frozen)
	assert.Equal(t, int64(6950), lineOf(nov, acct).Closing)
	vs, err := f.svc.Verify(ctx)
	require.NoError(t, err)
	assert.Empty(t, vs)
	// A rebuild books them the same: nothing differs, the frozen figures stay.
	rep, err := f.svc.Rebuild(ctx, nil, projections.RebuildOptions{BatchSize: 2})
	require.NoError(t, err)
	assert.Empty(t, rep.Differences)
	assert.Equal(t, int64(6950), lineOf(f.trialBalance(ctx, "2026-11"), acct).Closing)
}
