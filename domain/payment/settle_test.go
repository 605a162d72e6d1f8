package payment

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/ledger"
	"github.com/onceledger/onceledger/domain/settlement"
)

func chargeLine(id string, gross, fee int64) settlement.Line {
	return settlement.Line{Provider: "stripe", Kind: settlement.KindCharge, LineID: "txn_" + id, PaymentKey: "pi_1",
		CaptureID: id, Gross: gross, Fee: fee, Net: gross - fee, Currency: "USD", OriginalAmount: gross,
		OriginalCurrency: "USD", PayoutID: "po_1", OccurredAt: t0}
}

func settled(l settlement.Line) delivery.Event { return delivery.Settled(l, []byte(`{}`)) }

func openKinds(h []Event) map[string]string {
	out := map[string]string{}
	for k := range openItems(h) {
		out[k.kind] = k.key
	}
	return out
}

func TestSettledLineAddsTheFeeTheWebhookDidNotCarry(t *testing.T) {
	s := &stream{t: t}
	s.deliver(deliveryOf("evt_1", capture("ch_1", 2000, 0)))
	wantTypes(t, s.deliver(settled(chargeLine("ch_1", 2000, 88))), TypeLineSettled, TypeFeeRecorded)
	assert.Equal(t, map[balanceKey]int64{
		{ledger.ProviderBalance("stripe"), "USD"}: 1912,
		{ledger.ProviderFees("stripe"), "USD"}:    88,
		{ledger.RevenueSales, "USD"}:              -2000,
	}, balances(s.history))
	assert.Empty(t, openItems(s.history))
	// The same line again, under its own dedup key: nothing.
	wantTypes(t, s.deliver(settled(chargeLine("ch_1", 2000, 88))))
}

func TestLineWithoutWebhookRecordsTheFactAndOpensMissingWebhook(t *testing.T) {
	s := &stream{t: t}
	wantTypes(t, s.deliver(settled(chargeLine("ch_1", 2000, 88))), TypeLineSettled, TypeCaptured, TypeFlagged)
	assert.Equal(t, map[string]string{ReconMissingWebhook: "ch_1"}, openKinds(s.history))
	// The webhook after all: nothing posts twice, the item clears.
	wantTypes(t, s.deliver(deliveryOf("evt_1", capture("ch_1", 2000, 0))), TypeCleared)
	assert.Empty(t, openItems(s.history))
	assert.Equal(t, int64(88), balances(s.history)[balanceKey{ledger.ProviderFees("stripe"), "USD"}])
}

func TestFeeMismatchFirstStands(t *testing.T) {
	s := &stream{t: t}
	s.deliver(deliveryOf("evt_1", capture("ch_1", 2000, 60)))
	wantTypes(t, s.deliver(settled(chargeLine("ch_1", 2000, 88))), TypeLineSettled, TypeFlagged)
	assert.Equal(t, map[string]string{ReconFeeMismatch: "ch_1"}, openKinds(s.history))
	assert.Equal(t, int64(60), balances(s.history)[balanceKey{ledger.ProviderFees("stripe"), "USD"}])

	s = &stream{t: t}
	s.deliver(settled(chargeLine("ch_1", 2000, 88)))
	wantTypes(t, s.deliver(deliveryOf("evt_1", capture("ch_1", 2000, 60))), TypeCleared, TypeFlagged)
	assert.Equal(t, map[string]string{ReconFeeMismatch: "ch_1"}, openKinds(s.history))
	assert.Equal(t, int64(88), balances(s.history)[balanceKey{ledger.ProviderFees("stripe"), "USD"}])
}

