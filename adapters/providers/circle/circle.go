// Package circle verifies Circle v2 webhook notifications and normalizes them
// into delivery.Events.
//
// Circle signs the raw body with ECDSA P-256 over SHA-256 and sends the
// base64 DER signature in X-Circle-Signature; X-Circle-Key-Id names the
// public key. Keys are configured (key id → base64 DER SPKI, as Circle's
// /v2/notifications/publicKey/{id} endpoint returns them) and never fetched:
// a key id that is not configured is refused (401), which is also how a key
// is retired. The v2 envelope is {subscriptionId, notificationId,
// notificationType, notification, timestamp, version}; notificationId is the
// dedup key ("stable across retries of the same delivery"), timestamp the
// occurrence time. Circle defines no replay window.
//
// Mapping (the resource is the envelope's "notification" object; amounts are
// {amount: "3.14", currency: "USD"} decimal strings in major units, converted
// exactly):
//
//   - "payments": a payment object. status "paid" → captured (business id =
//     id, fee = fees.amount when present); "confirmed" → authorized;
//     "failed" → failed; others no facts. A payment object of type "refund"
//     (Circle reports card/ACH refunds as payments with type "refund" and
//     originalPayment) is read as under "refunds".
//   - "refunds": status "paid" or "confirmed" → refunded (business id = id,
//     payment key = originalPayment.id); "failed" → refund_failed.
//   - "chargebacks": history[] entries: the latest entry decides: "First
//     Chargeback" → dispute_opened, "Chargeback Reversal" → dispute_won,
//     "Second Chargeback" → dispute_lost. Each entry of a Circle chargeback's
//     history is a movement of funds (the first chargeback debits the
//     merchant's wallet, a reversal credits it back, a second chargeback
//     debits it for good); Circle has no inquiry stage, so every report
//     posts (business id = chargeback id, payment key = paymentId, amount =
//     the first chargeback's amount).
//   - "payouts": status "complete" → payout_paid (business id = id).
//
// Every other notification type (wallet transactions, CPN, webhooks.test)
// carries no facts: recorded, posts nothing.
//
// Decision: a payment's "confirmed" status maps to authorized, not captured.
// Circle confirms a payment before it settles ("paid"), and only the paid
// notification carries the settled fee; the domain records a capture once per
// business id, so recording it at "confirmed" would lose the fee.
package circle

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/payload"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/money"
)

// Name is the provider name in URLs, stream ids and the inbox.
const Name = "circle"

// The request headers Circle signs with.
const (
	HeaderSignature = "X-Circle-Signature"
	HeaderKeyID     = "X-Circle-Key-Id"
)

// Adapter verifies and normalizes Circle notifications. Safe for concurrent use.
type Adapter struct {
	keys map[string]*ecdsa.PublicKey
}

var _ providers.Adapter = (*Adapter)(nil)

// New returns an adapter trusting publicKeys: key id → base64 DER
// SubjectPublicKeyInfo of an ECDSA P-256 key.
func New(publicKeys map[string]string) (*Adapter, error) {
	a := &Adapter{keys: map[string]*ecdsa.PublicKey{}}
	for id, b64 := range publicKeys {
		id = strings.TrimSpace(id)
		if id == "" {
			return nil, errors.New("circle: empty key id")
		}
		ec, err := parseKey(b64)
		if err != nil {
			return nil, fmt.Errorf("circle: key %s: %w", id, err)
		}
		a.keys[id] = ec
	}
	if len(a.keys) == 0 {
		return nil, errors.New("circle: no public key configured")
	}
	return a, nil
}

// parseKey reads a base64 DER SubjectPublicKeyInfo of an ECDSA P-256 key.
func parseKey(b64 string) (*ecdsa.PublicKey, error) {
	der, err := base64.StdEncoding.DecodeString(strings.TrimSpace(b64))
	if err != nil {
		return nil, fmt.Errorf("not base64: %w", err)
	}
	pub, err := x509.ParsePKIXPublicKey(der)
	if err != nil {
		return nil, err
	}
	ec, ok := pub.(*ecdsa.PublicKey)
	if !ok || ec.Curve != elliptic.P256() {
		return nil, errors.New("not an ECDSA P-256 key")
	}
	return ec, nil
}

// Name implements providers.Adapter.
func (a *Adapter) Name() string { return Name }

