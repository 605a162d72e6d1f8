package payment

import (
	"fmt"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/google/uuid"
	"pgregory.net/rapid"

	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/ledger"
	"github.com/onceledger/onceledger/domain/money"
)

// lifecycle is a generated payment history: its deliveries in natural order
// and, independently of Decide, the balances that history must post to.
type lifecycle struct {
	natural  []delivery.Event
	captures int
	refunds  int
	disputes int
	held     int // disputes whose funds the provider holds at the end
	lost     int // disputes lost at the end
	want     map[balanceKey]int64
}

func genLifecycle(t *rapid.T, refundFailures bool) lifecycle {
	g := &lifecycleGen{t: t}
	g.p = rapid.SampledFrom([]string{"stripe", "adyen", "paypal", "standard", "square", "circle"}).Draw(t, "provider")
	g.cur = rapid.SampledFrom([]money.Currency{"USD", "JPY", "KWD", "EUR"}).Draw(t, "currency")
	g.l.want = map[balanceKey]int64{}

	maxCapture := g.captures()
	g.refunds(maxCapture, refundFailures)
	for i := range rapid.IntRange(0, 2).Draw(t, "disputes") {
		g.dispute(fmt.Sprintf("du_%d", i), rapid.Int64Range(1, maxCapture).Draw(t, "dispute"))
	}
	if rapid.Bool().Draw(t, "failed") {
		g.add(delivery.Fact{Kind: delivery.KindFailed, Reason: "card_declined"})
	}
	for k, v := range g.l.want {
		if v == 0 {
			delete(g.l.want, k)
		}
	}
	return g.l
}

// lifecycleGen draws a lifecycle fact by fact: the deliveries reporting
// each, and the postings it must make.
type lifecycleGen struct {
	t   *rapid.T
	p   string // the provider
	cur money.Currency
	n   int // facts added so far
	l   lifecycle
}

// post expects amount on account, in the payment's currency.
func (g *lifecycleGen) post(account string, amount int64) {
	g.l.want[balanceKey{account, g.cur}] += amount
}

// add delivers a fact, maybe twice under another event id: the same
// business fact reported again (Stripe: charge.succeeded and
// payment_intent.succeeded).
func (g *lifecycleGen) add(f delivery.Fact) {
	g.n++
	n := g.n
	f.Currency = g.cur
	ev := delivery.Event{Provider: g.p, DedupKey: fmt.Sprintf("evt_%d", n), Type: string(f.Kind),
		PaymentKey: "pay_1", OccurredAt: t0, Facts: []delivery.Fact{f}}
	g.l.natural = append(g.l.natural, ev)
	if rapid.Bool().Draw(g.t, "alias") {
		alias := ev
		alias.DedupKey = fmt.Sprintf("alias_%d", n)
		alias.Type += ".alias"
		if g.p == "paypal" {
			// PayPal reports one capture on both channels: REST
			// webhooks and IPN, whose dedup keys live apart
			// ("ipn:" + txn_id + ":" + payment_status).
			alias.DedupKey = fmt.Sprintf("ipn:%d:Completed", n)
			alias.Type = "ipn"
		}
		g.l.natural = append(g.l.natural, alias)
	}
}

// captures adds the captures (maybe authorized first), and returns the
// largest.
func (g *lifecycleGen) captures() (maxCapture int64) {
	t := g.t
	ncap := rapid.IntRange(1, 3).Draw(t, "captures")
	amounts := make([]int64, ncap)
	var total int64
	for i := range amounts {
		// Amounts at the bound (delivery.MaxAmount) too: three of them
		// plus refunds and disputes still sum within int64.
		amounts[i] = rapid.OneOf(rapid.Int64Range(1, 1_000_000), rapid.Just(delivery.MaxAmount)).Draw(t, "capture")
		total += amounts[i]
		maxCapture = max(maxCapture, amounts[i])
	}
	if rapid.Bool().Draw(t, "authorized") {
		g.add(delivery.Fact{Kind: delivery.KindAuthorized, BusinessID: "auth_1", Amount: min(total, delivery.MaxAmount)})
	}
	for i, a := range amounts {
		fee := rapid.Int64Range(0, a).Draw(t, "fee")
		c := delivery.Fact{Kind: delivery.KindCaptured, BusinessID: fmt.Sprintf("cap_%d", i), Amount: a, Fee: fee}
		if fee > 0 && rapid.Bool().Draw(t, "fee reported separately") {
			// Two reports of the capture, one not knowing the fee (0):
			// Stripe's payment_intent.succeeded and charge.succeeded,
			// Square's payment.created and payment.updated. Either may
			// come first; the capture posts with the fee.
			unknown := c
			unknown.Fee = 0
			if rapid.Bool().Draw(t, "fee first") {
				g.add(c)
				g.add(unknown)
			} else {
				g.add(unknown)
				g.add(c)
			}
		} else {
			g.add(c)
		}
		g.post(ledger.ProviderBalance(g.p), a-fee)
		g.post(ledger.ProviderFees(g.p), fee)
		g.post(ledger.RevenueSales, -a)
		g.l.captures++
	}
	return maxCapture
}

