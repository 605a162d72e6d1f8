package payment

import (
	"errors"
	"reflect"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/ledger"
)

func TestDecideCapture(t *testing.T) {
	s := &stream{t: t}
	out := s.deliver(deliveryOf("evt_1", capture("ch_1", 1000, 30)))
	want := Captured{
		Meta:      Meta{Provider: "stripe", PaymentKey: "pi_1", DedupKey: "evt_1", OccurredAt: t0},
		CaptureID: "ch_1", Amount: 1000, Fee: 30, Currency: "USD",
	}
	if len(out) != 1 || !reflect.DeepEqual(out[0], want) {
		t.Fatalf("got %#v, want %#v", out, want)
	}
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
	if f := out[0].(Flagged); f.Kind != ReconAmountMismatch || f.Key != "ch_1" || f.Details == "" {
		t.Fatalf("flag = %+v", f)
	}
	wantTypes(t, s.deliver(deliveryOf("evt_y", capture("ch_1", 998, 30)))) // flagged once
	if got := balances(s.history)[balanceKey{ledger.RevenueSales, "USD"}]; got != -1000 {
		t.Fatalf("revenue:sales = %d, want -1000 (first amount stands)", got)
	}
}

func TestDecideCurrencyMismatch(t *testing.T) {
	s := &stream{t: t}
	s.deliver(deliveryOf("e1", capture("ch_1", 1000, 0)))
	eur := capture("ch_2", 500, 0)
	eur.Currency = "EUR"
	out := s.deliver(deliveryOf("e2", eur))
	wantTypes(t, out, TypeFlagged)
	if f := out[0].(Flagged); f.Kind != ReconCurrencyMismatch || f.Key != "ch_2" {
		t.Fatalf("flag = %+v", f)
	}
	wantTypes(t, s.deliver(deliveryOf("e3", eur)))

	r := refundFact("re_1", 100)
	r.Currency = "EUR"
	out = s.deliver(deliveryOf("e4", r))
	wantTypes(t, out, TypeFlagged)
	if f := out[0].(Flagged); f.Kind != ReconCurrencyMismatch || f.Key != "re_1" {
		t.Fatalf("flag = %+v", f)
	}
	// A failure of the refund that was never recorded is not remembered.
	wantTypes(t, s.deliver(deliveryOf("e5", refundFailed("re_1"))))
	d := disputeFact(delivery.KindDisputeOpened, "du_1", 100)
	d.Currency = "EUR"
	wantTypes(t, s.deliver(deliveryOf("e6", d)), TypeFlagged)

	for k := range balances(s.history) {
		if k.currency != "USD" {
			t.Fatalf("something posted in %s", k.currency)
		}
	}
}

func TestDecideRefundAfterCapture(t *testing.T) {
	s := &stream{t: t}
	s.deliver(deliveryOf("e1", capture("ch_1", 1000, 0)))
	out := s.deliver(deliveryOf("e2", refundFact("re_1", 300)))
	wantTypes(t, out, TypeRefundPosted)
	if r := out[0].(RefundPosted); r.RefundID != "re_1" || r.Amount != 300 || r.WasPending {
		t.Fatalf("got %+v", r)
	}
	wantTypes(t, s.deliver(deliveryOf("e3", refundFact("re_1", 300)))) // charge.refunded repeats it
}

func TestDecideRefundBeforeCapture(t *testing.T) {
	s := &stream{t: t}
	out := s.deliver(deliveryOf("e1", refundFact("re_1", 300)))
	wantTypes(t, out, TypeRefundPending, TypeFlagged)
	if f := out[1].(Flagged); f.Kind != ReconRefundBeforePayment || f.Key != "re_1" {
		t.Fatalf("flag = %+v", f)
	}
	if len(balances(s.history)) != 0 {
		t.Fatal("a pending refund posted")
	}
	wantTypes(t, s.deliver(deliveryOf("e2", refundFact("re_1", 300))))
	wantTypes(t, s.deliver(deliveryOf("e3", refundFact("re_2", 200))), TypeRefundPending, TypeFlagged)

	out = s.deliver(deliveryOf("e4", capture("ch_1", 1000, 0)))
	wantTypes(t, out, TypeCaptured,
		TypeRefundPosted, TypeCleared, // re_1, in arrival order
		TypeRefundPosted, TypeCleared) // re_2
	for i, id := range []string{"re_1", "re_2"} {
		rp := out[1+2*i].(RefundPosted)
		c := out[2+2*i].(Cleared)
		if rp.RefundID != id || !rp.WasPending || c.Kind != ReconRefundBeforePayment || c.Key != id {
			t.Fatalf("%s: %+v %+v", id, rp, c)
		}
	}
	if len(openItems(s.history)) != 0 {
		t.Fatalf("open items: %v", openItems(s.history))
	}
	wantTypes(t, s.deliver(deliveryOf("e5", capture("ch_2", 1000, 0))), TypeCaptured) // nothing left pending
	if got := balances(s.history)[balanceKey{ledger.RevenueRefunds, "USD"}]; got != 500 {
		t.Fatalf("revenue:refunds = %d", got)
	}
}