// Parse implements providers.Adapter: verify, then normalize one event.
func (a *Adapter) Parse(r providers.Request) ([]delivery.Event, error) {
	if err := a.verify(r); err != nil {
		return nil, err
	}
	return providers.Single(normalize(r.Body))
}

func (a *Adapter) verify(r providers.Request) error {
	var keyID, sigB64 string
	if r.Header != nil {
		keyID, sigB64 = r.Header.Get(HeaderKeyID), r.Header.Get(HeaderSignature)
	}
	if keyID == "" || sigB64 == "" {
		return providers.Unauthorized("missing X-Circle-Key-Id or X-Circle-Signature header")
	}
	key, ok := a.keys[keyID]
	if !ok {
		return providers.Unauthorized("X-Circle-Key-Id names no configured key")
	}
	sig, err := base64.StdEncoding.DecodeString(sigB64)
	if err != nil {
		return providers.Unauthorized("X-Circle-Signature is not base64")
	}
	digest := sha256.Sum256(r.Body)
	if !ecdsa.VerifyASN1(key, digest[:], sig) {
		return providers.Unauthorized("X-Circle-Signature does not verify")
	}
	return nil
}

type envelope struct {
	NotificationID   string          `json:"notificationId"`
	NotificationType string          `json:"notificationType"`
	Notification     json.RawMessage `json:"notification"`
	Timestamp        string          `json:"timestamp"`
}

type amountT struct {
	Amount   string `json:"amount"`
	Currency string `json:"currency"`
}

type paymentObj struct {
	ID              string   `json:"id"`
	Type            string   `json:"type"`
	Status          string   `json:"status"`
	Amount          *amountT `json:"amount"`
	Fees            *amountT `json:"fees"`
	OriginalPayment *struct {
		ID string `json:"id"`
	} `json:"originalPayment"`
	ErrorCode string `json:"errorCode"`
}

type chargebackObj struct {
	ID        string `json:"id"`
	PaymentID string `json:"paymentId"`
	History   []struct {
		Type   string   `json:"type"`
		Amount *amountT `json:"amount"`
	} `json:"history"`
	Reason string `json:"reason"`
}

type payoutObj struct {
	ID     string   `json:"id"`
	Status string   `json:"status"`
	Amount *amountT `json:"amount"`
}

func normalize(raw []byte) (delivery.Event, error) {
	var env envelope
	if err := payload.DecodeBody(raw, &env); err != nil {
		return delivery.Event{}, err
	}
	if env.NotificationID == "" {
		return delivery.Event{}, fmt.Errorf("%w: notificationId", delivery.ErrMissingField)
	}
	if env.NotificationType == "" {
		return delivery.Event{}, fmt.Errorf("%w: notificationType", delivery.ErrMissingField)
	}
	at, err := payload.RFC3339("timestamp", env.Timestamp)
	if err != nil {
		return delivery.Event{}, err
	}
	ev := delivery.Event{
		Provider:    Name,
		DedupKey:    env.NotificationID,
		Type:        env.NotificationType,
		OccurredAt:  at,
		PayloadHash: providers.PayloadHash(raw),
		Raw:         raw,
	}
	switch env.NotificationType {
	case "payments":
		var p paymentObj
		if err = payload.DecodeMember(env.Notification, &p, "notification"); err == nil {
			if strings.EqualFold(p.Type, "refund") {
				err = refundFacts(&ev, p)
			} else {
				err = paymentFacts(&ev, p)
			}
		}
	case "refunds":
		var p paymentObj
		if err = payload.DecodeMember(env.Notification, &p, "notification"); err == nil {
			err = refundFacts(&ev, p)
		}
	case "chargebacks":
		var c chargebackObj
		if err = payload.DecodeMember(env.Notification, &c, "notification"); err == nil {
			err = chargebackFacts(&ev, c)
		}
	case "payouts":
		var p payoutObj
		if err = payload.DecodeMember(env.Notification, &p, "notification"); err == nil {
			err = payoutFacts(&ev, p)
		}
	}
	if err != nil {
		return delivery.Event{}, err
	}
	return ev, nil
}

