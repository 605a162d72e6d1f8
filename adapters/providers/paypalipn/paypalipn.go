// Package paypalipn reads PayPal's legacy Instant Payment Notifications
// (IPN) and verifies them by postback.
//
// IPN messages carry no signature. Parse therefore verifies nothing: it
// checks what can be checked locally (the form parses, receiver_email is one
// of ours) and normalizes, and the HTTP layer stores the result as
// unverified. Facts are applied only after Verifier.Verify has posted the
// message back to PayPal unchanged and PayPal answered VERIFIED. Raw is the
// body exactly as received: the postback must repeat it byte for byte (same
// field order, same encoding) or PayPal answers INVALID.
//
// One provider, two channels. IPN is a second channel of the provider
// "paypal" (docs/reference.md): its events carry Provider "paypal", so
// its facts go to the stream payment-paypal-{capture id} and the accounts
// provider:paypal:*, the same as PayPal's REST webhooks (adapters/providers/
// paypal). PayPal documents that an IPN txn_id for a payment is the REST
// capture id, and a refund's txn_id the REST refund id: a capture or refund
// reported on both channels, in either order, is one business fact and is
// recorded once (the domain dedups by business id). Only the endpoint keeps
// its own name (Name, "paypal-ipn": /webhooks/paypal-ipn, held for
// postback).
//
// Keys: the dedup key is "ipn:" + txn_id + ":" + payment_status (the same transaction
// moving from Pending to Completed is two messages; PayPal's resends of one
// message share both). A message without payment_status (txn_type new_case,
// adjustments...) is keyed txn_id + ":" + txn_type [+ ":" + case_id]; one
// without txn_id by ipn_track_id, else a fingerprint of the body. Every key
// starts "ipn:", so that it never meets a REST webhook id (WH-...) in the
// inbox's (provider, dedup_key) key, now that both channels are "paypal". The
// payment key is parent_txn_id when present (refunds, reversals and their
// cancellations name the payment there), else txn_id; a Completed payment is
// always keyed by its own txn_id, because that is the id its refunds and
// reversals will name as parent (a capture of an authorization names the
// authorization as its parent, but its refunds name the capture).
//
// Mapping (payment_status): Completed → captured (business id = txn_id,
// amount mc_gross, fee mc_fee); Pending → authorized (posts nothing: the
// money is not ours yet); Refunded → refunded (business id = the refund's
// own txn_id, amount |mc_gross|: PayPal reports refunds negative);
// Reversed → dispute_opened and Canceled_Reversal → dispute_won, both with
// business id "reversal-" + parent_txn_id (the two messages share nothing
// else, and the id must differ from the payment's own capture id): the id
// PayPal's REST webhooks give the same dispute too (paypal.DisputeID), so a
// chargeback reported on both channels is one dispute;
// Denied, Failed → failed; Voided, Expired → canceled; anything else → no
// facts.
//
// Decision on reversals: IPN never says that a reversal became final. A
// Reversed payment therefore stays an open dispute (the money leaves the
// provider balance for receivable:disputes:paypal) until a
// Canceled_Reversal returns it; reversals that are never cancelled remain
// visible there for the accountant to write off, instead of being guessed
// lost or won.
//
// A message that names any field twice is refused (400), even with equal
// values: PayPal never repeats a field, so a repeat is someone else's.
//
// payment_date ("HH:MM:SS Mon DD, YYYY PST") is read with the fixed offset
// its abbreviation states (PST -08:00, PDT -07:00): that is exact, needs no
// tzdata, and unlike a zone lookup it keeps the repeated autumn hour apart.
package paypalipn

import (
	"errors"
	"fmt"
	"net/url"
	"slices"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/payload"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/money"
)

// Name is the endpoint's name: /webhooks/paypal-ipn, and what the HTTP layer
// routes and holds by.
const Name = "paypal-ipn"

// Provider is the provider the facts belong to: PayPal, one provider whatever
// the channel. It names the stream, the accounts and the inbox rows.
const Provider = "paypal"

// keyPrefix keeps IPN dedup keys apart from REST webhook ids.
const keyPrefix = "ipn:"

// ErrUnknownReceiver: the message is addressed to a receiver_email that is not
// configured. It is a 400-class error (it wraps delivery.ErrMalformed).
var ErrUnknownReceiver = fmt.Errorf("%w: receiver_email is not a configured receiver", delivery.ErrMalformed)