func TestSettlementMismatchFirstStands(t *testing.T) {
	s := &stream{t: t}
	s.deliver(deliveryOf("evt_1", capture("ch_1", 2000, 0)))
	wantTypes(t, s.deliver(settled(chargeLine("ch_1", 2500, 88))), TypeLineSettled, TypeFlagged)
	assert.Equal(t, map[string]string{ReconSettlementMismatch: "ch_1"}, openKinds(s.history))
	assert.Equal(t, int64(-2000), balances(s.history)[balanceKey{ledger.RevenueSales, "USD"}])

	s = &stream{t: t}
	s.deliver(settled(chargeLine("ch_1", 2500, 88)))
	wantTypes(t, s.deliver(deliveryOf("evt_1", capture("ch_1", 2000, 0))), TypeCleared, TypeFlagged)
	assert.Equal(t, map[string]string{ReconSettlementMismatch: "ch_1"}, openKinds(s.history))
	assert.Equal(t, int64(-2500), balances(s.history)[balanceKey{ledger.RevenueSales, "USD"}])

	// A line in another currency than the payment's customer-facing one.
	s = &stream{t: t}
	s.deliver(deliveryOf("evt_1", capture("ch_1", 2000, 0)))
	l := chargeLine("ch_1", 2000, 88)
	l.OriginalCurrency = "EUR"
	s.deliver(settled(l))
	assert.Equal(t, map[string]string{ReconSettlementMismatch: "ch_1"}, openKinds(s.history))
}

func TestConversionThroughFXTrading(t *testing.T) {
	// Stripe's example: 10.00 EUR charged, 12.34 USD settled, fee 0.66 USD.
	s := &stream{t: t}
	s.deliver(deliveryOf("evt_1", delivery.Fact{Kind: delivery.KindCaptured, BusinessID: "ch_1", Amount: 1000, Currency: "EUR"}))
	l := chargeLine("ch_1", 1234, 66)
	l.OriginalAmount, l.OriginalCurrency, l.ExchangeRate = 1000, "EUR", "1.234"
	wantTypes(t, s.deliver(settled(l)), TypeLineSettled, TypeFeeSettled, TypeConverted)
	bal := ledger.ProviderBalance("stripe")
	assert.Equal(t, map[balanceKey]int64{
		{bal, "USD"}:                           1168,
		{ledger.ProviderFees("stripe"), "USD"}: 66,
		{ledger.RevenueSales, "EUR"}:           -1000,
		{FXTrading, "EUR"}:                     1000,
		{FXTrading, "USD"}:                     -1234,
	}, balances(s.history))
	conv := s.history[len(s.history)-1].(Converted)
	assert.Equal(t, "1.234", conv.ExchangeRate)
}

func TestPayoutLineAndWebhookAreOnePayout(t *testing.T) {
	payoutLine := settlement.Line{Provider: "stripe", Kind: settlement.KindPayout, LineID: "txn_po", Gross: -1811, Net: -1811,
		Currency: "USD", OriginalAmount: -1811, OriginalCurrency: "USD", PayoutID: "po_1", OccurredAt: t0}
	webhook := delivery.Event{Provider: "stripe", DedupKey: "evt_po", Type: "payout.paid", OccurredAt: t0,
		Facts: []delivery.Fact{{Kind: delivery.KindPayoutPaid, BusinessID: "po_1", Amount: 1811, Currency: "USD"}}}
	ev := settled(payoutLine)
	assert.Equal(t, "payout-stripe-po_1", ev.StreamID())
	assert.Equal(t, webhook.StreamID(), ev.StreamID())

	s := &stream{t: t}
	wantTypes(t, s.deliver(ev), TypeLineSettled, TypePayoutPaid, TypeFlagged)
	wantTypes(t, s.deliver(webhook), TypeCleared)
	assert.Equal(t, int64(1811), balances(s.history)[balanceKey{ledger.BankPayouts, "USD"}])

	s = &stream{t: t}
	s.deliver(webhook)
	wantTypes(t, s.deliver(ev), TypeLineSettled)
	assert.Equal(t, int64(1811), balances(s.history)[balanceKey{ledger.BankPayouts, "USD"}])

	// Amounts differ: the first stands, settlement_mismatch opens.
	short := payoutLine
	short.Gross, short.Net, short.OriginalAmount = -1800, -1800, -1800
	s = &stream{t: t}
	s.deliver(webhook)
	wantTypes(t, s.deliver(settled(short)), TypeLineSettled, TypeFlagged)
	assert.Equal(t, map[string]string{ReconSettlementMismatch: "po_1"}, openKinds(s.history))
	s = &stream{t: t}
	s.deliver(settled(short))
	wantTypes(t, s.deliver(webhook), TypeCleared, TypeFlagged)
	assert.Equal(t, int64(1800), balances(s.history)[balanceKey{ledger.BankPayouts, "USD"}])

	// Returned: the failure reverses what was paid (the first report's
	// 1800), whatever the line says.
	back := payoutLine
	back.LineID, back.Gross, back.Net, back.OriginalAmount = "txn_back", 1811, 1811, 1811
	wantTypes(t, s.deliver(settled(back)), TypeLineSettled, TypePayoutFailed)
	wantTypes(t, s.deliver(settled(back)))
	assert.Equal(t, int64(0), balances(s.history)[balanceKey{ledger.BankPayouts, "USD"}])
}

