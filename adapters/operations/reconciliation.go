package operations

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/onceledger/onceledger/domain/assertion"
	"github.com/onceledger/onceledger/domain/expectation"
	"github.com/onceledger/onceledger/domain/payment"
	"github.com/onceledger/onceledger/projections/views"
)

// Reconciliation resolves and reopens reconciliation items: each action is
// a reconciliation.resolved / reconciliation.reopened event, with the actor
// and the note, appended to the item's own stream (a payment's or a
// payout's) at the version the decision was made on. The stream is the
// audit trail; the reconciliation projection shows the item's new status.
//
// It lives here, next to the period actions, rather than in adapters/ingest:
// an action is not a provider delivery (no inbox row, no dedup key), and
// it is run as the other operators' commands are (act.go: fresh event ids).
type Reconciliation struct {
	store EventStore
	now   func() time.Time
}

// NewReconciliation returns the item commands over store, with the clock
// now (nil means time.Now).
func NewReconciliation(store EventStore, now func() time.Time) *Reconciliation {
	if now == nil {
		now = time.Now
	}
	return &Reconciliation{store: store, now: now}
}

// ItemAction is one operator's action on one item.
type ItemAction struct {
	// ID is the item's id as GET /v1/reconciliation lists it
	// (views.ReconciliationID).
	ID    string
	Actor string
	Note  string
}

// Resolve resolves an open item. Errors wrap payment.ErrItemNotFound (an
// unknown id, or an id that is not one), payment.ErrItemResolved,
// payment.ErrNoteRequired, payment.ErrActorRequired or ErrContention.
func (s *Reconciliation) Resolve(ctx context.Context, a ItemAction) (payment.Resolved, error) {
	ev, err := s.act(ctx, a, func(h []payment.Event, cmd payment.ItemCommand) (payment.Event, error) {
		return payment.DecideResolve(h, cmd)
	})
	if err != nil {
		return payment.Resolved{}, fmt.Errorf("resolve %s: %w", a.ID, err)
	}
	return ev.(payment.Resolved), nil
}

// Reopen reopens a resolved item; errors as Resolve, with
// payment.ErrItemOpen for an item that is open.
func (s *Reconciliation) Reopen(ctx context.Context, a ItemAction) (payment.Reopened, error) {
	ev, err := s.act(ctx, a, func(h []payment.Event, cmd payment.ItemCommand) (payment.Event, error) {
		return payment.DecideReopen(h, cmd)
	})
	if err != nil {
		return payment.Reopened{}, fmt.Errorf("reopen %s: %w", a.ID, err)
	}
	return ev.(payment.Reopened), nil
}

// act decides on the item's stream (a payment's or a payout's) and appends
// the decision (see the package's act); it returns the decided action.
func (s *Reconciliation) act(ctx context.Context, a ItemAction,
	decide func([]payment.Event, payment.ItemCommand) (payment.Event, error)) (payment.Event, error) {
	stream, kind, key, err := views.ParseReconciliationID(a.ID)
	if err != nil {
		// Not an id we ever listed: no such item.
		return nil, fmt.Errorf("%w: %w", payment.ErrItemNotFound, err)
	}
	cmd := payment.ItemCommand{Kind: kind, Key: key, Actor: a.Actor, Note: a.Note}
	if assertion.IsStream(stream) {
		return s.balanceItem(ctx, stream, cmd, decide) // reconciliation_balances.go
	}
	decode := payment.Decode
	if strings.HasPrefix(stream, expectation.StreamPrefix) {
		decode = expectation.Decode // an expected payment's items: its own events beside them
	}
	evs, err := act(ctx, s.store, stream, decode, payment.Encode, func(history []payment.Event) ([]payment.Event, error) {
		cmd.Now = s.now()
		ev, err := decide(history, cmd)
		if err != nil {
			return nil, err
		}
		return []payment.Event{ev}, nil
	})
	if err != nil {
		return nil, err
	}
	return evs[0], nil
}
