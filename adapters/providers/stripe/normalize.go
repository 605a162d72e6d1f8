package stripe

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/payload"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/money"
)

// normalize turns a verified Stripe event into a delivery.Event. The payment
// key is the PaymentIntent id (pi_...), or the charge id for a charge made
// without one (see the package doc): one capture is reported by both
// charge.succeeded and payment_intent.succeeded, and both must land on the
// same stream with the same business id (the charge id) so the domain
// records it once.
func normalize(raw []byte) (delivery.Event, error) {
	root, err := payload.DecodeObject(raw)
	if err != nil {
		return delivery.Event{}, err
	}
	id, err := root.ReqString("id")
	if err != nil {
		return delivery.Event{}, err
	}
	typ, err := root.ReqString("type")
	if err != nil {
		return delivery.Event{}, err
	}
	created, err := unixField(root, "created")
	if err != nil {
		return delivery.Event{}, err
	}
	ev := delivery.Event{
		Provider:    Name,
		DedupKey:    id,
		Type:        typ,
		OccurredAt:  time.Unix(created, 0).UTC(),
		PayloadHash: providers.PayloadHash(raw),
		Raw:         raw,
	}
	data, err := root.ReqObject("data")
	if err != nil {
		return delivery.Event{}, err
	}
	obj, err := data.ReqObject("object")
	if err != nil {
		return delivery.Event{}, err
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
	case typ == "payout.paid", typ == "payout.failed", typ == "payout.canceled", typ == "payout.updated":
		n = payout
	default:
		return ev, nil // not handled: ignored, raw kept in the inbox
	}
	key, facts, err := n(typ, obj)
	if err != nil {
		return delivery.Event{}, err
	}
	for i := range facts {
		if err := toISO(&facts[i]); err != nil {
			return delivery.Event{}, err
		}
	}
	ev.PaymentKey, ev.Facts = key, facts
	return ev, nil
}

// toISO converts a fact's amount and fee from Stripe's units into ISO 4217
// minor units, through money.StripeAPI, the table the report path
// (apiToISO) uses too. An amount ISO cannot represent (ISK 150, 1.50 kr) is
// a bad amount (400), not something to round.
func toISO(f *delivery.Fact) error {
	var err error
	if f.Amount, err = money.StripeAPI.ToISO(f.Amount, f.Currency); err != nil {
		return fmt.Errorf("%w: %s amount: %w", delivery.ErrInvalidAmount, f.Kind, err)
	}
	if f.Fee, err = money.StripeAPI.ToISO(f.Fee, f.Currency); err != nil {
		return fmt.Errorf("%w: %s fee: %w", delivery.ErrInvalidAmount, f.Kind, err)
	}
	return nil
}

// A normalizer reads data.object for one family of event types and returns
// the payment key and the facts. With no facts the key is best effort: an
// ignored delivery needs none.
type normalizer func(typ string, obj payload.Object) (paymentKey string, facts []delivery.Fact, err error)