// A returned payout line and the payout.failed webhook are one failure:
// the payout is reversed once, whichever comes first, and a paid report
// after the failure posts nothing.
func TestPayoutReturnedLineAndFailedWebhookAreOneFailure(t *testing.T) {
	paid := delivery.Event{Provider: "stripe", DedupKey: "evt_paid", Type: "payout.paid", OccurredAt: t0,
		Facts: []delivery.Fact{{Kind: delivery.KindPayoutPaid, BusinessID: "po_1", Amount: 1811, Currency: "USD"}}}
	failed := delivery.Event{Provider: "stripe", DedupKey: "evt_failed", Type: "payout.failed", OccurredAt: t0,
		Facts: []delivery.Fact{{Kind: delivery.KindPayoutFailed, BusinessID: "po_1", Amount: 1811, Currency: "USD"}}}
	back := settlement.Line{Provider: "stripe", Kind: settlement.KindPayout, LineID: "txn_back", Gross: 1811, Net: 1811,
		Currency: "USD", OriginalAmount: 1811, OriginalCurrency: "USD", PayoutID: "po_1", OccurredAt: t0}
	for name, order := range map[string][]delivery.Event{
		"webhook first":     {paid, failed, settled(back)},
		"line first":        {paid, settled(back), failed},
		"failure first":     {settled(back), failed, paid},
		"line, paid, again": {settled(back), paid, settled(back), failed},
	} {
		t.Run(name, func(t *testing.T) {
			s := &stream{t: t}
			for _, ev := range order {
				s.deliver(ev)
			}
			assert.Equal(t, 1, countTypes(s.history)[TypePayoutFailed], types(s.history))
			assert.Equal(t, int64(0), balances(s.history)[balanceKey{ledger.BankPayouts, "USD"}])
			assert.Equal(t, int64(0), balances(s.history)[balanceKey{ledger.ProviderBalance("stripe"), "USD"}])
		})
	}
}