func TestDecideOverRefund(t *testing.T) {
	s := &stream{t: t}
	s.deliver(deliveryOf("e1", capture("ch_1", 100, 0)))
	wantTypes(t, s.deliver(deliveryOf("e2", refundFact("re_1", 60))), TypeRefundPosted)
	out := s.deliver(deliveryOf("e3", refundFact("re_2", 60)))
	// Refunds alone exceed the captures, so refunds plus disputes do too.
	wantTypes(t, out, TypeRefundPosted, TypeFlagged, TypeFlagged)
	if f := out[1].(Flagged); f.Kind != ReconOverRefund || f.Key != "refunds" {
		t.Fatalf("flag = %+v", f)
	}
	wantTypes(t, s.deliver(deliveryOf("e4", refundFact("re_3", 10))), TypeRefundPosted) // already open
	out = s.deliver(deliveryOf("e5", capture("ch_2", 100, 0)))
	wantTypes(t, out, TypeCaptured, TypeCleared, TypeCleared)
	if c := out[1].(Cleared); c.Kind != ReconOverRefund || c.Key != "refunds" {
		t.Fatalf("clear = %+v", c)
	}
	// Over-refunds still post.
	if got := balances(s.history)[balanceKey{ledger.RevenueRefunds, "USD"}]; got != 130 {
		t.Fatalf("revenue:refunds = %d", got)
	}
}

func TestDecideOverRefundFromPendingRefunds(t *testing.T) {
	s := &stream{t: t}
	s.deliver(deliveryOf("e1", refundFact("re_1", 150)))
	out := s.deliver(deliveryOf("e2", capture("ch_1", 100, 0)))
	wantTypes(t, out, TypeCaptured, TypeRefundPosted, TypeCleared, TypeFlagged, TypeFlagged)
	if f := out[3].(Flagged); f.Kind != ReconOverRefund {
		t.Fatalf("flag = %+v", f)
	}
	// Reversing the refund brings refunds back within captures.
	out = s.deliver(deliveryOf("e3", refundFailed("re_1")))
	wantTypes(t, out, TypeRefundReversed, TypeCleared, TypeCleared)
	if c := out[1].(Cleared); c.Kind != ReconOverRefund {
		t.Fatalf("clear = %+v", c)
	}
}

func TestDecideRefundFailedAfterPosting(t *testing.T) {
	s := &stream{t: t}
	s.deliver(deliveryOf("e1", capture("ch_1", 1000, 0)))
	s.deliver(deliveryOf("e2", refundFact("re_1", 300)))
	out := s.deliver(deliveryOf("e3", refundFailed("re_1")))
	wantTypes(t, out, TypeRefundReversed)
	if r := out[0].(RefundReversed); r.Amount != 300 || r.WasPending || r.Currency != "USD" {
		t.Fatalf("got %+v", r)
	}
	wantTypes(t, s.deliver(deliveryOf("e4", refundFailed("re_1"))))
	wantTypes(t, s.deliver(deliveryOf("e5", refundFact("re_1", 300)))) // never posts again
	if _, ok := balances(s.history)[balanceKey{ledger.RevenueRefunds, "USD"}]; ok {
		t.Fatal("revenue:refunds should net to zero")
	}
}

