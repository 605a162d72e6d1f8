// Package payment is the payment aggregate: a state machine that folds its
// stream's events (Apply) and decides what a verified provider delivery means
// (Decide), remembering which deliveries and business facts it has applied so
// that a fact reported twice, by any event id or type, is recorded once. It
// also holds the payout aggregate, the domain events, their JSON codec and
// their double-entry postings.
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
	TypeDisputeOpened  = "dispute.opened"
	TypeDisputeWon     = "dispute.won"
	TypeDisputeLost    = "dispute.lost"
	TypePayoutPaid     = "payout.paid"
	TypeFlagged        = "reconciliation.flagged"
	TypeCleared        = "reconciliation.cleared"
)

// Reconciliation kinds (CONTRACT.md).
const (
	ReconRefundBeforePayment   = "refund_before_payment"
	ReconOverRefund            = "over_refund"
	ReconConflictingRedelivery = "conflicting_redelivery"
	ReconCurrencyMismatch      = "currency_mismatch"
	ReconAmountMismatch        = "amount_mismatch"
	// A dispute reported won after it was reported lost: lost is final, the
	// win posts nothing and is flagged for a human.
	ReconDisputeOutcomeConflict = "dispute_outcome_conflict"
)

// Authorized: funds reserved. Posts nothing.
type Authorized struct {
	Meta
	AuthorizationID string
	Amount          int64
	Currency        money.Currency
}

// Captured: money captured; Fee is the provider's fee, kept by the provider.
type Captured struct {
	Meta
	CaptureID string
	Amount    int64
	Fee       int64
	Currency  money.Currency
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

// Failed: the payment attempt failed. Posts nothing.
type Failed struct {
	Meta
	Reason string
}

// Canceled: the authorization was voided. Posts nothing.
type Canceled struct {
	Meta
	Reason string
}

// RefundPending: a refund arrived before any capture of its payment. Posts
// nothing; it is posted by RefundPosted once a capture arrives.
type RefundPending struct {
	Meta
	RefundID string
	Amount   int64
	Currency money.Currency
}

// RefundPosted: a refund reaches the ledger.
type RefundPosted struct {
	Meta
	RefundID   string
	Amount     int64
	Currency   money.Currency
	WasPending bool // it had been recorded as RefundPending first
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
}

type DisputeOpened struct {
	Meta
	DisputeID string
	Amount    int64
	Currency  money.Currency
}

type DisputeWon struct {
	Meta
	DisputeID string
	Amount    int64
	Currency  money.Currency
}

// DisputeLost: the dispute is lost, which is final. With ReversesWin the
// dispute had been recorded as won (Adyen: CHARGEBACK_REVERSED, then
// SECOND_CHARGEBACK): the won amount went back to the provider balance, so the
// loss takes it from there instead of from the receivable, and the ledger
// ends as after a plain loss.
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
}

// Flagged opens a reconciliation item, identified within its stream by
// (Kind, Key). Posts nothing.
type Flagged struct {
	Meta
	Kind    string // one of the Recon* constants
	Key     string // refund id, capture id, dedup key...: what the item is about
	Details string // human-readable explanation
}

// Cleared resolves the reconciliation item (Kind, Key) of its stream.
type Cleared struct {
	Meta
	Kind    string
	Key     string
	Details string
}

func (Authorized) Type() string     { return TypeAuthorized }
func (Captured) Type() string       { return TypeCaptured }
func (FeeRecorded) Type() string    { return TypeFeeRecorded }
func (Failed) Type() string         { return TypeFailed }
func (Canceled) Type() string       { return TypeCanceled }
func (RefundPending) Type() string  { return TypeRefundPending }
func (RefundPosted) Type() string   { return TypeRefundPosted }
func (RefundReversed) Type() string { return TypeRefundReversed }
func (DisputeOpened) Type() string  { return TypeDisputeOpened }
func (DisputeWon) Type() string     { return TypeDisputeWon }
func (DisputeLost) Type() string    { return TypeDisputeLost }
func (PayoutPaid) Type() string     { return TypePayoutPaid }
func (Flagged) Type() string        { return TypeFlagged }
func (Cleared) Type() string        { return TypeCleared }
