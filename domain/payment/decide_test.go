package payment

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/stretchr/testify/require"

	"github.com/google/uuid"

	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/ledger"
	"github.com/onceledger/onceledger/domain/money"
)

func TestDecideCapture(t *testing.T) {
	s := &stream{t: t}
	out := s.deliver(deliveryOf("evt_1", capture("ch_1", 1000, 30)))
	want := Captured{
		Meta:      Meta{Provider: "stripe", PaymentKey: "pi_1", DedupKey: "evt_1", OccurredAt: t0},
		CaptureID: "ch_1", Amount: 1000, Fee: 30, Currency: "USD",
	}
	require.Equal(t, []Event{want}, out)
}

func TestDecideRedeliveryAddsNothing(t *testing.T) {
	s := &stream{t: t}
	ev := deliveryOf("evt_1", capture("ch_1", 1000, 30), refundFact("re_1", 100))
	wantTypes(t, s.deliver(ev), TypeCaptured, TypeRefundPosted)
	wantTypes(t, s.deliver(ev))
	// Even a changed payload under the same key adds nothing: the inbox
	// reports the conflict, the stream has already decided this delivery.
	wantTypes(t, s.deliver(deliveryOf("evt_1", capture("ch_2", 5, 0))))
}

func TestDecideSameCaptureUnderAnotherKey(t *testing.T) {
	s := &stream{t: t}
	wantTypes(t, s.deliver(deliveryOf("charge.succeeded", capture("ch_1", 1000, 30))), TypeCaptured)
	wantTypes(t, s.deliver(deliveryOf("payment_intent.succeeded", capture("ch_1", 1000, 30))))

	out := s.deliver(deliveryOf("evt_x", capture("ch_1", 999, 30)))
	wantTypes(t, out, TypeFlagged)
	wantItem(t, out[0], ReconAmountMismatch, "ch_1")
	require.NotEmpty(t, out[0].(Flagged).Details, "flag details")
	wantTypes(t, s.deliver(deliveryOf("evt_y", capture("ch_1", 998, 30)))) // flagged once
	require.Equal(t, int64(-1000), balances(s.history)[balanceKey{ledger.RevenueSales, "USD"}], "revenue:sales (first amount stands)")
}

func TestDecideCurrencyMismatch(t *testing.T) {
	s := &stream{t: t}
	s.deliver(deliveryOf("e1", capture("ch_1", 1000, 0)))
	eur := capture("ch_2", 500, 0)
	eur.Currency = "EUR"
	out := s.deliver(deliveryOf("e2", eur))
	wantTypes(t, out, TypeFlagged)
	wantItem(t, out[0], ReconCurrencyMismatch, "ch_2")
	wantTypes(t, s.deliver(deliveryOf("e3", eur)))

	r := refundFact("re_1", 100)
	r.Currency = "EUR"
	out = s.deliver(deliveryOf("e4", r))
	wantTypes(t, out, TypeFlagged)
	wantItem(t, out[0], ReconCurrencyMismatch, "re_1")
	// A failure of the refund that was never recorded is not remembered.
	wantTypes(t, s.deliver(deliveryOf("e5", refundFailed("re_1"))))
	d := disputeFact(delivery.KindDisputeOpened, "du_1", 100)
	d.Currency = "EUR"
	wantTypes(t, s.deliver(deliveryOf("e6", d)), TypeFlagged)

	for k := range balances(s.history) {
		require.Equal(t, money.Currency("USD"), k.currency, "something posted in another currency")
	}
}

func TestDecideRefundAfterCapture(t *testing.T) {
	s := &stream{t: t}
	s.deliver(deliveryOf("e1", capture("ch_1", 1000, 0)))
	out := s.deliver(deliveryOf("e2", refundFact("re_1", 300)))
	wantTypes(t, out, TypeRefundPosted)
	r := out[0].(RefundPosted)
	require.Equalf(t, "re_1", r.RefundID, "got %+v", r)
	require.Equalf(t, int64(300), r.Amount, "got %+v", r)
	require.Falsef(t, r.WasPending, "got %+v", r)
	wantTypes(t, s.deliver(deliveryOf("e3", refundFact("re_1", 300)))) // charge.refunded repeats it
}