// A dispute line is a movement of funds: with the funds_withdrawn /
// funds_reinstated webhooks, in any order, the funds move once, and
// missing_webhook opens only for a movement no webhook reported.
func TestDisputeLinesMoveFundsOnceWithTheirWebhooks(t *testing.T) {
	line := func(kind settlement.Kind, id string, amount int64) delivery.Event {
		return settled(settlement.Line{Provider: "stripe", Kind: kind, LineID: "txn_" + id, PaymentKey: "pi_1",
			DisputeID: "du_1", Gross: amount, Net: amount, Currency: "USD", OriginalAmount: amount, OriginalCurrency: "USD",
			PayoutID: "po_1", OccurredAt: t0})
	}
	withdrawnLine, reinstatedLine := line(settlement.KindDispute, "w", -500), line(settlement.KindDisputeReversal, "r", 500)
	withdrawn := deliveryOf("evt_w", disputeFact(delivery.KindDisputeOpened, "du_1", 500))
	reinstated := deliveryOf("evt_r", disputeFact(delivery.KindDisputeFundsReinstated, "du_1", 500))
	won := deliveryOf("evt_won", disputeFact(delivery.KindDisputeWon, "du_1", 500))
	cases := []struct {
		name    string
		order   []delivery.Event
		held    int64
		missing map[string]string
	}{
		{"webhook then line", []delivery.Event{withdrawn, withdrawnLine}, 500, map[string]string{}},
		{"line then webhook", []delivery.Event{withdrawnLine, withdrawn}, 500, map[string]string{}},
		{"line alone", []delivery.Event{withdrawnLine}, 500, map[string]string{ReconMissingWebhook: "du_1"}},
		{"both movements, lines first", []delivery.Event{withdrawnLine, reinstatedLine, reinstated, withdrawn}, 0, map[string]string{}},
		{"won webhook covers the reversal", []delivery.Event{withdrawn, won, reinstatedLine, withdrawnLine}, 0, map[string]string{}},
		{"reversal line without its webhook", []delivery.Event{withdrawn, withdrawnLine, reinstatedLine}, 0,
			map[string]string{ReconMissingWebhook: "du_1:reinstated"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := &stream{t: t}
			s.deliver(deliveryOf("evt_cap", capture("ch_1", 2000, 0)))
			for _, ev := range c.order {
				s.deliver(ev)
			}
			b := balances(s.history)
			assert.Equal(t, c.held, b[balanceKey{ledger.DisputeReceivable("stripe"), "USD"}])
			assert.Equal(t, 2000-c.held, b[balanceKey{ledger.ProviderBalance("stripe"), "USD"}])
			assert.Equal(t, c.missing, openKinds(s.history), types(s.history))
		})
	}
}

func TestFeeLineJoinsItsPayout(t *testing.T) {
	fee := settlement.Line{Provider: "stripe", Kind: settlement.KindFee, LineID: "txn_fee", Gross: -5, Net: -5,
		Currency: "USD", OriginalAmount: -5, OriginalCurrency: "USD", PayoutID: "po_1", OccurredAt: t0}
	ev := settled(fee)
	assert.Equal(t, "payout-stripe-po_1", ev.StreamID())
	s := &stream{t: t}
	wantTypes(t, s.deliver(ev), TypeLineSettled, TypeFeeSettled)
	assert.Equal(t, int64(5), balances(s.history)[balanceKey{ledger.ProviderFees("stripe"), "USD"}])

	fee.PayoutID = ""
	assert.Equal(t, "payout-stripe-settle:txn_fee", settled(fee).StreamID())
}

func TestSettledDeliveryValidation(t *testing.T) {
	ok := settled(chargeLine("ch_1", 2000, 88))
	require.NoError(t, ok.Validate())
	bad := ok
	bad.PaymentKey = "pi_2"
	assert.ErrorIs(t, bad.Validate(), delivery.ErrMalformed)
	l := chargeLine("ch_1", 2000, 88)
	l.Net = 1900
	assert.ErrorIs(t, settled(l).Validate(), settlement.ErrInvalidAmount)
	_, err := Decide(nil, settled(l))
	assert.Error(t, err)
}

func TestSettlementEventsRoundTrip(t *testing.T) {
	l := chargeLine("ch_1", 1234, 66)
	l.OriginalAmount, l.OriginalCurrency, l.ExchangeRate, l.AvailableOn = 1000, "EUR", "1.234", t0.AddDate(0, 0, 2)
	meta := Meta{Provider: "stripe", PaymentKey: "pi_1", DedupKey: l.DedupKey(), OccurredAt: t0}
	for _, e := range []Event{
		LineSettled{Meta: meta, Line: l},
		FeeSettled{Meta: meta, LineID: "settle:txn_1", Fee: -2, Currency: "USD"},
		Converted{Meta: meta, LineID: "settle:txn_1", OriginalAmount: -1000, OriginalCurrency: "EUR", SettledAmount: -1234, SettledCurrency: "USD", ExchangeRate: "1.234"},
		PayoutLinesCounted{Meta: meta, PayoutID: "po_1", Currency: "USD", Lines: []settlement.Counted{{Key: "settle:a", Net: -5}, {Key: "settle:b", Net: 7}}},
	} {
		typ, data, err := Encode(e)
		require.NoError(t, err)
		back, err := Decode(typ, data)
		require.NoError(t, err)
		assert.Equal(t, e, back)
		require.NoError(t, ledger.Check(Postings(e)))
	}
}

