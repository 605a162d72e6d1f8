package payment

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// ReconKinds lists every reconciliation item kind the aggregate can open, so
// that readers can tell a misspelt filter from an empty result.
func ReconKinds() []string {
	return append([]string{
		ReconRefundBeforePayment,
		ReconOverRefund,
		ReconConflictingRedelivery,
		ReconCurrencyMismatch,
		ReconAmountMismatch,
		ReconUnknownRefundFailed,
		ReconDisputeOutcomeConflict,
		ReconDisputeBeforePayment,
		ReconOverReversal,
		ReconSubscriptionDisabled,
		"balance_mismatch", // opened by the provider balances (domain/assertion), not by this aggregate
		ReconPaymentOverdue,
	}, append(SettlementReconKinds(), extensionReconKinds()...)...) // settle_events.go, extension.go
}

// Errors of the operators' actions on reconciliation items.
var (
	// ErrItemNotFound: the stream holds no item of that kind and key.
	ErrItemNotFound = errors.New("no such reconciliation item")
	// ErrItemResolved: resolving an item that is resolved already.
	ErrItemResolved = errors.New("reconciliation item is already resolved")
	// ErrItemOpen: reopening an item that is open.
	ErrItemOpen = errors.New("reconciliation item is open")
	// ErrNoteRequired: an action on an item must say why.
	ErrNoteRequired = errors.New("a note is required")
	// ErrActorRequired: an action must name who took it.
	ErrActorRequired = errors.New("an actor is required")
)

// ItemState is one reconciliation item of a stream as its events leave it.
type ItemState struct {
	Kind, Key string
	Open      bool
	// Provider and PaymentKey of the event that opened the item: the
	// action's Meta carries them, so that it lands on the same row.
	Provider, PaymentKey string
}

// Items folds a stream's reconciliation items, in the order they were first
// opened: Flagged opens one, Cleared and Resolved resolve it, Reopened opens
// it again. Works on payment and payout streams alike.
func Items(history []Event) []ItemState {
	var order []reconKey
	items := map[reconKey]*ItemState{}
	for _, e := range history {
		var k reconKey
		var open bool
		switch e := e.(type) {
		case Flagged:
			k, open = reconKey{e.Kind, e.Key}, true
		case Cleared:
			k = reconKey{e.Kind, e.Key}
		case Resolved:
			k = reconKey{e.Kind, e.Key}
		case Reopened:
			k, open = reconKey{e.Kind, e.Key}, true
		default:
			continue
		}
		it, ok := items[k]
		if !ok {
			m := e.Metadata()
			it = &ItemState{Kind: k.kind, Key: k.key, Provider: m.Provider, PaymentKey: m.PaymentKey}
			items[k] = it
			order = append(order, k)
		}
		it.Open = open
	}
	out := make([]ItemState, len(order))
	for i, k := range order {
		out[i] = *items[k]
	}
	return out
}

// ItemCommand is an operator's action on the item (Kind, Key) of a stream.
// Now is when it was taken (injected: the domain reads no clock).
type ItemCommand struct {
	Kind, Key   string
	Actor, Note string
	Now         time.Time
}

// DecideFlag decides opening the item f names in a stream whose events
// are history: f, or nothing when that item is open already (a second
// report of the same problem is the same item).
func DecideFlag(history []Event, f Flagged) []Event {
	for _, it := range Items(history) {
		if it.Kind == f.Kind && it.Key == f.Key && it.Open {
			return nil
		}
	}
	return []Event{f}
}

// DecideResolve decides resolving an item of the stream whose events are
// history: one Resolved event, or ErrItemNotFound, ErrItemResolved,
// ErrNoteRequired, ErrActorRequired (wrapped).
func DecideResolve(history []Event, cmd ItemCommand) (Resolved, error) {
	it, err := decideItem(history, cmd)
	if err != nil {
		return Resolved{}, err
	}
	if !it.Open {
		return Resolved{}, fmt.Errorf("%w: %s %s", ErrItemResolved, cmd.Kind, cmd.Key)
	}
	return Resolved{Meta: itemMeta(it, cmd), Kind: it.Kind, Key: it.Key, Actor: cmd.Actor, Note: cmd.Note}, nil
}

// DecideReopen decides reopening a resolved item: one Reopened event, or
// ErrItemNotFound, ErrItemOpen, ErrNoteRequired, ErrActorRequired (wrapped).
func DecideReopen(history []Event, cmd ItemCommand) (Reopened, error) {
	it, err := decideItem(history, cmd)
	if err != nil {
		return Reopened{}, err
	}
	if it.Open {
		return Reopened{}, fmt.Errorf("%w: %s %s", ErrItemOpen, cmd.Kind, cmd.Key)
	}
	return Reopened{Meta: itemMeta(it, cmd), Kind: it.Kind, Key: it.Key, Actor: cmd.Actor, Note: cmd.Note}, nil
}

func decideItem(history []Event, cmd ItemCommand) (ItemState, error) {
	switch {
	case strings.TrimSpace(cmd.Note) == "":
		return ItemState{}, ErrNoteRequired
	case strings.TrimSpace(cmd.Actor) == "":
		return ItemState{}, ErrActorRequired
	}
	for _, it := range Items(history) {
		if it.Kind == cmd.Kind && it.Key == cmd.Key {
			return it, nil
		}
	}
	return ItemState{}, fmt.Errorf("%w: %s %s", ErrItemNotFound, cmd.Kind, cmd.Key)
}

func itemMeta(it ItemState, cmd ItemCommand) Meta {
	return Meta{Provider: it.Provider, PaymentKey: it.PaymentKey, OccurredAt: cmd.Now.UTC()}
}
