package wechatpay

import (
	"net/http"
	"time"
)

// ResponseVerifier checks the Wechatpay-* signature of an API v3 answer
// (settle sync wechatpay, adapters/providers/wechatpay/wechatpayapi): WeChat
// Pay signs its answers as it signs its notifications, timestamp\nnonce\n
// body\n with the platform certificate or public key Wechatpay-Serial names
// (wechatpay-go core/auth/validators WechatPayResponseValidator uses the
// notifications' validator), so the same keys and rules apply.
type ResponseVerifier struct{ v *verifier }

// NewResponseVerifier builds a verifier from the keys of
// ONCELEDGER_WECHATPAY_KEYS (ParseKeys); tolerance bounds the age of
// Wechatpay-Timestamp.
func NewResponseVerifier(keys map[string][]byte, tolerance time.Duration) (*ResponseVerifier, error) {
	v, err := newVerifier(keys, tolerance, nil)
	if err != nil {
		return nil, err
	}
	return &ResponseVerifier{v: v}, nil
}

// Verify checks the answer's headers and body as received at now; the
// error is a providers.Unauthorized naming what failed.
func (r *ResponseVerifier) Verify(h http.Header, body []byte, now time.Time) error {
	return r.v.verify(h, body, now)
}
