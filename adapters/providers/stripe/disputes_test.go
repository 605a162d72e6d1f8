package stripe_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/providers/internal/providertest"
	"github.com/onceledger/onceledger/domain/ledger"
	"github.com/onceledger/onceledger/domain/payment"
)

// ledgerAfter decides the fixtures in order, as the ingestion service would
// on one stream, and returns the non-zero balances and the history.
func ledgerAfter(t *testing.T, fixtures ...string) (map[string]int64, []payment.Event) {
	t.Helper()
	a := newAdapter(t)
	var history []payment.Event
	for _, f := range fixtures {
		ev := providertest.ParseOne(t, a, signed(providertest.Fixture(t, f), secret, now))
		out, err := payment.Decide(history, ev)
		require.NoError(t, err, f)
		history = append(history, out...)
	}
	return providertest.Balances(history), history
}

// Stripe's inquiries (warning_needs_response, then warning_closed) withdraw
// nothing: the ledger shows the capture only, and the inquiry on the stream.
func TestStripeInquiryPostsNothing(t *testing.T) {
	b, history := ledgerAfter(t, "charge.succeeded.json", "charge.dispute.created.inquiry.json",
		"charge.dispute.closed.inquiry_warning_closed.json")
	assert.Equal(t, map[string]int64{ledger.ProviderBalance("stripe"): 2000, ledger.RevenueSales: -2000}, b)
	var types []string
	for _, e := range history {
		types = append(types, e.Type())
	}
	assert.Equal(t, []string{payment.TypeCaptured, payment.TypeDisputeInquiry, payment.TypeDisputeWon}, types)
}

// A chargeback: created (listing its withdrawal) and funds_withdrawn are one
// movement into the receivable; funds_reinstated and closed won bring it back
// once.
func TestStripeChargebackFollowsItsFunds(t *testing.T) {
	b, _ := ledgerAfter(t, "charge.succeeded.json", "charge.dispute.created.json", "charge.dispute.funds_withdrawn.json")
	assert.Equal(t, int64(2000), b[ledger.DisputeReceivable("stripe")])
	assert.NotContains(t, b, ledger.ProviderBalance("stripe"), "the whole capture is held")

	b, _ = ledgerAfter(t, "charge.succeeded.json", "charge.dispute.created.json", "charge.dispute.funds_withdrawn.json",
		"charge.dispute.funds_reinstated.json", "charge.dispute.closed.won.json")
	assert.Equal(t, map[string]int64{ledger.ProviderBalance("stripe"): 2000, ledger.RevenueSales: -2000}, b)

	// Lost: the withdrawn amount is an expense.
	b, _ = ledgerAfter(t, "charge.succeeded.json", "charge.dispute.funds_withdrawn.json", "charge.dispute.closed.lost.json")
	assert.Equal(t, map[string]int64{ledger.ExpensesDispute: 2000, ledger.RevenueSales: -2000}, b)
}

// payout.failed after payout.paid reverses it (docs/reference.md: provider balance
// debit, bank:payouts credit).
func TestStripePayoutFailedReverses(t *testing.T) {
	b, history := ledgerAfter(t, "payout.paid.json", "payout.failed.json")
	assert.Empty(t, b)
	require.Len(t, history, 2)
	pf, ok := history[1].(payment.PayoutFailed)
	require.True(t, ok)
	assert.True(t, pf.WasPaid)
	assert.Equal(t, "The bank account has been closed.", pf.Reason)
}
