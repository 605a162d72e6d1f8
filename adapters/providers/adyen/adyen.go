// Package adyen verifies Adyen standard notifications (JSON webhooks) and
// normalizes them into delivery.Events.
//
// One request is a batch: {"live":"false","notificationItems":[
// {"NotificationRequestItem":{...}}, ...]}. Adyen signs each item, not the
// request: additionalData.hmacSignature is base64(HMAC-SHA256(key,
// pspReference:originalReference:merchantAccountCode:merchantReference:
// value:currency:eventCode:success)), a missing field contributing an empty
// string, value being amount.value (integer minor units) as a decimal
// string, and key being the hex-decoded HMAC key from the Customer Area.
// Several keys may be configured (rotation); an item passes if any key
// matches, compared in constant time.
//
// Decisions:
//
//   - All or nothing. If any item of a batch fails verification, the whole
//     request is refused (providers.ErrUnauthorized, nothing stored). Adyen
//     retries a batch as a unit, so accepting part of it would leave a
//     half-applied batch that a retry could not tell apart from a forgery
//     mixed into a genuine one. A body that cannot even be read as a batch
//     (invalid JSON, no items) cannot be verified either and is refused the
//     same way: unauthenticated bytes never get a 400 that describes them.
//
//   - Repeated keys refuse the batch the same way (401): a key sent twice in
//     one object (at any depth; outside additionalData also two keys that
//     differ only in case, which the struct decoder takes for one field)
//     leaves it open which value was meant, and the HMAC covers only
//     selected values, not the bytes, so it cannot settle that.
//
//   - One delivery.Event per item. PayloadHash and Raw are the item's
//     canonical JSON (sorted keys, numbers as written), so a redelivered item
//     compares equal whatever batch it arrives in and however it is laid out.
//
//   - Dedup key "pspReference:eventCode:success". Adyen sends no event id.
//     pspReference is unique per payment, modification (capture, refund,
//     cancellation) and dispute, and all events of one dispute share the
//     dispute's pspReference with distinct event codes; eventCode separates
//     those stages and success separates a failed attempt from a later
//     successful notification about the same reference. originalReference is
//     left out because pspReference already determines it.
//
//   - Facts come only from signed fields (references, amount, currency,
//     eventCode, success). Everything else in an item (additionalData apart
//     from the signature, reason, eventDate) is not covered by the HMAC, so
//     it is kept for audit and used only for OccurredAt and free-text reasons.
//
//   - Payment key: originalReference when present (modifications and
//     disputes name the payment there), else pspReference (AUTHORISATION).
//
// Mapping (success "true"): AUTHORISATION → authorized; CAPTURE → captured
// (business id = the capture's pspReference); REFUND → refunded (the refund's
// pspReference); REFUND_FAILED and REFUNDED_REVERSED → refund_failed;
// CANCELLATION → canceled; NOTIFICATION_OF_CHARGEBACK and
// REQUEST_FOR_INFORMATION → dispute_inquiry (Adyen debits nothing at these
// stages: a notification of a chargeback to come, and an issuer's request
// for information; recorded, posts nothing); DISPUTE_OPENED_WITH_CHARGEBACK
// and CHARGEBACK → dispute_opened, the debit (business id = the dispute's
// pspReference, shared by all its events, so the notification and the later
// debit are one dispute); CHARGEBACK_REVERSED and
// PREARBITRATION_WON → dispute_won; SECOND_CHARGEBACK and
// PREARBITRATION_LOST → dispute_lost. AUTHORISATION with success "false" →
// failed. Any other event code, and any modification with success "false",
// carries no facts: recorded, posts nothing. CAPTURE_FAILED and
// CANCEL_OR_REFUND are deliberately not mapped (which way a CANCEL_OR_REFUND
// went is only in unsigned additionalData); they need reconciliation.
//
// Adyen reports captures only if CAPTURE notifications are enabled in the
// Customer Area, also for automatic capture; without them no capture posts.
// The "[accepted]" answer is the HTTP layer's job.
package adyen

import (
	"bytes"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/payload"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/money"
)

// Name is the provider name in URLs, stream ids and the inbox.
const Name = "adyen"

// Adapter verifies and normalizes Adyen notifications. Safe for concurrent use.
type Adapter struct {
	keys [][]byte
}

var _ providers.Adapter = (*Adapter)(nil)

// New returns an adapter accepting items signed with any of the hex HMAC keys
// (blank entries skipped). A key that is not valid hex is a configuration
// error, reported here rather than as 401s later.
func New(hmacKeysHex []string) (*Adapter, error) {
	keys, err := providers.Keys(hmacKeysHex, func(pos int, k string) ([]byte, error) {
		b, err := decodeKey(k)
		if err != nil {
			return nil, fmt.Errorf("adyen: HMAC key %d is not hex", pos)
		}
		return b, nil
	})
	if err != nil {
		return nil, err
	}
	a := &Adapter{keys: keys}
	if len(a.keys) == 0 {
		return nil, errors.New("adyen: no HMAC key configured")
	}
	return a, nil
}

