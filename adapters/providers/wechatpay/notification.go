package wechatpay

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/payload"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/money"
)

// The event types that carry facts.
const (
	EventTransactionSuccess = "TRANSACTION.SUCCESS"
	EventRefundSuccess      = "REFUND.SUCCESS"
	EventRefundAbnormal     = "REFUND.ABNORMAL"
	EventRefundClosed       = "REFUND.CLOSED"
)

// DefaultCurrency is the currency of an amount that names none: a refund
// notification's amount carries no currency, and a domestic merchant takes
// CNY only ("CNY：人民币，境内商户号仅支持人民币", wechatpay-go
// services/payments).
const DefaultCurrency = money.Currency("CNY")

// Notification is one verified, decrypted notification: the envelope WeChat
// Pay sends, and its resource's content, typed for the event types this
// adapter handles.
type Notification struct {
	ID           string // the notification id: the same across retries
	CreateTime   string // RFC 3339, as sent
	EventType    string // "TRANSACTION.SUCCESS", "REFUND.SUCCESS", …
	ResourceType string // "encrypt-resource"
	Summary      string
	Resource     Resource // as sent (encrypted)
	Plaintext    []byte   // the decrypted resource, JSON
	Merchant     Merchant
	Transaction  *Transaction // TRANSACTION.* events
	Refund       *Refund      // REFUND.* events
}

// Resource is a notification's encrypted content.
type Resource struct {
	OriginalType   string `json:"original_type"`
	Algorithm      string `json:"algorithm"`
	Ciphertext     string `json:"ciphertext"`
	AssociatedData string `json:"associated_data"`
	Nonce          string `json:"nonce"`
}

// Merchant is who a notification is for. A direct merchant (直连商户) is
// MchID; a service provider (服务商) acting for a sub-merchant (特约商户) is
// SpMchID, and SubMchID the merchant whose payment it is.
type Merchant struct {
	MchID    string `json:"mchid"`
	SpMchID  string `json:"sp_mchid"`
	SubMchID string `json:"sub_mchid"`
}

// Transaction is a payment notification's content (wechatpay-go
// services/payments Transaction, partner fields beside).
type Transaction struct {
	Merchant
	AppID         string  `json:"appid"`
	SpAppID       string  `json:"sp_appid"`
	SubAppID      string  `json:"sub_appid"`
	TransactionID string  `json:"transaction_id"`
	OutTradeNo    string  `json:"out_trade_no"`
	TradeType     string  `json:"trade_type"`
	TradeState    string  `json:"trade_state"`
	SuccessTime   string  `json:"success_time"`
	Amount        *Amount `json:"-"` // decoded by decodeAmount
	// PromotionDetail: the coupons and instant discounts of the payment
	// (promotion_detail, in the notification and the query answer alike).
	PromotionDetail []Promotion `json:"promotion_detail"`
}

// Promotion is one promotion_detail entry. Type CASH is a pre-funded
// coupon (充值券): its funder paid WeChat, and the merchant is settled the
// whole order; NOCASH (免充值券) is not pre-funded: WeChat settles the
// merchant the order less it ("应结订单金额 = 订单金额 − 免充值券金额",
// pay.weixin.qq.com 交易账单). Amounts in fen.
type Promotion struct {
	CouponID            string `json:"coupon_id"`
	Type                string `json:"type"`
	Amount              int64  `json:"amount"`
	WechatpayContribute int64  `json:"wechatpay_contribute"`
	MerchantContribute  int64  `json:"merchant_contribute"`
	OtherContribute     int64  `json:"other_contribute"`
}

// Refund is a refund notification's content (wechatpay-java
// service/refund/model RefundNotification, merchant fields beside).
type Refund struct {
	Merchant
	TransactionID       string  `json:"transaction_id"`
	OutTradeNo          string  `json:"out_trade_no"`
	RefundID            string  `json:"refund_id"`
	OutRefundNo         string  `json:"out_refund_no"`
	RefundStatus        string  `json:"refund_status"`
	SuccessTime         string  `json:"success_time"`
	UserReceivedAccount string  `json:"user_received_account"`
	Amount              *Amount `json:"-"` // decoded by decodeAmount
}

