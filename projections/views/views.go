// Package views owns the one read side's shapes: the rows of the read
// models (balances, ledger entries, payments, reconciliation items, the
// inbox's deliveries, payouts and settlement lines, periods and the
// journal), the filters and keyset positions that select and page them,
// the activity series and the per-currency trial balance, and the status
// of the projections that maintain them. The projections produce these
// shapes, the read-model adapter (adapters/postgres/readmodel) reads them
// back with SQL, and both front ends (the /v1 API in adapters/httpapi and
// the console in adapters/console) and the CLI render them from the same
// query functions, so no front end keeps read types of its own and no
// storage knows a front end. Besides types it holds only pure helpers on
// them (ids, CSV cells, sums).
package views

import (
	"encoding/json"
	"errors"
	"net/url"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/domain/payment"
)

// BalanceFilter selects balances. Empty fields do not filter.
type BalanceFilter struct {
	AccountPrefix string // accounts starting with this (no wildcards)
	Currency      string // exact, upper-case ISO 4217
	// AsOf, when not zero, sums the entries that occurred at or before it
	// instead of reading the maintained balances.
	AsOf time.Time
	// Booked compares AsOf with the entries' booked time (when the ledger
	// recorded them) instead of their effective time (when the provider
	// says they happened): ?time=booked.
	Booked bool
}

// Balance is the sum of one account's entries in one currency.
type Balance struct {
	Account  string
	Currency string
	Balance  int64
}

// EntryFilter selects one page of ledger entries. Empty fields do not filter.
type EntryFilter struct {
	AccountPrefix string
	Currency      string
	From          time.Time // occurred_at >= From, when not zero
	To            time.Time // occurred_at < To, when not zero
	// Booked bounds From and To on the booked time (recorded_at) instead
	// of the effective time (occurred_at): ?time=booked.
	Booked bool
	// After is the keyset: only entries after this one in feed order
	// (see EntryKey); nil starts at the beginning.
	After *EntryKey
	Limit int // at most this many; <= 0 means no limit
}

// EntryKey places an entry in the journal's stable order: its event's feed
// position, then the event id and the posting index. All three come from
// history, so a rebuild writes every entry with the same key (unlike its
// id, which a rebuild renumbers): a page boundary stays valid across a
// rebuild's swap. Entries are written in this order, so those written
// after a key was taken come after it.
type EntryKey struct {
	Position     eventstore.Position
	EventID      uuid.UUID
	PostingIndex int
}

// Entry is one posting of the journal, as stored (with its id, which a
// rebuild renumbers; Key is what stays).
type Entry struct {
	ID           int64
	EventID      uuid.UUID
	PostingIndex int
	StreamID     string
	EventType    string
	Provider     string
	Account      string
	Currency     string
	Amount       int64
	OccurredAt   time.Time
	RecordedAt   time.Time
	Position     eventstore.Position
}

// Key is the entry's place in the journal's stable order.
func (e Entry) Key() EntryKey {
	return EntryKey{Position: e.Position, EventID: e.EventID, PostingIndex: e.PostingIndex}
}

// Payment is one payments row: the payment.Summary of a stream after the
// event of version Version. The payments projection writes it and the API
// reads it back; when the read model lags, the API folds the same shape
// from the stream (projections.FoldPayment).
type Payment struct {
	Provider  string
	PaymentID string
	StreamID  string
	Summary   payment.Summary
	Status    string
	Version   uint64
	UpdatedAt time.Time
}

// PaymentID is one payment_ids row: a business id (an authorization,
// capture, refund or dispute id, a settlement line's id) and the payment
// stream it names, with what kind of id it is there.
type PaymentID struct {
	BusinessID string
	StreamID   string
	Kind       string
}

// PaymentHit is a payment a search found, with the kinds of id that
// matched ("capture", "refund", …).
type PaymentHit struct {
	Payment
	Kinds []string
}

// PaymentFilter selects a page of payments, most recently active first
// (the console's search). Empty fields do not filter.
type PaymentFilter struct {
	Provider  string
	PaymentID string // prefix, taken literally
	Status    string
	Currency  string
	From, To  time.Time // last activity (updated_at) in [From, To)
	// After is the keyset: only payments after this one in the order;
	// nil starts at the most recent. Limit caps the page (<= 0: no cap).
	After *PaymentKey
	Limit int
}

// PaymentKey is a position in the payments order (UpdatedAt, Provider,
// PaymentID), descending. Its JSON is the console's cursor.
type PaymentKey struct {
	UpdatedAt time.Time `json:"t"`
	Provider  string    `json:"p"`
	PaymentID string    `json:"i"`
}

