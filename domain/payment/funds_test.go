package payment

import (
	"cmp"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"pgregory.net/rapid"

	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/ledger"
	"github.com/onceledger/onceledger/domain/money"
)

func summaryOf(history []Event) Summary {
	var s Summary
	for _, e := range history {
		s.Apply(e)
	}
	return s
}

func nonZero(b map[balanceKey]int64) map[balanceKey]int64 {
	out := map[balanceKey]int64{}
	for k, v := range b {
		if v != 0 {
			out[k] = v
		}
	}
	return out
}

var (
	stripeBalance    = balanceKey{ledger.ProviderBalance("stripe"), "USD"}
	stripeReceivable = balanceKey{ledger.DisputeReceivable("stripe"), "USD"}
	disputeExpenses  = balanceKey{ledger.ExpensesDispute, "USD"}
	sales            = balanceKey{ledger.RevenueSales, "USD"}
)

// Stripe documents an inquiry (status warning_needs_response or
// warning_under_review) as a dispute with no balance transactions: nothing
// is withdrawn, and warning_closed means it closed without becoming a
// chargeback. The ledger records both and posts nothing.
func TestInquiryPostsNothing(t *testing.T) {
	s := &stream{t: t}
	s.deliver(deliveryOf("e0", capture("ch_1", 1000, 0)))
	before := nonZero(balances(s.history))

	out := s.deliver(deliveryOf("created", disputeFact(delivery.KindDisputeInquiry, "du_1", 1000)))
	wantTypes(t, out, TypeDisputeInquiry)
	assert.Empty(t, Postings(out[0]))
	assert.Empty(t, s.deliver(deliveryOf("updated", disputeFact(delivery.KindDisputeInquiry, "du_1", 1000))))

	out = s.deliver(deliveryOf("closed", disputeFact(delivery.KindDisputeWon, "du_1", 1000)))
	wantTypes(t, out, TypeDisputeWon)
	assert.True(t, out[0].(DisputeWon).NoFunds)
	assert.Empty(t, Postings(out[0]))

	assert.Equal(t, before, nonZero(balances(s.history)))
	sum := summaryOf(s.history)
	assert.Zero(t, sum.DisputeOpen)
	assert.Equal(t, StatusCaptured, sum.Status())
}

// An inquiry that escalates: Stripe's charge.dispute.funds_withdrawn moves the
// amount; funds_reinstated gives it back; closed with status won adds the
// outcome and posts nothing more.
func TestDisputeFundsFollowTheProvider(t *testing.T) {
	s := &stream{t: t}
	s.deliver(deliveryOf("e0", capture("ch_1", 1000, 0)))
	wantTypes(t, s.deliver(deliveryOf("created", disputeFact(delivery.KindDisputeInquiry, "du_1", 1000))), TypeDisputeInquiry)

	out := s.deliver(deliveryOf("withdrawn", disputeFact(delivery.KindDisputeOpened, "du_1", 1000)))
	wantTypes(t, out, TypeDisputeFundsWithdrawn)
	assert.Equal(t, int64(1000), nonZero(balances(s.history))[stripeReceivable])
	assert.Equal(t, StatusDisputed, summaryOf(s.history).Status())

	out = s.deliver(deliveryOf("reinstated", disputeFact(delivery.KindDisputeFundsReinstated, "du_1", 1000)))
	wantTypes(t, out, TypeDisputeFundsReinstated)
	wantTypes(t, s.deliver(deliveryOf("closed", disputeFact(delivery.KindDisputeWon, "du_1", 1000))), TypeDisputeWon)

	b := nonZero(balances(s.history))
	assert.NotContains(t, b, stripeReceivable)
	assert.Equal(t, int64(1000), b[stripeBalance])
	assert.Equal(t, StatusCaptured, summaryOf(s.history).Status())
}

// A chargeback reported by charge.dispute.created (with balance transactions)
// and again by charge.dispute.funds_withdrawn is one withdrawal.
func TestDisputeWithdrawalReportedTwiceIsOne(t *testing.T) {
	s := &stream{t: t}
	s.deliver(deliveryOf("e0", capture("ch_1", 1000, 0)))
	wantTypes(t, s.deliver(deliveryOf("created", disputeFact(delivery.KindDisputeOpened, "du_1", 400))), TypeDisputeOpened)
	assert.Empty(t, s.deliver(deliveryOf("funds_withdrawn", disputeFact(delivery.KindDisputeOpened, "du_1", 400))))
	assert.Equal(t, int64(400), nonZero(balances(s.history))[stripeReceivable])
}

