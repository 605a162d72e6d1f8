// Package delivery defines the normalized form every verified delivery takes
// before it reaches the payment state machine: a webhook, and a settlement
// report line (Settled, with the unsettled check and a payout's line count).
// Provider adapters (one package per provider under adapters/providers)
// produce an Event; the domain decides on it. It also owns the facts hash
// that tells a duplicate from a conflict, the one spelling of stream ids,
// and the delivery's stored form (codec.go), the JSON the inbox keeps so
// that a row can be re-driven (EncodeNormalized, DecodeNormalized). Nothing
// here knows how a provider signs or shapes its payloads.
package delivery

import (
	"errors"
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/onceledger/onceledger/domain/bankline"
	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/settlement"
)

// Kind is the business meaning of one fact, independent of the provider's
// own event type names.
type Kind string

// The fact kinds the ledger understands. They are stable strings: they are
// stored in the inbox for audit.
const (
	KindAuthorized   Kind = "authorized"    // funds reserved; posts nothing
	KindCaptured     Kind = "captured"      // money moved to us; BusinessID = capture/charge id
	KindFailed       Kind = "failed"        // payment attempt failed; posts nothing
	KindCanceled     Kind = "canceled"      // authorization voided; posts nothing
	KindRefunded     Kind = "refunded"      // BusinessID = refund id
	KindRefundFailed Kind = "refund_failed" // a previously reported refund did not happen
	// KindDisputeOpened: the provider opened a dispute AND withdrew its
	// amount from our balance (a chargeback). Stripe's
	// charge.dispute.funds_withdrawn reports the same movement for a dispute
	// id already known, and is recorded once. BusinessID = dispute id.
	KindDisputeOpened Kind = "dispute_opened"
	// KindDisputeInquiry: a dispute the provider reports without moving
	// funds (Stripe warning_* statuses, Adyen NOTIFICATION_OF_CHARGEBACK and
	// REQUEST_FOR_INFORMATION, a PayPal inquiry). Recorded, posts nothing.
	KindDisputeInquiry Kind = "dispute_inquiry"
	// KindDisputeFundsReinstated: the provider gave a withdrawn dispute
	// amount back (Stripe charge.dispute.funds_reinstated, PayPal released
	// hold). It implies the funds had been withdrawn.
	KindDisputeFundsReinstated Kind = "dispute_funds_reinstated"
	// KindDisputeWon: closed in our favour; funds withdrawn come back, an
	// inquiry closes with nothing to post (Stripe warning_closed).
	KindDisputeWon Kind = "dispute_won"
	// KindDisputeLost: closed against us; the amount is gone for good. It
	// implies the funds were withdrawn.
	KindDisputeLost Kind = "dispute_lost"
	KindPayoutPaid  Kind = "payout_paid" // BusinessID = payout id; has no payment
	// KindPayoutFailed: a payout failed or was canceled, possibly days after
	// it was reported paid (Stripe payout.failed, payout.canceled): the bank
	// returned the money to the provider balance. BusinessID = payout id.
	KindPayoutFailed Kind = "payout_failed"
	// KindRefundCumulative: a refund reported by the trade's refunded total
	// so far (Alipay's refund_fee), not by its own amount. BusinessID =
	// the refund request (Alipay out_biz_no); Amount = the total. The
	// payment posts the increase over the highest total it has seen
	// (payment.RefundIncrease), so refunds end equal to the highest total
	// reported whatever the order, and never above it.
	KindRefundCumulative Kind = "refund_cumulative"
	// KindRefundAbnormal: the provider could not pay a refund out and waits
	// for the merchant (WeChat Pay REFUND.ABNORMAL); not final: a refund
	// reported later still posts. Recorded, posts nothing.
	KindRefundAbnormal Kind = "refund_abnormal"
	// KindRefundClosed: the provider closed a refund without paying it out
	// (WeChat Pay REFUND.CLOSED). Recorded, posts nothing.
	KindRefundClosed Kind = "refund_closed"
)

// MaxAmount is the largest amount, in ISO 4217 minor units, a single fact may
// carry: 10^15 (ten trillion dollars in cents), far above any real payment,
// and small enough that 9,000 such amounts still sum within int64. Above it a
// delivery is refused with 400 (docs/reference.md, "Money and accounts") rather
// than allowed to wrap a total negative.
const MaxAmount int64 = 1_000_000_000_000_000