func TestDecideRefundBeforeCapture(t *testing.T) {
	s := &stream{t: t}
	out := s.deliver(deliveryOf("e1", refundFact("re_1", 300)))
	wantTypes(t, out, TypeRefundPending, TypeFlagged)
	wantItem(t, out[1], ReconRefundBeforePayment, "re_1")
	require.Empty(t, balances(s.history), "a pending refund posted")
	wantTypes(t, s.deliver(deliveryOf("e2", refundFact("re_1", 300))))
	wantTypes(t, s.deliver(deliveryOf("e3", refundFact("re_2", 200))), TypeRefundPending, TypeFlagged)

	out = s.deliver(deliveryOf("e4", capture("ch_1", 1000, 0)))
	wantTypes(t, out, TypeCaptured,
		TypeRefundPosted, TypeCleared, // re_1, in arrival order
		TypeRefundPosted, TypeCleared) // re_2
	for i, id := range []string{"re_1", "re_2"} {
		rp := out[1+2*i].(RefundPosted)
		c := out[2+2*i].(Cleared)
		require.Equalf(t, id, rp.RefundID, "%s: %+v", id, rp)
		require.Truef(t, rp.WasPending, "%s: %+v", id, rp)
		wantItem(t, c, ReconRefundBeforePayment, id)
	}
	require.Empty(t, openItems(s.history), "open items")
	wantTypes(t, s.deliver(deliveryOf("e5", capture("ch_2", 1000, 0))), TypeCaptured) // nothing left pending
	require.Equal(t, int64(500), balances(s.history)[balanceKey{ledger.RevenueRefunds, "USD"}], "revenue:refunds")
}

func TestDecideOverRefund(t *testing.T) {
	s := &stream{t: t}
	s.deliver(deliveryOf("e1", capture("ch_1", 100, 0)))
	wantTypes(t, s.deliver(deliveryOf("e2", refundFact("re_1", 60))), TypeRefundPosted)
	out := s.deliver(deliveryOf("e3", refundFact("re_2", 60)))
	// Refunds alone exceed the captures: one problem, one item (over_refund,
	// not also over_reversal).
	wantTypes(t, out, TypeRefundPosted, TypeFlagged)
	wantItem(t, out[1], ReconOverRefund, "refunds")
	wantTypes(t, s.deliver(deliveryOf("e4", refundFact("re_3", 10))), TypeRefundPosted) // already open
	out = s.deliver(deliveryOf("e5", capture("ch_2", 100, 0)))
	wantTypes(t, out, TypeCaptured, TypeCleared)
	wantItem(t, out[1], ReconOverRefund, "refunds")
	// Over-refunds still post.
	require.Equal(t, int64(130), balances(s.history)[balanceKey{ledger.RevenueRefunds, "USD"}], "revenue:refunds")
}

func TestDecideOverRefundFromPendingRefunds(t *testing.T) {
	s := &stream{t: t}
	s.deliver(deliveryOf("e1", refundFact("re_1", 150)))
	out := s.deliver(deliveryOf("e2", capture("ch_1", 100, 0)))
	wantTypes(t, out, TypeCaptured, TypeRefundPosted, TypeCleared, TypeFlagged)
	require.Equalf(t, ReconOverRefund, out[3].(Flagged).Kind, "flag = %+v", out[3])
	// Reversing the refund brings refunds back within captures.
	out = s.deliver(deliveryOf("e3", refundFailed("re_1")))
	wantTypes(t, out, TypeRefundReversed, TypeCleared)
	require.Equalf(t, ReconOverRefund, out[1].(Cleared).Kind, "clear = %+v", out[1])
}

func TestDecideRefundFailedAfterPosting(t *testing.T) {
	s := &stream{t: t}
	s.deliver(deliveryOf("e1", capture("ch_1", 1000, 0)))
	s.deliver(deliveryOf("e2", refundFact("re_1", 300)))
	out := s.deliver(deliveryOf("e3", refundFailed("re_1")))
	wantTypes(t, out, TypeRefundReversed)
	r := out[0].(RefundReversed)
	require.Equalf(t, int64(300), r.Amount, "got %+v", r)
	require.Falsef(t, r.WasPending, "got %+v", r)
	require.Equalf(t, money.Currency("USD"), r.Currency, "got %+v", r)
	wantTypes(t, s.deliver(deliveryOf("e4", refundFailed("re_1"))))
	wantTypes(t, s.deliver(deliveryOf("e5", refundFact("re_1", 300)))) // never posts again
	require.NotContains(t, balances(s.history), balanceKey{ledger.RevenueRefunds, "USD"}, "revenue:refunds should net to zero")
}

