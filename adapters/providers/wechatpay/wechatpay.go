// Package wechatpay verifies WeChat Pay (微信支付) API v3 notifications,
// decrypts their resource, and normalizes them into delivery.Events.
//
// Verification, on the raw bytes, before anything is parsed: WeChat Pay
// signs timestamp + "\n" + nonce + "\n" + body + "\n" (the headers
// Wechatpay-Timestamp and Wechatpay-Nonce, the body as received) with
// SHA256withRSA (RSA PKCS#1 v1.5 over SHA-256) and sends the base64
// signature in Wechatpay-Signature. Wechatpay-Serial names the key: the
// serial number of a platform certificate (平台证书, upper-case hex as WeChat
// prints it; compared here in any case) or the id of a WeChat Pay public
// key (微信支付公钥, "PUB_KEY_ID_…"). Both kinds are configured at once
// during a switch-over from certificates to the public key, when WeChat
// signs with either. Keys are configured and never fetched: a serial that
// names no configured key is refused (401), and reported through
// OnUnknownSerial, because it is how an unnoticed platform-certificate
// rotation shows up. WeChat Pay sends, on purpose and now and then, a
// notification whose signature begins "WECHATPAY/SIGNTEST/" to probe that
// the merchant verifies at all (签名探测流量, "回调签名验证失败排查指引",
// developers.weixin.qq.com): it is refused like any bad signature, and
// WeChat sends the real one again. The timestamp must lie within ±tolerance
// of the receive time (the official SDKs use 5 minutes), checked after the
// signature so that "outside tolerance" is only ever said about an
// authentic delivery.
//
// Decryption: the body's resource holds the notification's content,
// encrypted with AEAD_AES_256_GCM under the merchant's APIv3 key (32 bytes):
// ciphertext is base64 with the 16-byte tag appended, nonce is the 12-byte
// nonce as text, associated_data the additional data (possibly empty).
// Several APIv3 keys may be configured (rotation); each is tried. A resource
// that does not decrypt is refused (401): the sender does not hold our key.
//
// Authorization: the decrypted content names its merchant: mchid, or, for a
// service provider (服务商) acting for a sub-merchant, sp_mchid and
// sub_mchid. Every merchant id it names as ours (mchid, sp_mchid) must be
// configured, else 401. sub_mchid is the merchant the payment belongs to
// in service-provider mode; it is kept on the typed Notification.
//
// Facts (Notification.Normalize): dedup key = the notification id (the same
// across WeChat's retries); payment key = transaction_id; amounts are
// integer fen (minor units) in amount, in amount.currency, CNY when absent
// (a refund notification carries no currency; a domestic merchant can only
// take CNY). TRANSACTION.SUCCESS is a capture of amount.total (business id
// transaction_id); REFUND.SUCCESS a refund of amount.refund (business id
// refund_id); REFUND.CLOSED (the refund was closed without paying out:
// final) a refund failure; REFUND.ABNORMAL (the refund could not reach the
// payer's card and waits for the merchant: not final) carries no fact, so
// that the REFUND.SUCCESS that may follow still posts. Every other event
// type carries no facts (recorded, posts nothing).
//
// Answer: WeChat Pay takes 200 or 204 with no body as delivered; a failure
// must be 4xx/5xx with {"code":"FAIL","message":…}, because a 200 is never
// retried whatever its body ("通知应答", pay.weixin.qq.com API v3 docs).
// Acknowledge and Failure give the HTTP layer both.
package wechatpay

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/domain/delivery"
)

// Name is the provider name in URLs, stream ids and the inbox.
const Name = "wechatpay"

// The request headers WeChat Pay signs with.
const (
	HeaderTimestamp = "Wechatpay-Timestamp"
	HeaderNonce     = "Wechatpay-Nonce"
	HeaderSignature = "Wechatpay-Signature"
	HeaderSerial    = "Wechatpay-Serial"
)