// Amount is the amount object of either content, in fen (minor units). A
// member absent from the notification is zero; Normalize refuses the ones
// it needs when absent.
type Amount struct {
	Total       int64
	PayerTotal  int64
	Refund      int64
	PayerRefund int64
	// SettlementRefund: 应结退款金额, the refund less the no-cash coupon
	// money it returns (the refund query and apply answers carry it; the
	// notification does not).
	SettlementRefund int64
	Currency         money.Currency // DefaultCurrency when the notification names none
	present          map[string]bool
}

type envelope struct {
	ID           string          `json:"id"`
	CreateTime   string          `json:"create_time"`
	EventType    string          `json:"event_type"`
	ResourceType string          `json:"resource_type"`
	Summary      string          `json:"summary"`
	Resource     json.RawMessage `json:"resource"`
}

// decodeEnvelope reads the (verified, still encrypted) body.
func decodeEnvelope(raw []byte) (Notification, error) {
	var env envelope
	if err := payload.DecodeBody(raw, &env); err != nil {
		return Notification{}, err
	}
	n := Notification{ID: env.ID, CreateTime: env.CreateTime, EventType: env.EventType,
		ResourceType: env.ResourceType, Summary: env.Summary}
	if err := payload.DecodeMember(env.Resource, &n.Resource, "resource"); err != nil {
		return Notification{}, err
	}
	return n, nil
}

func handled(eventType string) bool {
	switch eventType {
	case EventTransactionSuccess, EventRefundSuccess, EventRefundAbnormal, EventRefundClosed:
		return true
	}
	return false
}

// decodeResource reads the decrypted content: the merchant of every
// notification, the typed content of the handled ones.
func (n *Notification) decodeResource() error {
	const field = "resource (decrypted)"
	if err := payload.DecodeMember(n.Plaintext, &n.Merchant, field); err != nil {
		return err
	}
	var err error
	switch n.EventType {
	case EventTransactionSuccess:
		n.Transaction = &Transaction{}
		n.Transaction.Amount, err = decodeContent(n.Plaintext, n.Transaction)
	case EventRefundSuccess, EventRefundAbnormal, EventRefundClosed:
		n.Refund = &Refund{}
		n.Refund.Amount, err = decodeContent(n.Plaintext, n.Refund)
	}
	return err
}

// decodeContent decodes the decrypted content pt into v (a *Transaction or
// *Refund) and returns its amount, which v leaves to decodeAmount.
func decodeContent(pt []byte, v any) (*Amount, error) {
	var amt struct {
		Amount json.RawMessage `json:"amount"`
	}
	for _, dst := range []any{v, &amt} {
		if err := json.Unmarshal(pt, dst); err != nil {
			return nil, fmt.Errorf("%w: resource (decrypted): %v", delivery.ErrMalformed, err)
		}
	}
	return decodeAmount(amt.Amount)
}

// decodeAmount reads an amount object whose members are integers of fen.
// Each must be a plain JSON integer (no sign, fraction or exponent, and not
// a string): 1.0 or 1e2 fen is not how WeChat writes an amount, and reading
// it would be guessing.
func decodeAmount(raw json.RawMessage) (*Amount, error) {
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return nil, nil
	}
	var m struct {
		Total       json.RawMessage `json:"total"`
		PayerTotal  json.RawMessage `json:"payer_total"`
		Refund      json.RawMessage `json:"refund"`
		PayerRefund json.RawMessage `json:"payer_refund"`
		Settlement  json.RawMessage `json:"settlement_refund"`
		Currency    *string         `json:"currency"`
	}
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%w: amount: %v", delivery.ErrMalformed, err)
	}
	a := &Amount{Currency: DefaultCurrency, present: map[string]bool{}}
	for _, f := range []struct {
		name string
		raw  json.RawMessage
		dst  *int64
	}{{"total", m.Total, &a.Total}, {"payer_total", m.PayerTotal, &a.PayerTotal}, {"refund", m.Refund, &a.Refund}, {"payer_refund", m.PayerRefund, &a.PayerRefund},
		{"settlement_refund", m.Settlement, &a.SettlementRefund}} {
		if len(f.raw) == 0 || bytes.Equal(f.raw, []byte("null")) {
			continue
		}
		v, err := fen("amount."+f.name, f.raw)
		if err != nil {
			return nil, err
		}
		*f.dst, a.present[f.name] = v, true
	}
	if m.Currency != nil {
		c, err := payload.Currency("amount.currency", *m.Currency)
		if err != nil {
			return nil, err
		}
		a.Currency = c
	}
	return a, nil
}

