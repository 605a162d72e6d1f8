package wechatpayapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// RateLimitedError is an answer of HTTP 429 with the wait it asked for
// (Retry-After in seconds; 0 when it named none).
type RateLimitedError struct {
	RetryAfter time.Duration
	Err        *APIError
}

func (e *RateLimitedError) Error() string {
	return fmt.Sprintf("%v (retry after %s)", e.Err, e.RetryAfter)
}

func (e *RateLimitedError) Unwrap() error { return e.Err }

// Transaction asks for the transaction of outTradeNo (查询订单, by the
// merchant's order number): GET /v3/pay/transactions/out-trade-no/{no}
// ?mchid=, or, for a service provider asking about subMchID's payment,
// GET /v3/pay/partner/transactions/out-trade-no/{no}?sp_mchid=&sub_mchid=.
// The request is signed; the answer's Wechatpay-Signature is verified over
// timestamp, nonce and body like a notification's before anything in it
// is believed (an unverifiable answer wraps ErrSignature), and the
// plaintext JSON is returned as received. 404 ORDER_NOT_EXIST is an
// *APIError; 429 a *RateLimitedError.
func (c *Client) Transaction(ctx context.Context, outTradeNo, subMchID string) ([]byte, error) {
	u := *c.base
	base := strings.TrimSuffix(u.Path, "/")
	if subMchID == "" {
		u.Path = base + "/v3/pay/transactions/out-trade-no/" + outTradeNo
		u.RawPath = base + "/v3/pay/transactions/out-trade-no/" + url.PathEscape(outTradeNo)
		u.RawQuery = url.Values{"mchid": {c.mchID}}.Encode()
	} else {
		u.Path = base + "/v3/pay/partner/transactions/out-trade-no/" + outTradeNo
		u.RawPath = base + "/v3/pay/partner/transactions/out-trade-no/" + url.PathEscape(outTradeNo)
		u.RawQuery = url.Values{"sp_mchid": {c.mchID}, "sub_mchid": {subMchID}}.Encode()
	}
	auth, err := c.authorization(http.MethodGet, u.RequestURI())
	if err != nil {
		return nil, err
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Authorization", auth)
	req.Header.Set("Accept", "application/json")
	resp, err := c.http.Do(req)
	if err != nil {
		return nil, fmt.Errorf("wechatpay api: GET %s: %w", u.Path, err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	if err != nil {
		return nil, fmt.Errorf("wechatpay api: GET %s: %w", u.Path, err)
	}
	if resp.StatusCode/100 != 2 {
		e := &APIError{Status: resp.StatusCode}
		var w struct{ Code, Message string }
		if json.Unmarshal(body, &w) == nil {
			e.Code, e.Message = w.Code, w.Message
		}
		if resp.StatusCode == http.StatusTooManyRequests {
			secs, _ := strconv.Atoi(strings.TrimSpace(resp.Header.Get("Retry-After")))
			return nil, &RateLimitedError{RetryAfter: time.Duration(max(secs, 0)) * time.Second, Err: e}
		}
		return nil, e
	}
	if err := c.platform.Verify(resp.Header, body, c.Now()); err != nil {
		return nil, fmt.Errorf("%w: GET %s: %v", ErrSignature, u.Path, err)
	}
	return body, nil
}
