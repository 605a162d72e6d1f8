package operations

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/onceledger/onceledger/adapters/eventstore"
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
// it shares the read–decide–append-with-expected-version loop of the other
// operators' commands.
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

func (s *Reconciliation) act(ctx context.Context, a ItemAction,
	decide func([]payment.Event, payment.ItemCommand) (payment.Event, error)) (payment.Event, error) {
	stream, kind, key, err := views.ParseReconciliationID(a.ID)
	if err != nil {
		// Not an id we ever listed: no such item.
		return nil, fmt.Errorf("%w: %w", payment.ErrItemNotFound, err)
	}
	cmd := payment.ItemCommand{Kind: kind, Key: key, Actor: a.Actor, Note: a.Note}
	for attempt := 1; ; attempt++ {
		recs, err := s.store.ReadStream(ctx, stream)
		if err != nil {
			return nil, err
		}
		history := make([]payment.Event, len(recs))
		for i, r := range recs {
			if history[i], err = payment.Decode(r.Type, r.Data); err != nil {
				return nil, fmt.Errorf("%s@%d: %w", r.StreamID, r.Version, err)
			}
		}
		cmd.Now = s.now()
		ev, err := decide(history, cmd)
		if err != nil {
			return nil, err
		}
		typ, body, err := payment.Encode(ev)
		if err != nil {
			return nil, err
		}
		// A fresh id: two operators resolving the same item at the same
		// version must conflict (the loser is told it is resolved), not
		// both be acknowledged as the one recorded event.
		_, err = s.store.Append(ctx, stream, eventstore.ExpectFor(len(recs)),
			[]eventstore.EventData{{ID: uuid.New(), Type: typ, Data: body}})
		if err == nil {
			return ev, nil
		}
		if !errors.Is(err, eventstore.ErrWrongVersion) {
			return nil, err
		}
		if attempt >= maxAttempts {
			return nil, fmt.Errorf("%w: %v", ErrContention, err)
		}
	}
}