func paymentIntent(typ string, pi payload.Object) (string, []delivery.Fact, error) {
	var kind delivery.Kind
	switch typ {
	case "payment_intent.succeeded":
		kind = delivery.KindCaptured
	case "payment_intent.amount_capturable_updated":
		kind = delivery.KindAuthorized
	case "payment_intent.payment_failed":
		kind = delivery.KindFailed
	case "payment_intent.canceled":
		kind = delivery.KindCanceled
	default: // created, processing, requires_action, partially_funded, ...
		key, _, _ := pi.OptString("id")
		return key, nil, nil
	}
	key, err := pi.ReqString("id")
	if err != nil {
		return "", nil, err
	}
	cur, err := pi.ReqCurrency("currency")
	if err != nil {
		return "", nil, err
	}
	f := delivery.Fact{Kind: kind, Currency: cur}
	switch kind {
	case delivery.KindCaptured:
		// The capture's identity is the charge, as on charge.succeeded.
		chargeID, ch, hasCharge, err := capturedCharge(pi)
		if err != nil {
			return "", nil, err
		}
		if !hasCharge {
			// Nothing names the charge, so no fact can carry the identity
			// charge.succeeded gives the same capture: record the delivery
			// without facts and let charge.succeeded post it, rather than
			// refuse it and have Stripe retry it for days.
			return key, nil, nil
		}
		f.BusinessID = chargeID
		if f.Amount, err = pi.ReqInt("amount_received"); err != nil {
			return "", nil, err
		}
		// Webhooks do not expand latest_charge, but if it was expanded, or
		// the charge came embedded in a legacy charges list, take the fee
		// from its balance transaction (when that is expanded too) so the
		// fact agrees with the same capture seen through charge.succeeded.
		if ch != nil {
			if f.Fee, err = chargeFee(*ch); err != nil {
				return "", nil, err
			}
		}
	case delivery.KindAuthorized:
		if f.Amount, err = pi.ReqInt("amount_capturable"); err != nil {
			return "", nil, err
		}
	case delivery.KindFailed:
		if f.Amount, _, err = pi.OptInt("amount"); err != nil {
			return "", nil, err
		}
		if lpe, ok, err := pi.OptObject("last_payment_error"); err != nil {
			return "", nil, err
		} else if ok {
			f.Reason = reason(lpe, "message", "code")
		}
	case delivery.KindCanceled:
		if f.Amount, _, err = pi.OptInt("amount"); err != nil {
			return "", nil, err
		}
		f.Reason = reason(pi, "cancellation_reason")
	}
	return key, []delivery.Fact{f}, nil
}

// capturedCharge finds the charge a succeeded PaymentIntent captured:
// latest_charge (API versions from 2022-11-15 on), else, for accounts pinned
// to an older version, the embedded list charges.data. That list holds every
// attempt, failed ones included, newest first; a lone entry is the one,
// otherwise the first with status "succeeded" and captured not false is. ch
// is the charge object when the payload carries it (expanded or embedded).
// ok is false when the payload names no charge at all.
func capturedCharge(pi payload.Object) (id string, ch *payload.Object, ok bool, err error) {
	if id, ok, err = optID(pi, "latest_charge"); err != nil || ok {
		if obj, isObj := expanded(pi, "latest_charge"); isObj {
			ch = &obj
		}
		return id, ch, ok, err
	}
	charges, ok, err := pi.OptObject("charges")
	if err != nil || !ok {
		return "", nil, false, err
	}
	var list []payload.Object
	if err := charges.EachObject("data", func(c payload.Object) error {
		list = append(list, c)
		return nil
	}); err != nil {
		return "", nil, false, err
	}
	for _, c := range list {
		if len(list) > 1 {
			status, _, err := c.OptString("status")
			if err != nil {
				return "", nil, false, err
			}
			captured, hasCaptured, err := c.OptBool("captured")
			if err != nil {
				return "", nil, false, err
			}
			if status != "succeeded" || (hasCaptured && !captured) {
				continue
			}
		}
		id, err := c.ReqString("id")
		if err != nil {
			return "", nil, false, err
		}
		return id, &c, true, nil
	}
	return "", nil, false, nil
}

