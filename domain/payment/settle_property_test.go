package payment

import (
	"fmt"
	"reflect"
	"testing"

	"pgregory.net/rapid"

	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/ledger"
	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/settlement"
)

// settledLifecycle is a generated payment reported by webhooks (some
// dropped, some reported twice) and by a settlement report that covers every
// fact, with what its ledger must post and which missing_webhook items must
// stay open, computed independently of Decide.
type settledLifecycle struct {
	deliveries []delivery.Event
	want       map[balanceKey]int64
	missing    map[reconKey]bool
}

func genSettledLifecycle(t *rapid.T) settledLifecycle {
	g := &settledGen{t: t}
	g.p = rapid.SampledFrom([]string{"stripe", "adyen", "paypal", "square"}).Draw(t, "provider")
	g.cur = rapid.SampledFrom([]money.Currency{"USD", "EUR", "JPY"}).Draw(t, "currency")
	g.settle = g.cur
	g.fx = rapid.Bool().Draw(t, "fx")
	if g.fx {
		g.settle = rapid.SampledFrom([]money.Currency{"USD", "EUR", "GBP", "KWD"}).Filter(func(c money.Currency) bool { return c != g.cur }).Draw(t, "settlement currency")
	}
	g.l = settledLifecycle{want: map[balanceKey]int64{}, missing: map[reconKey]bool{}}
	g.bal, g.fees = ledger.ProviderBalance(g.p), ledger.ProviderFees(g.p)

	maxCapture := g.captures()
	g.refunds(maxCapture)
	for i := range rapid.IntRange(0, 2).Draw(t, "disputes") {
		g.dispute(fmt.Sprintf("du_%d", i), rapid.Int64Range(1, maxCapture).Draw(t, "dispute"))
	}
	for k, v := range g.l.want {
		if v == 0 {
			delete(g.l.want, k)
		}
	}
	return g.l
}

// settledGen draws a settled lifecycle fact by fact: the webhooks and
// the report line of each, and the postings they must make.
type settledGen struct {
	t         *rapid.T
	p         string         // the provider
	cur       money.Currency // the payment's
	settle    money.Currency // the report's
	fx        bool           // the report converts
	bal, fees string         // the provider's accounts
	n         int            // deliveries and lines so far
	l         settledLifecycle
}

// post expects amount on account, in currency c.
func (g *settledGen) post(account string, c money.Currency, amount int64) {
	g.l.want[balanceKey{account, c}] += amount
}

// webhook delivers a fact once or twice, unless it is dropped; it tells
// whether a webhook reported it.
func (g *settledGen) webhook(f delivery.Fact) bool {
	f.Currency = g.cur
	if rapid.IntRange(0, 3).Draw(g.t, "dropped") == 0 {
		return false
	}
	for range rapid.IntRange(1, 2).Draw(g.t, "copies") {
		g.n++
		g.l.deliveries = append(g.l.deliveries, delivery.Event{Provider: g.p, DedupKey: fmt.Sprintf("evt_%d", g.n), Type: string(f.Kind),
			PaymentKey: "pay_1", OccurredAt: t0, Facts: []delivery.Fact{f}})
	}
	return true
}

// line adds the report's line for a fact of the payment, signed amount in
// the payment currency; it posts its fee and conversion.
func (g *settledGen) line(kind settlement.Kind, id string, amount, fee int64) {
	g.n++
	gross := amount
	if g.fx {
		gross = rapid.Int64Range(1, 1_000_000).Draw(g.t, "settled amount")
		if amount < 0 {
			gross = -gross
		}
		g.post(FXTrading, g.cur, amount)
		g.post(g.bal, g.cur, -amount)
		g.post(g.bal, g.settle, gross)
		g.post(FXTrading, g.settle, -gross)
	}
	g.post(g.fees, g.settle, fee)
	g.post(g.bal, g.settle, -fee)
	sl := settlement.Line{Provider: g.p, Kind: kind, LineID: fmt.Sprintf("line_%d", g.n), PaymentKey: "pay_1",
		Gross: gross, Fee: fee, Net: gross - fee, Currency: g.settle, OriginalAmount: amount, OriginalCurrency: g.cur,
		PayoutID: "po_1", OccurredAt: t0}
	switch kind {
	case settlement.KindCharge:
		sl.CaptureID = id
	case settlement.KindRefund:
		sl.RefundID = id
	default:
		sl.DisputeID = id
	}
	ev := delivery.Settled(sl, nil)
	if err := ev.Validate(); err != nil {
		g.t.Fatalf("generated line: %v", err)
	}
	g.l.deliveries = append(g.l.deliveries, ev)
}

