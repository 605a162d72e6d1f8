package alipayfake

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"time"
)

// The trade query, as Alipay's reference for alipay.trade.query
// (统一收单交易查询) documents it: biz_content {"out_trade_no",
// "query_options"}; the answer alipay_trade_query_response with
// trade_status WAIT_BUYER_PAY, TRADE_SUCCESS, TRADE_FINISHED or
// TRADE_CLOSED, amounts in yuan as strings, send_pay_date once paid, and
// fund_bill_list / voucher_detail_list only when query_options asks for
// them; an unknown trade is code 40004 sub_code ACQ.TRADE_NOT_EXIST.
const (
	queryMethod      = "alipay.trade.query"
	queryResponseKey = "alipay_trade_query_response"
)

// Trade is what the double answers about one out_trade_no. The zero
// Trade is a trade Alipay does not know (ACQ.TRADE_NOT_EXIST).
type Trade struct {
	TradeNo       string
	Status        string // WAIT_BUYER_PAY, TRADE_SUCCESS, TRADE_FINISHED, TRADE_CLOSED; "" not exist
	TotalAmount   string // "100.00"
	ReceiptAmount string // "" = TotalAmount
	// NoReceiptAmount answers a paid trade without receipt_amount and
	// buyer_pay_amount (both optional in Alipay's reference): the coupon
	// is then told by the lists alone.
	NoReceiptAmount bool
	SendPayDate     string // "2026-12-01 10:05:00"; set for a paid trade
	// Vouchers are voucher_detail_list entries (merchant coupons …), and
	// FundBills fund_bill_list entries, answered when query_options asks.
	Vouchers  []map[string]string
	FundBills []map[string]string

	// Faults: HTTPStatus answers that status instead (429 and 503 with
	// RetryAfter seconds when set); Delay holds the answer that long;
	// BadSign signs it with a key that is not Alipay's.
	HTTPStatus int
	RetryAfter string
	Delay      time.Duration
	BadSign    bool
}

// SetTrade makes the double answer t about outTradeNo.
func (f *Fake) SetTrade(outTradeNo string, t Trade) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.trades == nil {
		f.trades = map[string]Trade{}
	}
	f.trades[outTradeNo] = t
}

// Queries counts the trade queries answered per out_trade_no.
func (f *Fake) Queries(outTradeNo string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.queries[outTradeNo]
}

// tradeQuery answers alipay.trade.query (the request's sign is checked by
// gateway before).
func (f *Fake) tradeQuery(w http.ResponseWriter, r *http.Request, p url.Values) {
	var biz struct {
		OutTradeNo   string   `json:"out_trade_no"`
		QueryOptions []string `json:"query_options"`
	}
	if err := json.Unmarshal([]byte(p.Get("biz_content")), &biz); err != nil || biz.OutTradeNo == "" {
		f.answer(w, queryResponseKey, map[string]string{"code": "40004", "msg": "Business Failed", "sub_code": "ACQ.INVALID_PARAMETER", "sub_msg": "参数无效"})
		return
	}
	f.mu.Lock()
	t := f.trades[biz.OutTradeNo]
	if f.queries == nil {
		f.queries = map[string]int{}
	}
	f.queries[biz.OutTradeNo]++
	f.mu.Unlock()
	if t.Delay > 0 {
		select {
		case <-time.After(t.Delay):
		case <-r.Context().Done():
			return
		}
	}
	if t.HTTPStatus != 0 {
		if t.RetryAfter != "" {
			w.Header().Set("Retry-After", t.RetryAfter)
		}
		http.Error(w, http.StatusText(t.HTTPStatus), t.HTTPStatus)
		return
	}
	if t.Status == "" {
		f.answer(w, queryResponseKey, map[string]string{"code": "40004", "msg": "Business Failed", "sub_code": "ACQ.TRADE_NOT_EXIST", "sub_msg": "交易不存在"})
		return
	}
	receipt := t.ReceiptAmount
	if receipt == "" {
		receipt = t.TotalAmount
	}
	obj := map[string]any{"code": "10000", "msg": "Success", "trade_no": t.TradeNo, "out_trade_no": biz.OutTradeNo,
		"buyer_logon_id": "159****5620", "trade_status": t.Status, "total_amount": t.TotalAmount}
	if t.SendPayDate != "" {
		obj["send_pay_date"] = t.SendPayDate
		if !t.NoReceiptAmount {
			obj["receipt_amount"], obj["buyer_pay_amount"] = receipt, receipt
		}
	}
	for _, o := range biz.QueryOptions {
		switch {
		case o == "voucher_detail_list" && len(t.Vouchers) > 0:
			obj[o] = t.Vouchers
		case o == "fund_bill_list" && len(t.FundBills) > 0:
			obj[o] = t.FundBills
		}
	}
	body, _ := json.Marshal(obj)
	f.answerRaw(w, queryResponseKey, body, t.BadSign)
}

// answerRaw writes {"<key>": body, "sign": RSA2(body)}, signed with a
// stranger's key when forged.
func (f *Fake) answerRaw(w http.ResponseWriter, key string, body []byte, forged bool) {
	k := f.key
	if forged {
		var err error
		if k, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
	}
	sum := sha256.Sum256(body)
	sig, err := rsa.SignPKCS1v15(rand.Reader, k, crypto.SHA256, sum[:])
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	keyJSON, _ := json.Marshal(key)
	w.Header().Set("Content-Type", "text/html;charset=utf-8")
	fmt.Fprintf(w, `{%s:%s,"sign":%q}`, keyJSON, body, base64.StdEncoding.EncodeToString(sig))
}