func charge(typ string, ch payload.Object) (string, []delivery.Fact, error) {
	if typ == "charge.refunded" {
		return chargeRefunded(ch)
	}
	key, err := reqPaymentKey(ch, "id")
	if err != nil {
		return "", nil, err
	}
	chargeID, err := ch.ReqString("id")
	if err != nil {
		return "", nil, err
	}
	cur, err := ch.ReqCurrency("currency")
	if err != nil {
		return "", nil, err
	}
	amount, err := ch.ReqInt("amount")
	if err != nil {
		return "", nil, err
	}
	f := delivery.Fact{BusinessID: chargeID, Currency: cur, Amount: amount}
	switch typ {
	case "charge.failed":
		f.Kind = delivery.KindFailed
		f.Reason = reason(ch, "failure_message", "failure_code")
		return key, []delivery.Fact{f}, nil
	case "charge.succeeded":
		captured, ok, err := ch.OptBool("captured")
		if err != nil {
			return "", nil, err
		}
		if !ok {
			return "", nil, fmt.Errorf("%w: %s", delivery.ErrMissingField, ch.Name("captured"))
		}
		if !captured { // authorize now, capture later (capture_method=manual)
			f.Kind = delivery.KindAuthorized
			return key, []delivery.Fact{f}, nil
		}
	}
	// charge.captured, or charge.succeeded with automatic capture.
	f.Kind = delivery.KindCaptured
	if captured, ok, err := ch.OptInt("amount_captured"); err != nil {
		return "", nil, err
	} else if ok {
		f.Amount = captured
	}
	if f.Fee, err = chargeFee(ch); err != nil {
		return "", nil, err
	}
	return key, []delivery.Fact{f}, nil
}

// chargeFee reads Stripe's processing fee. Stripe keeps it on the balance
// transaction, which a webhook carries only as an id; then the fee is not
// known here and is recorded as 0.
func chargeFee(ch payload.Object) (int64, error) {
	bt, ok := expanded(ch, "balance_transaction")
	if !ok {
		return 0, nil
	}
	fee, _, err := bt.OptInt("fee")
	return fee, err
}

// chargeRefunded reads the refunds listed on the charge. Since API version
// 2022-11-15 Stripe no longer includes that list unless expanded; without it
// the delivery carries no facts. Turning amount_refunded into a fact is not an
// option: it is cumulative over all refunds of the charge and names no refund
// id, so it would double count against the refund.* events, which carry each
// refund with its id.
func chargeRefunded(ch payload.Object) (string, []delivery.Fact, error) {
	refunds, ok, err := ch.OptObject("refunds")
	if err != nil || !ok {
		key, _, _ := optPaymentKey(ch, "id")
		return key, nil, err
	}
	var facts []delivery.Fact
	err = refunds.EachObject("data", func(re payload.Object) error {
		status, _, err := re.OptString("status")
		if err != nil {
			return err
		}
		if status != "succeeded" {
			return nil // pending ones arrive later through refund.updated
		}
		f, err := refundFact(re, delivery.KindRefunded)
		if err != nil {
			return err
		}
		facts = append(facts, f)
		return nil
	})
	if err != nil {
		return "", nil, err
	}
	if len(facts) == 0 {
		key, _, _ := optPaymentKey(ch, "id")
		return key, nil, nil
	}
	key, err := reqPaymentKey(ch, "id")
	if err != nil {
		return "", nil, err
	}
	return key, facts, nil
}

func refund(typ string, re payload.Object) (string, []delivery.Fact, error) {
	status, _, err := re.OptString("status")
	if err != nil {
		return "", nil, err
	}
	var kind delivery.Kind
	switch {
	case typ == "refund.failed", status == "failed", status == "canceled":
		kind = delivery.KindRefundFailed
	case status == "succeeded":
		kind = delivery.KindRefunded
	default: // pending, requires_action: the outcome comes in a later event
		key, _, _ := optPaymentKey(re, "charge")
		return key, nil, nil
	}
	key, err := reqPaymentKey(re, "charge")
	if err != nil {
		return "", nil, err
	}
	f, err := refundFact(re, kind)
	if err != nil {
		return "", nil, err
	}
	if kind == delivery.KindRefundFailed {
		f.Reason = reason(re, "failure_reason")
	}
	return key, []delivery.Fact{f}, nil
}

func refundFact(re payload.Object, kind delivery.Kind) (delivery.Fact, error) {
	id, err := re.ReqString("id")
	if err != nil {
		return delivery.Fact{}, err
	}
	amount, err := re.ReqInt("amount")
	if err != nil {
		return delivery.Fact{}, err
	}
	cur, err := re.ReqCurrency("currency")
	if err != nil {
		return delivery.Fact{}, err
	}
	return delivery.Fact{Kind: kind, BusinessID: id, Amount: amount, Currency: cur}, nil
}