// Fact is one business fact carried by a delivery. Most deliveries carry one;
// some carry several (a Stripe charge.refunded lists its refunds).
type Fact struct {
	Kind       Kind
	BusinessID string // capture, refund, dispute or payout id; required for money facts
	Amount     int64  // minor units, >= 0
	Fee        int64  // minor units, >= 0, captures only
	// Discount: captures and refunds, minor units, >= 0, Fee + Discount <=
	// Amount. On a capture: the part of Amount the merchant funded as a
	// discount, which the provider never paid (Alipay total_amount −
	// receipt_amount; WeChat Pay NOCASH promotions). On a refund: the part
	// of Amount that is that coupon money returned, not taken from the
	// provider balance (KindRefundCumulative: of the refunded total).
	Discount   int64
	Currency   money.Currency
	Reason     string           // free text for failures, cancellations, disputes, payout failures; optional
	Settlement *settlement.Line // KindSettled only: the report line (settled.go)
	// Counted: KindPayoutLines only: lines of the payout BusinessID as a
	// report listed them (settled.go).
	Counted []settlement.Counted
	// LegacyID: the business id an adapter gave this fact before the id was
	// derived anew (PayPal disputes: the REST dispute id, before one id
	// derived from the disputed capture served both channels). A payment
	// that knows the fact under LegacyID, and not under BusinessID, goes on
	// with LegacyID, so facts recorded before the change stay one fact; and
	// FactsHash hashes LegacyID in BusinessID's place, so a redelivery of a
	// delivery stored before the change is a plain duplicate. Empty: none.
	LegacyID string
	// ArrivalDate: KindPayoutPaid only: the day the provider says the
	// payout arrives at the bank (Stripe payout.arrival_date), zero when it
	// does not say. Not a money fact: FactsHash leaves it out, so a payout
	// stored before it existed and redelivered is a plain duplicate.
	ArrivalDate time.Time
	// TraceID and Descriptor: KindPayoutPaid only: the trace id the
	// provider's banking partner gave the payout (Stripe trace_id.value,
	// once its status is "supported") and the statement descriptor it
	// asked the bank to show (Stripe statement_descriptor), "" when none:
	// what a bank statement line may name the payout by
	// (domain/bankstatement). Not money facts: FactsHash leaves them out.
	TraceID    string
	Descriptor string
	// Bank: KindBank only: what is delivered to a bank account's stream
	// (bank.go).
	Bank *bankline.Input
}

// Event is one verified, normalized delivery.
type Event struct {
	Provider    string // "stripe", "standard", "adyen", ...
	DedupKey    string // the provider's event id, or a derived key; never empty
	Type        string // the provider's own event type, kept for audit ("charge.succeeded")
	PaymentKey  string // the payment the facts belong to; empty only for payouts and ignored events
	OccurredAt  time.Time
	PayloadHash string // hex SHA-256 of the bytes this delivery was verified on
	Raw         []byte // the verified bytes, kept in the inbox
	Facts       []Fact // empty: a type we do not handle ("ignored")
	// SubMerchant is the merchant a service provider's delivery is for
	// (WeChat Pay sub_mchid); empty for a direct merchant. It is recorded on
	// the payment's capture.
	SubMerchant string
	// References are the merchant's own ids of what the delivery is about
	// (Alipay and WeChat Pay out_trade_no and out_refund_no, Adyen
	// merchantReference): recorded with its events (their metadata) so
	// that a payment is found by them. Not facts: FactsHash leaves them
	// out, and they post nothing.
	References []string
}

// Sentinel errors for normalization; adapters wrap them with %w and the
// detail that names the problem.
var (
	ErrMalformed     = errors.New("malformed payload")
	ErrMissingField  = errors.New("missing required field")
	ErrInvalidAmount = errors.New("invalid amount")
)

// Ignored reports whether the delivery carries no fact the ledger handles.
func (e Event) Ignored() bool { return len(e.Facts) == 0 }

// IsPayout reports whether the delivery is about a payout rather than a payment.
func (e Event) IsPayout() bool {
	if _, ok := e.settledPayoutKey(); ok {
		return true // a settlement line tied to no payment (settled.go)
	}
	return len(e.Facts) > 0 && e.Facts[0].Kind.IsPayout()
}

// IsPayout reports whether k is a fact about a payout rather than a payment.
func (k Kind) IsPayout() bool {
	return k == KindPayoutPaid || k == KindPayoutFailed || k == KindPayoutLines
}

// StreamID names the event stream the delivery's facts belong to:
// PaymentStream or PayoutStream.
func (e Event) StreamID() string {
	if e.isBank() {
		return bankline.Stream(e.PaymentKey) // bank.go
	}
	if k, ok := e.settledPayoutKey(); ok {
		return PayoutStream(e.Provider, k)
	}
	if e.IsPayout() {
		return PayoutStream(e.Provider, e.Facts[0].BusinessID)
	}
	return PaymentStream(e.Provider, e.PaymentKey)
}