func TestDecideRefundFailedWhilePending(t *testing.T) {
	s := &stream{t: t}
	s.deliver(deliveryOf("e1", refundFact("re_1", 300)))
	out := s.deliver(deliveryOf("e2", refundFailed("re_1")))
	wantTypes(t, out, TypeRefundReversed, TypeCleared)
	if r := out[0].(RefundReversed); !r.WasPending || r.Amount != 300 {
		t.Fatalf("got %+v", r)
	}
	if Postings(out[0]) != nil {
		t.Fatal("dropping a pending refund must post nothing")
	}
	wantTypes(t, s.deliver(deliveryOf("e3", capture("ch_1", 1000, 0))), TypeCaptured) // it must never post
	wantTypes(t, s.deliver(deliveryOf("e4", refundFact("re_1", 300))))
	if len(openItems(s.history)) != 0 {
		t.Fatalf("open items: %v", openItems(s.history))
	}
	var sum Summary
	for _, e := range s.history {
		sum.Apply(e)
	}
	if sum.RefundsPending != 0 || sum.Refunded != 0 {
		t.Fatalf("summary %+v", sum)
	}
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
	if f := out[0].(Flagged); f.Kind != ReconUnknownRefundFailed || f.Key != "re_1" {
		t.Fatalf("flag = %+v", f)
	}
	out = s.deliver(deliveryOf("r", refundFact("re_1", 300)))
	wantTypes(t, out, TypeCleared)
	if c := out[0].(Cleared); c.Kind != ReconUnknownRefundFailed || c.Key != "re_1" {
		t.Fatalf("clear = %+v", c)
	}
	wantTypes(t, s.deliver(deliveryOf("r2", refundFact("re_1", 300))))
	wantTypes(t, s.deliver(deliveryOf("c", capture("ch_1", 1000, 0))), TypeCaptured)
	if !reflect.DeepEqual(balances(s.history), balances(natural.history)) {
		t.Fatalf("balances %v, natural %v", balances(s.history), balances(natural.history))
	}
	if len(openItems(s.history)) != 0 {
		t.Fatalf("open items: %v", openItems(s.history))
	}
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
	if l := out[0].(DisputeLost); !l.ReversesWin || l.Amount != 1000 {
		t.Fatalf("got %+v", l)
	}
	wantTypes(t, s.deliver(deliveryOf("e5b", disputeFact(delivery.KindDisputeLost, "du_1", 1000))))
	wantTypes(t, s.deliver(deliveryOf("e5c", disputeFact(delivery.KindDisputeWon, "du_1", 1000))), TypeFlagged)

	// Outcome before opening: the opening is recorded first.
	out = s.deliver(deliveryOf("e6", disputeFact(delivery.KindDisputeLost, "du_2", 400)))
	// 1400 of disputes against a 1000 capture: over_reversal.
	wantTypes(t, out, TypeDisputeOpened, TypeDisputeLost, TypeFlagged)
	if o := out[0].(DisputeOpened); o.Amount != 400 || o.DisputeID != "du_2" {
		t.Fatalf("got %+v", o)
	}
	wantTypes(t, s.deliver(deliveryOf("e7", disputeFact(delivery.KindDisputeOpened, "du_2", 400))))
	// A win after the loss posts nothing and is flagged, once.
	out = s.deliver(deliveryOf("e8", disputeFact(delivery.KindDisputeWon, "du_2", 400)))
	wantTypes(t, out, TypeFlagged)
	if f := out[0].(Flagged); f.Kind != ReconDisputeOutcomeConflict || f.Key != "du_2" {
		t.Fatalf("got %+v", f)
	}
	wantTypes(t, s.deliver(deliveryOf("e8b", disputeFact(delivery.KindDisputeWon, "du_2", 400))))

	b := balances(s.history)
	if _, ok := b[balanceKey{ledger.DisputeReceivable("stripe"), "USD"}]; ok {
		t.Fatalf("receivable should net out: %v", b)
	}
	// Both disputes end lost: 1000 + 400 of expenses, taken from the
	// balance the 1000 capture had filled.
	if b[balanceKey{ledger.ExpensesDispute, "USD"}] != 1400 || b[balanceKey{ledger.ProviderBalance("stripe"), "USD"}] != -400 {
		t.Fatalf("balances %v", b)
	}
	var sum Summary
	for _, e := range s.history {
		sum.Apply(e)
	}
	if sum.DisputeOpen != 0 || sum.DisputeLost != 1400 || sum.Status() != StatusDisputeLost {
		t.Fatalf("summary %+v (%s)", sum, sum.Status())
	}

	// An outcome with another amount moves the opened amount and is flagged.
	s.deliver(deliveryOf("e9", disputeFact(delivery.KindDisputeOpened, "du_3", 100)))
	out = s.deliver(deliveryOf("e10", disputeFact(delivery.KindDisputeWon, "du_3", 90)))
	wantTypes(t, out, TypeFlagged, TypeDisputeWon)
	if f, w := out[0].(Flagged), out[1].(DisputeWon); f.Kind != ReconAmountMismatch || f.Key != "du_3" || w.Amount != 100 {
		t.Fatalf("got %+v %+v", f, w)
	}
}

