package stripe

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/domain/provider"
)

// normalize turns a verified Stripe event into a provider.Event. The payment
// key is always the PaymentIntent id (pi_...): one capture is reported by
// both charge.succeeded and payment_intent.succeeded, and both must land on
// the same stream with the same business id (the charge id) so the domain
// records it once.
func normalize(raw []byte) (provider.Event, error) {
	root, err := decodeObject(raw)
	if err != nil {
		return provider.Event{}, err
	}
	id, err := root.reqString("id")
	if err != nil {
		return provider.Event{}, err
	}
	typ, err := root.reqString("type")
	if err != nil {
		return provider.Event{}, err
	}
	created, err := unixField(root, "created")
	if err != nil {
		return provider.Event{}, err
	}
	ev := provider.Event{
		Provider:    Name,
		DedupKey:    id,
		Type:        typ,
		OccurredAt:  time.Unix(created, 0).UTC(),
		PayloadHash: providers.PayloadHash(raw),
		Raw:         raw,
	}
	data, err := root.reqObject("data")
	if err != nil {
		return provider.Event{}, err
	}
	obj, err := data.reqObject("object")
	if err != nil {
		return provider.Event{}, err
	}

	var n normalizer
	switch {
	case strings.HasPrefix(typ, "payment_intent."):
		n = paymentIntent
	case typ == "charge.succeeded", typ == "charge.captured", typ == "charge.failed", typ == "charge.refunded":
		n = charge
	case typ == "refund.created", typ == "refund.updated", typ == "refund.failed", typ == "charge.refund.updated":
		n = refund
	case strings.HasPrefix(typ, "charge.dispute."):
		n = dispute
	case typ == "payout.paid":
		n = payout
	default:
		return ev, nil // not handled: ignored, raw kept in the inbox
	}
	key, facts, err := n(typ, obj)
	if err != nil {
		return provider.Event{}, err
	}
	ev.PaymentKey, ev.Facts = key, facts
	return ev, nil
}

// A normalizer reads data.object for one family of event types and returns
// the payment key and the facts. With no facts the key is best effort: an
// ignored delivery needs none.
type normalizer func(typ string, obj object) (paymentKey string, facts []provider.Fact, err error)

func paymentIntent(typ string, pi object) (string, []provider.Fact, error) {
	var kind provider.Kind
	switch typ {
	case "payment_intent.succeeded":
		kind = provider.KindCaptured
	case "payment_intent.amount_capturable_updated":
		kind = provider.KindAuthorized
	case "payment_intent.payment_failed":
		kind = provider.KindFailed
	case "payment_intent.canceled":
		kind = provider.KindCanceled
	default: // created, processing, requires_action, partially_funded, ...
		key, _, _ := pi.optString("id")
		return key, nil, nil
	}
	key, err := pi.reqString("id")
	if err != nil {
		return "", nil, err
	}
	cur, err := pi.reqCurrency("currency")
	if err != nil {
		return "", nil, err
	}
	f := provider.Fact{Kind: kind, Currency: cur}
	switch kind {
	case provider.KindCaptured:
		// The capture's identity is the charge, as on charge.succeeded.
		if f.BusinessID, err = pi.reqID("latest_charge"); err != nil {
			return "", nil, err
		}
		if f.Amount, err = pi.reqInt("amount_received"); err != nil {
			return "", nil, err
		}
		// Webhooks do not expand objects, but if latest_charge and its
		// balance transaction were expanded, take the fee from there so the
		// fact agrees with the same capture seen through charge.succeeded.
		if ch, ok := pi.expanded("latest_charge"); ok {
			if f.Fee, err = chargeFee(ch); err != nil {
				return "", nil, err
			}
		}
	case provider.KindAuthorized:
		if f.Amount, err = pi.reqInt("amount_capturable"); err != nil {
			return "", nil, err
		}
	case provider.KindFailed:
		if f.Amount, _, err = pi.optInt("amount"); err != nil {
			return "", nil, err
		}
		if lpe, ok, err := pi.optObject("last_payment_error"); err != nil {
			return "", nil, err
		} else if ok {
			f.Reason = reason(lpe, "message", "code")
		}
	case provider.KindCanceled:
		if f.Amount, _, err = pi.optInt("amount"); err != nil {
			return "", nil, err
		}
		f.Reason = reason(pi, "cancellation_reason")
	}
	return key, []provider.Fact{f}, nil
}

