package alipay

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/money"
)

// The trade statuses a trade_status_sync notification reports.
const (
	StatusWaitBuyerPay  = "WAIT_BUYER_PAY" // created, unpaid: posts nothing (not notified by default)
	StatusTradeSuccess  = "TRADE_SUCCESS"  // paid, refundable
	StatusTradeFinished = "TRADE_FINISHED" // paid, no longer refundable
	StatusTradeClosed   = "TRADE_CLOSED"   // closed unpaid, or fully refunded (then with refund_fee)
)

// NotifyTypeTrade is the notify_type of trade notifications; the others
// that can reach notify_url are recorded and post nothing.
const NotifyTypeTrade = "trade_status_sync"

// Currency: Alipay's domestic notifications are in yuan.
const Currency money.Currency = "CNY"

// beijing is the zone of every Alipay time ("yyyy-MM-dd HH:mm:ss", China
// Standard Time, UTC+8 without daylight saving): a fixed offset is exact and
// needs no tzdata.
var beijing = time.FixedZone("CST", 8*3600)

// Amount is a decimal yuan amount converted to fen. Set is false when the
// parameter was absent or empty.
type Amount struct {
	Fen int64
	Set bool
}

// Notification is a verified trade_status_sync notification, values
// decoded to UTF-8 and amounts converted to fen.
type Notification struct {
	NotifyID, NotifyType, Charset string
	NotifyTime                    time.Time
	AppID, AuthAppID, SellerID    string
	TradeNo, OutTradeNo, OutBizNo string
	TradeStatus                   string

	TotalAmount, ReceiptAmount, BuyerPayAmount, InvoiceAmount, PointAmount, RefundFee Amount

	GmtCreate, GmtPayment, GmtRefund, GmtClose time.Time // zero when absent

	// Discount is total_amount − receipt_amount: what the merchant funded of
	// the order (its coupons), which Alipay never credits. Without
	// receipt_amount, the vouchers' merchant_contribute
	// (voucher_detail_list); zero when neither says.
	Discount int64
	// RefundDiscount is the coupon money within refund_fee (the trade's
	// refunded total): the part of it above what the merchant received.
	// Alipay refunds "the buyer's own funds first" and the coupon last
	// (alipay.trade.refund, refund_amount: of a 100.00 trade paid 80.00 and
	// a 20.00 coupon, a first refund of 60.00 is all the merchant's money,
	// a second of 40.00 is 20.00 of it and the 20.00 coupon), so the coupon
	// returned with a refunded total T is max(0, T − (total − Discount)).
	RefundDiscount int64
}

// decodeNotification reads the typed notification from the decoded values.
// notify_id and notify_time are required of every notification; the trade
// fields are checked by normalize, which knows which ones a status needs.
func decodeNotification(v map[string]string) (Notification, error) {
	n := Notification{
		NotifyID: v["notify_id"], NotifyType: v["notify_type"], Charset: v["charset"],
		AppID: v["app_id"], AuthAppID: v["auth_app_id"], SellerID: v["seller_id"],
		TradeNo: v["trade_no"], OutTradeNo: v["out_trade_no"], OutBizNo: v["out_biz_no"],
		TradeStatus: v["trade_status"],
	}
	if n.NotifyID == "" {
		return Notification{}, fmt.Errorf("%w: notify_id", delivery.ErrMissingField)
	}
	if v["notify_time"] == "" {
		return Notification{}, fmt.Errorf("%w: notify_time", delivery.ErrMissingField)
	}
	var err error
	times := []struct {
		key string
		dst *time.Time
	}{{"notify_time", &n.NotifyTime}, {"gmt_create", &n.GmtCreate}, {"gmt_payment", &n.GmtPayment},
		{"gmt_refund", &n.GmtRefund}, {"gmt_close", &n.GmtClose}}
	for _, t := range times {
		if *t.dst, err = parseTime(t.key, v[t.key]); err != nil {
			return Notification{}, err
		}
	}
	amounts := []struct {
		key string
		dst *Amount
	}{{"total_amount", &n.TotalAmount}, {"receipt_amount", &n.ReceiptAmount}, {"buyer_pay_amount", &n.BuyerPayAmount},
		{"invoice_amount", &n.InvoiceAmount}, {"point_amount", &n.PointAmount}, {"refund_fee", &n.RefundFee}}
	for _, a := range amounts {
		if *a.dst, err = parseAmount(a.key, v[a.key]); err != nil {
			return Notification{}, err
		}
	}
	if err := n.coupons(v); err != nil {
		return Notification{}, err
	}
	return n, nil
}

// coupons reads the trade's merchant-funded discount and the coupon money
// in its refunded total (Notification.Discount, RefundDiscount) from the
// fields a trade_status_sync notification and an alipay.trade.query answer
// share (receipt_amount, voucher_detail_list, fund_bill_list, refund_fee),
// so that a trade known from either is booked alike. The amounts must be
// decoded already.
func (n *Notification) coupons(v map[string]string) error {
	var err error
	switch {
	case n.ReceiptAmount.Set && n.TotalAmount.Set:
		if n.ReceiptAmount.Fen > n.TotalAmount.Fen {
			return fmt.Errorf("%w: receipt_amount %s is above total_amount %s", delivery.ErrInvalidAmount,
				v["receipt_amount"], v["total_amount"])
		}
		n.Discount = n.TotalAmount.Fen - n.ReceiptAmount.Fen
	case n.TotalAmount.Set:
		if n.Discount, err = merchantContribution(v["voucher_detail_list"], n.TotalAmount.Fen); err != nil {
			return err
		}
		if n.Discount == 0 {
			if n.Discount, err = merchantDiscountChannel(v["fund_bill_list"], n.TotalAmount.Fen); err != nil {
				return err
			}
		}
	}
	if n.RefundFee.Set && n.TotalAmount.Set {
		n.RefundDiscount = max(0, n.RefundFee.Fen-(n.TotalAmount.Fen-n.Discount))
	}
	return nil
}