func TestDecideRefundFailedWhilePending(t *testing.T) {
	s := &stream{t: t}
	s.deliver(deliveryOf("e1", refundFact("re_1", 300)))
	out := s.deliver(deliveryOf("e2", refundFailed("re_1")))
	wantTypes(t, out, TypeRefundReversed, TypeCleared)
	r := out[0].(RefundReversed)
	require.Truef(t, r.WasPending, "got %+v", r)
	require.Equalf(t, int64(300), r.Amount, "got %+v", r)
	require.Nil(t, Postings(out[0]), "dropping a pending refund must post nothing")
	wantTypes(t, s.deliver(deliveryOf("e3", capture("ch_1", 1000, 0))), TypeCaptured) // it must never post
	wantTypes(t, s.deliver(deliveryOf("e4", refundFact("re_1", 300))))
	require.Empty(t, openItems(s.history), "open items")
	var sum Summary
	for _, e := range s.history {
		sum.Apply(e)
	}
	require.Zerof(t, sum.RefundsPending, "summary %+v", sum)
	require.Zerof(t, sum.Refunded, "summary %+v", sum)
}

func TestDecideRefundFailedBeforeRefund(t *testing.T) {
	// Natural order: capture, refund, failure. Reversed arrival must end with
	// the same balances.
	natural := &stream{t: t}
	natural.deliver(deliveryOf("c", capture("ch_1", 1000, 0)))
	natural.deliver(deliveryOf("r", refundFact("re_1", 300)))
	natural.deliver(deliveryOf("f", refundFailed("re_1")))

	s := &stream{t: t}
	out := s.deliver(deliveryOf("f", refundFailed("re_1")))
	wantTypes(t, out, TypeFlagged)
	wantItem(t, out[0], ReconUnknownRefundFailed, "re_1")
	out = s.deliver(deliveryOf("r", refundFact("re_1", 300)))
	wantTypes(t, out, TypeCleared)
	wantItem(t, out[0], ReconUnknownRefundFailed, "re_1")
	wantTypes(t, s.deliver(deliveryOf("r2", refundFact("re_1", 300))))
	wantTypes(t, s.deliver(deliveryOf("c", capture("ch_1", 1000, 0))), TypeCaptured)
	require.Equal(t, balances(natural.history), balances(s.history), "balances, against the natural order")
	require.Empty(t, openItems(s.history), "open items")
}