// dispute reads a Stripe dispute. The ledger follows the funds Stripe moves,
// not the dispute's existence (docs/reference.md):
//
//   - charge.dispute.funds_withdrawn and charge.dispute.funds_reinstated are
//     the movements themselves ("Occurs when funds are removed from / are
//     reinstated to your account due to a dispute").
//   - charge.dispute.created and .updated carry the dispute as it stands: an
//     inquiry (status warning_needs_response, warning_under_review) moves no
//     funds; otherwise its balance_transactions, documented as "zero, one, or
//     two balance transactions that show funds withdrawn and reinstated to
//     your Stripe account as a result of this dispute", say what moved: none
//     yet, a withdrawal (negative amount), or a withdrawal and a
//     reinstatement. A payload without the list at all is taken as a
//     chargeback whose funds were withdrawn, as before the list was read.
//   - charge.dispute.closed: won, or warning_closed (an inquiry closed
//     without becoming a chargeback: nothing was withdrawn, so the domain
//     posts nothing for it), or lost.
//
// Every report names the dispute id, so the same movement reported by two
// events (created with its withdrawal, then funds_withdrawn) is recorded once.
func dispute(typ string, du payload.Object) (string, []delivery.Fact, error) {
	status, _, err := du.OptString("status")
	if err != nil {
		return "", nil, err
	}
	var kind delivery.Kind
	switch typ {
	case "charge.dispute.funds_withdrawn":
		kind = delivery.KindDisputeOpened
	case "charge.dispute.funds_reinstated":
		kind = delivery.KindDisputeFundsReinstated
	case "charge.dispute.created", "charge.dispute.updated":
		if kind, err = disputeFunds(du, status); err != nil {
			return "", nil, err
		}
	case "charge.dispute.closed":
		switch status {
		case "won", "warning_closed":
			kind = delivery.KindDisputeWon
		case "lost":
			kind = delivery.KindDisputeLost
		}
	}
	if kind == "" { // closed with another status, or a type we do not read
		key, _, _ := optPaymentKey(du, "charge")
		return key, nil, nil
	}
	key, err := reqPaymentKey(du, "charge")
	if err != nil {
		return "", nil, err
	}
	id, err := du.ReqString("id")
	if err != nil {
		return "", nil, err
	}
	amount, err := du.ReqInt("amount")
	if err != nil {
		return "", nil, err
	}
	cur, err := du.ReqCurrency("currency")
	if err != nil {
		return "", nil, err
	}
	f := delivery.Fact{Kind: kind, BusinessID: id, Amount: amount, Currency: cur}
	f.Reason = reason(du, "reason")
	return key, []delivery.Fact{f}, nil
}

// disputeFunds reads what an open dispute's balance transactions say moved.
func disputeFunds(du payload.Object, status string) (delivery.Kind, error) {
	if strings.HasPrefix(status, "warning_") {
		return delivery.KindDisputeInquiry, nil
	}
	if _, ok := du.Get("balance_transactions"); !ok {
		return delivery.KindDisputeOpened, nil
	}
	var withdrawn, reinstated bool
	err := du.EachObject("balance_transactions", func(bt payload.Object) error {
		amount, err := signedInt(bt, "amount")
		if err != nil {
			return err
		}
		// Signed: a withdrawal is negative, a reinstatement positive
		// (in the balance's currency, so the dispute's amount is used).
		if amount < 0 {
			withdrawn = true
		} else {
			reinstated = true
		}
		return nil
	})
	switch {
	case err != nil:
		return "", err
	case reinstated:
		return delivery.KindDisputeFundsReinstated, nil
	case withdrawn:
		return delivery.KindDisputeOpened, nil
	}
	return delivery.KindDisputeInquiry, nil // no funds moved yet
}