func TestDecideAuthorizedFailedCanceledOnce(t *testing.T) {
	s := &stream{t: t}
	auth := delivery.Fact{Kind: delivery.KindAuthorized, BusinessID: "auth_1", Amount: 1000, Currency: "USD"}
	out := s.deliver(deliveryOf("e1", auth))
	wantTypes(t, out, TypeAuthorized)
	if a := out[0].(Authorized); a.AuthorizationID != "auth_1" || a.Amount != 1000 || a.Currency != "USD" {
		t.Fatalf("got %+v", a)
	}
	wantTypes(t, s.deliver(deliveryOf("e2", auth)))
	fail := delivery.Fact{Kind: delivery.KindFailed, Reason: "card_declined"}
	out = s.deliver(deliveryOf("e3", fail))
	wantTypes(t, out, TypeFailed)
	if f := out[0].(Failed); f.Reason != "card_declined" {
		t.Fatalf("got %+v", f)
	}
	wantTypes(t, s.deliver(deliveryOf("e4", fail)))
	cancel := delivery.Fact{Kind: delivery.KindCanceled, Reason: "requested_by_customer"}
	wantTypes(t, s.deliver(deliveryOf("e5", cancel)), TypeCanceled)
	wantTypes(t, s.deliver(deliveryOf("e6", cancel)))
	if len(balances(s.history)) != 0 {
		t.Fatal("authorizations and failures post nothing")
	}
}

func TestDecideFactsOfOneDeliveryInOrder(t *testing.T) {
	s := &stream{t: t}
	// The refund comes first and waits; the capture in the same delivery
	// releases it.
	out := s.deliver(deliveryOf("e1", refundFact("re_1", 100), capture("ch_1", 1000, 0), refundFact("re_1", 100), refundFact("re_2", 50)))
	wantTypes(t, out, TypeRefundPending, TypeFlagged, TypeCaptured, TypeRefundPosted, TypeCleared, TypeRefundPosted)
	if rp := out[3].(RefundPosted); rp.RefundID != "re_1" || !rp.WasPending {
		t.Fatalf("got %+v", rp)
	}
	if rp := out[5].(RefundPosted); rp.RefundID != "re_2" || rp.WasPending {
		t.Fatalf("got %+v", rp)
	}
}

func TestDecideInvalidAndIgnored(t *testing.T) {
	if _, err := Decide(nil, delivery.Event{Provider: "stripe", PaymentKey: "pi_1", Facts: []delivery.Fact{capture("ch_1", 1, 0)}}); !errors.Is(err, delivery.ErrMissingField) {
		t.Fatalf("missing dedup key: %v", err)
	}
	if _, err := Decide(nil, deliveryOf("e1", capture("", 1, 0))); !errors.Is(err, delivery.ErrMissingField) {
		t.Fatalf("missing capture id: %v", err)
	}
	out, err := Decide(nil, deliveryOf("e1"))
	if err != nil || out != nil {
		t.Fatalf("ignored delivery: %v %v", out, err)
	}
	payout := PayoutPaid{Meta: Meta{Provider: "stripe", DedupKey: "p"}, PayoutID: "po_1", Amount: 1, Currency: "USD"}
	if _, err := Decide([]Event{payout}, deliveryOf("e1", capture("ch_1", 1, 0))); !errors.Is(err, ErrForeignEvent) {
		t.Fatalf("payout in payment stream: %v", err)
	}
}