// captures adds one or two captures, and returns the largest.
func (g *settledGen) captures() (maxCapture int64) {
	t := g.t
	for i := range rapid.IntRange(1, 2).Draw(t, "captures") {
		id := fmt.Sprintf("cap_%d", i)
		a := rapid.Int64Range(1, 1_000_000).Draw(t, "capture")
		maxCapture = max(maxCapture, a)
		fee := rapid.Int64Range(0, a/10).Draw(t, "fee")
		// Stripe's webhooks never know the fee (0); Square's and PayPal's
		// carry the same fee as the report. With a conversion the fee is
		// only in the settlement currency.
		webhookFee := int64(0)
		if !g.fx && rapid.Bool().Draw(t, "webhook knows the fee") {
			webhookFee = fee
		}
		g.post(ledger.RevenueSales, g.cur, -a)
		g.post(g.bal, g.cur, a)
		if !g.webhook(delivery.Fact{Kind: delivery.KindCaptured, BusinessID: id, Amount: a, Fee: webhookFee}) {
			g.l.missing[reconKey{ReconMissingWebhook, id}] = true
		}
		g.line(settlement.KindCharge, id, a, fee)
	}
	return maxCapture
}

// refunds adds up to two refunds of at most maxCapture each.
func (g *settledGen) refunds(maxCapture int64) {
	t := g.t
	for i := range rapid.IntRange(0, 2).Draw(t, "refunds") {
		id := fmt.Sprintf("re_%d", i)
		r := rapid.Int64Range(1, maxCapture).Draw(t, "refund")
		g.post(ledger.RevenueRefunds, g.cur, r)
		g.post(g.bal, g.cur, -r)
		if !g.webhook(delivery.Fact{Kind: delivery.KindRefunded, BusinessID: id, Amount: r}) {
			g.l.missing[reconKey{ReconMissingWebhook, id}] = true
		}
		g.line(settlement.KindRefund, id, -r, -rapid.Int64Range(0, 5).Draw(t, "fee returned"))
	}
}

// dispute adds a dispute of amount d and a drawn outcome: undecided, the
// funds back, or lost.
func (g *settledGen) dispute(id string, d int64) {
	t, p, cur, bal := g.t, g.p, g.cur, g.bal
	g.post(ledger.DisputeReceivable(p), cur, d)
	g.post(bal, cur, -d)
	opened := g.webhook(delivery.Fact{Kind: delivery.KindDisputeOpened, BusinessID: id, Amount: d})
	g.line(settlement.KindDispute, id, -d, rapid.Int64Range(0, 1500).Draw(t, "dispute fee"))
	outcomeReported := false
	switch rapid.IntRange(0, 2).Draw(t, "outcome") {
	case 1:
		g.post(bal, cur, d)
		g.post(ledger.DisputeReceivable(p), cur, -d)
		// The funds come back: Stripe reports dispute.funds_reinstated,
		// and the dispute closes won.
		back := rapid.SampledFrom([]delivery.Kind{delivery.KindDisputeWon, delivery.KindDisputeFundsReinstated}).Draw(t, "funds back")
		outcomeReported = g.webhook(delivery.Fact{Kind: back, BusinessID: id, Amount: d})
		if !outcomeReported {
			g.l.missing[reconKey{ReconMissingWebhook, reinstatedKey(id)}] = true
		}
		g.line(settlement.KindDisputeReversal, id, d, -rapid.Int64Range(0, 1500).Draw(t, "dispute fee returned"))
	case 2:
		g.post(ledger.ExpensesDispute, cur, d)
		g.post(ledger.DisputeReceivable(p), cur, -d)
		outcomeReported = g.webhook(delivery.Fact{Kind: delivery.KindDisputeLost, BusinessID: id, Amount: d})
		if !outcomeReported {
			// No report line says lost: without the webhook the
			// dispute stays open on the ledger.
			g.post(ledger.ExpensesDispute, cur, -d)
			g.post(ledger.DisputeReceivable(p), cur, d)
		}
	}
	if !opened && !outcomeReported {
		g.l.missing[reconKey{ReconMissingWebhook, id}] = true
	}
}

// Any interleaving and duplication of webhooks and report lines for a
// payment gives the same ledger: the one the facts say, with the fees only
// the report knew and the conversions, and missing_webhook open for exactly
// the facts no webhook delivered.
func TestPropertySettlementOrderAndDuplicationDoNotMatter(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		l := genSettledLifecycle(t)
		natural := ingest(t, l.deliveries)
		permuted := ingest(t, shuffle(t, l.deliveries))
		for name, h := range map[string][]Event{"natural": natural, "permuted": permuted} {
			if got := balances(h); !reflect.DeepEqual(got, l.want) {
				t.Fatalf("%s balances\n%v\nwant\n%v\nevents %v", name, got, l.want, types(h))
			}
			missing := map[reconKey]bool{}
			for k := range openItems(h) {
				switch k.kind {
				case ReconMissingWebhook:
					missing[k] = true
				case ReconOverRefund, ReconOverReversal:
					// The generator draws refunds and disputes up to
					// the largest capture: they may exceed the captures.
				default:
					t.Fatalf("%s: unexpected open item %v", name, k)
				}
			}
			if !reflect.DeepEqual(missing, l.missing) {
				t.Fatalf("%s missing_webhook %v, want %v", name, missing, l.missing)
			}
		}
		nf, pf := factsOf(natural), factsOf(permuted)
		if !reflect.DeepEqual(pf.captures, nf.captures) || !reflect.DeepEqual(pf.refunds, nf.refunds) ||
			!reflect.DeepEqual(pf.disputes, nf.disputes) || !reflect.DeepEqual(pf.outcomes, nf.outcomes) {
			t.Fatalf("business facts differ")
		}
		if pf.counts[TypeLineSettled] != nf.counts[TypeLineSettled] {
			t.Fatalf("lines recorded %d and %d times", pf.counts[TypeLineSettled], nf.counts[TypeLineSettled])
		}
	})
}