func TestDecideDisputes(t *testing.T) {
	s := &stream{t: t}
	s.deliver(deliveryOf("e0", capture("ch_1", 1000, 0)))
	out := s.deliver(deliveryOf("e1", disputeFact(delivery.KindDisputeOpened, "du_1", 1000)))
	wantTypes(t, out, TypeDisputeOpened)
	wantTypes(t, s.deliver(deliveryOf("e2", disputeFact(delivery.KindDisputeOpened, "du_1", 1000))))
	wantTypes(t, s.deliver(deliveryOf("e3", disputeFact(delivery.KindDisputeWon, "du_1", 1000))), TypeDisputeWon)
	wantTypes(t, s.deliver(deliveryOf("e4", disputeFact(delivery.KindDisputeWon, "du_1", 1000))))
	// Lost is final: a loss after the win is recorded, reversing the win.
	out = s.deliver(deliveryOf("e5", disputeFact(delivery.KindDisputeLost, "du_1", 1000)))
	wantTypes(t, out, TypeDisputeLost)
	l := out[0].(DisputeLost)
	require.Truef(t, l.ReversesWin, "got %+v", l)
	require.Equalf(t, int64(1000), l.Amount, "got %+v", l)
	wantTypes(t, s.deliver(deliveryOf("e5b", disputeFact(delivery.KindDisputeLost, "du_1", 1000))))
	wantTypes(t, s.deliver(deliveryOf("e5c", disputeFact(delivery.KindDisputeWon, "du_1", 1000))), TypeFlagged)

	// Outcome before opening: the opening is recorded first.
	out = s.deliver(deliveryOf("e6", disputeFact(delivery.KindDisputeLost, "du_2", 400)))
	// 1400 of disputes against a 1000 capture: over_reversal.
	wantTypes(t, out, TypeDisputeOpened, TypeDisputeLost, TypeFlagged)
	o := out[0].(DisputeOpened)
	require.Equalf(t, int64(400), o.Amount, "got %+v", o)
	require.Equalf(t, "du_2", o.DisputeID, "got %+v", o)
	wantTypes(t, s.deliver(deliveryOf("e7", disputeFact(delivery.KindDisputeOpened, "du_2", 400))))
	// A win after the loss posts nothing and is flagged, once.
	out = s.deliver(deliveryOf("e8", disputeFact(delivery.KindDisputeWon, "du_2", 400)))
	wantTypes(t, out, TypeFlagged)
	wantItem(t, out[0], ReconDisputeOutcomeConflict, "du_2")
	wantTypes(t, s.deliver(deliveryOf("e8b", disputeFact(delivery.KindDisputeWon, "du_2", 400))))

	b := balances(s.history)
	require.NotContains(t, b, balanceKey{ledger.DisputeReceivable("stripe"), "USD"}, "receivable should net out")
	// Both disputes end lost: 1000 + 400 of expenses, taken from the
	// balance the 1000 capture had filled.
	require.Equalf(t, int64(1400), b[balanceKey{ledger.ExpensesDispute, "USD"}], "balances %v", b)
	require.Equalf(t, int64(-400), b[balanceKey{ledger.ProviderBalance("stripe"), "USD"}], "balances %v", b)
	var sum Summary
	for _, e := range s.history {
		sum.Apply(e)
	}
	require.Zerof(t, sum.DisputeOpen, "summary %+v", sum)
	require.Equalf(t, int64(1400), sum.DisputeLost, "summary %+v", sum)
	require.Equalf(t, StatusDisputeLost, sum.Status(), "summary %+v", sum)

	// An outcome with another amount moves the opened amount and is flagged.
	s.deliver(deliveryOf("e9", disputeFact(delivery.KindDisputeOpened, "du_3", 100)))
	out = s.deliver(deliveryOf("e10", disputeFact(delivery.KindDisputeWon, "du_3", 90)))
	wantTypes(t, out, TypeFlagged, TypeDisputeWon)
	wantItem(t, out[0], ReconAmountMismatch, "du_3")
	require.Equalf(t, int64(100), out[1].(DisputeWon).Amount, "got %+v", out[1])
}

func TestDecideAuthorizedFailedCanceledOnce(t *testing.T) {
	s := &stream{t: t}
	auth := delivery.Fact{Kind: delivery.KindAuthorized, BusinessID: "auth_1", Amount: 1000, Currency: "USD"}
	out := s.deliver(deliveryOf("e1", auth))
	wantTypes(t, out, TypeAuthorized)
	a := out[0].(Authorized)
	require.Equalf(t, "auth_1", a.AuthorizationID, "got %+v", a)
	require.Equalf(t, int64(1000), a.Amount, "got %+v", a)
	require.Equalf(t, money.Currency("USD"), a.Currency, "got %+v", a)
	wantTypes(t, s.deliver(deliveryOf("e2", auth)))
	fail := delivery.Fact{Kind: delivery.KindFailed, Reason: "card_declined"}
	out = s.deliver(deliveryOf("e3", fail))
	wantTypes(t, out, TypeFailed)
	require.Equalf(t, "card_declined", out[0].(Failed).Reason, "got %+v", out[0])
	wantTypes(t, s.deliver(deliveryOf("e4", fail)))
	cancel := delivery.Fact{Kind: delivery.KindCanceled, Reason: "requested_by_customer"}
	wantTypes(t, s.deliver(deliveryOf("e5", cancel)), TypeCanceled)
	wantTypes(t, s.deliver(deliveryOf("e6", cancel)))
	require.Empty(t, balances(s.history), "authorizations and failures post nothing")
}

