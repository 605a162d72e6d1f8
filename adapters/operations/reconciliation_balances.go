package operations

import (
	"context"
	"fmt"

	"github.com/onceledger/onceledger/domain/assertion"
	"github.com/onceledger/onceledger/domain/payment"
)

// balanceItem resolves or reopens the balance_mismatch item of an
// assertion stream (whose codec is domain/assertion's): the same checks as
// a payment's item (decide, on an empty history standing for the item as
// the read model lists it), recorded as balance.item_resolved or
// balance.item_reopened with the actor and note. Whether the item is open
// follows the ledger (the projection), so the stream does not refuse a
// second resolve.
func (s *Reconciliation) balanceItem(ctx context.Context, stream string, cmd payment.ItemCommand,
	decide func([]payment.Event, payment.ItemCommand) (payment.Event, error)) (payment.Event, error) {
	if cmd.Kind != assertion.ReconBalanceMismatch {
		return nil, fmt.Errorf("%w: %s %s", payment.ErrItemNotFound, cmd.Kind, cmd.Key)
	}
	cmd.Now = s.now()
	// The domain's own checks (note, actor) on a history holding the item
	// open and resolved in turn: which one the decision needs.
	flag := payment.Flagged{Meta: payment.Meta{Provider: "", OccurredAt: cmd.Now}, Kind: cmd.Kind, Key: cmd.Key}
	history := []payment.Event{flag}
	if _, probe := decide(history, cmd); probe != nil {
		history = append(history, payment.Resolved{Meta: flag.Meta, Kind: cmd.Kind, Key: cmd.Key, Actor: "-", Note: "-"})
	}
	ev, err := decide(history, cmd)
	if err != nil {
		return nil, err
	}
	_, reopen := ev.(payment.Reopened)
	b := &Balances{store: s.store, now: s.now}
	if _, err := b.ItemAction(ctx, stream, assertion.ItemAction{Kind: cmd.Kind, Key: cmd.Key, Actor: cmd.Actor, Note: cmd.Note,
		Reopen: reopen}); err != nil {
		return nil, err
	}
	return ev, nil
}
