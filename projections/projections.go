// Package projections turns the global event feed into the Postgres read
// models accountants query (ledger entries and balances booked into
// accounting periods with their frozen trial balances, payments,
// reconciliation items, payouts and their settlement lines): the projector runtime (checkpointed batches, one
// active projector per projection across processes, poison events stop a
// projection instead of being skipped), the projections themselves, the
// zero-downtime rebuild, the invariant checks behind `onceledger verify`,
// Status (the one computation of positions and lag, for the CLI, the API and
// the metrics) and FoldPayment (the payments projection's fold, for readers
// ahead of the read model). The shapes readers see are in package views.
//
// The package holds no SQL: it decodes events, asks the domain what they
// mean, and hands rows to the small ports declared here, which the read-model
// adapter (adapters/postgres/readmodel) implements.
package projections

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/domain/assertion"
	"github.com/onceledger/onceledger/domain/expectation"
	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/payment"
	"github.com/onceledger/onceledger/domain/period"
	"github.com/onceledger/onceledger/projections/views"
)

// Names of the projections, as stored in projection_checkpoints and accepted
// by `onceledger rebuild`.
const (
	NameLedger         = "ledger"
	NamePayments       = "payments"
	NameReconciliation = "reconciliation"
)

// Checkpoint statuses (projection_checkpoints.status).
const (
	StatusLive       = "live"
	StatusStopped    = "stopped"
	StatusRebuilding = "rebuilding"
)

// Envelope is one feed event with its decoded domain event. The runtime
// decodes once per batch, so a projection never sees an undecodable event.
// Exactly one of Event (payment and payout streams) and Period (the
// periods stream's calendar events) is set.
type Envelope struct {
	Recorded eventstore.RecordedEvent
	Event    payment.Event
	Period   period.Event
	// Assertion is set instead for the events of the assertion and
	// adjustment streams (domain/assertion).
	Assertion assertion.Event
}

// Projection maps a batch of events to read-model rows through w. Apply must
// be deterministic (no clock, no randomness) so that a rebuild reproduces the
// live tables, and must tolerate a batch whose rows it has partly written
// before (the runtime replays at most the batch that was in flight).
// An error wrapping ErrPoison means the batch cannot ever be applied.
type Projection interface {
	Name() string
	// Tables are the read-model tables the projection owns: a rebuild
	// recreates exactly these.
	Tables() []string
	Apply(ctx context.Context, w Writer, batch []Envelope) error
}

// Writer is what projections write through; one Writer is one database
// transaction (live tables, or shadow tables during a rebuild).
type Writer interface {
	// InsertLedgerEntries stores entries, skipping those whose (EventID,
	// PostingIndex) exists already, and adds exactly the inserted ones to
	// account_balances.
	InsertLedgerEntries(ctx context.Context, entries []LedgerEntry) error
	// Payments returns the stored rows of these streams, by stream id.
	Payments(ctx context.Context, streamIDs []string) (map[string]PaymentRow, error)
	// UpsertPayments writes rows, each only if its Version is newer than
	// the stored one.
	UpsertPayments(ctx context.Context, rows []PaymentRow) error
	// CopyPayments inserts rows of streams that have none (a rebuild's
	// bulk load).
	CopyPayments(ctx context.Context, rows []PaymentRow) error
	// IndexPaymentIDs records which payment each business id names
	// (payment_ids; paymentids.go), keeping those recorded already.
	IndexPaymentIDs(ctx context.Context, ids []views.PaymentID) error
	// ApplyReconciliation opens (or re-opens) and resolves items, in order.
	ApplyReconciliation(ctx context.Context, changes []ReconciliationChange) error
	PeriodWriter
	// The settlement read models (payouts, settlement_lines).
	SettlementWriter
	// The provider balances (balance_assertions, balance_movements).
	AssertionWriter
	// The payout batches' links (batch_links; batches.go).
	BatchWriter
	// The bank read models (bank.go).
	BankWriter
	// The provider days (provider_days, item_days).
	ProviderDayWriter
}

// LedgerEntry is one posting of one event, as a ledger_entries row.
type LedgerEntry struct {
	EventID      uuid.UUID
	PostingIndex int
	StreamID     string
	EventType    string
	Provider     string
	Account      string
	Currency     money.Currency
	Amount       int64
	OccurredAt   time.Time // effective_at: when the provider says it happened
	RecordedAt   time.Time // booked_at: when the event store recorded it
	Position     eventstore.Position
	// Period is the period the entry is booked into; Late marks an entry
	// whose effective period (Adjusts) was closed when it was booked.
	Period  period.Period
	Late    bool
	Adjusts period.Period
}

// PaymentRow is one payments row; its shape is the read side's
// (views.Payment), so that what the projection writes is what the API reads.
type PaymentRow = views.Payment