// Stream name prefixes: the one spelling of stream ids (the event stores
// subscribe by them, the projections tell streams apart by them).
const (
	PaymentStreamPrefix = "payment-"
	PayoutStreamPrefix  = "payout-"
	// SubscriptionStreamPrefix: a push subscription's stream holds only the
	// operators' items about it (a disabled subscription).
	SubscriptionStreamPrefix = "subscription-"
)

// SubscriptionStream is the stream of one push subscription.
func SubscriptionStream(id string) string { return SubscriptionStreamPrefix + id }

// PaymentStream is the stream of one payment: payment-{provider}-{payment key}.
func PaymentStream(provider, paymentKey string) string {
	return PaymentStreamPrefix + provider + "-" + paymentKey
}

// PayoutStream is the stream of one payout: payout-{provider}-{payout id}.
func PayoutStream(provider, payoutID string) string {
	return PayoutStreamPrefix + provider + "-" + payoutID
}

// MaxIDBytes bounds every identifier of a delivery (provider, dedup key,
// type, payment key, business ids). They end up in text columns under btree
// indexes (events (stream_id, version), webhook_inbox (provider, dedup_key),
// payments, reconciliation_items (stream_id, kind, item_key)), and a btree row
// larger than about 2.7 KB is refused by Postgres. A stream id is
// "payment-" + provider + "-" + payment key and an item key is a business id
// plus a short suffix, so 512 bytes per id keeps every index row far below
// that limit, while real provider ids are under 100 bytes. Without the bound
// the database would refuse the delivery on every retry: a permanent 503
// instead of a 4xx the provider stops retrying.
const MaxIDBytes = 512

// MaxReasonBytes is the longest free-text reason the domain keeps. A reason is
// stored in JSON only, never indexed, so a longer one is not refused by the
// database; it is truncated (payment.Decide does it, at a UTF-8 boundary)
// rather than rejected, because a verbose decline message is legitimate input
// and rejecting it would lose the whole delivery.
const MaxReasonBytes = 1024

// Validate checks what every provider adapter must guarantee, so that a
// mistake in one adapter is bad input rather than a corrupt ledger, and so
// that nothing the database would refuse gets past it (a refusal there would
// be retried forever).
func (e Event) Validate() error {
	if e.Provider == "" {
		return fmt.Errorf("%w: provider", ErrMissingField)
	}
	if e.DedupKey == "" {
		return fmt.Errorf("%w: event id (dedup key)", ErrMissingField)
	}
	for _, s := range []struct{ name, v string }{
		{"provider", e.Provider}, {"event id (dedup key)", e.DedupKey}, {"type", e.Type}, {"payment id", e.PaymentKey},
		{"sub-merchant", e.SubMerchant},
	} {
		if err := checkID(s.name, s.v); err != nil {
			return err
		}
	}
	if e.Ignored() {
		return nil
	}
	if e.isBank() {
		return e.validateBank() // bank.go
	}
	if e.SettledLine() != nil || (len(e.Facts) > 0 && e.Facts[0].Kind == KindSettled) {
		return e.validateSettled()
	}
	payout := e.IsPayout()
	if !payout && e.PaymentKey == "" {
		return fmt.Errorf("%w: payment id", ErrMissingField)
	}
	for i, f := range e.Facts {
		if f.Kind.IsPayout() != payout {
			return fmt.Errorf("%w: fact %d mixes payout and payment facts", ErrMalformed, i)
		}
		// The field's name is formatted only for the error: every
		// delivery is validated, on the webhook's hot path.
		if checkID("", f.BusinessID) != nil {
			return checkID(fmt.Sprintf("fact %d id", i), f.BusinessID)
		}
		if checkID("", string(f.Currency)) != nil {
			return checkID(fmt.Sprintf("fact %d currency", i), string(f.Currency))
		}
		if checkText("", f.Reason) != nil {
			return checkText(fmt.Sprintf("fact %d reason", i), f.Reason)
		}
		if f.Amount < 0 {
			return fmt.Errorf("%w: amount %d is negative", ErrInvalidAmount, f.Amount)
		}
		if f.Fee < 0 {
			return fmt.Errorf("%w: fee %d is negative", ErrInvalidAmount, f.Fee)
		}
		if f.Amount > MaxAmount {
			return fmt.Errorf("%w: amount %d is above the limit of %d minor units", ErrInvalidAmount, f.Amount, MaxAmount)
		}
		if f.Fee > f.Amount {
			return fmt.Errorf("%w: fee %d exceeds amount %d", ErrInvalidAmount, f.Fee, f.Amount)
		}
		if err := validateDiscount(f); err != nil {
			return err
		}
		switch f.Kind {
		case KindAuthorized, KindFailed, KindCanceled:
			// may carry no id and no amount
		case KindPayoutLines:
			if err := validateCounted(f); err != nil {
				return err
			}
		case KindUnsettledCheck:
			if f.Amount <= 0 {
				return fmt.Errorf("%w: unsettled check without its period", ErrInvalidAmount)
			}
		case KindCaptured, KindRefunded, KindRefundFailed, KindRefundCumulative, KindRefundAbnormal, KindRefundClosed,
			KindDisputeOpened, KindDisputeInquiry,
			KindDisputeFundsReinstated, KindDisputeWon, KindDisputeLost, KindPayoutPaid, KindPayoutFailed:
			if f.BusinessID == "" {
				return fmt.Errorf("%w: %s id", ErrMissingField, f.Kind)
			}
			if f.Currency == "" {
				return fmt.Errorf("%w: currency for %s", ErrMissingField, f.Kind)
			}
		default:
			return fmt.Errorf("%w: unknown fact kind %q", ErrMalformed, f.Kind)
		}
		if f.Currency != "" {
			c, err := money.ParseCurrency(string(f.Currency))
			if err != nil {
				return err
			}
			// ParseCurrency accepts "usd"; the read models' currency
			// columns accept only the canonical "USD".
			if c != f.Currency {
				return fmt.Errorf("%w: fact %d currency %q is not upper case", ErrMalformed, i, f.Currency)
			}
		}
	}
	return nil
}