// A reinstatement overtaking the withdrawal still nets to nothing, and the
// dispute is recorded as having moved funds both ways.
func TestDisputeReinstatedBeforeWithdrawn(t *testing.T) {
	s := &stream{t: t}
	s.deliver(deliveryOf("e0", capture("ch_1", 1000, 0)))
	out := s.deliver(deliveryOf("reinstated", disputeFact(delivery.KindDisputeFundsReinstated, "du_1", 1000)))
	wantTypes(t, out, TypeDisputeOpened, TypeDisputeFundsReinstated)
	assert.Empty(t, s.deliver(deliveryOf("withdrawn", disputeFact(delivery.KindDisputeOpened, "du_1", 1000))))
	assert.NotContains(t, nonZero(balances(s.history)), stripeReceivable)
}

// docs/reference.md: a dispute that arrives before its payment posts nothing and
// opens dispute_before_payment; when the capture arrives it posts and the
// item resolves.
func TestDisputeBeforePayment(t *testing.T) {
	s := &stream{t: t}
	out := s.deliver(deliveryOf("d1", disputeFact(delivery.KindDisputeOpened, "du_1", 300)))
	wantTypes(t, out, TypeDisputePending, TypeFlagged)
	assert.Equal(t, ReconDisputeBeforePayment, out[1].(Flagged).Kind)
	assert.Equal(t, "du_1", out[1].(Flagged).Key)
	assert.Empty(t, nonZero(balances(s.history)), "nothing posts before the capture")

	// More facts of the same dispute wait too; the item is open once.
	wantTypes(t, s.deliver(deliveryOf("d2", disputeFact(delivery.KindDisputeLost, "du_1", 300))), TypeDisputePending)
	// An inquiry before the payment is a dispute before payment as well.
	wantTypes(t, s.deliver(deliveryOf("d3", disputeFact(delivery.KindDisputeInquiry, "du_2", 50))), TypeDisputePending, TypeFlagged)

	out = s.deliver(deliveryOf("c", capture("ch_1", 1000, 0)))
	wantTypes(t, out, TypeCaptured, TypeDisputeFundsWithdrawn, TypeDisputeLost, TypeCleared, TypeCleared)
	assert.Empty(t, openItems(s.history))
	b := nonZero(balances(s.history))
	assert.Equal(t, map[balanceKey]int64{stripeBalance: 700, disputeExpenses: 300, sales: -1000}, b)
	sum := summaryOf(s.history)
	assert.Equal(t, int64(300), sum.DisputeLost)
	assert.Equal(t, StatusDisputeLost, sum.Status())
}

// over_reversal: a customer refunded in full who then disputes. The dispute
// posts (the provider took the money) and the item opens; it clears when the
// dispute's funds come back.
func TestOverReversal(t *testing.T) {
	s := &stream{t: t}
	s.deliver(deliveryOf("c", capture("ch_1", 1000, 0)))
	wantTypes(t, s.deliver(deliveryOf("r", refundFact("re_1", 1000))), TypeRefundPosted)
	out := s.deliver(deliveryOf("d", disputeFact(delivery.KindDisputeOpened, "du_1", 1000)))
	wantTypes(t, out, TypeDisputeOpened, TypeFlagged)
	f := out[1].(Flagged)
	assert.Equal(t, ReconOverReversal, f.Kind)
	assert.Equal(t, overReversalKey, f.Key)
	assert.NotContains(t, openItems(s.history), reconKey{ReconOverRefund, overRefundKey}, "refunds alone are within captures")

	// An inquiry moves nothing, so it opens nothing.
	assert.Empty(t, s.deliver(deliveryOf("i", disputeFact(delivery.KindDisputeInquiry, "du_1", 1000))))
	out = s.deliver(deliveryOf("w", disputeFact(delivery.KindDisputeWon, "du_1", 1000)))
	wantTypes(t, out, TypeDisputeWon, TypeCleared)
	assert.Equal(t, ReconOverReversal, out[1].(Cleared).Kind)
	assert.Empty(t, openItems(s.history))
}

// The same over-reversal, reached in the other order: dispute, then refund.
func TestOverReversalDisputeThenRefund(t *testing.T) {
	s := &stream{t: t}
	s.deliver(deliveryOf("c", capture("ch_1", 1000, 0)))
	s.deliver(deliveryOf("d", disputeFact(delivery.KindDisputeLost, "du_1", 600)))
	out := s.deliver(deliveryOf("r", refundFact("re_1", 600)))
	wantTypes(t, out, TypeRefundPosted, TypeFlagged)
	assert.Equal(t, ReconOverReversal, out[1].(Flagged).Kind)
	// A second capture brings the facts level again.
	out = s.deliver(deliveryOf("c2", capture("ch_2", 200, 0)))
	wantTypes(t, out, TypeCaptured, TypeCleared)
}

