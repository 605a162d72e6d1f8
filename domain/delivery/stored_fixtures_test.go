package delivery_test

import (
	"time"

	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/settlement"
)

// storedDelivery is one representative normalized delivery whose stored
// form (webhook_inbox.normalized) is kept in testdata/normalized/<name>.json,
// as the encoding of the day the file was written produced it.
type storedDelivery struct {
	name string
	ev   delivery.Event
}

var storedAt = time.Date(2026, 11, 29, 10, 0, 0, 123456789, time.UTC)

// storedDeliveries has a delivery of every fact kind (and an ignored one),
// every field set somewhere, so that a field the codec drops, renames or
// re-types shows up as a difference from the stored files.
func storedDeliveries() []storedDelivery {
	payment := func(name, typ string, facts ...delivery.Fact) storedDelivery {
		return storedDelivery{name, delivery.Event{Provider: "stripe", DedupKey: "evt_" + name, Type: typ,
			PaymentKey: "pi_1", OccurredAt: storedAt, PayloadHash: "hash-" + name, Raw: []byte(`{"id":"evt_` + name + `"}`), Facts: facts}}
	}
	payout := func(name, typ string, f delivery.Fact) storedDelivery {
		return storedDelivery{name, delivery.Event{Provider: "stripe", DedupKey: "evt_" + name, Type: typ,
			OccurredAt: storedAt, PayloadHash: "hash-" + name, Raw: []byte(`{}`), Facts: []delivery.Fact{f}}}
	}
	charge := settlement.Line{
		Provider: "stripe", Kind: settlement.KindCharge, SourceType: "charge", LineID: "txn_1",
		PaymentKey: "pi_1", CaptureID: "ch_1", RefundID: "", DisputeID: "",
		Gross: 10000, Fee: 320, Net: 9680, Currency: "USD",
		OriginalAmount: 9200, OriginalCurrency: "EUR", ExchangeRate: "1.0869565",
		PayoutID: "po_1", OccurredAt: storedAt, AvailableOn: storedAt.Add(48 * time.Hour),
	}
	adyenPayout := settlement.Line{
		Provider: "adyen", Kind: settlement.KindPayout, SourceType: "MerchantPayout",
		Gross: -9680, Net: -9680, Currency: "EUR", OriginalAmount: -9680, OriginalCurrency: "EUR",
		PayoutID: "batch-7", OccurredAt: storedAt, Key: "batch-7:MerchantPayout:", NoWebhook: true,
	}
	refundLine := settlement.Line{
		Provider: "square", Kind: settlement.KindRefund, SourceType: "REFUND", LineID: "poe_9",
		PaymentKey: "sq_pay", CaptureID: "sq_pay", RefundID: "sq_ref", DisputeID: "",
		Gross: -500, Fee: -15, Net: -485, Currency: "USD", OriginalAmount: -500, OriginalCurrency: "USD",
		OccurredAt: storedAt,
	}
	usd := func(k delivery.Kind, id string, amount int64) delivery.Fact {
		return delivery.Fact{Kind: k, BusinessID: id, Amount: amount, Currency: "USD"}
	}
	return []storedDelivery{
		payment("authorized", "AUTHORISATION", usd(delivery.KindAuthorized, "auth_1", 1000)),
		payment("captured", "charge.succeeded", delivery.Fact{Kind: delivery.KindCaptured, BusinessID: "ch_1", Amount: 1000, Fee: 59, Currency: "USD"}),
		payment("failed", "payment_intent.payment_failed", delivery.Fact{Kind: delivery.KindFailed, Reason: `card_declined: "do <not> honor" & café`}),
		payment("canceled", "payment_intent.canceled", delivery.Fact{Kind: delivery.KindCanceled, Reason: "requested_by_customer"}),
		payment("refunded", "charge.refunded", usd(delivery.KindRefunded, "re_1", 100), usd(delivery.KindRefunded, "re_2", 250)),
		payment("refund_failed", "charge.refund.updated", delivery.Fact{Kind: delivery.KindRefundFailed, BusinessID: "re_1", Currency: "USD", Reason: "insufficient_funds"}),
		payment("dispute_opened", "charge.dispute.created", usd(delivery.KindDisputeOpened, "du_1", 1000)),
		payment("dispute_inquiry", "charge.dispute.created", delivery.Fact{Kind: delivery.KindDisputeInquiry, BusinessID: "du_2", Amount: 1000, Currency: "USD", Reason: "warning_needs_response"}),
		payment("dispute_funds_reinstated", "charge.dispute.funds_reinstated", usd(delivery.KindDisputeFundsReinstated, "du_1", 1000)),
		payment("dispute_won", "charge.dispute.closed", usd(delivery.KindDisputeWon, "du_1", 1000)),
		payment("dispute_lost", "charge.dispute.closed", usd(delivery.KindDisputeLost, "du_3", 1000)),
		payout("payout_paid", "payout.paid", usd(delivery.KindPayoutPaid, "po_1", 9680)),
		payout("payout_failed", "payout.failed", delivery.Fact{Kind: delivery.KindPayoutFailed, BusinessID: "po_1", Amount: 9680, Currency: "USD", Reason: "account_closed"}),
		payment("ignored", "customer.created"),
		{"settled_charge", delivery.Settled(charge, []byte("txn_1,charge,100.00"))},
		{"settled_payout", delivery.Settled(adyenPayout, []byte("batch-7;MerchantPayout"))},
		{"settled_refund", delivery.Settled(refundLine, []byte(`{"id":"poe_9"}`))},
		{"settled_adjustment_counterpart", delivery.Settled(settlement.Line{
			Provider: "adyen", Kind: settlement.KindAdjustment, SourceType: "DepositCorrection",
			Gross: -7893, Net: -7893, Currency: "EUR", OriginalAmount: -7893, OriginalCurrency: "EUR",
			PayoutID: "M/7/EUR", OccurredAt: storedAt, Key: "M|7|DepositCorrection|||EUR", NoWebhook: true,
			Counterpart: settlement.CounterpartReserve,
		}, []byte("M,7,DepositCorrection"))},
		{"unsettled_check", delivery.UnsettledCheck("stripe", "pi_1", storedAt, 7*24*time.Hour)},
		{"captured_discount", delivery.Event{Provider: "alipay", DedupKey: "notify_1", Type: "TRADE_SUCCESS", PaymentKey: "2026112922001",
			OccurredAt: storedAt, PayloadHash: "hash-alipay", Raw: []byte("notify_id=notify_1"),
			Facts: []delivery.Fact{{Kind: delivery.KindCaptured, BusinessID: "2026112922001", Amount: 10000, Discount: 500, Currency: "CNY"}}}},
		{"refund_cumulative", delivery.Event{Provider: "alipay", DedupKey: "notify_2", Type: "TRADE_SUCCESS", PaymentKey: "2026112922001",
			OccurredAt: storedAt, PayloadHash: "hash-alipay-2", Raw: []byte("notify_id=notify_2"),
			Facts: []delivery.Fact{{Kind: delivery.KindRefundCumulative, BusinessID: "biz_1", Amount: 3000, Currency: "CNY"}}}},
		{"refund_abnormal", delivery.Event{Provider: "wechatpay", DedupKey: "wx_n_1", Type: "REFUND.ABNORMAL", PaymentKey: "4200001",
			OccurredAt: storedAt, PayloadHash: "hash-wx-1", Raw: []byte(`{}`), SubMerchant: "1900000109",
			Facts: []delivery.Fact{{Kind: delivery.KindRefundAbnormal, BusinessID: "50300001", Amount: 100, Currency: "CNY", Reason: "ABNORMAL"}}}},
		{"refund_closed", delivery.Event{Provider: "wechatpay", DedupKey: "wx_n_2", Type: "REFUND.CLOSED", PaymentKey: "4200001",
			OccurredAt: storedAt, PayloadHash: "hash-wx-2", Raw: []byte(`{}`),
			Facts: []delivery.Fact{{Kind: delivery.KindRefundClosed, BusinessID: "50300002", Amount: 100, Currency: "CNY", Reason: "CLOSED"}}}},
		{"captured_referenced", delivery.Event{Provider: "alipay", DedupKey: "notify_3", Type: "TRADE_SUCCESS", PaymentKey: "2026112922003",
			OccurredAt: storedAt, PayloadHash: "hash-alipay-3", Raw: []byte("notify_id=notify_3"), References: []string{"order-1"},
			Facts: []delivery.Fact{{Kind: delivery.KindCaptured, BusinessID: "2026112922003", Amount: 8800, Currency: "CNY"}}}},
		{"payout_lines", delivery.PayoutLines("stripe", "po_1", "USD",
			[]settlement.Counted{{Key: "settle:txn_1", Net: 9680}, {Key: "settle:txn_2", Net: -15}}, storedAt)},
	}
}