func charge(typ string, ch object) (string, []provider.Fact, error) {
	if typ == "charge.refunded" {
		return chargeRefunded(ch)
	}
	key, err := ch.reqID("payment_intent")
	if err != nil {
		return "", nil, err
	}
	chargeID, err := ch.reqString("id")
	if err != nil {
		return "", nil, err
	}
	cur, err := ch.reqCurrency("currency")
	if err != nil {
		return "", nil, err
	}
	amount, err := ch.reqInt("amount")
	if err != nil {
		return "", nil, err
	}
	f := provider.Fact{BusinessID: chargeID, Currency: cur, Amount: amount}
	switch typ {
	case "charge.failed":
		f.Kind = provider.KindFailed
		f.Reason = reason(ch, "failure_message", "failure_code")
		return key, []provider.Fact{f}, nil
	case "charge.succeeded":
		captured, ok, err := ch.optBool("captured")
		if err != nil {
			return "", nil, err
		}
		if !ok {
			return "", nil, fmt.Errorf("%w: %s", provider.ErrMissingField, ch.name("captured"))
		}
		if !captured { // authorize now, capture later (capture_method=manual)
			f.Kind = provider.KindAuthorized
			return key, []provider.Fact{f}, nil
		}
	}
	// charge.captured, or charge.succeeded with automatic capture.
	f.Kind = provider.KindCaptured
	if captured, ok, err := ch.optInt("amount_captured"); err != nil {
		return "", nil, err
	} else if ok {
		f.Amount = captured
	}
	if f.Fee, err = chargeFee(ch); err != nil {
		return "", nil, err
	}
	return key, []provider.Fact{f}, nil
}

// chargeFee reads Stripe's processing fee. Stripe keeps it on the balance
// transaction, which a webhook carries only as an id; then the fee is not
// known here and is recorded as 0.
func chargeFee(ch object) (int64, error) {
	bt, ok := ch.expanded("balance_transaction")
	if !ok {
		return 0, nil
	}
	fee, _, err := bt.optInt("fee")
	return fee, err
}

// chargeRefunded reads the refunds listed on the charge. Since API version
// 2022-11-15 Stripe no longer includes that list unless expanded; without it
// the delivery carries no facts. Turning amount_refunded into a fact is not an
// option: it is cumulative over all refunds of the charge and names no refund
// id, so it would double count against the refund.* events, which carry each
// refund with its id.
func chargeRefunded(ch object) (string, []provider.Fact, error) {
	refunds, ok, err := ch.optObject("refunds")
	if err != nil || !ok {
		key, _, _ := ch.optID("payment_intent")
		return key, nil, err
	}
	list, ok := refunds.get("data")
	if !ok {
		key, _, _ := ch.optID("payment_intent")
		return key, nil, nil
	}
	items, isList := list.([]any)
	if !isList {
		return "", nil, fmt.Errorf("%w: %s must be a list", provider.ErrMalformed, refunds.name("data"))
	}
	var facts []provider.Fact
	for i, it := range items {
		m, isObj := it.(map[string]any)
		if !isObj {
			return "", nil, fmt.Errorf("%w: %s[%d] must be an object", provider.ErrMalformed, refunds.name("data"), i)
		}
		re := object{path: fmt.Sprintf("%s[%d]", refunds.name("data"), i), m: m}
		status, _, err := re.optString("status")
		if err != nil {
			return "", nil, err
		}
		if status != "succeeded" {
			continue // pending ones arrive later through refund.updated
		}
		f, err := refundFact(re, provider.KindRefunded)
		if err != nil {
			return "", nil, err
		}
		facts = append(facts, f)
	}
	if len(facts) == 0 {
		key, _, _ := ch.optID("payment_intent")
		return key, nil, nil
	}
	key, err := ch.reqID("payment_intent")
	if err != nil {
		return "", nil, err
	}
	return key, facts, nil
}