// A dispute over the captures is over_reversal; a refund that then takes
// refunds alone over the captures makes it an over-refund, one item: the
// over_reversal clears as over_refund opens, and comes back when a capture
// leaves only the dispute over.
func TestOverReversalGivesWayToOverRefund(t *testing.T) {
	s := &stream{t: t}
	s.deliver(deliveryOf("c", capture("ch_1", 1000, 0)))
	s.deliver(deliveryOf("r", refundFact("re_1", 600)))
	out := s.deliver(deliveryOf("d", disputeFact(delivery.KindDisputeLost, "du_1", 600)))
	wantTypes(t, out, TypeDisputeOpened, TypeDisputeLost, TypeFlagged)
	wantItem(t, out[2], ReconOverReversal, overReversalKey)

	out = s.deliver(deliveryOf("r2", refundFact("re_2", 500)))
	wantTypes(t, out, TypeRefundPosted, TypeFlagged, TypeCleared)
	wantItem(t, out[1], ReconOverRefund, overRefundKey)
	wantItem(t, out[2], ReconOverReversal, overReversalKey)
	assert.Equal(t, map[reconKey]bool{{ReconOverRefund, overRefundKey}: true}, openItems(s.history))

	out = s.deliver(deliveryOf("c2", capture("ch_2", 200, 0)))
	wantTypes(t, out, TypeCaptured, TypeCleared, TypeFlagged)
	assert.Equal(t, map[reconKey]bool{{ReconOverReversal, overReversalKey}: true}, openItems(s.history))
}

// A payment stored with both items for one over-refund (as every
// over-refund was before one problem made one item) keeps them as they
// are: a later fact that changes nothing leaves both open, and the
// over_reversal clears when refunds plus disputes are back within the
// captures, as it did then.
func TestOverRefundStoredAsBothStaysAsItIs(t *testing.T) {
	m := Meta{Provider: "stripe", PaymentKey: "pi_1", DedupKey: "r"}
	s := &stream{t: t}
	s.deliver(deliveryOf("c", capture("ch_1", 100, 0)))
	s.history = append(s.history,
		RefundPosted{Meta: m, RefundID: "re_1", Amount: 150, Currency: "USD"},
		Flagged{Meta: m, Kind: ReconOverRefund, Key: overRefundKey, Details: "refunds 1.50 exceed captures 1.00"},
		Flagged{Meta: m, Kind: ReconOverReversal, Key: overReversalKey, Details: "refunds 1.50 plus disputes 0.00 against captures 1.00 exceed them"})
	both := map[reconKey]bool{{ReconOverRefund, overRefundKey}: true, {ReconOverReversal, overReversalKey}: true}
	require.Equal(t, both, openItems(s.history))

	wantTypes(t, s.deliver(deliveryOf("r2", refundFact("re_2", 10))), TypeRefundPosted)
	assert.Equal(t, both, openItems(s.history), "stored items stay as they are")
	out := s.deliver(deliveryOf("c2", capture("ch_2", 100, 0)))
	wantTypes(t, out, TypeCaptured, TypeCleared, TypeCleared)
	assert.Empty(t, openItems(s.history))
}

// A total that would leave int64 is refused as a bad amount (400), never
// wrapped: 9,223 captures at the bound fit, the next one does not.
func TestTotalsAreChecked(t *testing.T) {
	var history []Event
	for i := range 9223 {
		history = append(history, Captured{Meta: Meta{Provider: "stripe", PaymentKey: "pi_1", DedupKey: fmt.Sprintf("c%d", i), OccurredAt: t0},
			CaptureID: fmt.Sprintf("ch_%d", i), Amount: delivery.MaxAmount, Currency: "USD"})
	}
	_, err := Decide(history, deliveryOf("one-more", capture("ch_x", delivery.MaxAmount, 0)))
	require.Error(t, err)
	assert.ErrorIs(t, err, delivery.ErrInvalidAmount)
	assert.ErrorIs(t, err, money.ErrOverflow)

	// Within the bound it posts.
	out, err := Decide(history, deliveryOf("small", capture("ch_y", 1000, 0)))
	require.NoError(t, err)
	wantTypes(t, out, TypeCaptured)

	// The read side saturates instead of stopping.
	var sum Summary
	for range 10 {
		sum.Apply(Captured{CaptureID: "x", Amount: delivery.MaxAmount * 1000, Currency: "USD"})
	}
	assert.Equal(t, int64(9223372036854775807), sum.Captured)
}

func payoutOf(key string, k delivery.Kind, id string, amount int64) delivery.Event {
	return delivery.Event{Provider: "stripe", DedupKey: key, Type: string(k), OccurredAt: t0,
		Facts: []delivery.Fact{{Kind: k, BusinessID: id, Amount: amount, Currency: "USD", Reason: "account_closed"}}}
}

