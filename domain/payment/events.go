// Package payment is the payment aggregate: a state machine that folds its
// stream's events (Apply) and decides what a verified provider delivery means
// (Decide), remembering which deliveries and business facts it has applied so
// that a fact reported twice, by any event id or type, is recorded once. It
// also holds the payout aggregate (the payout-<provider>-<id> streams that
// settlement lines without a payment join), the domain events, their JSON
// codec, their double-entry postings, the reconciliation items a decision
// opens and clears, and what a settlement line adds to a stream.
package payment

import (
	"time"

	"github.com/onceledger/onceledger/domain/money"
)

// Event is a domain event. Type returns its stable name, the one stored in the
// event store; never derive it by reflection.
type Event interface {
	Type() string
	Metadata() Meta
}

// Meta is carried by every domain event: which delivery caused it.
type Meta struct {
	Provider   string
	PaymentKey string // payment id; payout id for payout events
	DedupKey   string // the provider delivery that caused the event
	OccurredAt time.Time
}

func (m Meta) Metadata() Meta { return m }

// Stable event type names. Changing one is a data migration.
const (
	TypeAuthorized     = "payment.authorized"
	TypeCaptured       = "payment.captured"
	TypeFeeRecorded    = "payment.fee_recorded"
	TypeFailed         = "payment.failed"
	TypeCanceled       = "payment.canceled"
	TypeRefundPending  = "refund.pending"
	TypeRefundPosted   = "refund.posted"
	TypeRefundReversed = "refund.reversed"
	TypeRefundNoted    = "refund.noted"
	TypeDisputeOpened  = "dispute.opened"
	TypeDisputeWon     = "dispute.won"
	TypeDisputeLost    = "dispute.lost"
	TypePayoutPaid     = "payout.paid"

	TypeDisputeInquiry         = "dispute.inquiry"
	TypeDisputeFundsWithdrawn  = "dispute.funds_withdrawn"
	TypeDisputeFundsReinstated = "dispute.funds_reinstated"
	TypeDisputePending         = "dispute.pending"
	TypePayoutFailed           = "payout.failed"
	TypePayoutTraced           = "payout.traced"
	TypeFlagged                = "reconciliation.flagged"
	TypeCleared                = "reconciliation.cleared"
	// An operator's decisions about an item (acting is an event): they
	// change the item's status, never the payment's money.
	TypeResolved = "reconciliation.resolved"
	TypeReopened = "reconciliation.reopened"
)

// Reconciliation kinds (docs/reference.md).
const (
	ReconRefundBeforePayment   = "refund_before_payment"
	ReconOverRefund            = "over_refund"
	ReconConflictingRedelivery = "conflicting_redelivery"
	ReconCurrencyMismatch      = "currency_mismatch"
	ReconAmountMismatch        = "amount_mismatch"
	// A dispute reported won after it was reported lost: lost is final, the
	// win posts nothing and is flagged for a human.
	ReconDisputeOutcomeConflict = "dispute_outcome_conflict"
	// A dispute for a payment with no capture: it posts nothing until a
	// capture arrives, then posts and the item clears.
	ReconDisputeBeforePayment = "dispute_before_payment"
	// Posted refunds plus the disputed amounts the provider holds or took
	// exceed the captures (a customer disputes after being refunded). The
	// money has left; the item clears when the facts catch up.
	ReconOverReversal = "over_reversal"
	// A push subscription ran out of its retry schedule and was disabled
	// (docs/events.md): opened in the subscription's own stream
	// (delivery.SubscriptionStream), resolved when it is re-enabled.
	ReconSubscriptionDisabled = "subscription_disabled"
	// An expected payment (domain/expectation) not paid by its expires_at:
	// opened in the expectation's own stream, cleared by a late capture.
	ReconPaymentOverdue = "payment_overdue"
)

// Authorized: funds reserved. Posts nothing.
type Authorized struct {
	Meta
	AuthorizationID string
	Amount          int64
	Currency        money.Currency
}

// Captured: money captured; Fee is the provider's fee, kept by the provider.
// Discount is the part of Amount the merchant funded as a discount (Alipay:
// total_amount − receipt_amount), which the provider never paid in.
// SubMerchant is the merchant a service provider took the payment for
// (WeChat Pay sub_mchid); empty for a direct merchant.
type Captured struct {
	Meta
	CaptureID   string
	Amount      int64
	Fee         int64
	Discount    int64
	Currency    money.Currency
	SubMerchant string
}

// FeeRecorded: the provider's fee of a capture recorded with fee 0, reported
// by a later report of the same capture (Stripe: payment_intent.succeeded
// carries no fee, charge.succeeded does; Square fills it in a later
// payment.updated). A fee of 0 on a capture means "not known yet", so the
// ledger ends as if the capture had carried the fee from the start.
type FeeRecorded struct {
	Meta
	CaptureID string
	Fee       int64
	Currency  money.Currency
}

// Failed: the payment attempt failed. Posts nothing. Amount and Currency
// are the attempted amount when the provider reported it (Stripe's
// PaymentIntent amount, Adyen's AUTHORISATION amount.value, …); 0 and ""
// when it did not, and in every failure recorded before they existed.
type Failed struct {
	Meta
	Reason   string
	Amount   int64
	Currency money.Currency
}