// validateDiscount: a discount is part of a capture's amount, beside its
// fee; on a refund (KindRefunded: of this refund; KindRefundCumulative: of
// the trade's refunded total) it is the coupon money returned, part of the
// refund's amount (docs/reference.md: "refund R of such a capture, of
// which C is coupon money returned").
func validateDiscount(f Fact) error {
	switch {
	case f.Discount == 0:
		return nil
	case f.Kind != KindCaptured && f.Kind != KindRefunded && f.Kind != KindRefundCumulative:
		return fmt.Errorf("%w: a %s carries a discount; only captures and refunds do", ErrMalformed, f.Kind)
	case f.Discount < 0:
		return fmt.Errorf("%w: discount %d is negative", ErrInvalidAmount, f.Discount)
	case f.Discount > f.Amount-f.Fee:
		return fmt.Errorf("%w: fee %d plus discount %d exceed amount %d", ErrInvalidAmount, f.Fee, f.Discount, f.Amount)
	}
	return nil
}

// checkID rejects what no identifier may hold: more than MaxIDBytes, bytes
// that are not UTF-8 (Postgres text refuses them), and control characters.
// NUL is refused by Postgres text and by jsonb ("\u0000"); the other C0
// controls and DEL are accepted by the database but are never part of a
// legitimate id and would make ids that look equal differ in logs and
// reports, so an id is printable or it is malformed.
func checkID(field, s string) error {
	if len(s) > MaxIDBytes {
		return fmt.Errorf("%w: %s is %d bytes, more than %d", ErrMalformed, field, len(s), MaxIDBytes)
	}
	if !utf8.ValidString(s) {
		return fmt.Errorf("%w: %s is not valid UTF-8", ErrMalformed, field)
	}
	for i := 0; i < len(s); i++ {
		if b := s[i]; b < 0x20 || b == 0x7f {
			return fmt.Errorf("%w: %s holds control character 0x%02x at byte %d", ErrMalformed, field, b, i)
		}
	}
	return nil
}

// checkText rejects what free text may not hold: NUL and bytes that are not
// UTF-8, both refused by the database. Other control characters (a newline
// in a decline message) are harmless there and kept. Length is not checked:
// see MaxReasonBytes.
func checkText(field, s string) error {
	if !utf8.ValidString(s) {
		return fmt.Errorf("%w: %s is not valid UTF-8", ErrMalformed, field)
	}
	for i := 0; i < len(s); i++ {
		if s[i] == 0 {
			return fmt.Errorf("%w: %s holds a NUL byte at byte %d", ErrMalformed, field, i)
		}
	}
	return nil
}

// TruncateReason returns r cut to at most MaxReasonBytes, at a UTF-8
// boundary so that the result is still valid text.
func TruncateReason(r string) string {
	if len(r) <= MaxReasonBytes {
		return r
	}
	cut := MaxReasonBytes
	for cut > 0 && !utf8.RuneStart(r[cut]) {
		cut--
	}
	return r[:cut]
}