func TestDecideFactsOfOneDeliveryInOrder(t *testing.T) {
	s := &stream{t: t}
	// The refund comes first and waits; the capture in the same delivery
	// releases it.
	out := s.deliver(deliveryOf("e1", refundFact("re_1", 100), capture("ch_1", 1000, 0), refundFact("re_1", 100), refundFact("re_2", 50)))
	wantTypes(t, out, TypeRefundPending, TypeFlagged, TypeCaptured, TypeRefundPosted, TypeCleared, TypeRefundPosted)
	rp := out[3].(RefundPosted)
	require.Equalf(t, "re_1", rp.RefundID, "got %+v", rp)
	require.Truef(t, rp.WasPending, "got %+v", rp)
	rp = out[5].(RefundPosted)
	require.Equalf(t, "re_2", rp.RefundID, "got %+v", rp)
	require.Falsef(t, rp.WasPending, "got %+v", rp)
}

func TestDecideInvalidAndIgnored(t *testing.T) {
	_, err := Decide(nil, delivery.Event{Provider: "stripe", PaymentKey: "pi_1", Facts: []delivery.Fact{capture("ch_1", 1, 0)}})
	require.ErrorIs(t, err, delivery.ErrMissingField, "missing dedup key")
	_, err = Decide(nil, deliveryOf("e1", capture("", 1, 0)))
	require.ErrorIs(t, err, delivery.ErrMissingField, "missing capture id")
	out, err := Decide(nil, deliveryOf("e1"))
	require.NoError(t, err, "ignored delivery")
	require.Nil(t, out, "ignored delivery")
	payout := PayoutPaid{Meta: Meta{Provider: "stripe", DedupKey: "p"}, PayoutID: "po_1", Amount: 1, Currency: "USD"}
	_, err = Decide([]Event{payout}, deliveryOf("e1", capture("ch_1", 1, 0)))
	require.ErrorIs(t, err, ErrForeignEvent, "payout in payment stream")
}

func payoutDelivery(key, id string, amount int64) delivery.Event {
	return delivery.Event{Provider: "stripe", DedupKey: key, Type: "payout.paid", OccurredAt: t0,
		Facts: []delivery.Fact{{Kind: delivery.KindPayoutPaid, BusinessID: id, Amount: amount, Currency: "USD"}}}
}

func TestDecidePayout(t *testing.T) {
	s := &stream{t: t}
	out := s.deliver(payoutDelivery("e1", "po_1", 5000))
	want := PayoutPaid{Meta: Meta{Provider: "stripe", PaymentKey: "po_1", DedupKey: "e1", OccurredAt: t0}, PayoutID: "po_1", Amount: 5000, Currency: "USD"}
	require.Equal(t, []Event{want}, out)
	wantTypes(t, s.deliver(payoutDelivery("e1", "po_1", 5000)))
	wantTypes(t, s.deliver(payoutDelivery("e2", "po_1", 5000)))

	mixed := payoutDelivery("e3", "po_1", 1)
	mixed.Facts = append(mixed.Facts, delivery.Fact{Kind: delivery.KindPayoutPaid, BusinessID: "po_2", Amount: 1, Currency: "USD"})
	_, err := Decide(nil, mixed)
	require.ErrorIs(t, err, delivery.ErrMalformed, "mixed payouts")
	captured := Captured{Meta: Meta{Provider: "stripe", DedupKey: "c"}, CaptureID: "ch_1", Amount: 1, Currency: "USD"}
	_, err = Decide([]Event{captured}, payoutDelivery("e4", "po_1", 1))
	require.ErrorIs(t, err, ErrForeignEvent, "payment event in payout stream")
}

// pinnedEventID was computed independently (Python uuid.uuid5).
const pinnedEventID = "48eaf8db-a802-5722-8d81-3c4451f5f0c0"