// A payout reported by webhooks (any number, or none) and by its report
// line (once or several times), in any order, is paid once, reversed once
// when it failed (a payout.failed webhook, a returned line, or both), its
// lines prove it, and missing_webhook stays open exactly when no webhook
// reported it.
func TestPropertyPayoutLineAndWebhooks(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		amount := rapid.Int64Range(1, 1<<40).Draw(t, "amount")
		line := settlement.Line{Provider: "stripe", Kind: settlement.KindPayout, LineID: "txn_po", Gross: -amount, Net: -amount,
			Currency: "USD", OriginalAmount: -amount, OriginalCurrency: "USD", PayoutID: "po_1", OccurredAt: t0}
		fee := settlement.Line{Provider: "stripe", Kind: settlement.KindFee, LineID: "txn_fee", Gross: -5, Net: -5,
			Currency: "USD", OriginalAmount: -5, OriginalCurrency: "USD", PayoutID: "po_1", OccurredAt: t0}
		evs := []delivery.Event{delivery.Settled(line, nil), delivery.Settled(fee, nil)}
		webhooks := rapid.IntRange(0, 3).Draw(t, "webhooks")
		for i := range webhooks {
			evs = append(evs, delivery.Event{Provider: "stripe", DedupKey: fmt.Sprintf("evt_%d", i), Type: "payout.paid", OccurredAt: t0,
				Facts: []delivery.Fact{{Kind: delivery.KindPayoutPaid, BusinessID: "po_1", Amount: amount, Currency: "USD"}}})
		}
		// The payout may fail (a bank returns it): reported by payout.failed
		// webhooks, by a returned line, or both, any number of times.
		failed := false
		for i := range rapid.IntRange(0, 2).Draw(t, "failure webhooks") {
			failed = true
			evs = append(evs, delivery.Event{Provider: "stripe", DedupKey: fmt.Sprintf("evt_failed_%d", i), Type: "payout.failed", OccurredAt: t0,
				Facts: []delivery.Fact{{Kind: delivery.KindPayoutFailed, BusinessID: "po_1", Amount: amount, Currency: "USD"}}})
		}
		if rapid.Bool().Draw(t, "returned line") {
			failed = true
			back := line
			back.LineID, back.Gross, back.Net, back.OriginalAmount = "txn_back", amount, amount, amount
			evs = append(evs, delivery.Settled(back, nil))
		}
		// The lines of the payout, told by reports (overlapping): they sum
		// to its amount, so no payout_mismatch stays open.
		lines := []settlement.Counted{{Key: "settle:a", Net: amount + 5}, {Key: "settle:txn_fee", Net: -5}}
		evs = append(evs, delivery.PayoutLines("stripe", "po_1", "USD", lines[:1], t0), delivery.PayoutLines("stripe", "po_1", "USD", lines, t0))
		history := ingest(t, shuffle(t, evs))
		paidOut := amount
		if failed {
			paidOut = 0
		}
		want := map[balanceKey]int64{
			{ledger.BankPayouts, "USD"}:               paidOut,
			{ledger.ProviderBalance("stripe"), "USD"}: -paidOut - 5,
			{ledger.ProviderFees("stripe"), "USD"}:    5,
		}
		for k, v := range want {
			if v == 0 {
				delete(want, k)
			}
		}
		if got := balances(history); !reflect.DeepEqual(got, want) {
			t.Fatalf("balances %v, want %v (%v)", got, want, types(history))
		}
		if n := countTypes(history)[TypePayoutFailed]; failed != (n == 1) || n > 1 {
			t.Fatalf("%d payout failures recorded (failed: %v): %v", n, failed, types(history))
		}
		open := openItems(history)
		// A failed payout is judged neither by its lines nor by its
		// webhooks.
		if want := webhooks == 0 && !failed; open[reconKey{ReconMissingWebhook, "po_1"}] != want || len(open) != map[bool]int{true: 1, false: 0}[want] {
			t.Fatalf("open items %v with %d webhooks", open, webhooks)
		}
	})
}