func refund(typ string, re object) (string, []provider.Fact, error) {
	status, _, err := re.optString("status")
	if err != nil {
		return "", nil, err
	}
	var kind provider.Kind
	switch {
	case typ == "refund.failed", status == "failed", status == "canceled":
		kind = provider.KindRefundFailed
	case status == "succeeded":
		kind = provider.KindRefunded
	default: // pending, requires_action: the outcome comes in a later event
		key, _, _ := re.optID("payment_intent")
		return key, nil, nil
	}
	key, err := re.reqID("payment_intent")
	if err != nil {
		return "", nil, err
	}
	f, err := refundFact(re, kind)
	if err != nil {
		return "", nil, err
	}
	if kind == provider.KindRefundFailed {
		f.Reason = reason(re, "failure_reason")
	}
	return key, []provider.Fact{f}, nil
}

func refundFact(re object, kind provider.Kind) (provider.Fact, error) {
	id, err := re.reqString("id")
	if err != nil {
		return provider.Fact{}, err
	}
	amount, err := re.reqInt("amount")
	if err != nil {
		return provider.Fact{}, err
	}
	cur, err := re.reqCurrency("currency")
	if err != nil {
		return provider.Fact{}, err
	}
	return provider.Fact{Kind: kind, BusinessID: id, Amount: amount, Currency: cur}, nil
}

func dispute(typ string, du object) (string, []provider.Fact, error) {
	var kind provider.Kind
	switch typ {
	case "charge.dispute.created":
		kind = provider.KindDisputeOpened
	case "charge.dispute.closed":
		status, _, err := du.optString("status")
		if err != nil {
			return "", nil, err
		}
		switch status {
		case "won":
			kind = provider.KindDisputeWon
		case "lost":
			kind = provider.KindDisputeLost
		}
	}
	if kind == "" { // updated, funds_withdrawn, warning_closed, ...
		key, _, _ := du.optID("payment_intent")
		return key, nil, nil
	}
	key, err := du.reqID("payment_intent")
	if err != nil {
		return "", nil, err
	}
	id, err := du.reqString("id")
	if err != nil {
		return "", nil, err
	}
	amount, err := du.reqInt("amount")
	if err != nil {
		return "", nil, err
	}
	cur, err := du.reqCurrency("currency")
	if err != nil {
		return "", nil, err
	}
	f := provider.Fact{Kind: kind, BusinessID: id, Amount: amount, Currency: cur}
	f.Reason = reason(du, "reason")
	return key, []provider.Fact{f}, nil
}

func payout(_ string, po object) (string, []provider.Fact, error) {
	id, err := po.reqString("id")
	if err != nil {
		return "", nil, err
	}
	amount, err := po.reqInt("amount")
	if err != nil {
		return "", nil, err
	}
	cur, err := po.reqCurrency("currency")
	if err != nil {
		return "", nil, err
	}
	return "", []provider.Fact{{Kind: provider.KindPayoutPaid, BusinessID: id, Amount: amount, Currency: cur}}, nil
}

// unixField reads a unix timestamp in seconds.
func unixField(o object, field string) (int64, error) {
	v, ok := o.get(field)
	if !ok {
		return 0, fmt.Errorf("%w: %s", provider.ErrMissingField, o.name(field))
	}
	n, isNum := v.(json.Number)
	if !isNum {
		return 0, fmt.Errorf("%w: %s must be a unix timestamp", provider.ErrMalformed, o.name(field))
	}
	t, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil || t < 0 {
		return 0, fmt.Errorf("%w: %s %s is not a unix timestamp", provider.ErrMalformed, o.name(field), n)
	}
	return t, nil
}

// reason returns the first non-empty string among fields; it is free text
// for audit, so a wrongly typed value is dropped rather than rejected.
func reason(o object, fields ...string) string {
	for _, f := range fields {
		if s, ok, _ := o.optString(f); ok {
			return s
		}
	}
	return ""
}