// Key returns p's position in the payments order.
func (p Payment) Key() PaymentKey {
	return PaymentKey{UpdatedAt: p.UpdatedAt, Provider: p.Provider, PaymentID: p.PaymentID}
}

// PaymentHistory is one payment as both front ends show it: its summary
// and the events of its stream, the summary consistent with the events
// (projections.PaymentHistory folds it from them when the read model lags).
type PaymentHistory struct {
	Payment Payment
	Events  []eventstore.RecordedEvent
	// Fees are the payment's fees as the ledger has them: its stream's
	// postings to expenses:fees:*, per currency (sorted by currency; a
	// currency whose fees net to zero is left out). The reference for a
	// payment's fees: the summary's Fees counts only the fees webhooks
	// carried, not those a settlement report posted (settlement.fee_posted),
	// possibly in the settlement currency. nil when no events were read.
	Fees []CurrencyAmount
}

// CurrencyAmount is an amount in minor units of one currency.
type CurrencyAmount struct {
	Currency string
	Amount   int64
}

// Fee is h's ledger fee in currency c (0 when none).
func (h PaymentHistory) Fee(c string) int64 {
	for _, f := range h.Fees {
		if f.Currency == c {
			return f.Amount
		}
	}
	return 0
}

// ReconciliationFilter selects reconciliation items, oldest first (an
// unknown opening time first). Empty fields do not filter.
type ReconciliationFilter struct {
	Status   string // "open" or "resolved"
	Kind     string
	Provider string
	StreamID string // the items of one payment's stream
	// OpenedBefore keeps items opened before it (an age filter); items of
	// unknown age are kept too.
	OpenedBefore time.Time
	// AtStakeCurrency, when set, keeps the items whose amount at stake is
	// in that currency and at least MinAtStake (minor units).
	AtStakeCurrency string
	MinAtStake      int64
	// After is the keyset (nil: from the oldest); Limit caps the page
	// (<= 0: every item).
	After *ReconciliationKey
	Limit int
}

// ReconciliationKey is a position in the items order (OpenedAt, StreamID,
// Kind, Key), ascending; a zero OpenedAt sorts first. Its JSON is the
// console's cursor.
type ReconciliationKey struct {
	OpenedAt time.Time `json:"t"`
	StreamID string    `json:"s"`
	Kind     string    `json:"k"`
	Key      string    `json:"i"`
}

// ReconciliationItem is one row of reconciliation_items.
type ReconciliationItem struct {
	StreamID   string
	Kind       string
	Key        string
	Status     string
	Provider   string
	PaymentID  string
	Details    string
	OpenedAt   time.Time // zero when unknown
	ResolvedAt time.Time // zero while open
	ResolvedBy string    // the operator who resolved it; "" when the facts did, or while open
	Note       string    // the note of the operator's last action
	// AtStake is the amount the item is about, in AtStakeCurrency ("" when
	// unknown): the excess of an over_refund or over_reversal, a payout's
	// difference for payout_mismatch, else the payment's captured amount
	// (the payout's amount for a payout's item). Read from the payment's
	// and payout's rows, not stored with the item.
	AtStake         int64
	AtStakeCurrency string
}

// Position returns the item's position in the items order.
func (it ReconciliationItem) Position() ReconciliationKey {
	return ReconciliationKey{OpenedAt: it.OpenedAt, StreamID: it.StreamID, Kind: it.Kind, Key: it.Key}
}

// ID is the item's id as GET /v1/reconciliation lists it and
// POST /v1/reconciliation/resolve|reopen take it: stream, kind and key,
// each path-escaped, joined by "/" (readable, and unambiguous whatever a
// provider puts in an id).
func (it ReconciliationItem) ID() string { return ReconciliationID(it.StreamID, it.Kind, it.Key) }

// ReconciliationID builds an item's id from its parts.
func ReconciliationID(stream, kind, key string) string {
	return url.PathEscape(stream) + "/" + url.PathEscape(kind) + "/" + url.PathEscape(key)
}

// ErrBadReconciliationID: an id that ReconciliationID did not make.
var ErrBadReconciliationID = errors.New("bad reconciliation item id: want stream/kind/key as GET /v1/reconciliation lists it")

// ParseReconciliationID is the inverse of ReconciliationID.
func ParseReconciliationID(id string) (stream, kind, key string, err error) {
	parts := strings.Split(id, "/")
	if len(parts) != 3 {
		return "", "", "", ErrBadReconciliationID
	}
	var out [3]string
	for i, p := range parts {
		if out[i], err = url.PathUnescape(p); err != nil || out[i] == "" {
			return "", "", "", ErrBadReconciliationID
		}
	}
	return out[0], out[1], out[2], nil
}