// merchantContribution sums the merchant contribution of voucher_detail_list
// (a JSON array): the part of the vouchers the merchant funded, which
// Alipay never pays out; other_contribute (a third party's) and Alipay's
// own vouchers are paid to the merchant and are no discount of theirs.
// Used only without receipt_amount, which says the same in one figure.
// Empty: zero. The notification spells the member merchantContribute
// (opendocs.alipay.com 270/105902, 异步通知参数: voucher_detail_list
// [{"amount":"0.20","merchantContribute":"0.00",…,"voucherId":…}]),
// alipay.trade.query merchant_contribute, which Query renames to the
// notification's spelling: both read, and a voucher naming two different
// contributions is refused rather than guessed.
func merchantContribution(list string, total int64) (int64, error) {
	if list == "" {
		return 0, nil
	}
	var vouchers []struct {
		Camel string `json:"merchantContribute"`
		Snake string `json:"merchant_contribute"`
	}
	if err := json.Unmarshal([]byte(list), &vouchers); err != nil {
		return 0, fmt.Errorf("%w: voucher_detail_list is not a JSON array of vouchers: %v", delivery.ErrMalformed, err)
	}
	var sum int64
	for i, v := range vouchers {
		key := fmt.Sprintf("voucher_detail_list[%d].merchantContribute", i)
		contribution := v.Camel
		switch {
		case v.Camel == "":
			key, contribution = fmt.Sprintf("voucher_detail_list[%d].merchant_contribute", i), v.Snake
		case v.Snake != "" && v.Snake != v.Camel:
			return 0, fmt.Errorf("%w: voucher_detail_list[%d]: merchantContribute %q and merchant_contribute %q disagree",
				delivery.ErrMalformed, i, truncate(v.Camel), truncate(v.Snake))
		}
		a, err := parseAmount(key, contribution)
		if err != nil {
			return 0, err
		}
		if sum += a.Fen; sum > total {
			return 0, fmt.Errorf("%w: voucher_detail_list: the merchant's contributions exceed total_amount", delivery.ErrInvalidAmount)
		}
	}
	return sum, nil
}

// merchantDiscountChannel sums the MDISCOUNT entries of fund_bill_list
// (the channels that paid the trade; MDISCOUNT: "商户优惠", a discount the
// merchant funded), the last word on the merchant's discount when neither
// receipt_amount nor voucher_detail_list says it. The notification spells
// the channel fundChannel, alipay.trade.query fund_channel: both read.
func merchantDiscountChannel(list string, total int64) (int64, error) {
	if list == "" {
		return 0, nil
	}
	var bills []struct {
		Amount      string `json:"amount"`
		FundChannel string `json:"fundChannel"`
		Channel     string `json:"fund_channel"`
	}
	if err := json.Unmarshal([]byte(list), &bills); err != nil {
		return 0, fmt.Errorf("%w: fund_bill_list is not a JSON array of channels: %v", delivery.ErrMalformed, err)
	}
	var sum int64
	for i, b := range bills {
		if b.FundChannel != "MDISCOUNT" && b.Channel != "MDISCOUNT" {
			continue
		}
		a, err := parseAmount(fmt.Sprintf("fund_bill_list[%d].amount", i), b.Amount)
		if err != nil {
			return 0, err
		}
		if sum += a.Fen; sum > total {
			return 0, fmt.Errorf("%w: fund_bill_list: MDISCOUNT exceeds total_amount", delivery.ErrInvalidAmount)
		}
	}
	return sum, nil
}

// parseTime reads an Alipay time ("2019-08-15 15:56:24", gmt_refund with
// milliseconds: "2019-08-15 15:56:24.123", which Go accepts after the
// seconds without saying so in the layout). Empty is zero.
func parseTime(key, s string) (time.Time, error) {
	if s == "" {
		return time.Time{}, nil
	}
	t, err := time.ParseInLocation(time.DateTime, s, beijing)
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: %s %q is not yyyy-MM-dd HH:mm:ss", delivery.ErrMalformed, key, truncate(s))
	}
	return t.UTC(), nil
}

// parseAmount converts a decimal yuan string exactly into fen (money.ParseMajor:
// more than two decimals that are not zeros, signs, exponents and the like are
// refused, not rounded), refusing negatives and amounts above
// delivery.MaxAmount. Empty is unset.
func parseAmount(key, s string) (Amount, error) {
	if s == "" {
		return Amount{}, nil
	}
	fen, err := money.ParseMajor(s, Currency)
	if err != nil {
		return Amount{}, fmt.Errorf("%w: %s: %w", delivery.ErrInvalidAmount, key, err)
	}
	if fen < 0 {
		return Amount{}, fmt.Errorf("%w: %s %q is negative", delivery.ErrInvalidAmount, key, s)
	}
	if fen > delivery.MaxAmount {
		return Amount{}, fmt.Errorf("%w: %s %q is above the limit of %d fen", delivery.ErrInvalidAmount, key, truncate(s), delivery.MaxAmount)
	}
	return Amount{Fen: fen, Set: true}, nil
}