// fen reads one amount member: digits only, without leading zeros.
func fen(field string, raw json.RawMessage) (int64, error) {
	s := string(raw)
	if !digits(s) || (len(s) > 1 && s[0] == '0') {
		return 0, fmt.Errorf("%w: %s %s is not a whole number of fen", delivery.ErrInvalidAmount, field, clip(s))
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %s %s is out of range", delivery.ErrInvalidAmount, field, clip(s))
	}
	return v, nil
}

// amount returns member name of a, which the fact needs.
func (a *Amount) amount(name string) (int64, error) {
	if a == nil {
		return 0, fmt.Errorf("%w: resource amount", delivery.ErrMissingField)
	}
	if !a.present[name] {
		return 0, fmt.Errorf("%w: resource amount.%s", delivery.ErrMissingField, name)
	}
	switch name {
	case "total":
		return a.Total, nil
	case "refund":
		return a.Refund, nil
	}
	return 0, fmt.Errorf("%w: resource amount.%s", delivery.ErrMissingField, name)
}

// Normalize turns n, which arrived as the bytes raw, into one event: its
// facts as the package documentation maps them. raw is kept as the event's
// Raw (the encrypted envelope: the bytes the signature covers).
func (n Notification) Normalize(raw []byte) (delivery.Event, error) {
	if n.ID == "" {
		return delivery.Event{}, fmt.Errorf("%w: id", delivery.ErrMissingField)
	}
	if n.EventType == "" {
		return delivery.Event{}, fmt.Errorf("%w: event_type", delivery.ErrMissingField)
	}
	at, err := payload.RFC3339("create_time", n.CreateTime)
	if err != nil {
		return delivery.Event{}, err
	}
	if handled(n.EventType) && n.Merchant.SpMchID != "" && n.Merchant.SubMchID == "" {
		// A service provider's notification is about a sub-merchant's
		// payment; which one is part of the fact.
		return delivery.Event{}, fmt.Errorf("%w: resource sub_mchid (beside sp_mchid)", delivery.ErrMissingField)
	}
	ev := delivery.Event{
		Provider:    Name,
		DedupKey:    n.ID,
		Type:        n.EventType,
		OccurredAt:  at,
		PayloadHash: providers.PayloadHash(raw),
		Raw:         raw,
	}
	if handled(n.EventType) {
		ev.SubMerchant = n.Merchant.SubMchID // recorded on the payment
	}
	switch {
	case n.EventType == EventTransactionSuccess && n.Transaction != nil:
		err = transactionFacts(&ev, *n.Transaction)
		ev.AddReferences(n.Transaction.OutTradeNo) // the merchant's ids: found by the console's search
	case n.Refund != nil:
		err = refundFacts(&ev, *n.Refund)
		ev.AddReferences(n.Refund.OutTradeNo, n.Refund.OutRefundNo)
	}
	if err != nil {
		return delivery.Event{}, err
	}
	return ev, nil
}

func transactionFacts(ev *delivery.Event, t Transaction) error {
	if t.TransactionID == "" {
		return fmt.Errorf("%w: resource transaction_id", delivery.ErrMissingField)
	}
	if t.TradeState != "SUCCESS" {
		return stateMismatch(ev.Type, "trade_state", t.TradeState)
	}
	total, err := t.Amount.amount("total")
	if err != nil {
		return err
	}
	if err := successTime(ev, t.SuccessTime); err != nil {
		return err
	}
	ev.PaymentKey = t.TransactionID
	discount, err := noCash(t.PromotionDetail, total)
	if err != nil {
		return err
	}
	ev.Facts = []delivery.Fact{{Kind: delivery.KindCaptured, BusinessID: t.TransactionID, Amount: total, Discount: discount,
		Currency: t.Amount.Currency}}
	return nil
}