// InboxStatuses are the webhook_inbox statuses (the table's CHECK), in
// their lifecycle order. Status reports each of them, with 0 when no row
// has it, so that a status that empties out shows 0 instead of vanishing.
var InboxStatuses = []string{"received", "applied", "ignored", "unverified", "invalid", "verified", "failed"}

// Status is the state of the projections and of the inbox: what
// `onceledger status`, GET /v1/projections and /metrics report, all from
// one computation (projections.Status).
type Status struct {
	Head        eventstore.Position // the last event of the feed
	Projections []ProjectionStatus
	// Inbox counts webhook_inbox rows by status (every InboxStatuses key,
	// 0 when none); nil when the reading did not ask for it.
	Inbox map[string]int64
	// LastImports is when each provider's settlement lines were last
	// recorded, and OpenItems the open reconciliation items per kind; nil
	// when the reading did not ask for them (StatusOptions.Settlement).
	LastImports map[string]time.Time
	OpenItems   map[string]int64
}

// ProjectionStatus is one projection's checkpoint and how far behind the
// feed it is.
type ProjectionStatus struct {
	Name     string
	Position eventstore.Position
	Status   string // live, stopped, rebuilding
	Active   bool   // a projector holds the projection's lock now
	// Lag counts the feed's events after Position up to the head.
	Lag int64
	// LagCapped says the count stopped at a limit: the lag is at least Lag.
	LagCapped bool
	// LagSeconds is the age of the oldest event not applied yet, 0 when
	// caught up: a count says how much work is left, an age how stale the
	// read model is.
	LagSeconds    float64
	LastError     string
	ErrorPosition *eventstore.Position
	UpdatedAt     time.Time
}

// projectionJSON is the one JSON shape of a projection's status, in the
// CLI's --json and in GET /v1/projections. position is the global sequence
// number of the last event the projection applied (the Prepare half of the
// feed position; the Commit half is position_commit).
type projectionJSON struct {
	Name           string        `json:"name"`
	Status         string        `json:"status"`
	Active         bool          `json:"active"`
	Position       uint64        `json:"position"`
	PositionCommit uint64        `json:"position_commit"`
	Lag            int64         `json:"lag"`
	LagCapped      bool          `json:"lag_capped,omitempty"`
	LagSeconds     float64       `json:"lag_seconds"`
	Error          string        `json:"error,omitempty"`
	ErrorPosition  *PositionJSON `json:"error_position,omitempty"`
	UpdatedAt      time.Time     `json:"updated_at"`
}

// PositionJSON is a feed position in JSON answers.
type PositionJSON struct {
	Commit  uint64 `json:"commit"`
	Prepare uint64 `json:"prepare"`
}

// MarshalJSON writes the one JSON shape of a projection's status.
func (p ProjectionStatus) MarshalJSON() ([]byte, error) {
	return json.Marshal(p.doc())
}

// UnmarshalJSON reads what MarshalJSON writes (for clients and tests).
func (p *ProjectionStatus) UnmarshalJSON(b []byte) error {
	var d projectionJSON
	if err := json.Unmarshal(b, &d); err != nil {
		return err
	}
	*p = ProjectionStatus{
		Name: d.Name, Status: d.Status, Active: d.Active,
		Position: eventstore.Position{Commit: d.PositionCommit, Prepare: d.Position},
		Lag:      d.Lag, LagCapped: d.LagCapped, LagSeconds: d.LagSeconds,
		LastError: d.Error, UpdatedAt: d.UpdatedAt,
	}
	if d.ErrorPosition != nil {
		p.ErrorPosition = &eventstore.Position{Commit: d.ErrorPosition.Commit, Prepare: d.ErrorPosition.Prepare}
	}
	return nil
}

func (p ProjectionStatus) doc() projectionJSON {
	d := projectionJSON{
		Name: p.Name, Status: p.Status, Active: p.Active,
		Position: p.Position.Prepare, PositionCommit: p.Position.Commit,
		Lag: p.Lag, LagCapped: p.LagCapped, LagSeconds: p.LagSeconds,
		Error: p.LastError, UpdatedAt: p.UpdatedAt.UTC(),
	}
	if p.ErrorPosition != nil {
		d.ErrorPosition = &PositionJSON{Commit: p.ErrorPosition.Commit, Prepare: p.ErrorPosition.Prepare}
	}
	return d
}
