package alipayapi

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/rsa"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/onceledger/onceledger/adapters/providers/alipay"
)

// QueryMethod is the trade query (统一收单交易查询) the expectation asker
// calls; QueryResponseKey names its answer's object.
const (
	QueryMethod      = "alipay.trade.query"
	QueryResponseKey = "alipay_trade_query_response"
)

// QueryOptions ask the answer to carry the funds and the coupons of the
// payment (fund_bill_list, voucher_detail_list), so that it tells the same
// discount facts as the asynchronous notification (Alipay's
// alipay.trade.query reference: query_options, 查询选项).
var QueryOptions = []string{"fund_bill_list", "voucher_detail_list"}

// RateLimitedError is an answer of HTTP 429 (or 503) with the wait the
// gateway asked for (Retry-After, seconds; 0 when it named none).
type RateLimitedError struct {
	Status     int
	RetryAfter time.Duration
}

func (e *RateLimitedError) Error() string {
	return fmt.Sprintf("alipay api: HTTP %d, retry after %s", e.Status, e.RetryAfter)
}

// TradeQuery asks alipay.trade.query about the trade of outTradeNo and
// returns the answer's object exactly as received, its RSA2 sign verified
// with Alipay's public keys. A code other than 10000 is an *APIError
// (ACQ.TRADE_NOT_EXIST: Alipay has no such trade yet: the buyer has not
// opened the cashier); an unverifiable answer wraps ErrSignature.
func (c *Client) TradeQuery(ctx context.Context, outTradeNo string) (json.RawMessage, error) {
	biz, err := json.Marshal(map[string]any{"out_trade_no": outTradeNo, "query_options": QueryOptions})
	if err != nil {
		return nil, err
	}
	params := url.Values{
		"app_id": {c.appID}, "method": {QueryMethod}, "format": {"JSON"}, "charset": {"utf-8"},
		"sign_type": {"RSA2"}, "timestamp": {c.Now().In(beijing).Format(time.DateTime)}, "version": {"1.0"},
		"biz_content": {string(biz)},
	}
	digest := sha256.Sum256([]byte(signContent(params)))
	sig, err := rsa.SignPKCS1v15(rand.Reader, c.key, crypto.SHA256, digest[:])
	if err != nil {
		return nil, fmt.Errorf("alipay api: signing: %w", err)
	}
	params.Set("sign", base64.StdEncoding.EncodeToString(sig))
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.gateway, strings.NewReader(params.Encode()))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded;charset=utf-8")
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("alipay api: %s: %w", QueryMethod, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("alipay api: %s: %w", QueryMethod, err)
	}
	if resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode == http.StatusServiceUnavailable {
		secs, _ := strconv.Atoi(strings.TrimSpace(resp.Header.Get("Retry-After")))
		return nil, &RateLimitedError{Status: resp.StatusCode, RetryAfter: time.Duration(max(secs, 0)) * time.Second}
	}
	if resp.StatusCode/100 != 2 {
		return nil, fmt.Errorf("alipay api: %s: HTTP %d", QueryMethod, resp.StatusCode)
	}
	return c.verified(body, QueryResponseKey, QueryMethod)
}

// verified returns the answer's object of key once its sign verifies; an
// answer with another code is an *APIError (believed only when signed,
// except the gateway's unsigned refusals, which carry nothing but the
// error).
func (c *Client) verified(body []byte, key, method string) (json.RawMessage, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(body, &top); err != nil {
		return nil, fmt.Errorf("alipay api: %s: the answer is not JSON: %w", method, err)
	}
	raw, ok := top[key]
	if !ok {
		if raw, ok = top["error_response"]; !ok {
			return nil, fmt.Errorf("alipay api: %s: the answer has no %s", method, key)
		}
	}
	var r struct {
		Code    string `json:"code"`
		Msg     string `json:"msg"`
		SubCode string `json:"sub_code"`
		SubMsg  string `json:"sub_msg"`
	}
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, fmt.Errorf("alipay api: %s: %w", method, err)
	}
	var sign string
	_ = json.Unmarshal(top["sign"], &sign)
	if sign == "" {
		if r.Code != "10000" {
			return nil, &APIError{Code: r.Code, Msg: r.Msg, SubCode: r.SubCode, SubMsg: r.SubMsg}
		}
		return nil, fmt.Errorf("%w: the answer is not signed", ErrSignature)
	}
	sig, err := base64.StdEncoding.DecodeString(sign)
	if err != nil || !c.alipay.Verify(raw, sig) {
		return nil, fmt.Errorf("%w (%s, %s)", ErrSignature, key, alipay.EnvPublicKeys)
	}
	if r.Code != "10000" {
		return nil, &APIError{Code: r.Code, Msg: r.Msg, SubCode: r.SubCode, SubMsg: r.SubMsg}
	}
	return raw, nil
}