// Adapter normalizes IPN messages. Safe for concurrent use.
type Adapter struct {
	receivers map[string]bool
}

var _ providers.Adapter = (*Adapter)(nil)

// New returns an adapter accepting messages for receiverEmails (compared
// case-insensitively; blank entries skipped).
func New(receiverEmails []string) (*Adapter, error) {
	a := &Adapter{receivers: map[string]bool{}}
	for _, e := range receiverEmails {
		if e = strings.TrimSpace(e); e != "" {
			a.receivers[strings.ToLower(e)] = true
		}
	}
	if len(a.receivers) == 0 {
		return nil, errors.New("paypalipn: no receiver email configured")
	}
	return a, nil
}

// Name implements providers.Adapter.
func (a *Adapter) Name() string { return Name }

// Parse implements providers.Adapter. It does not verify (IPN has no
// signature): the event it returns must be held until Verifier.Verify says
// VERIFIED.
func (a *Adapter) Parse(r providers.Request) ([]delivery.Event, error) {
	return providers.Single(a.normalize(r.Body, r.ReceivedAt()))
}

// form is the decoded message; values are converted from the message's
// charset to UTF-8.
type form struct {
	v       url.Values
	charset string
}

// get returns the value of field, converted to UTF-8. (normalize has made
// sure no field is repeated.)
func (f form) get(field string) (string, error) {
	vals := f.v[field]
	if len(vals) == 0 {
		return "", nil
	}
	s, err := decodeCharset(vals[0], f.charset)
	if err != nil {
		return "", fmt.Errorf("%w: %s: %v", delivery.ErrMalformed, field, err)
	}
	return strings.TrimSpace(s), nil
}

func (f form) require(field string) (string, error) {
	s, err := f.get(field)
	if err == nil && s == "" {
		err = fmt.Errorf("%w: %s", delivery.ErrMissingField, field)
	}
	return s, err
}

// normalize reads an IPN message addressed to one of the adapter's
// receivers as a delivery: its identity, and its fact if it reports one.
func (a *Adapter) normalize(raw []byte, now time.Time) (delivery.Event, error) {
	f, err := readForm(raw)
	if err != nil {
		return delivery.Event{}, err
	}
	receiver, err := f.require("receiver_email")
	if err != nil {
		return delivery.Event{}, err
	}
	if !a.receivers[strings.ToLower(receiver)] {
		return delivery.Event{}, fmt.Errorf("%w: %q", ErrUnknownReceiver, receiver)
	}
	fields := map[string]string{}
	for _, name := range []string{"txn_id", "parent_txn_id", "payment_status", "txn_type", "case_id", "ipn_track_id", "payment_date", "mc_gross", "mc_fee", "mc_currency", "pending_reason", "reason_code"} {
		if fields[name], err = f.get(name); err != nil {
			return delivery.Event{}, err
		}
	}
	ev := identify(raw, fields)
	kind := statusKind(fields["payment_status"])
	if kind == delivery.KindCaptured {
		ev.PaymentKey = fields["txn_id"]
	}
	if kind == "" || fields["txn_id"] == "" {
		// No facts: the occurrence time is best effort.
		ev.OccurredAt = now.UTC()
		if fields["payment_date"] != "" {
			if at, err := parsePaymentDate(fields["payment_date"]); err == nil {
				ev.OccurredAt = at
			}
		}
		return ev, nil
	}
	if err := addFact(&ev, kind, fields); err != nil {
		return delivery.Event{}, err
	}
	return ev, nil
}

// readForm parses the body as a form whose fields each come once, in the
// charset it names.
func readForm(raw []byte) (form, error) {
	if !isASCII(raw) {
		// A form body is percent-encoded; raw non-ASCII bytes mean it is not.
		return form{}, fmt.Errorf("%w: body is not application/x-www-form-urlencoded (raw non-ASCII bytes)", delivery.ErrMalformed)
	}
	vals, err := url.ParseQuery(string(raw))
	if err != nil {
		return form{}, fmt.Errorf("%w: body is not a valid form: %v", delivery.ErrMalformed, err)
	}
	if err := singleValued(vals); err != nil {
		return form{}, err
	}
	f := form{v: vals}
	cs, err := f.get("charset") // ASCII by nature; read before it applies
	if err != nil {
		return form{}, err
	}
	f.charset = cs
	return f, nil
}

