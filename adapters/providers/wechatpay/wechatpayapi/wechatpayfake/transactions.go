package wechatpayfake

import (
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// The transaction query, as WeChat Pay's API v3 reference documents it
// (商户订单号查询订单): GET /v3/pay/transactions/out-trade-no/{out_trade_no}
// ?mchid= for a direct merchant, GET
// /v3/pay/partner/transactions/out-trade-no/{out_trade_no}?sp_mchid=&sub_mchid=
// for a service provider; the answer is the transaction object (the same
// JSON a TRANSACTION.SUCCESS notification carries encrypted), in
// plaintext, signed like every answer; an unknown order is 404
// ORDER_NOT_EXIST; trade_state is SUCCESS, REFUND, NOTPAY, CLOSED,
// REVOKED, USERPAYING or PAYERROR.

// Transaction is what the double answers about one out_trade_no. The zero
// Transaction is an order WeChat Pay does not know.
type Transaction struct {
	TransactionID string
	State         string // trade_state; "" = ORDER_NOT_EXIST
	Total         int64  // amount.total, fen
	PayerTotal    int64  // amount.payer_total; 0 = Total
	SuccessTime   string // RFC 3339; set for a paid one
	SubMchID      string // a service provider's sub-merchant
	// Promotions are promotion_detail entries (coupon_id, type CASH or
	// NOCASH, amount, wechatpay_contribute, merchant_contribute, …, as the
	// 查询订单 reference lists them), answered as given for a paid one.
	Promotions []map[string]any

	// Faults: HTTPStatus answers that status (429 with RetryAfter seconds
	// when set); Delay holds the answer; BadSign signs it with a key that
	// is not the double's.
	HTTPStatus int
	RetryAfter string
	Delay      time.Duration
	BadSign    bool
}

// SetTransaction makes the double answer t about outTradeNo: a direct
// merchant's order, or, with t.SubMchID, that sub-merchant's, answered to
// the partner query naming that sub_mchid only. An out_trade_no is unique
// within one merchant (商户订单号，只能是数字、大小写字母_-*且在同一个商户号下唯一):
// two sub-merchants of one service provider may each have their own, and a
// query naming another sub_mchid finds no such order (ORDER_NOT_EXIST).
func (f *Fake) SetTransaction(outTradeNo string, t Transaction) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.txns == nil {
		f.txns = map[string]Transaction{}
	}
	f.txns[orderKey(t.SubMchID, outTradeNo)] = t
}

// orderKey is the double's key of an order: out_trade_no within its
// merchant (sub_mchid "/" out_trade_no for a sub-merchant's).
func orderKey(subMchID, outTradeNo string) string {
	if subMchID == "" {
		return outTradeNo
	}
	return subMchID + "/" + outTradeNo
}

// Queries counts the transaction queries answered per out_trade_no (a
// sub-merchant's: per "{sub_mchid}/{out_trade_no}").
func (f *Fake) Queries(outTradeNo string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.queries[outTradeNo]
}

// transaction answers a transaction query (the Authorization was checked).
func (f *Fake) transaction(w http.ResponseWriter, r *http.Request) bool {
	var outTradeNo string
	partner := false
	switch {
	case strings.HasPrefix(r.URL.Path, "/v3/pay/transactions/out-trade-no/"):
		outTradeNo = strings.TrimPrefix(r.URL.Path, "/v3/pay/transactions/out-trade-no/")
		if r.URL.Query().Get("mchid") != f.mchID {
			f.fail(w, http.StatusBadRequest, "PARAM_ERROR", "mchid is not the caller's")
			return true
		}
	case strings.HasPrefix(r.URL.Path, "/v3/pay/partner/transactions/out-trade-no/"):
		outTradeNo, partner = strings.TrimPrefix(r.URL.Path, "/v3/pay/partner/transactions/out-trade-no/"), true
		if r.URL.Query().Get("sp_mchid") != f.mchID || r.URL.Query().Get("sub_mchid") == "" {
			f.fail(w, http.StatusBadRequest, "PARAM_ERROR", "sp_mchid and sub_mchid are required")
			return true
		}
	default:
		return false
	}
	key := outTradeNo
	if partner {
		key = orderKey(r.URL.Query().Get("sub_mchid"), outTradeNo)
	}
	f.mu.Lock()
	t := f.txns[key]
	if f.queries == nil {
		f.queries = map[string]int{}
	}
	f.queries[key]++
	f.mu.Unlock()
	if t.Delay > 0 {
		select {
		case <-time.After(t.Delay):
		case <-r.Context().Done():
			return true
		}
	}
	switch {
	case t.HTTPStatus != 0:
		if t.RetryAfter != "" {
			w.Header().Set("Retry-After", t.RetryAfter)
		}
		f.fail(w, t.HTTPStatus, "FREQUENCY_LIMITED", "频率超限")
		return true
	case t.State == "":
		f.fail(w, http.StatusNotFound, "ORDER_NOT_EXIST", "订单不存在")
		return true
	}
	payer := t.PayerTotal
	if payer == 0 {
		payer = t.Total
	}
	obj := map[string]any{"appid": "wxd678efh567hg6787", "out_trade_no": outTradeNo, "trade_state": t.State,
		"trade_state_desc": t.State, "amount": map[string]any{"total": t.Total, "payer_total": payer, "currency": "CNY", "payer_currency": "CNY"}}
	if partner {
		obj["sp_mchid"], obj["sub_mchid"], obj["sp_appid"] = f.mchID, t.SubMchID, "wxd678efh567hg6787"
	} else {
		obj["mchid"] = f.mchID
	}
	if t.State != "NOTPAY" && t.State != "CLOSED" {
		obj["transaction_id"], obj["trade_type"], obj["bank_type"] = t.TransactionID, "JSAPI", "CMC"
		obj["payer"] = map[string]any{"openid": "oUpF8uMuAJO_M2pxb1Q9zNjWeS6o"}
	}
	if t.SuccessTime != "" {
		obj["success_time"] = t.SuccessTime
	}
	if len(t.Promotions) > 0 {
		obj["promotion_detail"] = t.Promotions
	}
	if t.BadSign {
		f.answerForged(w, obj)
		return true
	}
	f.answer(w, http.StatusOK, obj)
	return true
}

// answerForged signs with a stranger's key.
func (f *Fake) answerForged(w http.ResponseWriter, v any) {
	body, _ := json.Marshal(v)
	k, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	nb := make([]byte, 16)
	_, _ = rand.Read(nb)
	nonce := hex.EncodeToString(nb)
	ts := strconv.FormatInt(f.Now().Unix(), 10)
	sum := sha256.Sum256([]byte(ts + "\n" + nonce + "\n" + string(body) + "\n"))
	sig, _ := rsa.SignPKCS1v15(rand.Reader, k, crypto.SHA256, sum[:])
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Wechatpay-Timestamp", ts)
	h.Set("Wechatpay-Nonce", nonce)
	h.Set("Wechatpay-Signature", base64.StdEncoding.EncodeToString(sig))
	h.Set("Wechatpay-Serial", KeyID)
	_, _ = w.Write(body)
}