// decodeKey decodes a hex HMAC key; an empty one is no key.
func decodeKey(k string) ([]byte, error) {
	b, err := hex.DecodeString(k)
	if err == nil && len(b) == 0 {
		err = errors.New("empty key")
	}
	return b, err
}

// Name implements providers.Adapter.
func (a *Adapter) Name() string { return Name }

// Parse implements providers.Adapter: every item is verified before any is
// normalized; it returns one event per item, in batch order.
func (a *Adapter) Parse(r providers.Request) ([]delivery.Event, error) {
	items, err := decodeBatch(r.Body)
	if err != nil {
		return nil, providers.Unauthorized(err.Error())
	}
	for i, it := range items {
		if !a.verify(it) {
			return nil, providers.Unauthorized(fmt.Sprintf("notificationItems[%d]: hmacSignature does not match", i))
		}
	}
	events := make([]delivery.Event, 0, len(items))
	for i, it := range items {
		ev, err := normalize(it)
		if err != nil {
			return nil, fmt.Errorf("notificationItems[%d]: %w", i, err)
		}
		if err := ev.Validate(); err != nil {
			return nil, fmt.Errorf("notificationItems[%d]: %w", i, err)
		}
		events = append(events, ev)
	}
	return events, nil
}

// item is one NotificationRequestItem. Text fields that take part in the
// signature are flexText so that a number or boolean Adyen might send is
// signed with its literal text instead of failing to decode.
type item struct {
	raw            json.RawMessage
	AdditionalData map[string]json.RawMessage `json:"additionalData"`
	Amount         *amount                    `json:"amount"`
	EventCode      flexText                   `json:"eventCode"`
	EventDate      string                     `json:"eventDate"`
	MerchantAcct   flexText                   `json:"merchantAccountCode"`
	MerchantRef    flexText                   `json:"merchantReference"`
	OriginalRef    flexText                   `json:"originalReference"`
	PspReference   flexText                   `json:"pspReference"`
	Reason         string                     `json:"reason"`
	Success        flexText                   `json:"success"`
}

type amount struct {
	Value    flexText `json:"value"`
	Currency flexText `json:"currency"`
}

// flexText holds a JSON string's value, or the literal text of a number or
// boolean; null and absence are empty.
type flexText string

func (f *flexText) UnmarshalJSON(b []byte) error {
	switch {
	case bytes.Equal(b, []byte("null")):
		*f = ""
	case len(b) > 0 && b[0] == '"':
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		*f = flexText(s)
	case len(b) > 0 && (b[0] == '{' || b[0] == '['):
		return errors.New("expected a string, number or boolean")
	default:
		*f = flexText(b)
	}
	return nil
}

// decodeBatch reads the envelope and each item. It fails on anything that
// leaves an item unverifiable.
func decodeBatch(body []byte) ([]item, error) {
	var env struct {
		NotificationItems []struct {
			Item json.RawMessage `json:"NotificationRequestItem"`
		} `json:"notificationItems"`
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&env); err != nil {
		return nil, fmt.Errorf("body is not an Adyen notification batch: %v", err)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("body is not an Adyen notification batch: data after the JSON value")
	}
	if len(env.NotificationItems) == 0 {
		return nil, errors.New("notificationItems is missing or empty")
	}
	// A repeated key makes an item say two things (encoding/json keeps the
	// last; Adyen's own parsers may not), and canonical would silently drop
	// the first; such a batch is not one we can verify.
	if err := payload.UniqueKeys(body, structFields); err != nil {
		return nil, err
	}
	items := make([]item, 0, len(env.NotificationItems))
	for i, w := range env.NotificationItems {
		if len(w.Item) == 0 || bytes.Equal(w.Item, []byte("null")) {
			return nil, fmt.Errorf("notificationItems[%d]: NotificationRequestItem is missing", i)
		}
		var it item
		if err := json.Unmarshal(w.Item, &it); err != nil {
			return nil, fmt.Errorf("notificationItems[%d]: %v", i, err)
		}
		it.raw = w.Item
		items = append(items, it)
	}
	return items, nil
}

// structFields is the payload.KeyRule for a batch: everything is decoded
// into structs, whose fields encoding/json matches ignoring case, except the
// contents of additionalData, a map whose keys are exact (and partly chosen
// by the merchant).
var structFields = payload.KeyRule{Fold: true, ExactUnder: []string{"additionalData"}}