func payoutDelivery(key, id string, amount int64) delivery.Event {
	return delivery.Event{Provider: "stripe", DedupKey: key, Type: "payout.paid", OccurredAt: t0,
		Facts: []delivery.Fact{{Kind: delivery.KindPayoutPaid, BusinessID: id, Amount: amount, Currency: "USD"}}}
}

func TestDecidePayout(t *testing.T) {
	s := &stream{t: t}
	out := s.deliver(payoutDelivery("e1", "po_1", 5000))
	want := PayoutPaid{Meta: Meta{Provider: "stripe", PaymentKey: "po_1", DedupKey: "e1", OccurredAt: t0}, PayoutID: "po_1", Amount: 5000, Currency: "USD"}
	if len(out) != 1 || !reflect.DeepEqual(out[0], want) {
		t.Fatalf("got %#v", out)
	}
	wantTypes(t, s.deliver(payoutDelivery("e1", "po_1", 5000)))
	wantTypes(t, s.deliver(payoutDelivery("e2", "po_1", 5000)))

	mixed := payoutDelivery("e3", "po_1", 1)
	mixed.Facts = append(mixed.Facts, delivery.Fact{Kind: delivery.KindPayoutPaid, BusinessID: "po_2", Amount: 1, Currency: "USD"})
	if _, err := Decide(nil, mixed); !errors.Is(err, delivery.ErrMalformed) {
		t.Fatalf("mixed payouts: %v", err)
	}
	captured := Captured{Meta: Meta{Provider: "stripe", DedupKey: "c"}, CaptureID: "ch_1", Amount: 1, Currency: "USD"}
	if _, err := Decide([]Event{captured}, payoutDelivery("e4", "po_1", 1)); !errors.Is(err, ErrForeignEvent) {
		t.Fatalf("payment event in payout stream: %v", err)
	}
}

// pinnedEventID was computed independently (Python uuid.uuid5).
const pinnedEventID = "48eaf8db-a802-5722-8d81-3c4451f5f0c0"

func TestEventID(t *testing.T) {
	a := EventID("stripe", "evt_1", 0)
	if a != EventID("stripe", "evt_1", 0) {
		t.Fatal("not deterministic")
	}
	if a.Version() != 5 {
		t.Fatalf("version %d", a.Version())
	}
	seen := map[string]bool{}
	for _, id := range []struct {
		p, k string
		i    int
	}{{"stripe", "evt_1", 0}, {"stripe", "evt_1", 1}, {"stripe", "evt_2", 0}, {"adyen", "evt_1", 0},
		{"ab", "c", 0}, {"a", "bc", 0}, {"stripe", "evt_1", 10}, {"stripe", "evt_11", 0}} {
		u := EventID(id.p, id.k, id.i).String()
		if seen[u] {
			t.Fatalf("collision for %+v", id)
		}
		seen[u] = true
	}
	// Pinned: the namespace and the name layout are part of the stored data.
	if got := EventID("stripe", "evt_1", 0).String(); got != pinnedEventID {
		t.Fatalf("EventID changed: %s", got)
	}
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
	if !reflect.DeepEqual(out[0], want) {
		t.Fatalf("got %#v, want %#v", out[0], want)
	}
	wantTypes(t, late.deliver(deliveryOf("payment.updated", capture("ch_1", 1000, 117)))) // same fee again
	wantTypes(t, late.deliver(deliveryOf("payment.updated.2", capture("ch_1", 1000, 0)))) // unknown again

	early := &stream{t: t}
	wantTypes(t, early.deliver(deliveryOf("charge.succeeded", capture("ch_1", 1000, 117))), TypeCaptured)
	wantTypes(t, early.deliver(deliveryOf("payment_intent.succeeded", capture("ch_1", 1000, 0))))

	bl, be := balances(late.history), balances(early.history)
	if !reflect.DeepEqual(bl, be) {
		t.Fatalf("balances %v, other order %v", bl, be)
	}
	if bl[balanceKey{ledger.ProviderFees("stripe"), "USD"}] != 117 || bl[balanceKey{ledger.ProviderBalance("stripe"), "USD"}] != 883 {
		t.Fatalf("balances %v", bl)
	}

	// Another non-zero fee later is flagged once and not posted.
	out = late.deliver(deliveryOf("e_other_fee", capture("ch_1", 1000, 120)))
	wantTypes(t, out, TypeFlagged)
	if f := out[0].(Flagged); f.Kind != ReconAmountMismatch || f.Key != "ch_1:fee" {
		t.Fatalf("flag = %+v", f)
	}
	wantTypes(t, late.deliver(deliveryOf("e_other_fee_2", capture("ch_1", 1000, 121))))
	if !reflect.DeepEqual(balances(late.history), bl) {
		t.Fatalf("a conflicting fee posted: %v", balances(late.history))
	}
	var sum Summary
	for _, e := range late.history {
		sum.Apply(e)
	}
	if sum.Fees != 117 || sum.Captured != 1000 {
		t.Fatalf("summary %+v", sum)
	}

	// A report with another amount is an amount mismatch of the capture;
	// its fee is not taken.
	s := &stream{t: t}
	s.deliver(deliveryOf("e1", capture("ch_2", 1000, 0)))
	wantTypes(t, s.deliver(deliveryOf("e2", capture("ch_2", 900, 50))), TypeFlagged)
	if _, ok := balances(s.history)[balanceKey{ledger.ProviderFees("stripe"), "USD"}]; ok {
		t.Fatalf("fee of a mismatched report posted: %v", balances(s.history))
	}
}