// identify gives a message its dedup key, type and payment: the
// transaction and its status, else the transaction and its type (and
// case), else the IPN track id, else the body's hash.
func identify(raw []byte, fields map[string]string) delivery.Event {
	txn, parent, status := fields["txn_id"], fields["parent_txn_id"], fields["payment_status"]
	ev := delivery.Event{
		Provider:    Provider,
		Type:        status,
		PayloadHash: providers.PayloadHash(raw),
		Raw:         raw,
	}
	switch {
	case txn != "" && status != "":
		ev.DedupKey = txn + ":" + status
	case txn != "":
		ev.DedupKey = txn + ":" + fields["txn_type"]
		if fields["case_id"] != "" {
			ev.DedupKey += ":" + fields["case_id"]
		}
	case fields["ipn_track_id"] != "":
		ev.DedupKey = "ipn_track_id:" + fields["ipn_track_id"]
	default:
		ev.DedupKey = providers.FallbackKey(raw)
	}
	ev.DedupKey = keyPrefix + ev.DedupKey
	if ev.Type == "" {
		ev.Type = fields["txn_type"]
	}
	if ev.Type == "" {
		ev.Type = "unknown"
	}
	ev.PaymentKey = txn
	if parent != "" {
		ev.PaymentKey = parent
	}
	return ev
}

// statusKind is the fact a payment_status reports ("": none).
func statusKind(status string) delivery.Kind {
	switch status {
	case "Completed":
		return delivery.KindCaptured
	case "Pending":
		return delivery.KindAuthorized
	case "Refunded":
		return delivery.KindRefunded
	case "Reversed":
		return delivery.KindDisputeOpened
	case "Canceled_Reversal":
		return delivery.KindDisputeWon
	case "Denied", "Failed":
		return delivery.KindFailed
	case "Voided", "Expired":
		return delivery.KindCanceled
	}
	return ""
}

// addFact gives ev its occurrence time and its fact of kind, from the
// message's fields.
func addFact(ev *delivery.Event, kind delivery.Kind, fields map[string]string) error {
	txn, parent, status := fields["txn_id"], fields["parent_txn_id"], fields["payment_status"]
	if fields["payment_date"] == "" {
		return fmt.Errorf("%w: payment_date", delivery.ErrMissingField)
	}
	var err error
	if ev.OccurredAt, err = parsePaymentDate(fields["payment_date"]); err != nil {
		return err
	}
	fact := delivery.Fact{Kind: kind}
	switch kind {
	case delivery.KindFailed, delivery.KindCanceled:
		fact.Reason = status
		if kind == delivery.KindFailed {
			failedAmount(&fact, fields) // failed.go
		}
		ev.Facts = []delivery.Fact{fact}
		return nil
	case delivery.KindAuthorized:
		fact.Reason = fields["pending_reason"]
	}
	if fact.Currency, err = payload.Currency("mc_currency", fields["mc_currency"]); err != nil {
		return err
	}
	if fact.Amount, err = amount(fields["mc_gross"], "mc_gross", fact.Currency, true); err != nil {
		return err
	}
	switch kind {
	case delivery.KindCaptured:
		fact.BusinessID = txn
		if fields["mc_fee"] != "" {
			if fact.Fee, err = amount(fields["mc_fee"], "mc_fee", fact.Currency, false); err != nil {
				return err
			}
		}
	case delivery.KindRefunded:
		if parent == "" {
			return fmt.Errorf("%w: parent_txn_id (the refunded payment)", delivery.ErrMissingField)
		}
		fact.BusinessID = txn
	case delivery.KindDisputeOpened, delivery.KindDisputeWon:
		if parent == "" {
			return fmt.Errorf("%w: parent_txn_id (the reversed payment)", delivery.ErrMissingField)
		}
		fact.BusinessID = "reversal-" + parent
		fact.Reason = fields["reason_code"]
	}
	ev.Facts = []delivery.Fact{fact}
	return nil
}

