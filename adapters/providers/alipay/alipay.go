// Package alipay verifies Alipay (支付宝) asynchronous notifications
// (notify_url, notify_type=trade_status_sync) and normalizes them into
// delivery.Events; it owns the notification's form parsing, its RSA2
// verification and the mapping of trade statuses to facts (Normalize).
//
// A notification is an application/x-www-form-urlencoded POST whose
// parameters carry their own signature: sign (base64) and sign_type (RSA2).
// Verification is on the raw body, parsed here (parseForm): the signed
// content is every parameter except sign and sign_type, empty values left
// out, sorted by key, "k=v" joined by '&', in the bytes of the
// notification's charset (utf-8 by default, gbk); the signature is RSA
// PKCS #1 v1.5 over SHA-256 with Alipay's public key, or the key of Alipay's
// public-key certificate; several keys are configured during a rotation and
// any one verifies. A notification for an app_id that is not configured is
// refused like a bad signature (401): it was signed for someone else. No
// time is signed, so there is no replay window: a replay is a duplicate of
// its notify_id.
//
// Alipay resends until it reads exactly "success" in a 200 answer
// (Acknowledge), for about 25 hours; every failure must therefore be
// non-2xx with another body, which the HTTP layer's error answers are.
// Normalize has the mapping of trade statuses to facts.
package alipay

import (
	"crypto/rsa"
	"encoding/base64"
	"fmt"
	"strings"

	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/domain/delivery"
)

// Name is the provider name in URLs, stream ids, accounts and the inbox.
const Name = "alipay"

// SignType is the only sign_type accepted: RSA2 (SHA256withRSA). The retired
// RSA (SHA1withRSA) is refused.
const SignType = "RSA2"

// Adapter verifies and normalizes Alipay notifications. Safe for concurrent use.
type Adapter struct {
	keys   []*rsa.PublicKey
	appIDs map[string]bool
}

var (
	_ providers.Adapter      = (*Adapter)(nil)
	_ providers.Acknowledger = (*Adapter)(nil)
)

// New returns an adapter trusting publicKeyPEMs (Alipay's public keys or
// public-key certificates, one PEM file each: parsePublicKey) for
// notifications of appIDs (blank entries skipped). Errors wrap ErrConfig
// and name ONCELEDGER_ALIPAY_PUBLIC_KEYS or ONCELEDGER_ALIPAY_APP_IDS.
func New(publicKeyPEMs [][]byte, appIDs []string) (*Adapter, error) {
	a := &Adapter{appIDs: map[string]bool{}}
	for i, pemBytes := range publicKeyPEMs {
		k, err := parsePublicKey(pemBytes)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: key %d: %v", ErrConfig, EnvPublicKeys, i+1, err)
		}
		a.keys = append(a.keys, k)
	}
	if len(a.keys) == 0 {
		return nil, fmt.Errorf("%w: %s: no Alipay public key configured", ErrConfig, EnvPublicKeys)
	}
	for _, id := range appIDs {
		if id = strings.TrimSpace(id); id != "" {
			a.appIDs[id] = true
		}
	}
	if len(a.appIDs) == 0 {
		return nil, fmt.Errorf("%w: %s: no app_id configured", ErrConfig, EnvAppIDs)
	}
	return a, nil
}

// Name implements providers.Adapter.
func (a *Adapter) Name() string { return Name }

// Parse implements providers.Adapter: verify the body, then normalize its
// one notification.
func (a *Adapter) Parse(r providers.Request) ([]delivery.Event, error) {
	n, err := a.Verify(r.Body)
	if err != nil {
		return nil, err
	}
	return providers.Single(n.Normalize(r.Body))
}

// Verify parses and verifies a notification body and returns it typed.
// Errors wrap providers.ErrUnauthorized (no sign, a key or value shaped as
// a folded parameter (form.checkUnambiguous), sign_type not RSA2, a
// signature no configured key verifies, an app_id not configured) or a
// delivery error (400: not a form, too many or repeated parameters, a value
// not valid in its charset, a missing notify_id, a bad amount).
func (a *Adapter) Verify(body []byte) (Notification, error) {
	f, err := parseForm(body)
	if err != nil {
		return Notification{}, err
	}
	sign := f.get("sign")
	if sign == "" {
		return Notification{}, providers.Unauthorized("no sign parameter")
	}
	if err := f.checkUnambiguous(); err != nil {
		return Notification{}, providers.Unauthorized(err.Error())
	}
	if st := f.get("sign_type"); st != SignType {
		return Notification{}, providers.Unauthorized(fmt.Sprintf("sign_type %q is not %s", truncate(st), SignType))
	}
	sig, err := base64.StdEncoding.DecodeString(sign)
	if err != nil {
		return Notification{}, providers.Unauthorized("sign is not base64")
	}
	if !verify(a.keys, f.signedContent(), sig) {
		return Notification{}, providers.Unauthorized("sign does not verify with any configured Alipay public key")
	}
	// Checked once the signature holds, so that what is compared is what
	// Alipay said; refused as unauthorized because it is not ours.
	if id := f.get("app_id"); !a.appIDs[id] {
		return Notification{}, providers.Unauthorized(fmt.Sprintf("app_id %q is not configured (%s)", truncate(id), EnvAppIDs))
	}
	return decode(f)
}

func decode(f form) (Notification, error) {
	values, err := f.decodeValues()
	if err != nil {
		return Notification{}, err
	}
	return decodeNotification(values)
}

// Acknowledge implements providers.Acknowledger: Alipay stops resending a
// notification only when the answer's body is exactly "success" (no
// newline, no JSON), for accepted, duplicate and ignored alike.
func (a *Adapter) Acknowledge(string) providers.Ack {
	return providers.Ack{ContentType: "text/plain; charset=utf-8", Body: []byte("success")}
}

// Renormalize normalizes a stored delivery's raw body with the current code,
// without verifying it: the inbox row was verified when it arrived
// (onceledger redrive). The dedup key is in the body.
func (a *Adapter) Renormalize(_ string, raw []byte) (delivery.Event, error) {
	f, err := parseForm(raw)
	if err != nil {
		return delivery.Event{}, err
	}
	n, err := decode(f)
	if err != nil {
		return delivery.Event{}, err
	}
	return n.Normalize(raw)
}