// refunds adds up to three refunds of at most maxCapture each, some
// failing when refundFailures.
func (g *lifecycleGen) refunds(maxCapture int64, refundFailures bool) {
	t := g.t
	for i := range rapid.IntRange(0, 3).Draw(t, "refunds") {
		r := rapid.Int64Range(1, maxCapture).Draw(t, "refund")
		id := fmt.Sprintf("re_%d", i)
		g.add(delivery.Fact{Kind: delivery.KindRefunded, BusinessID: id, Amount: r})
		if refundFailures && rapid.Bool().Draw(t, "refund fails") {
			// Reported as failed after all: posted then reversed in natural
			// order, never posted when the failure overtakes the refund.
			g.add(delivery.Fact{Kind: delivery.KindRefundFailed, BusinessID: id})
			continue
		}
		g.post(ledger.RevenueRefunds, r)
		g.post(ledger.ProviderBalance(g.p), -r)
		g.l.refunds++
	}
}

// dispute adds one dispute of amount d, with a drawn story.
func (g *lifecycleGen) dispute(id string, d int64) {
	fact := func(k delivery.Kind) delivery.Fact { return delivery.Fact{Kind: k, BusinessID: id, Amount: d} }
	held := func() {
		g.post(ledger.DisputeReceivable(g.p), d)
		g.post(ledger.ProviderBalance(g.p), -d)
		g.l.held++
	}
	lost := func() {
		g.post(ledger.ExpensesDispute, d)
		g.post(ledger.ProviderBalance(g.p), -d)
		g.l.lost++
	}
	g.l.disputes++
	switch rapid.IntRange(0, 7).Draw(g.t, "dispute story") {
	case 0: // a chargeback, undecided
		g.add(fact(delivery.KindDisputeOpened))
		held()
	case 1: // won: the funds come back
		g.add(fact(delivery.KindDisputeOpened))
		g.add(fact(delivery.KindDisputeWon))
	case 2:
		g.add(fact(delivery.KindDisputeOpened))
		g.add(fact(delivery.KindDisputeLost))
		lost()
	case 3:
		// Both outcomes (Adyen: CHARGEBACK_REVERSED, then
		// SECOND_CHARGEBACK): lost is final, the ledger ends as after
		// a plain loss.
		g.add(fact(delivery.KindDisputeOpened))
		g.add(fact(delivery.KindDisputeWon))
		g.add(fact(delivery.KindDisputeLost))
		lost()
	case 4: // an inquiry (Stripe warning_needs_response): no funds move
		g.add(fact(delivery.KindDisputeInquiry))
	case 5: // an inquiry closed (Stripe warning_closed): nothing ever moved
		g.add(fact(delivery.KindDisputeInquiry))
		g.add(fact(delivery.KindDisputeWon))
	case 6:
		// An inquiry that escalated, funds withdrawn, then reinstated
		// and the dispute won (Stripe funds_withdrawn,
		// funds_reinstated, closed won): nothing net.
		g.add(fact(delivery.KindDisputeInquiry))
		g.add(fact(delivery.KindDisputeOpened))
		g.add(fact(delivery.KindDisputeFundsReinstated))
		if rapid.Bool().Draw(g.t, "closed won") {
			g.add(fact(delivery.KindDisputeWon))
		}
	case 7: // an inquiry that escalated and was lost
		g.add(fact(delivery.KindDisputeInquiry))
		g.add(fact(delivery.KindDisputeOpened))
		g.add(fact(delivery.KindDisputeLost))
		lost()
	}
}

// shuffle permutes the deliveries and redelivers some of them (same dedup
// key, same payload) at random places, before or after the original.
func shuffle(t *rapid.T, evs []delivery.Event) []delivery.Event {
	out := rapid.Permutation(evs).Draw(t, "order")
	for range rapid.IntRange(0, len(evs)).Draw(t, "redeliveries") {
		dup := out[rapid.IntRange(0, len(out)-1).Draw(t, "dup")]
		at := rapid.IntRange(0, len(out)).Draw(t, "at")
		out = append(out[:at], append([]delivery.Event{dup}, out[at:]...)...)
	}
	return out
}

