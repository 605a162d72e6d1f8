package console

import (
	"context"
	"errors"
	"time"

	"github.com/onceledger/onceledger/adapters/access"
	"github.com/onceledger/onceledger/domain/period"
	"github.com/onceledger/onceledger/projections"
	"github.com/onceledger/onceledger/projections/views"
)

// The console's ports, declared here by their consumer in the types of the
// one read side (projections/views). Every figure the /v1 API shows too
// comes through the same method /v1 calls (readmodel.Store implements
// both): balances, a payment (projections.PaymentHistory), reconciliation
// items, payouts and their lines, periods and trial balances, and the
// projections' status and lag (projections.StatusReader). Pages are keyset
// pages: the reader returns at most Limit rows strictly after the filter's
// After key (nil: from the start).
//
// Acting: ReconActions and Redriver, which must record what they do as
// events with the actor and note ("acting is an event", never an UPDATE).
// A nil acting port makes its forms answer 503 "not configured".
// Sessions: Sessions (Postgres: sessionstore.Store).

// ReadModel is everything the console reads from the read-model database.
type ReadModel interface {
	LedgerReader
	PaymentReader
	ReconReader
	InboxReader
	PayoutReader
	PaymentSearcher // search.go
	BankReader      // bank.go
}

// LedgerReader gives the balances and the activity series.
type LedgerReader interface {
	// Balances is GET /v1/balances's query.
	Balances(ctx context.Context, f views.BalanceFilter, fn func(views.Balance) error) error
	// DailyVolume and InboxMix are the charts' series, for days in
	// [from, to).
	DailyVolume(ctx context.Context, from, to time.Time) ([]views.DayVolume, error)
	InboxMix(ctx context.Context, from, to time.Time) ([]views.DayOutcome, error)
	// LastImports is the status's last settlement import per provider.
	LastImports(ctx context.Context) (map[string]time.Time, error)
}

// PaymentReader searches payments and reads one (through
// projections.PaymentHistory, as /v1 does).
type PaymentReader interface {
	projections.PaymentRows
	Payments(ctx context.Context, f views.PaymentFilter) ([]views.Payment, error)
}

// ReconReader lists reconciliation items (GET /v1/reconciliation's query)
// and counts the open ones per kind (the status's count).
type ReconReader interface {
	Reconciliation(ctx context.Context, f views.ReconciliationFilter, fn func(views.ReconciliationItem) error) error
	OpenItemCounts(ctx context.Context) (map[string]int64, error)
}

// InboxReader lists and counts deliveries, and reads one or a stream's.
type InboxReader interface {
	Deliveries(ctx context.Context, f views.InboxFilter) ([]views.InboxRow, error)
	// DeliveryCounts counts the deliveries matching f (paging ignored)
	// by provider and status.
	DeliveryCounts(ctx context.Context, f views.InboxFilter) ([]views.InboxCount, error)
	Delivery(ctx context.Context, provider, dedupKey string) (d views.Delivery, found bool, err error)
	StreamDeliveries(ctx context.Context, stream string) ([]views.Delivery, error)
}

// PayoutReader lists payouts and reads one with its settlement lines: the
// queries of GET /v1/payouts and /v1/payouts/{provider}/{payout_id}.
type PayoutReader interface {
	Payouts(ctx context.Context, f views.PayoutFilter, fn func(views.Payout) error) error
	Payout(ctx context.Context, provider, payoutID string) (views.Payout, bool, error)
	SettlementLines(ctx context.Context, provider, payoutID string, fn func(views.SettlementLine) error) error
}

// ProjectionsReader reports the projections' status and lag: GET
// /v1/projections's reading (projections.StatusReader, right for every
// event store).
type ProjectionsReader interface {
	Projections(ctx context.Context) (views.Status, error)
}

// PeriodReader lists the accounting periods and reads one's trial balance
// (frozen when closed) with its late adjustments: the queries of GET
// /v1/periods and /v1/periods/{p}/trial-balance.
type PeriodReader interface {
	Periods(ctx context.Context) ([]views.PeriodInfo, error)
	TrialBalance(ctx context.Context, p period.Period) (views.TrialBalance, error)
	// Journal is GET /v1/journal's query (a period's journal export).
	Journal(ctx context.Context, f views.JournalFilter) ([]views.JournalRow, error)
}

// ReconActions resolves and reopens reconciliation items. Each call is
// recorded as an event in the item's stream with the actor and the note.
type ReconActions interface {
	Resolve(ctx context.Context, item ItemRef, actor, note string) error
	Reopen(ctx context.Context, item ItemRef, actor, note string) error
}

// Redriver re-drives stored deliveries through the ingestion gate with the
// current code (as `onceledger redrive`).
type Redriver interface {
	Redrive(ctx context.Context, req RedriveRequest) (RedriveResult, error)
}

// Sessions stores console sessions. Only the SHA-256 of a session id is
// stored: a read of the table yields no usable session.
type Sessions interface {
	Create(ctx context.Context, s access.Session) error
	// Get returns the session with this id hash, if it exists and has not
	// expired at now.
	Get(ctx context.Context, idHash [32]byte, now time.Time) (access.Session, bool, error)
	Delete(ctx context.Context, idHash [32]byte) error
}

// Errors the acting ports may return (wrapped) for the console to answer
// with the right status; anything else is a 500, and an error matching
// eventstore.ErrUnavailable a 503.
var (
	// ErrNotFound: the item or delivery does not exist.
	ErrNotFound = errors.New("not found")
	// ErrConflict: the action does not apply in the current state (resolving
	// a resolved item).
	ErrConflict = errors.New("not in a state this action applies to")
	// ErrInvalid: the request is malformed (an empty note).
	ErrInvalid = errors.New("invalid request")
)

// ItemRef identifies a reconciliation item in an action's form.
type ItemRef struct {
	StreamID string
	Kind     string
	Key      string
}

// RedriveRequest selects the deliveries to re-drive: the listed Keys, or,
// when none are listed, every delivery matching Filter (paging ignored).
type RedriveRequest struct {
	Actor  string
	Filter views.InboxFilter
	Keys   []DeliveryRef
}

// DeliveryRef identifies a delivery in the inbox.
type DeliveryRef struct {
	Provider string
	DedupKey string
}

// RedriveResult counts what a redrive did.
type RedriveResult struct {
	Selected int // deliveries considered
	Recorded int // now carry facts (newly applied)
	Ignored  int // still not handled by the current code
	Erased   int // could not be re-driven: their raw body was erased
	Failed   int
}
