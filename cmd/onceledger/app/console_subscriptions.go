package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/onceledger/onceledger/adapters/console"
	"github.com/onceledger/onceledger/adapters/outbox"
	"github.com/onceledger/onceledger/projections/outbound"
)

// consoleSubs is the console's Subscriptions over the service the
// /v1/subscriptions endpoints call: the same list, attempts, enable and
// replay, in the console's types.
type consoleSubs struct{ s *outbox.Service }

var _ console.Subscriptions = consoleSubs{}

func consoleSubscription(s outbox.Subscription) console.Subscription {
	return console.Subscription{
		ID: s.ID.String(), URL: s.URL, Description: s.Description, Types: s.Types, Providers: s.Providers,
		State: s.State, Cursor: outbound.Cursor(s.Position), Pending: s.Pending, LastError: s.LastError,
		LastErrorAt: s.LastErrorAt, DisabledAt: s.DisabledAt, Replaying: s.Replay != nil, CreatedAt: s.CreatedAt,
	}
}

func subID(id string) (uuid.UUID, error) {
	u, err := uuid.Parse(id)
	if err != nil {
		return uuid.Nil, fmt.Errorf("%w: subscription %q", console.ErrNotFound, id)
	}
	return u, nil
}

// subErr maps the service's errors to the console's.
func subErr(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, outbox.ErrNotFound):
		return fmt.Errorf("%w: %w", console.ErrNotFound, err)
	case errors.Is(err, outbox.ErrInvalid), errors.Is(err, outbound.ErrBadCursor):
		return fmt.Errorf("%w: %w", console.ErrInvalid, err)
	}
	return err
}

func (c consoleSubs) ListSubscriptions(ctx context.Context) ([]console.Subscription, error) {
	subs, err := c.s.List(ctx)
	out := make([]console.Subscription, 0, len(subs))
	for _, s := range subs {
		out = append(out, consoleSubscription(s))
	}
	return out, subErr(err)
}

func (c consoleSubs) GetSubscription(ctx context.Context, id string) (console.Subscription, error) {
	u, err := subID(id)
	if err != nil {
		return console.Subscription{}, err
	}
	s, err := c.s.Get(ctx, u)
	return consoleSubscription(s), subErr(err)
}

func (c consoleSubs) SubscriptionDeliveries(ctx context.Context, id, status string, limit int) ([]console.DeliveryAttempt, error) {
	u, err := subID(id)
	if err != nil {
		return nil, err
	}
	as, err := c.s.Deliveries(ctx, u, outbox.AttemptFilter{Status: status, Limit: limit})
	out := make([]console.DeliveryAttempt, 0, len(as))
	for _, a := range as {
		out = append(out, console.DeliveryAttempt{EventID: a.EventID.String(), EventType: a.EventType, Attempt: a.Attempt,
			Replay: a.Replay, At: a.At, Status: a.Status, Latency: a.Latency, Error: a.Error, Succeeded: a.Succeeded})
	}
	return out, subErr(err)
}

func (c consoleSubs) EnableSubscription(ctx context.Context, id, actor, note string) error {
	u, err := subID(id)
	if err != nil {
		return err
	}
	_, err = c.s.Enable(ctx, u, actor, note)
	return subErr(err)
}

func (c consoleSubs) ReplaySubscription(ctx context.Context, id string, from console.ReplayFrom, actor, note string) error {
	u, err := subID(id)
	if err != nil {
		return err
	}
	_, err = c.s.Replay(ctx, u, outbox.ReplayFrom{After: from.Cursor, FromTime: from.Time}, actor, note)
	return subErr(err)
}