// payout reads payout.paid, and payout.failed / payout.canceled: a bank can
// return a payout days after payout.paid (Stripe: "a payout can fail even
// after it's marked paid"); the failure reverses it.
//
// payout.updated ("Occurs whenever a payout is updated") of a paid payout
// is another report of it as paid: Stripe fills trace_id in after the
// payout is paid, so an update is how the trace id arrives; of a payout
// not paid (pending, in_transit) or failed, it records nothing (its
// payout.failed does). Stripe's pages do not say that a trace_id change
// sends payout.updated; `onceledger backfill stripe` lists events, so a
// missed one is found there too.
func payout(typ string, po payload.Object) (string, []delivery.Fact, error) {
	if typ == "payout.updated" {
		status, _, err := po.OptString("status")
		if err != nil {
			return "", nil, err
		}
		if status != "paid" {
			return "", nil, nil
		}
		typ = "payout.paid"
	}
	id, err := po.ReqString("id")
	if err != nil {
		return "", nil, err
	}
	amount, err := po.ReqInt("amount")
	if err != nil {
		return "", nil, err
	}
	cur, err := po.ReqCurrency("currency")
	if err != nil {
		return "", nil, err
	}
	f := delivery.Fact{Kind: delivery.KindPayoutPaid, BusinessID: id, Amount: amount, Currency: cur}
	// arrival_date: "Date that you can expect the payout to arrive in the
	// bank" (docs.stripe.com/api/payouts/object), a unix time; the
	// payout's arrival date in the read models, not the event's time.
	if at, ok, err := po.OptInt("arrival_date"); err != nil {
		return "", nil, err
	} else if ok && at > 0 && typ == "payout.paid" {
		f.ArrivalDate = time.Unix(at, 0).UTC()
	}
	if typ == "payout.paid" {
		if f.TraceID, f.Descriptor, err = bankRefs(po); err != nil {
			return "", nil, err
		}
	}
	if typ != "payout.paid" {
		f.Kind = delivery.KindPayoutFailed
		f.Reason = reason(po, "failure_message", "failure_code")
		if f.Reason == "" && typ == "payout.canceled" {
			f.Reason = "canceled"
		}
	}
	return "", []delivery.Fact{f}, nil
}

// bankRefs reads what a bank statement line may name the payout by
// (docs.stripe.com/api/payouts/object): statement_descriptor, "Extra
// information about a payout that displays on the user's bank statement"
// (nullable; banks may not show it, and a US ACH payout shows its first 10
// characters only), and trace_id.value, "The trace ID value if
// trace_id.status is supported, otherwise nil" (pending while Stripe asks
// its banking partner, "up to 10 days after arrival_date"; unsupported
// "such as a payout failure or an unsupported country and currency
// combination": Stripe's pages do not list which countries have one).
// Each bank sets its trace id's format (docs.stripe.com/payouts/trace-id).
func bankRefs(po payload.Object) (trace, descriptor string, err error) {
	if descriptor, _, err = po.OptString("statement_descriptor"); err != nil {
		return "", "", err
	}
	tr, ok, err := po.OptObject("trace_id")
	if err != nil || !ok {
		return "", bankRef(descriptor), err
	}
	status, _, err := tr.OptString("status")
	if err != nil {
		return "", "", err
	}
	if status == "supported" {
		if trace, _, err = tr.OptString("value"); err != nil {
			return "", "", err
		}
	}
	return bankRef(trace), bankRef(descriptor), nil
}

// bankRef keeps a reference a statement line could hold: trimmed, and
// none when longer than an id may be (Stripe allows 5000 characters; no
// bank prints that many, and a payout is not refused for it).
func bankRef(s string) string {
	s = strings.TrimSpace(s)
	if len(s) > delivery.MaxIDBytes || strings.ContainsRune(s, 0) {
		return ""
	}
	return s
}

