package alipay

import (
	"fmt"
	"time"

	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/domain/delivery"
)

// KindRefundCumulative is the fact of a refund notification: Amount is
// refund_fee, the trade's refunded total so far (not this refund's amount),
// and BusinessID the refund request out_biz_no. The domain must post the
// increase over the highest total it has seen for the trade (RefundIncrease).
//
// It is declared here until domain/delivery has it: until then Validate
// refuses it as an unknown kind (400, so Alipay retries), which is the safe
// failure: recording refund_fee as an ordinary refund would post every
// partial refund's predecessors again.
const KindRefundCumulative delivery.Kind = "refund_cumulative"

// closedReason is the reason of the canceled fact of an unpaid close.
const closedReason = "TRADE_CLOSED: unpaid trade closed"

// Normalize turns the notification into the delivery the domain decides on.
// raw is the body the notification was verified on.
//
//   - Dedup key notify_id (Alipay keeps it across retries); payment key and
//     capture business id trade_no; stream payment-alipay-{trade_no}.
//   - A refund_fee (with out_biz_no) is a cumulative refund
//     (KindRefundCumulative), whatever the status: TRADE_SUCCESS for a
//     partial refund, TRADE_CLOSED for a full one.
//   - Otherwise TRADE_SUCCESS is the capture of total_amount. TRADE_FINISHED
//     is the same capture fact: the domain records a capture once per
//     business id, so it posts only for a trade whose TRADE_SUCCESS never
//     came (products without refunds notify only TRADE_FINISHED), and is a
//     no-op otherwise. A TRADE_FINISHED that also reports refunds carries
//     both facts.
//   - TRADE_CLOSED without refund_fee is an unpaid close: canceled, which
//     posts nothing and opens nothing.
//   - WAIT_BUYER_PAY, other statuses and other notify types carry no facts
//     (recorded as ignored, answered success).
//
// The discount (Notification.Discount) is not in the facts yet: delivery.Fact
// has no field for it.
func (n Notification) Normalize(raw []byte) (delivery.Event, error) {
	ev := delivery.Event{
		Provider:    Name,
		DedupKey:    n.NotifyID,
		Type:        n.NotifyType,
		PaymentKey:  n.TradeNo,
		OccurredAt:  n.NotifyTime,
		PayloadHash: providers.PayloadHash(raw),
		Raw:         raw,
	}
	if n.NotifyType != NotifyTypeTrade {
		return ev, nil
	}
	if n.TradeNo == "" {
		return delivery.Event{}, fmt.Errorf("%w: trade_no", delivery.ErrMissingField)
	}
	if n.TradeStatus == "" {
		return delivery.Event{}, fmt.Errorf("%w: trade_status", delivery.ErrMissingField)
	}
	ev.Type = n.TradeStatus
	capture := n.TradeStatus == StatusTradeSuccess || n.TradeStatus == StatusTradeFinished
	if n.RefundFee.Set {
		if n.OutBizNo == "" {
			return delivery.Event{}, fmt.Errorf("%w: out_biz_no (a refund_fee names its refund there)", delivery.ErrMissingField)
		}
		ev.OccurredAt = orElse(n.GmtRefund, n.NotifyTime)
		// A partial refund's notification reports TRADE_SUCCESS: it is about
		// the refund only. TRADE_FINISHED keeps its capture meaning.
		capture = n.TradeStatus == StatusTradeFinished
	}
	if capture {
		if !n.TotalAmount.Set {
			return delivery.Event{}, fmt.Errorf("%w: total_amount", delivery.ErrMissingField)
		}
		if !n.RefundFee.Set {
			ev.OccurredAt = orElse(n.GmtPayment, n.NotifyTime)
		}
		ev.Facts = append(ev.Facts, delivery.Fact{Kind: delivery.KindCaptured, BusinessID: n.TradeNo,
			Amount: n.TotalAmount.Fen, Currency: Currency})
	}
	switch {
	case n.RefundFee.Set:
		ev.Facts = append(ev.Facts, delivery.Fact{Kind: KindRefundCumulative, BusinessID: n.OutBizNo,
			Amount: n.RefundFee.Fen, Currency: Currency})
	case n.TradeStatus == StatusTradeClosed:
		ev.OccurredAt = orElse(n.GmtClose, n.NotifyTime)
		ev.Facts = []delivery.Fact{{Kind: delivery.KindCanceled, Reason: closedReason}}
	}
	return ev, nil
}

func orElse(t, fallback time.Time) time.Time {
	if t.IsZero() {
		return fallback
	}
	return t
}

// RefundIncrease is what a cumulative refund notification posts: the part of
// reported (the trade's refunded total the notification states) above the
// highest total already seen for the trade, or nothing. Posting it keeps the
// refunds posted equal to the highest total seen, so after any order of
// arrival, duplicates included, they end equal to the highest total reported
// and never exceed it. For the domain's decide (it is pure): highestSoFar is
// the sum of the increases already posted (or pending) for the trade.
func RefundIncrease(highestSoFar, reported int64) int64 {
	if reported <= highestSoFar {
		return 0
	}
	return reported - highestSoFar
}
