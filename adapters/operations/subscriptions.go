package operations

import (
	"context"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/payment"
	"github.com/onceledger/onceledger/projections/views"
)

// SubscriptionDisabledItem is the id (as GET /v1/reconciliation lists it)
// of the item a disabled push subscription opens.
func SubscriptionDisabledItem(sub uuid.UUID) string {
	return views.ReconciliationID(delivery.SubscriptionStream(sub.String()), payment.ReconSubscriptionDisabled, sub.String())
}

// OpenSubscriptionDisabled opens the operators' item that says a push
// subscription was disabled after its retry schedule (a
// reconciliation.opened event of kind subscription_disabled in the
// subscription's stream); nothing when it is open already.
func (s *Reconciliation) OpenSubscriptionDisabled(ctx context.Context, sub uuid.UUID, url, lastError string) error {
	stream := delivery.SubscriptionStream(sub.String())
	f := payment.Flagged{Meta: payment.Meta{PaymentKey: sub.String(), OccurredAt: s.now().UTC()},
		Kind: payment.ReconSubscriptionDisabled, Key: sub.String(),
		Details: fmt.Sprintf("push subscription to %s disabled after its retry schedule: %s; re-enable it once the endpoint answers", url, lastError)}
	_, err := act(ctx, s.store, stream, payment.Decode, payment.Encode, func(history []payment.Event) ([]payment.Event, error) {
		return payment.DecideFlag(history, f), nil
	})
	if err != nil {
		return fmt.Errorf("open %s: %w", payment.ReconSubscriptionDisabled, err)
	}
	return nil
}

// CloseSubscriptionDisabled resolves that item, with the actor and note of
// the re-enabling; nothing when no item is open.
func (s *Reconciliation) CloseSubscriptionDisabled(ctx context.Context, sub uuid.UUID, actor, note string) error {
	if note == "" {
		note = "subscription re-enabled"
	}
	_, err := s.Resolve(ctx, ItemAction{ID: SubscriptionDisabledItem(sub), Actor: actor, Note: note})
	if errors.Is(err, payment.ErrItemNotFound) || errors.Is(err, payment.ErrItemResolved) {
		return nil
	}
	return err
}