func TestDecideReasonTruncated(t *testing.T) {
	long := strings.Repeat("é", delivery.MaxReasonBytes) // 2 bytes each
	s := &stream{t: t}
	out := s.deliver(deliveryOf("e1", delivery.Fact{Kind: delivery.KindFailed, Reason: long}))
	r := out[0].(Failed).Reason
	if len(r) > delivery.MaxReasonBytes || len(r) < delivery.MaxReasonBytes-3 || !utf8.ValidString(r) || !strings.HasPrefix(long, r) {
		t.Fatalf("reason of %d bytes, valid %v", len(r), utf8.ValidString(r))
	}
	out = s.deliver(deliveryOf("e2", delivery.Fact{Kind: delivery.KindCanceled, Reason: "x" + long}))
	if r := out[0].(Canceled).Reason; len(r) != delivery.MaxReasonBytes-1 || !utf8.ValidString(r) {
		t.Fatalf("reason of %d bytes", len(r))
	}
}

func TestDecidePayoutMismatch(t *testing.T) {
	s := &stream{t: t}
	wantTypes(t, s.deliver(payoutDelivery("e1", "po_1", 5000)), TypePayoutPaid)

	out := s.deliver(payoutDelivery("e2", "po_1", 5001))
	wantTypes(t, out, TypeFlagged)
	if f := out[0].(Flagged); f.Kind != ReconAmountMismatch || f.Key != "po_1" || f.PaymentKey != "po_1" || f.DedupKey != "e2" {
		t.Fatalf("flag = %+v", f)
	}
	wantTypes(t, s.deliver(payoutDelivery("e3", "po_1", 5002))) // once

	eur := payoutDelivery("e4", "po_1", 5000)
	eur.Facts[0].Currency = "EUR"
	out = s.deliver(eur)
	wantTypes(t, out, TypeFlagged)
	if f := out[0].(Flagged); f.Kind != ReconCurrencyMismatch || f.Key != "po_1" {
		t.Fatalf("flag = %+v", f)
	}
	eur.DedupKey = "e5"
	eur.Facts[0].Amount = 1
	wantTypes(t, s.deliver(eur)) // once
	wantTypes(t, s.deliver(payoutDelivery("e6", "po_1", 5000)))
	b := balances(s.history)
	if len(b) != 2 || b[balanceKey{ledger.BankPayouts, "USD"}] != 5000 {
		t.Fatalf("balances %v", b)
	}

	// A conflicting redelivery item, appended to a payout stream by the
	// ingestion service, is part of the stream's history, not a foreign event.
	s = &stream{t: t}
	s.deliver(payoutDelivery("e1", "po_2", 10))
	s.history = append(s.history, Flagged{Meta: Meta{Provider: "stripe", PaymentKey: "po_2", DedupKey: "e1"},
		Kind: ReconConflictingRedelivery, Key: "e1@abc"})
	wantTypes(t, s.deliver(payoutDelivery("e2", "po_2", 10)))
	wantTypes(t, s.deliver(payoutDelivery("e3", "po_2", 11)), TypeFlagged)
}
