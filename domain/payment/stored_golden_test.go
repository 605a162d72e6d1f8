package payment

import (
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/golden"
	"github.com/onceledger/onceledger/domain/settlement"
)

// storedEvent is one stored event kept in testdata/stored/<name>.json.
type storedEvent struct {
	name string
	ev   Event
}

// storedEvents has an event of every stored type (payments, payouts,
// settlement, reconciliation items and the operators' actions on them),
// every field set somewhere, plus the variants whose flags change the shape.
func storedEvents() []storedEvent {
	m := Meta{Provider: "stripe", PaymentKey: "pi_1", DedupKey: "evt_1", OccurredAt: t0}
	po := Meta{Provider: "stripe", PaymentKey: "po_1", DedupKey: "evt_po", OccurredAt: t0}
	line := settlement.Line{
		Provider: "stripe", Kind: settlement.KindCharge, SourceType: "charge", LineID: "txn_1",
		PaymentKey: "pi_1", CaptureID: "ch_1", RefundID: "re_x", DisputeID: "du_x",
		Gross: 10000, Fee: 320, Net: 9680, Currency: "USD",
		OriginalAmount: 9200, OriginalCurrency: "EUR", ExchangeRate: "1.0869565",
		PayoutID: "po_1", OccurredAt: t0, AvailableOn: t0.Add(48 * time.Hour), Key: "key_1",
	}
	payoutLine := settlement.Line{
		Provider: "adyen", Kind: settlement.KindPayout, SourceType: "MerchantPayout",
		Gross: -9680, Net: -9680, Currency: "EUR", OriginalAmount: -9680, OriginalCurrency: "EUR",
		PayoutID: "batch-7", OccurredAt: t0, Key: "batch-7:MerchantPayout:", NoWebhook: true,
	}
	cumulativeLine := settlement.Line{
		Provider: "alipay", Kind: settlement.KindRefund, SourceType: "退款", PaymentKey: "2026112922001",
		CaptureID: "2026112922001", RefundID: "ORDER-1-R1", Gross: -3000, Fee: -9, Net: -2991, Currency: "CNY",
		OriginalAmount: -3000, OriginalCurrency: "CNY", OccurredAt: t0, Key: "refund:2026112922001:ORDER-1-R1",
		CumulativeRefund: true,
	}
	reserveLine := settlement.Line{
		Provider: "adyen", Kind: settlement.KindAdjustment, SourceType: "DepositCorrection",
		Gross: -7893, Net: -7893, Currency: "EUR", OriginalAmount: -7893, OriginalCurrency: "EUR",
		PayoutID: "M/7/EUR", OccurredAt: t0, Key: "M|7|DepositCorrection|||EUR", NoWebhook: true,
		Counterpart: settlement.CounterpartReserve,
	}
	settled := Meta{Provider: "stripe", PaymentKey: "pi_1", DedupKey: "settle:txn_1", OccurredAt: t0}
	return []storedEvent{
		{"payment.authorized", Authorized{Meta: m, AuthorizationID: "auth_1", Amount: 1000, Currency: "USD"}},
		{"payment.captured", Captured{Meta: m, CaptureID: "ch_1", Amount: 1000, Fee: 30, Currency: "USD"}},
		{"payment.fee_recorded", FeeRecorded{Meta: m, CaptureID: "ch_1", Fee: 117, Currency: "USD"}},
		{"payment.failed", Failed{Meta: m, Reason: `card_declined: "do <not> honor" & café`}},
		{"payment.failed.amount", Failed{Meta: m, Reason: "card_declined", Amount: 900, Currency: "USD"}},
		{"payment.canceled", Canceled{Meta: m, Reason: "requested_by_customer"}},
		{"refund.pending", RefundPending{Meta: m, RefundID: "re_1", Amount: 100, Currency: "USD"}},
		{"refund.posted", RefundPosted{Meta: m, RefundID: "re_1", Amount: 100, Currency: "USD", WasPending: true}},
		{"payment.captured.discount", Captured{Meta: m, CaptureID: "2026112922001", Amount: 10000, Discount: 500, Currency: "CNY", SubMerchant: "1900000109"}},
		{"refund.pending.cumulative", RefundPending{Meta: m, RefundID: "biz_1", Amount: 300, Currency: "CNY", Total: 300}},
		{"refund.posted.cumulative", RefundPosted{Meta: m, RefundID: "biz_2", Amount: 200, Currency: "CNY", Total: 500}},
		{"refund.pending.cumulative_line", RefundPending{Meta: m, RefundID: "biz_3", Amount: 300, Currency: "CNY", FromLine: true}},
		{"refund.posted.cumulative_increase", RefundPosted{Meta: m, RefundID: "biz_3", Amount: 200, Currency: "CNY", Total: 800, Increase: true}},
		{"refund.posted.cumulative_line", RefundPosted{Meta: m, RefundID: "biz_4", Amount: 100, Currency: "CNY", FromLine: true, Increase: true}},
		{"refund.noted.cumulative", RefundNoted{Meta: m, RefundID: "biz_1", Status: "refund_cumulative", Amount: 300, Currency: "CNY"}},
		{"refund.noted", RefundNoted{Meta: m, RefundID: "50300001", Status: "refund_abnormal", Amount: 100, Currency: "CNY"}},
		{"refund.posted.direct", RefundPosted{Meta: m, RefundID: "re_2", Amount: 50, Currency: "USD"}},
		{"refund.reversed", RefundReversed{Meta: m, RefundID: "re_1", Amount: 100, Currency: "USD", WasPending: true}},
		{"dispute.opened", DisputeOpened{Meta: m, DisputeID: "du_1", Amount: 500, Currency: "USD"}},
		{"dispute.inquiry", DisputeInquiry{Meta: m, DisputeID: "du_2", Amount: 500, Currency: "USD", Reason: "warning_needs_response"}},
		{"dispute.funds_withdrawn", DisputeFundsWithdrawn{Meta: m, DisputeID: "du_1", Amount: 500, Currency: "USD"}},
		{"dispute.funds_reinstated", DisputeFundsReinstated{Meta: m, DisputeID: "du_1", Amount: 500, Currency: "USD"}},
		{"dispute.pending", DisputePending{Meta: m, DisputeID: "du_1", Fact: "dispute_won", Amount: 500, Currency: "USD"}},
		{"dispute.won", DisputeWon{Meta: m, DisputeID: "du_1", Amount: 500, Currency: "USD"}},
		{"dispute.won.no_funds", DisputeWon{Meta: m, DisputeID: "du_2", Amount: 500, Currency: "USD", NoFunds: true}},
		{"dispute.lost", DisputeLost{Meta: m, DisputeID: "du_3", Amount: 500, Currency: "USD"}},
		{"dispute.lost.reverses_win", DisputeLost{Meta: m, DisputeID: "du_1", Amount: 500, Currency: "USD", ReversesWin: true}},
		{"payout.paid", PayoutPaid{Meta: po, PayoutID: "po_1", Amount: 9680, Currency: "USD"}},
		{"payout.failed", PayoutFailed{Meta: po, PayoutID: "po_1", Amount: 9680, Currency: "USD", Reason: "account_closed", WasPaid: true}},
		{"reconciliation.flagged", Flagged{Meta: m, Kind: ReconOverRefund, Key: "refunds", Details: "refunds exceed captures"}},
		{"reconciliation.flagged.reported", Flagged{Meta: m, Kind: ReconSettlementMismatch, Key: "ch_1",
			Details: "capture ch_1 reported by webhook as 60.00 USD, settled as 100.00 USD; the settled fact stands", Reported: 6000}},
		{"payment.capture_reduced", CaptureReduced{Meta: settled, CaptureID: "ch_1", Amount: 4000, Currency: "USD", LineID: "settle:txn_2"}},
		{"reconciliation.cleared", Cleared{Meta: m, Kind: ReconOverRefund, Key: "refunds", Details: "captures caught up"}},
		{"reconciliation.resolved", Resolved{Meta: m, Kind: ReconMissingWebhook, Key: "ch_1", Actor: "ops", Note: "webhook lost upstream"}},
		{"reconciliation.reopened", Reopened{Meta: m, Kind: ReconMissingWebhook, Key: "ch_1", Actor: "ops", Note: "resolved by mistake"}},
		{"settlement.line_recorded", LineSettled{Meta: settled, Line: line}},
		{"settlement.line_recorded.cumulative_refund", LineSettled{Meta: Meta{Provider: "alipay", PaymentKey: "2026112922001",
			DedupKey: cumulativeLine.DedupKey(), OccurredAt: t0}, Line: cumulativeLine}},
		{"settlement.line_recorded.payout", LineSettled{Meta: Meta{Provider: "adyen", PaymentKey: "", DedupKey: payoutLine.DedupKey(), OccurredAt: t0}, Line: payoutLine}},
		{"settlement.line_recorded.counterpart", LineSettled{Meta: Meta{Provider: "adyen", PaymentKey: "M/7/EUR",
			DedupKey: reserveLine.DedupKey(), OccurredAt: t0}, Line: reserveLine}},
		{"settlement.fee_posted", FeeSettled{Meta: settled, LineID: "settle:txn_1", Fee: 320, Currency: "USD"}},
		{"settlement.converted", Converted{Meta: settled, LineID: "settle:txn_1", OriginalAmount: 9200, OriginalCurrency: "EUR",
			SettledAmount: 10000, SettledCurrency: "USD", ExchangeRate: "1.0869565"}},
		{"settlement.payout_lines_counted", PayoutLinesCounted{Meta: po, PayoutID: "po_1", Currency: "USD",
			Lines: []settlement.Counted{{Key: "settle:txn_1", Net: 9680}, {Key: "settle:txn_2", Net: -15}}}},
	}
}

