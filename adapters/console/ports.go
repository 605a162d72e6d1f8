package console

import (
	"context"
	"errors"
	"time"

	"github.com/onceledger/onceledger/adapters/access"
)

// The console's ports, declared here by their consumer in the console's own
// types, so that any read model and any acting service can stand behind
// them. Lists are pages in a keyset order: the reader returns at most Limit
// rows strictly after the filter's After key (nil: from the start).
//
// Reading: ReadModel (Postgres: readmodel.Console).
// Acting: ReconActions and Redriver, which must record what they do as
// events with the actor and note ("acting is an event", never an UPDATE).
// A nil acting port makes its forms answer 503 "not configured".
// Sessions: Sessions (Postgres: sessionstore.Store).

// ReadModel is everything the console reads.
type ReadModel interface {
	OverviewReader
	ChartReader
	PaymentReader
	ReconReader
	InboxReader
	PayoutReader
	ProjectionReader
}

// OverviewReader gives the figures of the overview page.
type OverviewReader interface {
	Overview(ctx context.Context) (Overview, error)
	// TrialBalance is the Trial part of Overview alone.
	TrialBalance(ctx context.Context) ([]TrialBalance, error)
}

// ChartReader gives the series of the charts, for days in [from, to).
type ChartReader interface {
	DailyVolume(ctx context.Context, from, to time.Time) ([]DayVolume, error)
	InboxMix(ctx context.Context, from, to time.Time) ([]DayOutcome, error)
}

// PaymentReader searches payments and reads one payment's stream.
type PaymentReader interface {
	Payments(ctx context.Context, f PaymentFilter) ([]Payment, error)
	// Timeline returns the payment and its stream; found is false when
	// the payment is unknown.
	Timeline(ctx context.Context, provider, paymentID string) (t Timeline, found bool, err error)
}

// ReconReader lists reconciliation items.
type ReconReader interface {
	ReconItems(ctx context.Context, f ReconFilter) ([]ReconItem, error)
}

// InboxReader lists and counts deliveries, and reads one.
type InboxReader interface {
	Inbox(ctx context.Context, f InboxFilter) ([]InboxRow, error)
	// InboxCounts counts the deliveries matching f (paging fields ignored)
	// by status.
	InboxCounts(ctx context.Context, f InboxFilter) ([]StatusCount, error)
	Delivery(ctx context.Context, provider, dedupKey string) (d Delivery, found bool, err error)
}

// PayoutReader lists payouts.
type PayoutReader interface {
	Payouts(ctx context.Context, f PayoutFilter) ([]Payout, error)
}

// ProjectionReader reports the projections.
type ProjectionReader interface {
	Projections(ctx context.Context) ([]Projection, error)
}