// amount parses a decimal in major units. PayPal reports refunds and
// reversals negative; the fact carries the magnitude (its kind says which
// way the money went).
func amount(s, field string, c money.Currency, required bool) (int64, error) {
	if s == "" {
		if required {
			return 0, fmt.Errorf("%w: %s", delivery.ErrMissingField, field)
		}
		return 0, nil
	}
	v, err := money.ParseMajor(s, c)
	if err != nil {
		return 0, fmt.Errorf("%w: %s: %w", delivery.ErrInvalidAmount, field, err)
	}
	if v < 0 {
		if v == -v { // MinInt64 has no magnitude in int64
			return 0, fmt.Errorf("%w: %s %q is out of range", delivery.ErrInvalidAmount, field, s)
		}
		v = -v
	}
	return v, nil
}

var zoneOffsets = map[string]int{"PST": -8 * 3600, "PDT": -7 * 3600, "GMT": 0, "UTC": 0}

// parsePaymentDate reads "20:12:59 Jan 13, 2009 PST".
func parsePaymentDate(s string) (time.Time, error) {
	i := strings.LastIndexByte(s, ' ')
	if i < 0 {
		return time.Time{}, fmt.Errorf("%w: payment_date %q has no time zone", delivery.ErrMalformed, s)
	}
	off, ok := zoneOffsets[strings.ToUpper(s[i+1:])]
	if !ok {
		return time.Time{}, fmt.Errorf("%w: payment_date %q: unknown time zone %q", delivery.ErrMalformed, s, s[i+1:])
	}
	t, err := time.ParseInLocation("15:04:05 Jan 2, 2006", strings.Join(strings.Fields(s[:i]), " "), time.FixedZone(s[i+1:], off))
	if err != nil {
		return time.Time{}, fmt.Errorf("%w: payment_date %q is not \"HH:MM:SS Mon DD, YYYY PST\"", delivery.ErrMalformed, s)
	}
	return t.UTC(), nil
}

// singleValued refuses a form that names a field twice. PayPal never
// repeats an IPN field (cart items are numbered: item_name1, item_name2), so
// a repeat is not PayPal's, and it is ambiguous: readers differ on whether
// the first or the last counts, and PayPal's postback would vouch for the
// message as a whole, not for our choice. Names are compared after
// percent-decoding ("txn%5Fid" is txn_id). The first repeated name in sorted
// order is reported, so the error does not depend on map order.
func singleValued(vals url.Values) error {
	var repeated []string
	for name, vs := range vals {
		if len(vs) > 1 {
			repeated = append(repeated, name)
		}
	}
	if len(repeated) == 0 {
		return nil
	}
	slices.Sort(repeated)
	return fmt.Errorf("%w: field %q is sent %d times", delivery.ErrMalformed, repeated[0], len(vals[repeated[0]]))
}

func isASCII[T string | []byte](b T) bool {
	for i := 0; i < len(b); i++ {
		if b[i] >= 0x80 {
			return false
		}
	}
	return true
}

// decodeCharset converts s (bytes in charset) to UTF-8. ASCII is the same in
// every charset PayPal offers, so only values with other bytes need a known
// charset; the ids, statuses, amounts and dates read here are ASCII.
func decodeCharset(s, charset string) (string, error) {
	if isASCII(s) {
		return s, nil
	}
	switch strings.ToLower(strings.TrimSpace(charset)) {
	case "", "utf-8", "utf8":
		if !utf8.ValidString(s) {
			return "", errors.New("not valid UTF-8")
		}
		return s, nil
	case "iso-8859-1", "latin1", "latin-1":
		var b strings.Builder
		for i := 0; i < len(s); i++ {
			b.WriteRune(rune(s[i]))
		}
		return b.String(), nil
	case "windows-1252", "cp1252":
		var b strings.Builder
		for i := 0; i < len(s); i++ {
			c := s[i]
			if c >= 0x80 && c <= 0x9f {
				r := cp1252[c-0x80]
				if r == 0 {
					return "", fmt.Errorf("byte 0x%02x is undefined in windows-1252", c)
				}
				b.WriteRune(r)
				continue
			}
			b.WriteRune(rune(c))
		}
		return b.String(), nil
	default:
		return "", fmt.Errorf("non-ASCII value in unsupported charset %q", charset)
	}
}

// cp1252 maps windows-1252 bytes 0x80-0x9F (0 = undefined).
var cp1252 = [32]rune{
	0x20AC, 0, 0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160, 0x2039, 0x0152, 0, 0x017D, 0,
	0, 0x2018, 0x2019, 0x201C, 0x201D, 0x2022, 0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0, 0x017E, 0x0178,
}