// signingString is the text Adyen signs for one item.
func signingString(it item) string {
	var value, currency string
	if it.Amount != nil {
		value, currency = string(it.Amount.Value), string(it.Amount.Currency)
	}
	return strings.Join([]string{
		string(it.PspReference), string(it.OriginalRef), string(it.MerchantAcct), string(it.MerchantRef),
		value, currency, string(it.EventCode), string(it.Success),
	}, ":")
}

func mac(key []byte, data string) []byte {
	h := hmac.New(sha256.New, key)
	h.Write([]byte(data))
	return h.Sum(nil)
}

// verify compares the decoded signature with each key's HMAC in constant time.
func (a *Adapter) verify(it item) bool {
	rawSig, ok := it.AdditionalData["hmacSignature"]
	if !ok {
		return false
	}
	var sigB64 string
	if err := json.Unmarshal(rawSig, &sigB64); err != nil || sigB64 == "" {
		return false
	}
	sig, err := base64.StdEncoding.DecodeString(sigB64)
	if err != nil {
		return false
	}
	data := signingString(it)
	return providers.MatchAny(a.keys, func(k []byte) []byte { return mac(k, data) }, sig)
}

// Sign returns the hmacSignature Adyen would put in an item with these
// signed fields. For tests and local tooling; production code only verifies.
func Sign(hexKey, pspReference, originalReference, merchantAccountCode, merchantReference string,
	value int64, currency, eventCode, success string) (string, error) {
	key, err := hex.DecodeString(hexKey)
	if err != nil {
		return "", fmt.Errorf("adyen: key is not hex: %w", err)
	}
	it := item{
		PspReference: flexText(pspReference), OriginalRef: flexText(originalReference),
		MerchantAcct: flexText(merchantAccountCode), MerchantRef: flexText(merchantReference),
		Amount:    &amount{Value: flexText(fmt.Sprint(value)), Currency: flexText(currency)},
		EventCode: flexText(eventCode), Success: flexText(success),
	}
	return base64.StdEncoding.EncodeToString(mac(key, signingString(it))), nil
}