// Stripe payout.failed after payout.paid (the bank returned it): the failure
// reverses the payout, per docs/reference.md's "payout failed / returned" line.
func TestPayoutFailedAfterPaid(t *testing.T) {
	s := &stream{t: t}
	wantTypes(t, s.deliver(payoutOf("paid", delivery.KindPayoutPaid, "po_1", 5000)), TypePayoutPaid)
	out := s.deliver(payoutOf("failed", delivery.KindPayoutFailed, "po_1", 5000))
	wantTypes(t, out, TypePayoutFailed)
	pf := out[0].(PayoutFailed)
	assert.True(t, pf.WasPaid)
	assert.Equal(t, "account_closed", pf.Reason)
	assert.ElementsMatch(t, []ledger.Posting{
		{Account: ledger.ProviderBalance("stripe"), Currency: "USD", Amount: 5000},
		{Account: ledger.BankPayouts, Currency: "USD", Amount: -5000},
	}, Postings(pf))
	assert.Empty(t, nonZero(balances(s.history)))
	assert.Empty(t, s.deliver(payoutOf("failed-again", delivery.KindPayoutFailed, "po_1", 5000)))
	assert.Empty(t, s.deliver(payoutOf("paid-again", delivery.KindPayoutPaid, "po_1", 5000)))
}

// payout.canceled (or failed) before any payout.paid: nothing had posted,
// nothing posts, and a late paid report adds nothing.
func TestPayoutCanceledBeforePaid(t *testing.T) {
	s := &stream{t: t}
	out := s.deliver(payoutOf("canceled", delivery.KindPayoutFailed, "po_1", 5000))
	wantTypes(t, out, TypePayoutFailed)
	assert.False(t, out[0].(PayoutFailed).WasPaid)
	assert.Empty(t, Postings(out[0]))
	assert.Empty(t, s.deliver(payoutOf("paid", delivery.KindPayoutPaid, "po_1", 5000)))
	assert.Empty(t, nonZero(balances(s.history)))
}

// A payout's failure in a payment stream is a foreign event.
func TestPayoutFailedIsForeignInAPaymentStream(t *testing.T) {
	_, err := Decide([]Event{PayoutFailed{PayoutID: "po_1"}}, deliveryOf("c", capture("ch_1", 1, 0)))
	assert.ErrorIs(t, err, ErrForeignEvent)
}

// Paid and failed reports of one payout, in any order and duplicated, end
// with one failure and nothing in bank:payouts.
func TestPropertyPayoutFailureOrderDoesNotMatter(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		amount := rapid.OneOf(rapid.Int64Range(0, 1<<40), rapid.Just(delivery.MaxAmount)).Draw(t, "amount")
		var evs []delivery.Event
		for i := range rapid.IntRange(0, 3).Draw(t, "paid reports") {
			evs = append(evs, payoutOf(fmt.Sprintf("paid_%d", i), delivery.KindPayoutPaid, "po_1", amount))
		}
		for i := range rapid.IntRange(1, 3).Draw(t, "failure reports") {
			evs = append(evs, payoutOf(fmt.Sprintf("failed_%d", i), delivery.KindPayoutFailed, "po_1", amount))
		}
		history := ingest(t, shuffle(t, evs))
		failures := 0
		for _, e := range history {
			if _, ok := e.(PayoutFailed); ok {
				failures++
			}
		}
		require.Equalf(t, 1, failures, "failures recorded: %v", types(history))
		require.Empty(t, nonZero(balances(history)), "balances after a failed payout")
	})
}

// A win reported before the withdrawal it closes (deliveries come back out
// of order after a crash) ends with the same entries as the natural order:
// once the withdrawal is known, both movements post, not only the balance.
func TestDisputeWonBeforeWithdrawnPostsTheSameEntries(t *testing.T) {
	entries := func(order ...delivery.Fact) []ledger.Posting {
		s := &stream{t: t}
		s.deliver(deliveryOf("cap", capture("ch_1", 1000, 0)))
		for i, f := range order {
			s.deliver(deliveryOf(fmt.Sprintf("d%d", i), f))
		}
		var out []ledger.Posting
		for _, e := range s.history {
			out = append(out, Postings(e)...)
		}
		slices.SortFunc(out, func(a, b ledger.Posting) int {
			return cmp.Or(strings.Compare(a.Account, b.Account), cmp.Compare(a.Amount, b.Amount))
		})
		return out
	}
	opened := disputeFact(delivery.KindDisputeOpened, "du_1", 1000)
	won := disputeFact(delivery.KindDisputeWon, "du_1", 1000)
	natural := entries(opened, won)
	require.Len(t, natural, 6, "capture, withdrawal, return")
	assert.Equal(t, natural, entries(won, opened))
}