// The configuration variables whose values New and the Parse* functions
// take; errors name them.
const (
	EnvKeys      = "ONCELEDGER_WECHATPAY_KEYS"
	EnvAPIv3Keys = "ONCELEDGER_WECHATPAY_APIV3_KEYS"
	EnvMchIDs    = "ONCELEDGER_WECHATPAY_MCHIDS"
)

// DefaultTolerance is the replay window when New is given none: the official
// SDKs' (wechatpay-go core/auth/validators: five minutes either way).
const DefaultTolerance = 5 * time.Minute

// Adapter verifies, decrypts and normalizes WeChat Pay notifications. It is
// safe for concurrent use.
type Adapter struct {
	verifier  *verifier
	decryptor *decryptor
	merchants map[string]bool
}

var (
	_ providers.Adapter      = (*Adapter)(nil)
	_ providers.Acknowledger = (*Adapter)(nil)
	_ providers.Refuser      = (*Adapter)(nil)
)

// Option configures an Adapter.
type Option func(*options)

type options struct {
	onUnknownSerial func(serial string)
	// testAPIv3Keys admits APIv3 keys of 16 and 24 bytes: the published test
	// vector's key is 16 bytes. Tests only; configuration never sets it.
	testAPIv3Keys bool
}

// OnUnknownSerial sets f to be called, with the header's value (cut to 64
// bytes: it is the sender's text), whenever a notification names in
// Wechatpay-Serial a key that is not configured. The notification is
// refused (401) either way; f is for the operator to hear of it (a metric,
// a warning in the log), because WeChat rotating its platform certificate
// looks exactly like this until the new one is configured. f is called
// from concurrent requests and must be safe for that; it is not called for
// signature probes.
func OnUnknownSerial(f func(serial string)) Option {
	return func(o *options) { o.onUnknownSerial = f }
}

// New returns an adapter that verifies with keys (Wechatpay-Serial value →
// PEM: a platform certificate under its serial, or a WeChat Pay public key
// under its PUB_KEY_ID_… id), decrypts with any of apiV3Keys (32 bytes
// each), accepts the merchants mchids (mchid or sp_mchid), and bounds the
// signed timestamp to ±tolerance of the receive time (0: DefaultTolerance).
func New(keys map[string][]byte, apiV3Keys [][]byte, mchids []string, tolerance time.Duration, opts ...Option) (*Adapter, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	if tolerance == 0 {
		tolerance = DefaultTolerance
	}
	if tolerance < 0 {
		return nil, fmt.Errorf("wechatpay: tolerance must be positive, got %v", tolerance)
	}
	v, err := newVerifier(keys, tolerance, o.onUnknownSerial)
	if err != nil {
		return nil, err
	}
	d, err := newDecryptor(apiV3Keys, o.testAPIv3Keys)
	if err != nil {
		return nil, err
	}
	a := &Adapter{verifier: v, decryptor: d, merchants: map[string]bool{}}
	for i, id := range mchids {
		id = strings.TrimSpace(id)
		if id == "" {
			continue
		}
		if !digits(id) {
			return nil, fmt.Errorf("wechatpay: %s entry %d (%q) is not a merchant id: WeChat Pay merchant ids are digits", EnvMchIDs, i+1, id)
		}
		a.merchants[id] = true
	}
	if len(a.merchants) == 0 {
		return nil, fmt.Errorf("wechatpay: no merchant id configured (%s)", EnvMchIDs)
	}
	return a, nil
}

// Name implements providers.Adapter.
func (a *Adapter) Name() string { return Name }

// Parse implements providers.Adapter: verify the signature and timestamp on
// the raw bytes, decrypt the resource, check the merchant, then normalize
// into exactly one event.
func (a *Adapter) Parse(r providers.Request) ([]delivery.Event, error) {
	n, err := a.Notification(r)
	if err != nil {
		return nil, err
	}
	return providers.Single(n.Normalize(r.Body))
}

// Notification verifies r and returns its decrypted, typed content, without
// normalizing it. Errors are Parse's.
func (a *Adapter) Notification(r providers.Request) (Notification, error) {
	if err := a.verifier.verify(r.Header, r.Body, r.ReceivedAt()); err != nil {
		return Notification{}, err
	}
	return a.open(r.Body)
}