// SignBatch returns body with additionalData.hmacSignature set in every item,
// signed with hexKey, re-encoded as canonical JSON. For tests and tooling.
func SignBatch(hexKey string, body []byte) ([]byte, error) {
	key, err := hex.DecodeString(hexKey)
	if err != nil {
		return nil, fmt.Errorf("adyen: key is not hex: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	var env map[string]any
	if err := dec.Decode(&env); err != nil {
		return nil, err
	}
	list, _ := env["notificationItems"].([]any)
	for i, w := range list {
		wm, _ := w.(map[string]any)
		im, _ := wm["NotificationRequestItem"].(map[string]any)
		if im == nil {
			return nil, fmt.Errorf("notificationItems[%d]: no NotificationRequestItem", i)
		}
		b, err := json.Marshal(im)
		if err != nil {
			return nil, err
		}
		var it item
		if err := json.Unmarshal(b, &it); err != nil {
			return nil, err
		}
		ad, _ := im["additionalData"].(map[string]any)
		if ad == nil {
			ad = map[string]any{}
			im["additionalData"] = ad
		}
		ad["hmacSignature"] = base64.StdEncoding.EncodeToString(mac(key, signingString(it)))
	}
	return json.Marshal(env)
}

// canonical re-encodes one item with sorted keys and numbers as written, so
// its hash does not depend on layout or on the batch it came in.
func canonical(raw []byte) ([]byte, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	return json.Marshal(v)
}

// normalize maps one verified item.
func normalize(it item) (delivery.Event, error) {
	psp, code, success := string(it.PspReference), string(it.EventCode), string(it.Success)
	if psp == "" {
		return delivery.Event{}, fmt.Errorf("%w: pspReference", delivery.ErrMissingField)
	}
	if code == "" {
		return delivery.Event{}, fmt.Errorf("%w: eventCode", delivery.ErrMissingField)
	}
	if success != "true" && success != "false" {
		return delivery.Event{}, fmt.Errorf("%w: success must be \"true\" or \"false\", got %q", delivery.ErrMalformed, success)
	}
	if it.EventDate == "" {
		return delivery.Event{}, fmt.Errorf("%w: eventDate", delivery.ErrMissingField)
	}
	at, err := time.Parse(time.RFC3339, it.EventDate)
	if err != nil {
		return delivery.Event{}, fmt.Errorf("%w: eventDate %q is not an ISO 8601 date-time with offset", delivery.ErrMalformed, it.EventDate)
	}
	canon, err := canonical(it.raw)
	if err != nil {
		return delivery.Event{}, fmt.Errorf("%w: NotificationRequestItem: %v", delivery.ErrMalformed, err)
	}
	ev := delivery.Event{
		Provider:    Name,
		DedupKey:    psp + ":" + code + ":" + success,
		Type:        code,
		PaymentKey:  psp,
		OccurredAt:  at.UTC(),
		PayloadHash: providers.PayloadHash(canon),
		Raw:         canon,
	}
	if orig := string(it.OriginalRef); orig != "" {
		ev.PaymentKey = orig
	}
	ev.AddReferences(string(it.MerchantRef)) // the merchant's order: found by the console's search

	var kinds []delivery.Kind
	if success == "false" {
		if code == "AUTHORISATION" {
			f := delivery.Fact{Kind: delivery.KindFailed, Reason: it.Reason}
			// The refused authorisation's amount, when it reads: kept with
			// the failure (it posts nothing), so a bad one does not refuse
			// a notification that was always accepted.
			if value, cur, err := amountOf(it); err == nil {
				f.Amount, f.Currency = value, cur
			}
			ev.Facts = []delivery.Fact{f}
		}
		// A failed modification changed nothing: recorded, posts nothing.
		return ev, nil
	}
	switch code {
	case "AUTHORISATION":
		kinds = []delivery.Kind{delivery.KindAuthorized}
	case "CAPTURE":
		kinds = []delivery.Kind{delivery.KindCaptured}
	case "REFUND":
		kinds = []delivery.Kind{delivery.KindRefunded}
	case "REFUND_FAILED", "REFUNDED_REVERSED":
		kinds = []delivery.Kind{delivery.KindRefundFailed}
	case "CANCELLATION":
		ev.Facts = []delivery.Fact{{Kind: delivery.KindCanceled, Reason: it.Reason}}
		return ev, nil
	case "NOTIFICATION_OF_CHARGEBACK", "REQUEST_FOR_INFORMATION":
		// Adyen's dispute flow: these stages move no funds; CHARGEBACK
		// debits the amount (docs/reference.md: an inquiry posts nothing).
		kinds = []delivery.Kind{delivery.KindDisputeInquiry}
	case "DISPUTE_OPENED_WITH_CHARGEBACK", "CHARGEBACK":
		kinds = []delivery.Kind{delivery.KindDisputeOpened}
	case "CHARGEBACK_REVERSED", "PREARBITRATION_WON":
		kinds = []delivery.Kind{delivery.KindDisputeWon}
	case "SECOND_CHARGEBACK", "PREARBITRATION_LOST":
		kinds = []delivery.Kind{delivery.KindDisputeLost}
	default:
		return ev, nil // not handled: ignored, raw kept in the inbox
	}
	value, cur, err := amountOf(it)
	if err != nil {
		return delivery.Event{}, err
	}
	for _, k := range kinds {
		f := delivery.Fact{Kind: k, Amount: value, Currency: cur}
		if k != delivery.KindAuthorized {
			f.BusinessID = psp
		}
		if k == delivery.KindRefundFailed {
			f.Reason = it.Reason
		}
		ev.Facts = append(ev.Facts, f)
	}
	return ev, nil
}

// amountOf reads amount.value (integer minor units, Adyen's) and
// amount.currency, and returns the amount in ISO 4217 minor units. A value
// ISO cannot represent (CLP 150, 1.50 pesos) is a bad amount.
func amountOf(it item) (int64, money.Currency, error) {
	n, cur, err := adyenAmountOf(it)
	if err != nil {
		return 0, "", err
	}
	// Adyen's exponents (money.AdyenAPI: CLP, CVE, IDR, ISK differ from ISO).
	if n, err = money.AdyenAPI.ToISO(n, cur); err != nil {
		return 0, "", fmt.Errorf("%w: amount.value: %w", delivery.ErrInvalidAmount, err)
	}
	return n, cur, nil
}

func adyenAmountOf(it item) (int64, money.Currency, error) {
	if it.Amount == nil {
		return 0, "", fmt.Errorf("%w: amount", delivery.ErrMissingField)
	}
	cur, err := payload.Currency("amount.currency", string(it.Amount.Currency))
	if err != nil {
		return 0, "", err
	}
	v := string(it.Amount.Value)
	if v == "" {
		return 0, "", fmt.Errorf("%w: amount.value", delivery.ErrMissingField)
	}
	n, err := parseMinor(v)
	if err != nil {
		return 0, "", fmt.Errorf("%w: amount.value %q must be a non-negative integer of minor units", delivery.ErrInvalidAmount, v)
	}
	return n, cur, nil
}

// parseMinor accepts plain decimal digits only: no sign, no fraction, no
// exponent, within int64.
func parseMinor(s string) (int64, error) {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return 0, errors.New("not digits")
		}
	}
	return strconv.ParseInt(s, 10, 64)
}