// Canceled: the authorization was voided. Posts nothing.
type Canceled struct {
	Meta
	Reason string
}

// RefundPending: a refund arrived before any capture of its payment. Posts
// nothing; it is posted by RefundPosted once a capture arrives.
//
// Total is set for a refund reported by its trade's refunded total
// (delivery.KindRefundCumulative: Alipay): the total it reported, Amount
// being the increase over the highest total seen before it. It is 0 for a
// refund reported by its own amount.
type RefundPending struct {
	Meta
	RefundID string
	Amount   int64
	Currency money.Currency
	Total    int64
	// Discount: the coupon money the refund returns (discount.go), part
	// of Amount; absent from refunds stored before it existed.
	Discount int64
	// FromLine: the amount is the increase of the trade's refunded total
	// that a cumulative refund's bill line (settlement.Line.CumulativeRefund)
	// brought, no notification having reported it (Total is 0). Increase:
	// the event adds Amount to the refund RefundID already recorded (a
	// cumulative total that rose again under it). Both are absent from
	// refunds stored before they existed.
	FromLine, Increase bool
	// MovedTo: as RefundPosted's (a move made before any capture).
	MovedTo string
}

// RefundPosted: a refund reaches the ledger.
type RefundPosted struct {
	Meta
	RefundID   string
	Amount     int64
	Currency   money.Currency
	WasPending bool  // it had been recorded as RefundPending first
	Total      int64 // a cumulative refund's reported total (RefundPending)
	// FromLine, Increase: as RefundPending's.
	FromLine, Increase bool
	// Discount: the part of Amount that is coupon money returned, which
	// leaves expenses:discounts:p rather than the provider balance
	// (discount.go); absent from refunds stored before it existed.
	Discount int64
	// MovedTo: Amount (negative, with Increase) is the part of this
	// cumulative refund's posting that belongs to refund MovedTo, an
	// earlier refund of the same trade whose notification arrived after
	// this one's (cumulative.go, reattribute): it is taken off this
	// refund, at this refund's own time, and posted under MovedTo at that
	// refund's time. Absent from every other refund.
	MovedTo string
}

// RefundNoted: the provider reported a refund's status without moving money
// (WeChat Pay REFUND.ABNORMAL, not final; REFUND.CLOSED). Posts nothing and
// changes no refund: a refund reported later still posts. Status is the
// delivery kind it recorded (refund_abnormal, refund_closed; refund_cumulative
// for an Alipay refund whose reported total, Amount, was not above the
// trade's refunded total: it posted nothing, and is remembered so that its
// bill line opens no missing_webhook).
type RefundNoted struct {
	Meta
	RefundID string
	Status   string
	Amount   int64
	Currency money.Currency
}

// RefundReversed: a posted refund failed after all; its postings are undone.
// With WasPending, the refund had only been recorded as RefundPending: it is
// dropped, will never post, and there are no postings to undo.
type RefundReversed struct {
	Meta
	RefundID   string
	Amount     int64
	Currency   money.Currency
	WasPending bool
	Discount   int64 // the coupon part the refund posted, undone with it (discount.go)
}

// DisputeOpened: a dispute recorded with its funds withdrawn from the
// provider balance into the dispute receivable (a chargeback).
type DisputeOpened struct {
	Meta
	DisputeID string
	Amount    int64
	Currency  money.Currency
}

// DisputeInquiry: a dispute the provider reported without withdrawing funds
// (Stripe warning_needs_response / warning_under_review, Adyen
// NOTIFICATION_OF_CHARGEBACK / REQUEST_FOR_INFORMATION, a PayPal inquiry).
// Posts nothing; it is on the payment's stream so it shows on the payment.
type DisputeInquiry struct {
	Meta
	DisputeID string
	Amount    int64
	Currency  money.Currency
	Reason    string
}

// DisputeFundsWithdrawn: the provider withdrew the amount of a dispute
// recorded earlier without funds (an inquiry that escalated, or one recorded
// before the payment's capture). Posts like DisputeOpened.
type DisputeFundsWithdrawn struct {
	Meta
	DisputeID string
	Amount    int64
	Currency  money.Currency
}

// DisputeFundsReinstated: the provider gave a withdrawn dispute amount back
// without (yet) reporting the dispute won (Stripe
// charge.dispute.funds_reinstated, a PayPal hold released). Posts like
// DisputeWon.
type DisputeFundsReinstated struct {
	Meta
	DisputeID string
	Amount    int64
	Currency  money.Currency
}

// DisputePending: a dispute fact reported before the payment had any capture.
// Posts nothing; Fact is the delivery kind it recorded (dispute_opened,
// dispute_lost...). When a capture arrives the dispute posts what its facts
// add up to and the dispute_before_payment item clears.
type DisputePending struct {
	Meta
	DisputeID string
	Fact      string
	Amount    int64
	Currency  money.Currency
}

