package alipay

import (
	"encoding/json"
	"fmt"
	"net/url"
	"strings"

	"github.com/onceledger/onceledger/domain/delivery"
)

// QueryState is what an alipay.trade.query answer says for the
// expectation asker.
type QueryState string

const (
	// QueryPaid: the trade was paid; Event carries its capture.
	QueryPaid QueryState = "paid"
	// QueryPending: WAIT_BUYER_PAY (or a trade Alipay does not know yet,
	// ACQ.TRADE_NOT_EXIST, which the client reports): ask again later.
	QueryPending QueryState = "pending"
	// QueryClosed: closed without being paid: nothing to record, nothing
	// to ask any more.
	QueryClosed QueryState = "closed"
)

// QueryAnswer is a verified alipay.trade.query answer as the ledger reads
// it.
type QueryAnswer struct {
	State QueryState
	// Event is the fact the trade's notification carries, when paid:
	// recorded through the webhook gate like one.
	Event delivery.Event
}

// QueryDedupPrefix starts the dedup key of a fact learned by asking: one
// per trade and status, so that asking again is a duplicate at the gate;
// the notification of the same fact (its notify_id) is a different
// delivery whose fact the payment's stream already holds, so it records
// nothing (docs/design.md, "The three dedup layers").
const QueryDedupPrefix = "query:"

// Query reads a verified alipay.trade.query answer object (the
// alipay_trade_query_response, code 10000) of appID. A paid trade becomes
// the notification Alipay would have sent for it: the answer's fields
// under the notification's names (send_pay_date is gmt_payment; the
// fund_bill_list and voucher_detail_list arrays become the JSON text the
// notification carries, their keys in its camelCase), form-encoded, and
// read by the notification's own decoder and Normalize — so the capture
// learned by asking carries exactly the facts (amount, receipt_amount,
// coupons) the notification would have. The form is also the inbox's raw
// body, which a redrive re-normalizes like a notification's.
//
// TRADE_CLOSED records a capture only when the answer shows the trade was
// paid (send_pay_date present: a paid trade fully refunded since); the
// refund is not in the answer and is left to its own notification or the
// bill. Alipay's reference does not say whether a closed unpaid trade
// carries send_pay_date; its examples show it only on paid trades.
func Query(appID string, answer []byte) (QueryAnswer, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(answer, &top); err != nil {
		return QueryAnswer{}, fmt.Errorf("%w: alipay.trade.query answer: %v", delivery.ErrMalformed, err)
	}
	v := url.Values{}
	for k, raw := range top {
		switch k {
		case "code", "msg", "sub_code", "sub_msg":
			continue
		case "fund_bill_list", "voucher_detail_list":
			text, err := camelList(raw, k == "voucher_detail_list")
			if err != nil {
				return QueryAnswer{}, fmt.Errorf("%w: alipay.trade.query answer: %s: %v", delivery.ErrMalformed, k, err)
			}
			v.Set(k, text)
			continue
		}
		var s string
		if err := json.Unmarshal(raw, &s); err != nil {
			if notificationField[k] {
				// A field the notification's decoder reads, written
				// otherwise than as the gateway's string: refused, not
				// dropped (a dropped receipt_amount would lose the
				// discount the notification carries).
				return QueryAnswer{}, fmt.Errorf("%w: alipay.trade.query answer: %s is not a string", delivery.ErrMalformed, k)
			}
			continue // objects the notification does not carry (trade_settle_info, …)
		}
		v.Set(k, s)
	}
	status, tradeNo := v.Get("trade_status"), v.Get("trade_no")
	if tradeNo == "" {
		return QueryAnswer{}, fmt.Errorf("%w: alipay.trade.query answer: trade_no", delivery.ErrMissingField)
	}
	switch status {
	case StatusTradeSuccess, StatusTradeFinished:
	case StatusTradeClosed:
		if v.Get("send_pay_date") == "" {
			return QueryAnswer{State: QueryClosed}, nil
		}
		// Paid, then refunded in full: the capture is what it tells.
		status = StatusTradeSuccess
	case StatusWaitBuyerPay:
		return QueryAnswer{State: QueryPending}, nil
	default:
		return QueryAnswer{}, fmt.Errorf("%w: alipay.trade.query answer: trade_status %q", delivery.ErrMalformed, status)
	}
	paid := v.Get("send_pay_date")
	if paid == "" {
		return QueryAnswer{}, fmt.Errorf("%w: alipay.trade.query answer: send_pay_date of a paid trade", delivery.ErrMissingField)
	}
	v.Del("send_pay_date")
	v.Set("trade_status", status)
	v.Set("gmt_payment", paid)
	v.Set("notify_time", paid)
	v.Set("notify_type", NotifyTypeTrade)
	v.Set("notify_id", QueryDedupPrefix+tradeNo+":"+status)
	v.Set("charset", "utf-8")
	if appID != "" {
		v.Set("app_id", appID)
	}
	body := []byte(v.Encode())
	f, err := parseForm(body)
	if err != nil {
		return QueryAnswer{}, err
	}
	n, err := decode(f)
	if err != nil {
		return QueryAnswer{}, err
	}
	ev, err := n.Normalize(body)
	if err != nil {
		return QueryAnswer{}, err
	}
	return QueryAnswer{State: QueryPaid, Event: ev}, nil
}

// notificationField: the answer's fields the notification's decoder reads
// (decodeNotification), which the gateway writes as JSON strings.
var notificationField = map[string]bool{
	"trade_no": true, "out_trade_no": true, "trade_status": true, "seller_id": true, "app_id": true, "auth_app_id": true,
	"total_amount": true, "receipt_amount": true, "buyer_pay_amount": true, "invoice_amount": true, "point_amount": true,
	"send_pay_date": true,
}

// camelList re-encodes a list of the answer (snake_case keys) as the
// notification's JSON text (camelCase keys; a voucher's id is voucherId):
// fund_bill_list [{"fund_channel","amount","real_amount"}] →
// [{"fundChannel","amount","realAmount"}].
func camelList(raw json.RawMessage, voucher bool) (string, error) {
	var items []map[string]json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return "", err
	}
	out := make([]map[string]json.RawMessage, len(items))
	for i, it := range items {
		out[i] = map[string]json.RawMessage{}
		for k, val := range it {
			if voucher && k == "id" {
				k = "voucher_id"
			}
			out[i][camel(k)] = val
		}
	}
	b, err := json.Marshal(out)
	return string(b), err
}

func camel(k string) string {
	parts := strings.Split(k, "_")
	for i := 1; i < len(parts); i++ {
		if parts[i] != "" {
			parts[i] = strings.ToUpper(parts[i][:1]) + parts[i][1:]
		}
	}
	return strings.Join(parts, "")
}
