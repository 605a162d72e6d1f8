package operations

import (
	"context"
	"errors"
	"fmt"
	"net/url"

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
// subscription's stream); nothing when it is open already. The item names
// the subscription and its URL's host only (payment.PublicDetails): every
// reader of items and events sees it, while the URL, which may be a
// credential, and the receiver's last answer stay on the admin endpoints
// that already show them (which is why neither is a parameter here).
func (s *Reconciliation) OpenSubscriptionDisabled(ctx context.Context, sub uuid.UUID, rawURL string) error {
	stream := delivery.SubscriptionStream(sub.String())
	host := ""
	if u, err := url.Parse(rawURL); err == nil {
		host = u.Hostname()
	}
	f := payment.Flagged{Meta: payment.Meta{PaymentKey: sub.String(), OccurredAt: s.now().UTC()},
		Kind: payment.ReconSubscriptionDisabled, Key: sub.String(),
		Details: payment.SubscriptionDisabledDetails(sub.String(), host)}
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