// DisputeWon: the dispute closed in our favour. Held funds come back to the
// balance; with NoFunds nothing was held (an inquiry closed, Stripe
// warning_closed, or the funds were already reinstated) and it posts nothing.
type DisputeWon struct {
	Meta
	DisputeID string
	Amount    int64
	Currency  money.Currency
	NoFunds   bool
}

// DisputeLost: the dispute is lost, which is final. With ReversesWin the
// dispute had been recorded as won or its funds reinstated (Adyen:
// CHARGEBACK_REVERSED, then SECOND_CHARGEBACK): the amount went back to the
// provider balance, so the loss takes it from there instead of from the
// receivable, and the ledger ends as after a plain loss.
type DisputeLost struct {
	Meta
	DisputeID   string
	Amount      int64
	Currency    money.Currency
	ReversesWin bool
}

// PayoutPaid: the provider paid our balance out to the bank. Payout streams
// hold only this event.
type PayoutPaid struct {
	Meta
	PayoutID string
	Amount   int64
	Currency money.Currency
	// ArrivalDate is the day the provider says the payout arrives at the
	// bank (Stripe payout arrival_date, Square Payout arrival_date, a payout
	// line's AvailableOn); zero when the provider did not say, and in
	// events stored before it existed. Posts nothing.
	ArrivalDate time.Time
	// TraceID and Descriptor: what a bank statement line may name the
	// payout by (delivery.Fact's), "" when the provider gave none (yet:
	// Stripe fills trace_id in after the payout is paid, PayoutTraced).
	TraceID    string
	Descriptor string
}

// PayoutTraced: a paid payout's trace id (or statement descriptor) the
// provider told after the payout was recorded paid (Stripe payout.updated
// once trace_id.status is "supported"). Recorded once per value; posts
// nothing; the bank accounts match their lines by it.
type PayoutTraced struct {
	Meta
	PayoutID   string
	TraceID    string
	Descriptor string
}

// PayoutFailed: a payout failed or was canceled (Stripe payout.failed,
// payout.canceled). With WasPaid it had been recorded paid and the bank
// returned the money: the failure reverses the payout's postings. Without,
// nothing had posted and nothing posts; a later report that the payout was
// paid adds nothing (the failure is final).
type PayoutFailed struct {
	Meta
	PayoutID string
	Amount   int64
	Currency money.Currency
	Reason   string
	WasPaid  bool
}

// Flagged opens a reconciliation item, identified within its stream by
// (Kind, Key). Posts nothing.
type Flagged struct {
	Meta
	Kind    string // one of the Recon* constants
	Key     string // refund id, capture id, dedup key...: what the item is about
	Details string // human-readable explanation
	// Reported: of a settlement_mismatch a capture's webhook raised against
	// the capture its settlement line recorded, the amount the webhook
	// reported (the payment's currency), so that a partial capture reversal
	// line that brings the capture to it can clear the item (settle.go
	// settleUncaptured). 0 otherwise.
	Reported int64
}

// Cleared resolves the reconciliation item (Kind, Key) of its stream.
type Cleared struct {
	Meta
	Kind    string
	Key     string
	Details string
}

// Resolved: an operator marked the reconciliation item (Kind, Key) of its
// stream handled, with a note. Posts nothing and changes no amount; the
// aggregate's own bookkeeping of items (which it opens and clears as facts
// arrive) is untouched, so a human's word never changes what the facts
// post. Meta.DedupKey is "" (no delivery caused it); OccurredAt is when the
// operator acted.
type Resolved struct {
	Meta
	Kind  string
	Key   string
	Actor string
	Note  string
}

// Reopened: an operator reopened a resolved item, with a note.
type Reopened struct {
	Meta
	Kind  string
	Key   string
	Actor string
	Note  string
}

func (Resolved) Type() string               { return TypeResolved }
func (Reopened) Type() string               { return TypeReopened }
func (Authorized) Type() string             { return TypeAuthorized }
func (Captured) Type() string               { return TypeCaptured }
func (FeeRecorded) Type() string            { return TypeFeeRecorded }
func (Failed) Type() string                 { return TypeFailed }
func (Canceled) Type() string               { return TypeCanceled }
func (RefundPending) Type() string          { return TypeRefundPending }
func (RefundPosted) Type() string           { return TypeRefundPosted }
func (RefundReversed) Type() string         { return TypeRefundReversed }
func (RefundNoted) Type() string            { return TypeRefundNoted }
func (DisputeOpened) Type() string          { return TypeDisputeOpened }
func (DisputeWon) Type() string             { return TypeDisputeWon }
func (DisputeLost) Type() string            { return TypeDisputeLost }
func (PayoutPaid) Type() string             { return TypePayoutPaid }
func (DisputeInquiry) Type() string         { return TypeDisputeInquiry }
func (DisputeFundsWithdrawn) Type() string  { return TypeDisputeFundsWithdrawn }
func (DisputeFundsReinstated) Type() string { return TypeDisputeFundsReinstated }
func (DisputePending) Type() string         { return TypeDisputePending }
func (PayoutFailed) Type() string           { return TypePayoutFailed }
func (PayoutTraced) Type() string           { return TypePayoutTraced }
func (Flagged) Type() string                { return TypeFlagged }
func (Cleared) Type() string                { return TypeCleared }