// ReconciliationChange opens (Open) or resolves one reconciliation item.
// Actor is set when an operator acted (reconciliation.resolved /
// reopened, with Note); empty when the facts opened or cleared the item.
type ReconciliationChange struct {
	StreamID  string
	Kind      string
	Key       string
	Open      bool
	Actor     string
	Note      string
	Provider  string
	PaymentID string
	Details   string
	At        time.Time
	EventID   uuid.UUID
}

// ErrPoison marks an event that cannot be applied, now or on retry: the
// projection stops at it instead of skipping it.
var ErrPoison = errors.New("event cannot be projected")

// PoisonError names the event a projection stopped at.
type PoisonError struct {
	Projection string
	Event      eventstore.RecordedEvent // Data and Metadata may be large; Error prints ids only
	Err        error
}

func (e *PoisonError) Error() string {
	return fmt.Sprintf("projection %s stopped at event %s (%s %s@%d, position %s): %v",
		e.Projection, e.Event.ID, e.Event.Type, e.Event.StreamID, e.Event.Version, e.Event.Position, e.Err)
}

func (e *PoisonError) Unwrap() error { return e.Err }

func (e *PoisonError) Is(target error) bool { return target == ErrPoison }

// poison marks err as permanent for the runtime.
func poison(format string, args ...any) error {
	return fmt.Errorf("%w: "+format, append([]any{ErrPoison}, args...)...)
}

// Default returns the projections onceledger runs, in a fixed order. The
// options set the ledger's reporting time zone (default UTC).
func Default(opts ...Option) []Projection {
	return []Projection{Ledger(opts...), Payments(), Reconciliation(opts...), Payouts()}
}

// Option configures the projections, Verify and the Service.
type Option func(*config)

type config struct {
	zone *time.Location
}

// ReportingZone sets the time zone of accounting periods
// (ONCELEDGER_REPORTING_TZ); nil means UTC.
func ReportingZone(loc *time.Location) Option {
	return func(c *config) {
		if loc != nil {
			c.zone = loc
		}
	}
}

func configure(opts []Option) config {
	c := config{zone: time.UTC}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// decode turns a batch into envelopes. It returns the envelopes of the
// events before the first undecodable one, and a *PoisonError for that one.
func decode(name string, batch []eventstore.RecordedEvent) ([]Envelope, error) {
	out := make([]Envelope, 0, len(batch))
	for _, r := range batch {
		env, err := decodeOne(r)
		if err != nil {
			return out, &PoisonError{Projection: name, Event: r, Err: fmt.Errorf("%w: decode: %w", ErrPoison, err)}
		}
		out = append(out, env)
	}
	return out, nil
}

// decodeOne decodes one feed event with the codec of its stream: the
// periods stream holds calendar events, every other stream payment events.
func decodeOne(r eventstore.RecordedEvent) (Envelope, error) {
	if r.StreamID == period.StreamID {
		e, err := period.Decode(r.Type, r.Data)
		return Envelope{Recorded: r, Period: e}, err
	}
	if assertion.IsStream(r.StreamID) {
		e, err := assertion.Decode(r.Type, r.Data)
		return Envelope{Recorded: r, Assertion: e}, err
	}
	if strings.HasPrefix(r.StreamID, expectation.StreamPrefix) {
		// An expected payment's own events (payment.Events that post
		// nothing) and its reconciliation items.
		e, err := expectation.Decode(r.Type, r.Data)
		return Envelope{Recorded: r, Event: e}, err
	}
	e, err := payment.Decode(r.Type, r.Data)
	return Envelope{Recorded: r, Event: e}, err
}

// NamePayouts is the payouts projection (payouts, settlement_lines).
const NamePayouts = "payouts"

// SettlementLineRow is one settlement_lines row; its shape is the read
// side's.
type SettlementLineRow = views.SettlementLine

// PayoutChange is what one event says about a payout: reported paid
// (Amount, Currency, At), failed, or its settlement lines (recorded with
// InsertSettlementLines, which counts them).
type PayoutChange struct {
	Provider string
	PayoutID string
	Paid     bool
	Amount   int64
	Currency string
	At       time.Time
	Failed   bool
	// Arrival is the day the provider says a paid payout reaches the bank
	// (payment.PayoutPaid.ArrivalDate); zero when it did not say, and At
	// stands for it.
	Arrival time.Time
	// TraceID and Descriptor: what a bank line may name the payout by
	// (PayoutPaid's, or PayoutTraced's with Traced); the first of each
	// stands.
	Traced     bool
	TraceID    string
	Descriptor string
}

// SettlementWriter is what the payouts projection writes through, beside
// Writer.
type SettlementWriter interface {
	// InsertSettlementLines stores lines, skipping those on record
	// (provider, line key), and counts exactly the inserted ones that
	// belong to a payout (other than the payout line itself) in its payout
	// row.
	InsertSettlementLines(ctx context.Context, lines []SettlementLineRow) error
	// ApplyPayouts records payouts paid (the first amount stands) and
	// failed, and recomputes the status of every payout touched.
	ApplyPayouts(ctx context.Context, changes []PayoutChange) error
}