func paymentFacts(ev *delivery.Event, p paymentObj) error {
	if p.ID == "" {
		return fmt.Errorf("%w: notification.id", delivery.ErrMissingField)
	}
	ev.PaymentKey = p.ID
	switch p.Status {
	case "paid":
		amt, cur, err := parseAmount(p.Amount, "notification.amount")
		if err != nil {
			return err
		}
		var fee int64
		if p.Fees != nil {
			f, fcur, err := parseAmount(p.Fees, "notification.fees")
			if err != nil {
				return err
			}
			if fcur != cur {
				return fmt.Errorf("%w: notification.fees is in %s, the payment in %s", delivery.ErrInvalidAmount, fcur, cur)
			}
			fee = f
		}
		ev.Facts = []delivery.Fact{{Kind: delivery.KindCaptured, BusinessID: p.ID, Amount: amt, Fee: fee, Currency: cur}}
	case "confirmed":
		amt, cur, err := parseAmount(p.Amount, "notification.amount")
		if err != nil {
			return err
		}
		ev.Facts = []delivery.Fact{{Kind: delivery.KindAuthorized, Amount: amt, Currency: cur}}
	case "failed":
		f := delivery.Fact{Kind: delivery.KindFailed, Reason: p.ErrorCode}
		// The attempted amount, kept with the failure when it reads; it
		// posts nothing.
		if amt, cur, err := parseAmount(p.Amount, "notification.amount"); err == nil {
			f.Amount, f.Currency = amt, cur
		}
		ev.Facts = []delivery.Fact{f}
	}
	return nil
}

func refundFacts(ev *delivery.Event, p paymentObj) error {
	if p.ID == "" {
		return fmt.Errorf("%w: notification.id", delivery.ErrMissingField)
	}
	if p.OriginalPayment == nil || p.OriginalPayment.ID == "" {
		return fmt.Errorf("%w: notification.originalPayment.id", delivery.ErrMissingField)
	}
	ev.PaymentKey = p.OriginalPayment.ID
	var kind delivery.Kind
	switch p.Status {
	case "paid", "confirmed":
		kind = delivery.KindRefunded
	case "failed":
		kind = delivery.KindRefundFailed
	default:
		return nil
	}
	amt, cur, err := parseAmount(p.Amount, "notification.amount")
	if err != nil {
		return err
	}
	f := delivery.Fact{Kind: kind, BusinessID: p.ID, Amount: amt, Currency: cur}
	if kind == delivery.KindRefundFailed {
		f.Reason = p.ErrorCode
	}
	ev.Facts = []delivery.Fact{f}
	return nil
}

func chargebackFacts(ev *delivery.Event, c chargebackObj) error {
	if c.ID == "" {
		return fmt.Errorf("%w: notification.id", delivery.ErrMissingField)
	}
	if c.PaymentID == "" {
		return fmt.Errorf("%w: notification.paymentId", delivery.ErrMissingField)
	}
	if len(c.History) == 0 {
		return fmt.Errorf("%w: notification.history", delivery.ErrMissingField)
	}
	ev.PaymentKey = c.PaymentID
	var kind delivery.Kind
	switch c.History[len(c.History)-1].Type {
	case "First Chargeback":
		kind = delivery.KindDisputeOpened
	case "Chargeback Reversal":
		kind = delivery.KindDisputeWon
	case "Second Chargeback":
		kind = delivery.KindDisputeLost
	default:
		return nil
	}
	// The disputed amount is the first chargeback's; later entries repeat or
	// reverse it.
	idx := len(c.History) - 1
	for i, h := range c.History {
		if h.Type == "First Chargeback" {
			idx = i
			break
		}
	}
	amt, cur, err := parseAmount(c.History[idx].Amount, fmt.Sprintf("notification.history[%d].amount", idx))
	if err != nil {
		return err
	}
	ev.Facts = []delivery.Fact{{Kind: kind, BusinessID: c.ID, Amount: amt, Currency: cur, Reason: c.Reason}}
	return nil
}

func payoutFacts(ev *delivery.Event, p payoutObj) error {
	if p.ID == "" {
		return fmt.Errorf("%w: notification.id", delivery.ErrMissingField)
	}
	if p.Status != "complete" {
		return nil
	}
	amt, cur, err := parseAmount(p.Amount, "notification.amount")
	if err != nil {
		return err
	}
	ev.Facts = []delivery.Fact{{Kind: delivery.KindPayoutPaid, BusinessID: p.ID, Amount: amt, Currency: cur}}
	return nil
}

// parseAmount converts a Circle money object (decimal major units) exactly.
func parseAmount(a *amountT, field string) (int64, money.Currency, error) {
	if a == nil {
		return 0, "", fmt.Errorf("%w: %s", delivery.ErrMissingField, field)
	}
	return payload.Decimal{ValueKey: "amount", Value: a.Amount, CurrencyKey: "currency", Currency: a.Currency}.Parse(field)
}