// optPaymentKey reads the payment key of a charge, refund or dispute object:
// its PaymentIntent, or, when payment_intent is null (a legacy charge made
// through the Charges API, and its refunds and disputes), the charge id,
// found in chargeField: "id" on a charge, "charge" on refunds and disputes.
// See the package doc.
func optPaymentKey(o payload.Object, chargeField string) (string, bool, error) {
	if key, ok, err := optID(o, "payment_intent"); err != nil || ok {
		return key, ok, err
	}
	return optID(o, chargeField)
}

func reqPaymentKey(o payload.Object, chargeField string) (string, error) {
	key, ok, err := optPaymentKey(o, chargeField)
	if err == nil && !ok {
		err = fmt.Errorf("%w: %s (or, without a PaymentIntent, %s)", delivery.ErrMissingField, o.Name("payment_intent"), o.Name(chargeField))
	}
	return key, err
}

// expanded returns the object behind an expandable reference when Stripe
// sent it expanded, and false when it sent just the id (or nothing).
func expanded(o payload.Object, field string) (payload.Object, bool) {
	// The id string is the usual case: looked at first, it costs no error
	// (OptObject's, formatted and dropped, on every charge).
	if v, _ := o.Get(field); v == nil {
		return payload.Object{}, false
	} else if _, isObj := v.(map[string]any); !isObj {
		return payload.Object{}, false
	}
	obj, ok, err := o.OptObject(field)
	return obj, ok && err == nil
}

// optID reads an expandable reference: Stripe sends either the id string or,
// when expanded, the whole object with its "id".
func optID(o payload.Object, field string) (string, bool, error) {
	v, ok := o.Get(field)
	if !ok {
		return "", false, nil
	}
	switch x := v.(type) {
	case string:
		// A copy: the decoded strings share the body's memory
		// (payload.DecodeObject), and an id outlives the decode.
		return strings.Clone(x), x != "", nil
	case map[string]any:
		ref, _ := expanded(o, field)
		return ref.OptString("id")
	default:
		return "", false, fmt.Errorf("%w: %s must be an id string or an object", delivery.ErrMalformed, o.Name(field))
	}
}

// signedInt reads an integer that may be negative (a balance transaction's
// amount); payload.Object.OptInt refuses negatives, right for amounts of
// facts but not here.
func signedInt(o payload.Object, field string) (int64, error) {
	v, ok := o.Get(field)
	if !ok {
		return 0, fmt.Errorf("%w: %s", delivery.ErrMissingField, o.Name(field))
	}
	n, isNum := v.(json.Number)
	if !isNum {
		return 0, fmt.Errorf("%w: %s must be an integer", delivery.ErrInvalidAmount, o.Name(field))
	}
	i, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%w: %s %s is not an int64 integer", delivery.ErrInvalidAmount, o.Name(field), n)
	}
	return i, nil
}

// unixField reads a unix timestamp in seconds.
func unixField(o payload.Object, field string) (int64, error) {
	v, ok := o.Get(field)
	if !ok {
		return 0, fmt.Errorf("%w: %s", delivery.ErrMissingField, o.Name(field))
	}
	n, isNum := v.(json.Number)
	if !isNum {
		return 0, fmt.Errorf("%w: %s must be a unix timestamp", delivery.ErrMalformed, o.Name(field))
	}
	t, err := strconv.ParseInt(string(n), 10, 64)
	if err != nil || t < 0 {
		return 0, fmt.Errorf("%w: %s %s is not a unix timestamp", delivery.ErrMalformed, o.Name(field), n)
	}
	return t, nil
}

// reason returns the first non-empty string among fields; it is free text
// for audit, so a wrongly typed value is dropped rather than rejected.
func reason(o payload.Object, fields ...string) string {
	for _, f := range fields {
		if s, ok, _ := o.OptString(f); ok {
			return s
		}
	}
	return ""
}