// ingest decides the deliveries one by one, as the ingestion service does,
// and checks what must hold of every decided event.
func ingest(t *rapid.T, evs []delivery.Event) []Event {
	var history []Event
	ids := map[uuid.UUID]bool{}
	for _, ev := range evs {
		out, err := Decide(history, ev)
		require.NoErrorf(t, err, "Decide(%s)", ev.DedupKey)
		for i, e := range out {
			require.NoErrorf(t, ledger.Check(Postings(e)), "%s", e.Type()) // (c)
			typ, data, err := Encode(e)                                    // (d)
			require.NoErrorf(t, err, "Encode(%#v)", e)
			back, err := Decode(typ, data)
			require.NoErrorf(t, err, "round trip of %#v", e)
			require.Equalf(t, e, back, "round trip of %#v", e)
			id := EventID(ev.Provider, ev.DedupKey, i)
			require.Falsef(t, ids[id], "event id %s decided twice (%s #%d)", id, ev.DedupKey, i)
			ids[id] = true
		}
		history = append(history, out...)
		again, _ := Decide(history, ev)
		require.Emptyf(t, again, "deciding %s again added %v", ev.DedupKey, types(again))
	}
	return history
}

// facts is what a history records, independent of the order it arrived in.
type facts struct {
	captures map[string]int64
	fees     map[string]int64  // per capture, with fees recorded later
	refunds  map[string]int64  // posted and not reversed
	disputes map[string]string // where each dispute's money ends: "held N", "lost N", "" (none out)
	outcomes map[string]string // final outcome per dispute
	counts   map[string]int    // business events by type
	open     map[reconKey]bool
	summary  Summary
}

func factsOf(history []Event) facts {
	f := facts{captures: map[string]int64{}, fees: map[string]int64{}, refunds: map[string]int64{},
		disputes: map[string]string{}, outcomes: map[string]string{}, counts: map[string]int{}, open: openItems(history)}
	// A win after a loss is flagged, a loss after a win is recorded: the
	// item depends on arrival order by design, the outcome does not.
	for k := range f.open {
		if k.kind == ReconDisputeOutcomeConflict {
			delete(f.open, k)
		}
	}
	for _, e := range history {
		f.summary.Apply(e)
		switch e := e.(type) {
		case Captured:
			f.captures[e.CaptureID] = e.Amount
			f.fees[e.CaptureID] = e.Fee
		case FeeRecorded:
			f.fees[e.CaptureID] += e.Fee
		case RefundPosted:
			f.refunds[e.RefundID] = e.Amount
		case RefundReversed:
			delete(f.refunds, e.RefundID)
		case DisputeOpened:
			f.disputes[e.DisputeID] = fmt.Sprintf("held %d", e.Amount)
		case DisputeFundsWithdrawn:
			f.disputes[e.DisputeID] = fmt.Sprintf("held %d", e.Amount)
		case DisputeInquiry, DisputePending:
			if id := disputeID(e); f.disputes[id] == "" {
				f.disputes[id] = ""
			}
		case DisputeFundsReinstated:
			f.disputes[e.DisputeID] = ""
		case DisputeWon:
			if !e.NoFunds {
				f.disputes[e.DisputeID] = ""
			}
			f.outcomes[e.DisputeID] = "won"
		case DisputeLost:
			f.disputes[e.DisputeID] = fmt.Sprintf("lost %d", e.Amount)
			f.outcomes[e.DisputeID] = "lost"
		}
		switch e.Type() {
		// RefundPending, Flagged and Cleared depend on arrival order by
		// design: they are how a refund before its capture waits.
		// FeeRecorded too: it exists only when the fee came second. And
		// the dispute events: which of them record a dispute's funds
		// (opened, or inquiry then withdrawn, or pending then caught
		// up) depends on the order; where the money ends does not
		// (disputes, outcomes, balances).
		case TypeRefundPending, TypeFlagged, TypeCleared, TypeFeeRecorded, TypeDisputeOpened, TypeDisputeFundsWithdrawn,
			TypeDisputeFundsReinstated, TypeDisputeInquiry, TypeDisputePending, TypeDisputeWon, TypeDisputeLost:
		default:
			f.counts[e.Type()]++
		}
	}
	for k, v := range f.counts {
		if v == 0 {
			delete(f.counts, k)
		}
	}
	return f
}

func disputeID(e Event) string {
	switch e := e.(type) {
	case DisputeInquiry:
		return e.DisputeID
	case DisputePending:
		return e.DisputeID
	}
	return ""
}

func TestPropertyOrderAndDuplicationDoNotMatter(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) { checkOrderIndependence(t, false) })
}

// With refund failures the ledger still ends the same, but the events that
// get there differ: a failure that overtakes its refund means the refund never
// posts, instead of posting and being reversed. Event counts are then not
// compared.
func TestPropertyOrderIndependenceWithRefundFailures(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) { checkOrderIndependence(t, true) })
}