// PeriodReader lists the accounting periods, newest first, each with its
// trial balance (frozen when closed) and the late adjustments booked into
// it.
type PeriodReader interface {
	Periods(ctx context.Context) ([]PeriodBalance, error)
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
	Create(ctx context.Context, s Session) error
	// Get returns the session with this id hash, if it exists and has not
	// expired at now.
	Get(ctx context.Context, idHash [32]byte, now time.Time) (Session, bool, error)
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

// Session is one signed-in browser.
type Session struct {
	IDHash      [32]byte
	Actor       string
	Role        access.Role
	TokenDigest access.Digest // the token signed in with; the session dies with it
	CreatedAt   time.Time
	ExpiresAt   time.Time
}

// Overview is the overview page's figures.
type Overview struct {
	Balances    []Balance
	Trial       []TrialBalance
	Projections []Projection
	Inbox       []InboxCount
	OpenItems   []KindCount
	// Settlements is the last settlement import per provider; empty until
	// settlement imports exist.
	Settlements []SettlementImport
}

// Balance of one account in one currency, minor units.
type Balance struct {
	Account  string
	Currency string
	Balance  int64
}

// TrialBalance sums the debit and the credit balances of one currency; the
// books balance when they are equal.
type TrialBalance struct {
	Currency string
	Debits   int64 // sum of positive balances
	Credits  int64 // sum of negative balances, as a positive number
}

// Balanced reports debits = credits.
func (t TrialBalance) Balanced() bool { return t.Debits == t.Credits }

// InboxCount counts deliveries of one provider in one status.
type InboxCount struct {
	Provider string
	Status   string
	Count    int64
}

// KindCount counts open reconciliation items of one kind.
type KindCount struct {
	Kind  string
	Count int64
}

// StatusCount counts deliveries in one status.
type StatusCount struct {
	Status string
	Count  int64
}

// SettlementImport is the last settlement import of a provider.
type SettlementImport struct {
	Provider string
	At       time.Time
	Lines    int64
}

// DayVolume is one UTC day's volume in one currency, positive minor units.
type DayVolume struct {
	Day      time.Time
	Currency string
	Captured int64
	Refunded int64
	Disputed int64
}

// DayOutcome counts the deliveries first seen on one UTC day in one status.
type DayOutcome struct {
	Day    time.Time
	Status string
	Count  int64
}

// PaymentFilter selects payments, most recently active first. Empty fields
// do not filter.
type PaymentFilter struct {
	Provider  string
	PaymentID string // prefix
	Status    string
	Currency  string
	From, To  time.Time // last activity in [From, To)
	After     *PaymentKey
	Limit     int
}

// PaymentKey is a position in the payments order (UpdatedAt, Provider,
// PaymentID), descending.
type PaymentKey struct {
	UpdatedAt time.Time `json:"t"`
	Provider  string    `json:"p"`
	PaymentID string    `json:"i"`
}

// Payment is one payment's summary.
type Payment struct {
	Provider        string
	PaymentID       string
	StreamID        string
	Status          string
	Currency        string // empty until an amount fixed it
	Authorized      int64
	Captured        int64
	Fee             int64
	Refunded        int64
	RefundPending   int64
	DisputeOpen     int64
	DisputeLost     int64
	Version         uint64
	UpdatedAt       time.Time
	OpenItems       int // open reconciliation items (Timeline only)
	ReconciledItems int // resolved ones (Timeline only)
}

// Key returns p's position in the payments order.
func (p Payment) Key() PaymentKey {
	return PaymentKey{UpdatedAt: p.UpdatedAt, Provider: p.Provider, PaymentID: p.PaymentID}
}

// Timeline is one payment's stream, fact by fact.
type Timeline struct {
	Payment Payment
	Facts   []Fact
	// Deliveries lists every delivery of the stream, also those that
	// carried no fact (duplicates of known facts, ignored types).
	Deliveries []Delivery
	Items      []ReconItem
}

// Fact is one event of a stream.
type Fact struct {
	Version    uint64
	Type       string
	EventID    string
	OccurredAt time.Time // the provider's time (zero when unknown)
	RecordedAt time.Time
	Summary    string // one line, human-readable
	Data       string // the event's JSON
	DedupKey   string // the delivery that caused it
	Actor      string // who acted, for events recorded by an action
	Note       string
	Postings   []Posting
}

// Posting is one line of a fact's double entry: debit positive, credit
// negative.
type Posting struct {
	Account  string
	Currency string
	Amount   int64
}

// ItemRef identifies a reconciliation item.
type ItemRef struct {
	StreamID string
	Kind     string
	Key      string
}

// ReconFilter selects reconciliation items, oldest first.
type ReconFilter struct {
	Status   string // open, resolved, or "" for both
	Kind     string
	Provider string
	// OpenedBefore keeps items opened before it (age filter).
	OpenedBefore time.Time
	After        *ReconKey
	Limit        int
}

// ReconKey is a position in the items order (OpenedAt, StreamID, Kind,
// Key), ascending; a zero OpenedAt sorts first.
type ReconKey struct {
	OpenedAt time.Time `json:"t"`
	StreamID string    `json:"s"`
	Kind     string    `json:"k"`
	Key      string    `json:"i"`
}

// ReconItem is one reconciliation item.
type ReconItem struct {
	Ref        ItemRef
	Status     string
	Provider   string
	PaymentID  string
	Details    string
	OpenedAt   time.Time // zero when unknown
	ResolvedAt time.Time // zero while open
}

// Key returns the item's position in the items order.
func (it ReconItem) Key() ReconKey {
	return ReconKey{OpenedAt: it.OpenedAt, StreamID: it.Ref.StreamID, Kind: it.Ref.Kind, Key: it.Ref.Key}
}

// InboxFilter selects deliveries, most recent first.
type InboxFilter struct {
	Provider string
	Status   string
	Type     string
	From, To time.Time // first seen in [From, To)
	After    *InboxKey
	Limit    int
}

// InboxKey is a position in the inbox order (FirstSeenAt, Provider,
// DedupKey), descending.
type InboxKey struct {
	FirstSeenAt time.Time `json:"t"`
	Provider    string    `json:"p"`
	DedupKey    string    `json:"k"`
}

// InboxRow is one delivery, without its body.
type InboxRow struct {
	Provider      string
	DedupKey      string
	EventType     string
	StreamID      string
	Status        string
	DeliveryCount int
	ConflictCount int
	Attempts      int
	LastError     string
	FirstSeenAt   time.Time
	LastSeenAt    time.Time
	AppliedAt     time.Time // zero until applied
}

// Key returns the row's position in the inbox order.
func (r InboxRow) Key() InboxKey {
	return InboxKey{FirstSeenAt: r.FirstSeenAt, Provider: r.Provider, DedupKey: r.DedupKey}
}

// Delivery is one delivery with its stored payload.
type Delivery struct {
	InboxRow
	PayloadHash string
	// Raw is the body as received; nil when it is no longer kept (erased
	// after the retention period).
	Raw        []byte
	Normalized string // the normalized facts, JSON
	Conflicts  []Conflict
}

// Conflict is a redelivery of the same dedup key with other bytes.
type Conflict struct {
	PayloadHash   string
	DeliveryCount int
	FirstSeenAt   time.Time
	Raw           []byte
}

// PayoutFilter selects payouts, most recent first.
type PayoutFilter struct {
	Provider string
	Currency string
	From, To time.Time
	After    *PayoutKey
	Limit    int
}

// PayoutKey is a position in the payouts order (ArrivedAt, StreamID),
// descending.
type PayoutKey struct {
	At       time.Time `json:"t"`
	StreamID string    `json:"s"`
}

// Payout is one payout. Until settlement reports are imported, payouts come
// from webhooks: status paid, no lines.
type Payout struct {
	Provider   string
	PayoutID   string
	StreamID   string
	Amount     int64
	Currency   string
	At         time.Time // when the provider paid it out
	Status     string
	Lines      int
	Difference int64
}

// Key returns the payout's position in the payouts order.
func (p Payout) Key() PayoutKey { return PayoutKey{At: p.At, StreamID: p.StreamID} }

// Projection is one projection's state.
type Projection struct {
	Name      string
	Position  string
	Status    string // live, stopped, rebuilding
	Lag       int64  // events of the feed after its position
	LagCapped bool   // at least Lag
	LastError string
	UpdatedAt time.Time
}

// RedriveRequest selects the deliveries to re-drive: the listed Keys, or,
// when none are listed, every delivery matching Filter (paging ignored).
type RedriveRequest struct {
	Actor  string
	Filter InboxFilter
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

// PeriodBalance is one accounting period and its trial balance.
type PeriodBalance struct {
	Period       string // YYYY-MM
	Status       string // open, closed
	Frozen       bool   // closed: the figures are the frozen ones
	ClosedAt     time.Time
	ClosedBy     string
	CloseNote    string
	ReopenedBy   string
	ReopenReason string
	Lines        []PeriodLine
	Adjustments  []PeriodAdjustment
}

// PeriodLine is one account and currency of a period's trial balance, in
// signed minor units (debit positive): opening, the period's debits and
// credits (magnitudes), closing.
type PeriodLine struct {
	Account  string
	Currency string
	Opening  int64
	Debits   int64
	Credits  int64
	Closing  int64
}

// PeriodAdjustment is a late entry booked into a period for an earlier,
// closed one.
type PeriodAdjustment struct {
	Adjusts     string // the closed period it belongs to by its effective time
	Account     string
	Currency    string
	Amount      int64
	EventType   string
	StreamID    string
	EffectiveAt time.Time
	BookedAt    time.Time
}