func TestUnsettledOpensAndALaterLineClears(t *testing.T) {
	s := &stream{t: t}
	s.deliver(deliveryOf("evt_1", capture("ch_1", 2000, 0)))
	s.deliver(deliveryOf("evt_2", capture("ch_2", 500, 0)))
	s.deliver(settled(chargeLine("ch_2", 500, 10)))
	meta := Meta{Provider: "stripe", PaymentKey: "pi_1", DedupKey: "unsettled:import-1", OccurredAt: t0.Add(200 * time.Hour)}
	flags := Unsettled(s.history, meta, t0.Add(200*time.Hour), 168*time.Hour)
	wantTypes(t, flags, TypeFlagged)
	assert.Equal(t, "ch_1", flags[0].(Flagged).Key)
	assert.Empty(t, Unsettled(s.history, meta, t0.Add(100*time.Hour), 168*time.Hour), "not old enough")
	s.history = append(s.history, flags...)
	assert.Empty(t, Unsettled(s.history, meta, t0.Add(300*time.Hour), 168*time.Hour), "opened once")
	wantTypes(t, s.deliver(settled(chargeLine("ch_1", 2000, 88))), TypeLineSettled, TypeCleared, TypeFeeRecorded)
	assert.Empty(t, openItems(s.history))
}

func countTypes(h []Event) map[string]int {
	n := map[string]int{}
	for _, e := range h {
		n[e.Type()]++
	}
	return n
}

// The import's unsettled check opens an item for each old capture no line
// settled, once; a later charge line clears it.
func TestUnsettledCheckThroughDecide(t *testing.T) {
	s := &stream{t: t}
	s.deliver(deliveryOf("evt_1", capture("ch_1", 2000, 0)))
	s.deliver(deliveryOf("evt_2", capture("ch_2", 500, 0)))
	s.deliver(settled(chargeLine("ch_2", 500, 10)))
	check := delivery.UnsettledCheck("stripe", "pi_1", t0.Add(200*time.Hour), 168*time.Hour)
	require.NoError(t, check.Validate())
	assert.Empty(t, s.deliver(delivery.UnsettledCheck("stripe", "pi_1", t0.Add(100*time.Hour), 168*time.Hour)), "not old enough")
	out := s.deliver(check)
	wantTypes(t, out, TypeFlagged)
	assert.Equal(t, "ch_1", out[0].(Flagged).Key)
	assert.Empty(t, s.deliver(delivery.UnsettledCheck("stripe", "pi_1", t0.Add(300*time.Hour), 168*time.Hour)), "opened once")
	wantTypes(t, s.deliver(settled(chargeLine("ch_1", 2000, 88))), TypeLineSettled, TypeCleared, TypeFeeRecorded)
	assert.Empty(t, openItems(s.history))
}

// A payout's lines, listed by reports (overlapping, in any order) and its
// amount (payout.paid) prove it or open payout_mismatch, whatever the order;
// lines arriving later that make up the difference clear it.
func TestPayoutLinesProveThePayout(t *testing.T) {
	paid := delivery.Event{Provider: "stripe", DedupKey: "evt_paid", Type: "payout.paid", OccurredAt: t0,
		Facts: []delivery.Fact{{Kind: delivery.KindPayoutPaid, BusinessID: "po_1", Amount: 300, Currency: "USD"}}}
	first := delivery.PayoutLines("stripe", "po_1", "USD", []settlement.Counted{{Key: "settle:a", Net: 100}, {Key: "settle:b", Net: 150}}, t0)
	overlap := delivery.PayoutLines("stripe", "po_1", "USD", []settlement.Counted{{Key: "settle:b", Net: 150}, {Key: "settle:c", Net: 50}}, t0)
	require.NoError(t, first.Validate())
	assert.Equal(t, "payout-stripe-po_1", first.StreamID())

	for name, order := range map[string][]delivery.Event{
		"paid first":  {paid, first, overlap},
		"lines first": {first, overlap, paid},
		"between":     {first, paid, overlap, first},
	} {
		t.Run(name, func(t *testing.T) {
			s := &stream{t: t}
			for _, ev := range order {
				s.deliver(ev)
			}
			assert.Empty(t, openItems(s.history), types(s.history))
		})
	}
	s := &stream{t: t}
	s.deliver(first)
	wantTypes(t, s.deliver(paid), TypePayoutPaid, TypeFlagged)
	assert.Equal(t, map[string]string{ReconPayoutMismatch: "po_1"}, openKinds(s.history))
	wantTypes(t, s.deliver(first))
	wantTypes(t, s.deliver(overlap), TypePayoutLinesCounted, TypeCleared)
	assert.Empty(t, openItems(s.history))

	bad := first
	bad.Facts = []delivery.Fact{{Kind: delivery.KindPayoutLines, BusinessID: "po_1", Currency: "USD"}}
	assert.ErrorIs(t, bad.Validate(), delivery.ErrMalformed)
}