func checkOrderIndependence(t *rapid.T, refundFailures bool) {
	l := genLifecycle(t, refundFailures)
	natural := ingest(t, l.natural)
	permuted := ingest(t, shuffle(t, l.natural))

	// The natural order posts what the lifecycle says, with no refund
	// waiting for its capture.
	require.Equal(t, l.want, balances(natural), "natural balances")
	nf, pf := factsOf(natural), factsOf(permuted)
	held, lost := 0, 0
	for _, v := range nf.disputes {
		switch {
		case strings.HasPrefix(v, "held"):
			held++
		case strings.HasPrefix(v, "lost"):
			lost++
		}
	}
	require.Equalf(t, []int{l.captures, l.refunds, l.disputes, l.held, l.lost},
		[]int{nf.counts[TypeCaptured], nf.counts[TypeRefundPosted] - nf.counts[TypeRefundReversed], len(nf.disputes), held, lost},
		"natural counts %v, disputes %v for captures, refunds, disputes, held, lost", nf.counts, nf.disputes)

	require.Equal(t, l.want, balances(permuted), "permuted balances") // (a)
	// (b) the business facts are those of the natural order.
	require.Equal(t, nf.captures, pf.captures, "business facts differ: captures")
	require.Equal(t, nf.fees, pf.fees, "business facts differ: fees")
	require.Equal(t, nf.refunds, pf.refunds, "business facts differ: refunds")
	require.Equal(t, nf.disputes, pf.disputes, "business facts differ: disputes")
	require.Equal(t, nf.outcomes, pf.outcomes, "business facts differ: outcomes")
	if !refundFailures { // (e)
		require.Equal(t, nf.counts, pf.counts, "event counts, against the natural order")
	}
	require.Equal(t, nf.open, pf.open, "open reconciliation items, against the natural order")
	require.Equal(t, nf.summary, pf.summary, "summary, against the natural order")
	require.Equal(t, nf.summary.Status(), pf.summary.Status(), "summary status, against the natural order")
	require.Zerof(t, pf.summary.RefundsPending, "refunds still pending after their capture: %+v", pf.summary)
}

func TestPropertyPayoutRecordedOnce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		p := rapid.SampledFrom([]string{"stripe", "adyen", "standard"}).Draw(t, "provider")
		amount := rapid.Int64Range(0, 1<<40).Draw(t, "amount")
		var evs []delivery.Event
		for i := range rapid.IntRange(1, 4).Draw(t, "keys") {
			evs = append(evs, delivery.Event{Provider: p, DedupKey: fmt.Sprintf("evt_%d", i), Type: "payout.paid", OccurredAt: t0,
				Facts: []delivery.Fact{{Kind: delivery.KindPayoutPaid, BusinessID: "po_1", Amount: amount, Currency: "USD"}}})
		}
		history := ingest(t, shuffle(t, evs))
		require.Lenf(t, history, 1, "payout recorded: %v", types(history))
		pp, ok := history[0].(PayoutPaid)
		require.Truef(t, ok, "got %#v", history[0])
		require.Equalf(t, "po_1", pp.PayoutID, "got %#v", pp)
		require.Equalf(t, amount, pp.Amount, "got %#v", pp)
		require.Equalf(t, "po_1", pp.PaymentKey, "got %#v", pp)
	})
}

// A payout reported under several keys with differing amounts is paid once,
// with the amount of the report that came first, and flagged once.
func TestPropertyPayoutMismatchFlaggedOnce(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		var evs []delivery.Event
		amounts := map[int64]bool{}
		for i := range rapid.IntRange(1, 5).Draw(t, "keys") {
			a := rapid.Int64Range(1, 3).Draw(t, "amount")
			amounts[a] = true
			evs = append(evs, delivery.Event{Provider: "stripe", DedupKey: fmt.Sprintf("evt_%d", i), Type: "payout.paid", OccurredAt: t0,
				Facts: []delivery.Fact{{Kind: delivery.KindPayoutPaid, BusinessID: "po_1", Amount: a, Currency: "USD"}}})
		}
		order := shuffle(t, evs)
		history := ingest(t, order)
		paid, flags := 0, 0
		for _, e := range history {
			switch e := e.(type) {
			case PayoutPaid:
				paid++
				require.Equal(t, order[0].Facts[0].Amount, e.Amount, "paid, against the first reported")
			case Flagged:
				flags++
				require.Equalf(t, reconKey{ReconAmountMismatch, "po_1"}, reconKey{e.Kind, e.Key}, "flag %+v", e)
			}
		}
		require.Equalf(t, []int{1, min(1, len(amounts)-1)}, []int{paid, flags}, "payouts, flags: %v", types(history))
	})
}