// open decodes a verified body, decrypts its resource and checks its
// merchant: everything but the signature.
func (a *Adapter) open(raw []byte) (Notification, error) {
	n, err := decodeEnvelope(raw)
	if err != nil {
		return Notification{}, err
	}
	if n.Plaintext, err = a.decryptor.open(n.Resource); err != nil {
		return Notification{}, err
	}
	if err := n.decodeResource(); err != nil {
		return Notification{}, err
	}
	if err := a.checkMerchant(n); err != nil {
		return Notification{}, err
	}
	return n, nil
}

// checkMerchant requires every merchant id the content names as the
// receiver (mchid; sp_mchid for a service provider) to be configured, and
// one at least for the event types that carry facts. A type this adapter
// does not handle may name none (a complaint notification has no mchid):
// its resource decrypted under our APIv3 key, which is the merchant's own.
func (a *Adapter) checkMerchant(n Notification) error {
	m := n.Merchant
	for _, id := range []struct{ field, v string }{{"mchid", m.MchID}, {"sp_mchid", m.SpMchID}} {
		if id.v != "" && !a.merchants[id.v] {
			return providers.Unauthorized(fmt.Sprintf("%s %q is not a configured merchant (%s)", id.field, clip(id.v), EnvMchIDs))
		}
	}
	if m.MchID == "" && m.SpMchID == "" && handled(n.EventType) {
		return providers.Unauthorized("the notification names no merchant (mchid or sp_mchid)")
	}
	return nil
}

// Renormalize re-normalizes a stored delivery with the current code, without
// verifying its signature (the inbox row was verified when it arrived;
// onceledger redrive). The stored bytes are the encrypted envelope, so a
// redrive needs an APIv3 key that still decrypts it and its merchant still
// configured.
func (a *Adapter) Renormalize(_ string, raw []byte) (delivery.Event, error) {
	n, err := a.open(raw)
	if err != nil {
		return delivery.Event{}, err
	}
	return n.Normalize(raw)
}

// Acknowledge implements providers.Acknowledger: the answer to a recorded
// notification (accepted, duplicate or ignored) is 204 with no body. WeChat
// Pay also takes 200 with no body
// ("接收成功：HTTP应答状态码需返回200或204，无需返回应答报文").
func (a *Adapter) Acknowledge(string) providers.Ack {
	return providers.Ack{Status: http.StatusNoContent}
}

// maxFailMessage is the longest message WeChat Pay documents for a failure
// answer (message string[1,64]).
const maxFailMessage = 64

// FailureBody renders the body of a failure answer (any 4xx/5xx) as WeChat
// Pay documents it: {"code":"FAIL","message":…}, the message cut to 64
// bytes at a UTF-8 boundary, "FAIL" when empty. The status must not be
// 2xx: WeChat never retries a 200, whatever its body says.
func FailureBody(message string) []byte {
	message = strings.ToValidUTF8(message, "?")
	if len(message) > maxFailMessage {
		cut := maxFailMessage
		for cut > 0 && !utf8.RuneStart(message[cut]) {
			cut--
		}
		message = message[:cut]
	}
	if message == "" {
		message = "FAIL"
	}
	b, _ := json.Marshal(struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	}{"FAIL", message})
	return b
}

// Failure implements providers.Refuser: the body of the answer to a refused
// notification, which the HTTP layer writes with its 4xx/5xx status:
// FailureBody(err's text) as JSON.
func (a *Adapter) Failure(err error) providers.Ack {
	msg := "FAIL"
	if err != nil {
		msg = err.Error()
	}
	return providers.Ack{ContentType: "application/json", Body: FailureBody(msg)}
}

// clip cuts sender text to 64 bytes for an error message or a log line.
func clip(s string) string {
	if len(s) <= 64 {
		return s
	}
	return strings.ToValidUTF8(s[:64], "") + "…"
}

func digits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return s != ""
}