// noCash is the payment's discount: its NOCASH promotions, which WeChat
// never settles to the merchant, whoever funded them
// (merchant_contribute, or other_contribute outside WeChat); CASH
// promotions are settled in full and are none. Above the order: refused.
func noCash(ps []Promotion, total int64) (int64, error) {
	var sum int64
	for i, p := range ps {
		if p.Amount < 0 {
			return 0, fmt.Errorf("%w: resource promotion_detail[%d].amount %d is negative", delivery.ErrInvalidAmount, i, p.Amount)
		}
		if p.Type != "NOCASH" {
			continue
		}
		if sum += p.Amount; sum > total {
			return 0, fmt.Errorf("%w: resource promotion_detail: NOCASH coupons of %d fen exceed amount.total %d", delivery.ErrInvalidAmount, sum, total)
		}
	}
	return sum, nil
}

// refundCoupon is the no-cash coupon money a refund returns, from the
// refund's own fields: refund − settlement_refund (应结退款金额: "去掉免充值
// 代金券退款金额后的退款金额") when it says, as the refund query and
// apply answers do; else refund − payer_refund (the notification's: what
// reached the payer, "不包含所有代金券金额"), which counts CASH coupons
// too: the domain bounds it by the payment's no-cash coupons not yet
// returned (domain/payment discount.go), the reading that keeps the
// balance equal to what WeChat settles. Neither: none.
func refundCoupon(a *Amount, refund int64) int64 {
	switch {
	case a.present["settlement_refund"]:
		return max(0, refund-a.SettlementRefund)
	case a.present["payer_refund"]:
		return max(0, refund-a.PayerRefund)
	}
	return 0
}

// refundStatus is the refund_status each refund event type reports.
var refundStatus = map[string]string{
	EventRefundSuccess:  "SUCCESS",
	EventRefundAbnormal: "ABNORMAL",
	EventRefundClosed:   "CLOSED",
}

func refundFacts(ev *delivery.Event, r Refund) error {
	if r.TransactionID == "" {
		return fmt.Errorf("%w: resource transaction_id", delivery.ErrMissingField)
	}
	if r.RefundID == "" {
		return fmt.Errorf("%w: resource refund_id", delivery.ErrMissingField)
	}
	if want := refundStatus[ev.Type]; r.RefundStatus != want {
		return stateMismatch(ev.Type, "refund_status", r.RefundStatus)
	}
	ev.PaymentKey = r.TransactionID
	refund, err := r.Amount.amount("refund")
	if err != nil {
		return err
	}
	kind := delivery.KindRefunded
	switch ev.Type {
	case EventRefundAbnormal:
		// Not final: the payer's card refused the refund, and the money
		// waits in WeChat's refund account until the merchant sends it
		// elsewhere (发起异常退款, pay.weixin.qq.com "退款开发指引"); the
		// refund's outcome is notified again. Recorded, posting nothing, so
		// that the REFUND.SUCCESS that may follow still posts.
		kind = delivery.KindRefundAbnormal
	case EventRefundClosed:
		// Final: the refund was closed without paying out (退款关闭: 7 days
		// in processing without the funds). Recorded, posting nothing.
		kind = delivery.KindRefundClosed
	default:
		if err := successTime(ev, r.SuccessTime); err != nil {
			return err
		}
	}
	ev.Facts = []delivery.Fact{{Kind: kind, BusinessID: r.RefundID, Amount: refund, Currency: r.Amount.Currency}}
	if kind != delivery.KindRefunded {
		ev.Facts[0].Reason = ev.Type
	} else {
		ev.Facts[0].Discount = refundCoupon(r.Amount, refund)
	}
	return nil
}

// successTime dates a success at the time WeChat reports the money moved,
// when it says, rather than when it wrote the notification.
func successTime(ev *delivery.Event, s string) error {
	if s == "" {
		return nil
	}
	t, err := payload.RFC3339("resource success_time", s)
	if err != nil {
		return err
	}
	ev.OccurredAt = t
	return nil
}

// stateMismatch refuses content whose state contradicts its event type: a
// signed notification that says two things is not one to post from.
func stateMismatch(eventType, field, got string) error {
	if got == "" {
		return fmt.Errorf("%w: resource %s", delivery.ErrMissingField, field)
	}
	return fmt.Errorf("%w: resource %s %q contradicts event_type %s", delivery.ErrMalformed, field, clip(got), eventType)
}
