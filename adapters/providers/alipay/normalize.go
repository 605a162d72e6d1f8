package alipay

import (
	"fmt"
	"time"

	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/domain/delivery"
)

// closedReason is the reason of the canceled fact of an unpaid close.
const closedReason = "TRADE_CLOSED: unpaid trade closed"

// Normalize turns the notification into the delivery the domain decides on.
// raw is the body the notification was verified on.
//
//   - Dedup key notify_id (Alipay keeps it across retries); payment key and
//     capture business id trade_no; stream payment-alipay-{trade_no}.
//
//   - A refund_fee (with out_biz_no) is a cumulative refund
//     (delivery.KindRefundCumulative), whatever the status: TRADE_SUCCESS for a
//     partial refund, TRADE_CLOSED for a full one.
//
//   - Otherwise TRADE_SUCCESS is the capture of total_amount. TRADE_FINISHED
//     is the same capture fact: the domain records a capture once per
//     business id, so it posts only for a trade whose TRADE_SUCCESS never
//     came (products without refunds notify only TRADE_FINISHED), and is a
//     no-op otherwise. A TRADE_FINISHED that also reports refunds carries
//     both facts.
//
//   - TRADE_CLOSED without refund_fee is an unpaid close: canceled, which
//     posts nothing and opens nothing.
//
//   - WAIT_BUYER_PAY, other statuses and other notify types carry no facts
//     (recorded as ignored, answered success).
//
//   - A receipt_amount below total_amount is a discount the merchant funded
//     (Notification.Discount): carried on the capture, which books it to
//     expenses:discounts:alipay (docs/reference.md, "Money and accounts").
//     A refunded total above receipt_amount returns coupon money
//     (Notification.RefundDiscount), carried on the cumulative refund: the
//     domain credits it back to expenses:discounts:alipay, not the balance.
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
	ev.AddReferences(n.OutTradeNo) // the merchant's order: found by the console's search
	capture := n.TradeStatus == StatusTradeSuccess || n.TradeStatus == StatusTradeFinished
	if n.RefundFee.Set {
		if n.OutBizNo == "" {
			return delivery.Event{}, fmt.Errorf("%w: out_biz_no (a refund_fee names its refund there)", delivery.ErrMissingField)
		}
		// refund_fee is the trade's refunded total (总退款金额) and gmt_refund
		// the refund's time (交易退款时间), per Alipay's asynchronous
		// notification reference (https://opendocs.alipay.com/open/203/105286):
		// the refund is dated by gmt_refund, so that one notified after a
		// later refund is still booked at its own time (domain/payment
		// cumulative.go, reattribute).
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
			Amount: n.TotalAmount.Fen, Discount: n.Discount, Currency: Currency})
	}
	switch {
	case n.RefundFee.Set:
		ev.Facts = append(ev.Facts, delivery.Fact{Kind: delivery.KindRefundCumulative, BusinessID: n.OutBizNo,
			Amount: n.RefundFee.Fen, Discount: n.RefundDiscount, Currency: Currency})
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