// A payout line of a negative payout (Square PAID −3.55: Square debited the
// bank) is a paid payout of −3.55 that moves money the other way: not
// payout.failed with amount 0.
func TestNegativePayoutLineIsPaidTheOtherWay(t *testing.T) {
	line := settlement.Line{Provider: "square", Kind: settlement.KindPayout, LineID: "po_neg", Gross: 355, Net: 355,
		Currency: "USD", OriginalAmount: 355, OriginalCurrency: "USD", PayoutID: "po_neg", OccurredAt: t0,
		NoWebhook: true, BankDebit: true}
	s := &stream{t: t}
	out := s.deliver(settled(line))
	wantTypes(t, out, TypeLineSettled, TypePayoutPaid)
	for _, e := range s.history {
		if p, ok := e.(PayoutPaid); ok {
			assert.Equal(t, int64(-355), p.Amount)
		}
	}
	assert.Zero(t, countTypes(s.history)[TypePayoutFailed])
	assert.Equal(t, int64(-355), balances(s.history)[balanceKey{ledger.BankPayouts, "USD"}])
	assert.Equal(t, int64(355), balances(s.history)[balanceKey{ledger.ProviderBalance("square"), "USD"}])
	// The same line again: nothing.
	wantTypes(t, s.deliver(settled(line)))
}

// A payout line carrying the payout's trace id (`settle sync stripe`, the
// source expanded) records it: with the payout when the line is first,
// as payout.traced when the webhook (without one) was first; once.
func TestPayoutLineCarriesTraceID(t *testing.T) {
	line := settlement.Line{Provider: "stripe", Kind: settlement.KindPayout, LineID: "txn_po", Gross: -1811, Net: -1811,
		Currency: "USD", OriginalAmount: -1811, OriginalCurrency: "USD", PayoutID: "po_1", OccurredAt: t0,
		PayoutTraceID: "021000021234567", PayoutDescriptor: "ACME"}
	webhook := delivery.Event{Provider: "stripe", DedupKey: "evt_po", Type: "payout.paid", OccurredAt: t0,
		Facts: []delivery.Fact{{Kind: delivery.KindPayoutPaid, BusinessID: "po_1", Amount: 1811, Currency: "USD"}}}
	s := &stream{t: t}
	out := s.deliver(settled(line))
	wantTypes(t, out, TypeLineSettled, TypePayoutPaid, TypeFlagged)
	assert.Equal(t, "021000021234567", out[1].(PayoutPaid).TraceID)
	s = &stream{t: t}
	s.deliver(webhook)
	out = s.deliver(settled(line))
	wantTypes(t, out, TypeLineSettled, TypePayoutTraced)
	assert.Equal(t, PayoutTraced{Meta: out[1].Metadata(), PayoutID: "po_1", TraceID: "021000021234567", Descriptor: "ACME"}, out[1])
	again := line
	again.LineID = "txn_po2"
	wantTypes(t, s.deliver(settled(again)), TypeLineSettled)
}