func TestEventID(t *testing.T) {
	a := EventID("stripe", "evt_1", 0)
	require.Equal(t, a, EventID("stripe", "evt_1", 0), "not deterministic")
	require.Equal(t, uuid.Version(5), a.Version(), "version")
	seen := map[string]bool{}
	for _, id := range []struct {
		p, k string
		i    int
	}{{"stripe", "evt_1", 0}, {"stripe", "evt_1", 1}, {"stripe", "evt_2", 0}, {"adyen", "evt_1", 0},
		{"ab", "c", 0}, {"a", "bc", 0}, {"stripe", "evt_1", 10}, {"stripe", "evt_11", 0}} {
		u := EventID(id.p, id.k, id.i).String()
		require.Falsef(t, seen[u], "collision for %+v", id)
		seen[u] = true
	}
	// Pinned: the namespace and the name layout are part of the stored data.
	require.Equal(t, pinnedEventID, EventID("stripe", "evt_1", 0).String(), "EventID changed")
}

// A fee of 0 on a capture means "not known": the first non-zero fee is the
// fee, whichever report of the capture carries it, and the ledger ends the
// same in both orders.
func TestDecideFeeReportedLater(t *testing.T) {
	late := &stream{t: t} // Stripe: payment_intent.succeeded, then charge.succeeded
	wantTypes(t, late.deliver(deliveryOf("payment_intent.succeeded", capture("ch_1", 1000, 0))), TypeCaptured)
	out := late.deliver(deliveryOf("charge.succeeded", capture("ch_1", 1000, 117)))
	wantTypes(t, out, TypeFeeRecorded)
	want := FeeRecorded{Meta: Meta{Provider: "stripe", PaymentKey: "pi_1", DedupKey: "charge.succeeded", OccurredAt: t0},
		CaptureID: "ch_1", Fee: 117, Currency: "USD"}
	require.Equal(t, want, out[0])
	wantTypes(t, late.deliver(deliveryOf("payment.updated", capture("ch_1", 1000, 117)))) // same fee again
	wantTypes(t, late.deliver(deliveryOf("payment.updated.2", capture("ch_1", 1000, 0)))) // unknown again

	early := &stream{t: t}
	wantTypes(t, early.deliver(deliveryOf("charge.succeeded", capture("ch_1", 1000, 117))), TypeCaptured)
	wantTypes(t, early.deliver(deliveryOf("payment_intent.succeeded", capture("ch_1", 1000, 0))))

	bl, be := balances(late.history), balances(early.history)
	require.Equal(t, be, bl, "balances, against the other order")
	require.Equalf(t, int64(117), bl[balanceKey{ledger.ProviderFees("stripe"), "USD"}], "balances %v", bl)
	require.Equalf(t, int64(883), bl[balanceKey{ledger.ProviderBalance("stripe"), "USD"}], "balances %v", bl)

	// Another non-zero fee later is flagged once and not posted.
	out = late.deliver(deliveryOf("e_other_fee", capture("ch_1", 1000, 120)))
	wantTypes(t, out, TypeFlagged)
	wantItem(t, out[0], ReconAmountMismatch, "ch_1:fee")
	wantTypes(t, late.deliver(deliveryOf("e_other_fee_2", capture("ch_1", 1000, 121))))
	require.Equal(t, bl, balances(late.history), "a conflicting fee posted")
	var sum Summary
	for _, e := range late.history {
		sum.Apply(e)
	}
	require.Equalf(t, int64(117), sum.Fees, "summary %+v", sum)
	require.Equalf(t, int64(1000), sum.Captured, "summary %+v", sum)

	// A report with another amount is an amount mismatch of the capture;
	// its fee is not taken.
	s := &stream{t: t}
	s.deliver(deliveryOf("e1", capture("ch_2", 1000, 0)))
	wantTypes(t, s.deliver(deliveryOf("e2", capture("ch_2", 900, 50))), TypeFlagged)
	require.NotContains(t, balances(s.history), balanceKey{ledger.ProviderFees("stripe"), "USD"}, "fee of a mismatched report posted")
}