// TestStoredEventsDecode keeps the events the stores hold today readable:
// every file in testdata/stored decodes to the event it was written from,
// and encoding that event again gives the same bytes (a re-decided event
// that is appended again must carry what the first append stored).
func TestStoredEventsDecode(t *testing.T) {
	types := map[string]bool{}
	for _, s := range storedEvents() {
		typ, data, err := Encode(s.ev)
		require.NoErrorf(t, err, "Encode(%s)", s.name)
		types[typ] = true
		path := filepath.Join("testdata", "stored", s.name+".json")
		stored := golden.Stored(t, path, data)
		back, err := Decode(s.ev.Type(), stored)
		require.NoErrorf(t, err, "Decode(%s)", path)
		assert.Equalf(t, s.ev, back, "%s decodes to another event", path)
		assert.Equalf(t, string(stored), string(data), "%s: the encoding changed", path)
		// The events table keeps data as jsonb, which reads back reordered
		// and spaced: the form a rebuild or a decision decodes.
		path = filepath.Join("testdata", "jsonb", s.name+".json")
		back, err = Decode(s.ev.Type(), golden.Read(t, path))
		require.NoErrorf(t, err, "Decode(%s)", path)
		assert.Equalf(t, s.ev, back, "%s decodes to another event", path)
	}
	for _, typ := range []string{TypeAuthorized, TypeCaptured, TypeFeeRecorded, TypeFailed, TypeCanceled,
		TypeRefundPending, TypeRefundPosted, TypeRefundReversed, TypeRefundNoted, TypeDisputeOpened, TypeDisputeWon, TypeDisputeLost,
		TypePayoutPaid, TypeDisputeInquiry, TypeDisputeFundsWithdrawn, TypeDisputeFundsReinstated, TypeDisputePending,
		TypePayoutFailed, TypeFlagged, TypeCleared, TypeResolved, TypeReopened,
		TypeLineSettled, TypeFeeSettled, TypeConverted, TypePayoutLinesCounted, TypeCaptureReduced} {
		assert.Truef(t, types[typ], "stored type %s has no golden file", typ)
	}
}
