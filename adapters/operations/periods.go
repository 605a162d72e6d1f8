// Package operations owns the operators' actions on the ledger: each is
// recorded as an event, with its actor (the API token's name, or the CLI
// user) and a note or reason, in the stream the action is about, never as
// an UPDATE of a read model; the projections turn the events into table
// rows, and the stream is the audit trail. Closing and reopening
// accounting periods (the "periods" stream, domain/period) and resolving
// and reopening reconciliation items (the item's payment or payout
// stream) live here. Each is decided and appended by the ledger's one write
// protocol (adapters/command), with fresh event ids (act.go).
package operations

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/onceledger/onceledger/adapters/command"
	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/domain/period"
)

// EventStore is the part of the event store the operations need: read one
// stream, append to it with an expected version.
type EventStore interface {
	ReadStream(ctx context.Context, stream string) ([]eventstore.RecordedEvent, error)
	Append(ctx context.Context, stream string, expected eventstore.ExpectedVersion, events []eventstore.EventData) (eventstore.AppendResult, error)
}

var _ EventStore = eventstore.Store(nil)

// ErrContention: the stream kept changing under the command (other
// operators or deliveries at the same moment); nothing was recorded.
var ErrContention = errors.New("stream contention: try again")

// maxAttempts bounds how often a command that lost the race for the
// stream is decided again on the new history.
const maxAttempts = 5

// Periods closes and reopens accounting periods.
type Periods struct {
	store EventStore
	zone  *time.Location
	now   func() time.Time
}

// NewPeriods returns the period commands over store, in the reporting time
// zone (ONCELEDGER_REPORTING_TZ; nil means UTC), with the clock now (nil
// means time.Now).
func NewPeriods(store EventStore, zone *time.Location, now func() time.Time) *Periods {
	if zone == nil {
		zone = time.UTC
	}
	if now == nil {
		now = time.Now
	}
	return &Periods{store: store, zone: zone, now: now}
}

// ClosePeriod closes p as actor, with a note. It fails with the domain's
// reasons (period.ErrPeriodNotEnded, ErrEarlierPeriodOpen,
// ErrAlreadyClosed, ErrZoneMismatch, ErrActorRequired), wrapped. The
// period's trial balance is frozen by the ledger projection when it reads
// the event.
func (s *Periods) ClosePeriod(ctx context.Context, p period.Period, actor, note string) (period.Closed, error) {
	ev, err := s.act(ctx, func(c period.Calendar) ([]period.Event, error) {
		return c.DecideClose(period.CloseCommand{Period: p, Zone: s.zone, Actor: actor, Note: note, Now: s.now()})
	})
	if err != nil {
		return period.Closed{}, fmt.Errorf("close %s: %w", p, err)
	}
	return ev.(period.Closed), nil
}

// ReopenPeriod reopens p as actor, for reason (required). Only the last
// closed period can be reopened (period.ErrLaterPeriodClosed).
func (s *Periods) ReopenPeriod(ctx context.Context, p period.Period, actor, reason string) (period.Reopened, error) {
	ev, err := s.act(ctx, func(c period.Calendar) ([]period.Event, error) {
		return c.DecideReopen(period.ReopenCommand{Period: p, Actor: actor, Reason: reason, Now: s.now()})
	})
	if err != nil {
		return period.Reopened{}, fmt.Errorf("reopen %s: %w", p, err)
	}
	return ev.(period.Reopened), nil
}

// Calendar folds the periods stream as it is now.
func (s *Periods) Calendar(ctx context.Context) (period.Calendar, error) {
	recs, err := s.store.ReadStream(ctx, period.StreamID)
	if err != nil {
		return period.Calendar{}, err
	}
	history, err := command.Decode(recs, period.Decode)
	if err != nil {
		return period.Calendar{}, err
	}
	return period.Fold(history)
}

// act decides on the calendar folded from the periods stream and appends
// the decision (see the package's act); it returns the decision's event.
func (s *Periods) act(ctx context.Context, decide func(period.Calendar) ([]period.Event, error)) (period.Event, error) {
	evs, err := act(ctx, s.store, period.StreamID, period.Decode, period.Encode, func(history []period.Event) ([]period.Event, error) {
		c, err := period.Fold(history)
		if err != nil {
			return nil, err
		}
		return decide(c)
	})
	if err != nil {
		return nil, err
	}
	return evs[0], nil
}