func TestDecideReasonTruncated(t *testing.T) {
	long := strings.Repeat("é", delivery.MaxReasonBytes) // 2 bytes each
	s := &stream{t: t}
	out := s.deliver(deliveryOf("e1", delivery.Fact{Kind: delivery.KindFailed, Reason: long}))
	r := out[0].(Failed).Reason
	require.LessOrEqual(t, len(r), delivery.MaxReasonBytes, "reason bytes")
	require.GreaterOrEqual(t, len(r), delivery.MaxReasonBytes-3, "reason bytes")
	require.True(t, utf8.ValidString(r), "reason is valid UTF-8")
	require.True(t, strings.HasPrefix(long, r), "reason is a prefix")
	out = s.deliver(deliveryOf("e2", delivery.Fact{Kind: delivery.KindCanceled, Reason: "x" + long}))
	r = out[0].(Canceled).Reason
	require.Len(t, r, delivery.MaxReasonBytes-1, "reason bytes")
	require.True(t, utf8.ValidString(r), "reason is valid UTF-8")
}

func TestDecidePayoutMismatch(t *testing.T) {
	s := &stream{t: t}
	wantTypes(t, s.deliver(payoutDelivery("e1", "po_1", 5000)), TypePayoutPaid)

	out := s.deliver(payoutDelivery("e2", "po_1", 5001))
	wantTypes(t, out, TypeFlagged)
	wantItem(t, out[0], ReconAmountMismatch, "po_1")
	require.Equalf(t, "po_1", out[0].(Flagged).PaymentKey, "flag = %+v", out[0])
	require.Equalf(t, "e2", out[0].(Flagged).DedupKey, "flag = %+v", out[0])
	wantTypes(t, s.deliver(payoutDelivery("e3", "po_1", 5002))) // once

	eur := payoutDelivery("e4", "po_1", 5000)
	eur.Facts[0].Currency = "EUR"
	out = s.deliver(eur)
	wantTypes(t, out, TypeFlagged)
	wantItem(t, out[0], ReconCurrencyMismatch, "po_1")
	eur.DedupKey = "e5"
	eur.Facts[0].Amount = 1
	wantTypes(t, s.deliver(eur)) // once
	wantTypes(t, s.deliver(payoutDelivery("e6", "po_1", 5000)))
	b := balances(s.history)
	require.Lenf(t, b, 2, "balances %v", b)
	require.Equalf(t, int64(5000), b[balanceKey{ledger.BankPayouts, "USD"}], "balances %v", b)

	// A conflicting redelivery item, appended to a payout stream by the
	// ingestion service, is part of the stream's history, not a foreign event.
	s = &stream{t: t}
	s.deliver(payoutDelivery("e1", "po_2", 10))
	s.history = append(s.history, Flagged{Meta: Meta{Provider: "stripe", PaymentKey: "po_2", DedupKey: "e1"},
		Kind: ReconConflictingRedelivery, Key: "e1@abc"})
	wantTypes(t, s.deliver(payoutDelivery("e2", "po_2", 10)))
	wantTypes(t, s.deliver(payoutDelivery("e3", "po_2", 11)), TypeFlagged)
}

// TestPayoutTraced: Stripe fills a payout's trace_id in after payout.paid
// (payout.updated); the later report records it once, posting nothing, and
// a failed payout records none.
func TestPayoutTraced(t *testing.T) {
	s := &stream{t: t}
	paid := payoutDelivery("e1", "po_1", 5000)
	paid.Facts[0].Descriptor = "ACME"
	out := s.deliver(paid)
	require.Len(t, out, 1)
	require.Equal(t, "ACME", out[0].(PayoutPaid).Descriptor)
	typ, data, err := Encode(out[0])
	require.NoError(t, err)
	back, err := Decode(typ, data)
	require.NoError(t, err)
	require.Equal(t, out[0], back, "the descriptor survives the codec")
	updated := payoutDelivery("e2", "po_1", 5000)
	updated.Type = "payout.updated"
	updated.Facts[0].TraceID, updated.Facts[0].Descriptor = "091000015550001", "ACME"
	out = s.deliver(updated)
	require.Len(t, out, 1)
	require.Equal(t, PayoutTraced{Meta: Meta{Provider: "stripe", PaymentKey: "po_1", DedupKey: "e2", OccurredAt: t0},
		PayoutID: "po_1", TraceID: "091000015550001"}, out[0])
	require.Empty(t, Postings(out[0]))
	again := payoutDelivery("e3", "po_1", 5000)
	again.Facts[0].TraceID = "091000015550001"
	wantTypes(t, s.deliver(again))
}
