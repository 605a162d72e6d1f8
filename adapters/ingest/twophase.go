package ingest

import (
	"context"
	"errors"
	"fmt"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/domain/delivery"
)

// Inbox is the inbox a two-phase journal commits to step by step
// (postgres.Inbox). Each call is its own transaction.
type Inbox interface {
	// Gate inserts ev with status unless its key is on record (the primary
	// key judges). A redelivery is counted and the stored row returned.
	Gate(ctx context.Context, ev delivery.Event, status string) (inserted bool, first Stored, err error)
	KeepConflict(ctx context.Context, ev delivery.Event) error
	Load(ctx context.Context, k InboxKey) (delivery.Event, string, error)
	SetStatus(ctx context.Context, k InboxKey, from, to string) (bool, error)
	Renormalize(ctx context.Context, k InboxKey, ev delivery.Event, from, to, actor string) (bool, error)
}

// Streams is the part of an event store the two-phase journal needs; every
// eventstore.Store has it.
type Streams interface {
	ReadStream(ctx context.Context, stream string) ([]eventstore.RecordedEvent, error)
	Append(ctx context.Context, stream string, expected eventstore.ExpectedVersion, events []eventstore.EventData) (eventstore.AppendResult, error)
}

// TwoPhase is the journal for an event store that is not the inbox's
// database (EventStoreDB), so the inbox row and the append cannot commit
// together: every step commits by itself. The record algorithm commits the
// inbox row "received", appends with a concrete expected version, then marks
// the row "applied"; a crash between the phases leaves a "received" row
// that a redelivery or the sweeper drives again.
func TwoPhase(inbox Inbox, streams Streams) Journal {
	return twoPhase{inbox: inbox, streams: streams}
}

type twoPhase struct {
	inbox   Inbox
	streams Streams
}

func (twoPhase) Atomic() bool { return false }

func (j twoPhase) Do(ctx context.Context, fn func(Tx) error) error {
	return fn(twoPhaseTx{j})
}

type twoPhaseTx struct{ twoPhase }

func (t twoPhaseTx) Gate(ctx context.Context, ev delivery.Event, status, read string) (Gated, error) {
	inserted, first, err := t.inbox.Gate(ctx, ev, status)
	if err != nil || !inserted || read == "" {
		return Gated{Inserted: inserted, First: first}, err
	}
	history, err := t.ReadStream(ctx, read)
	return Gated{Inserted: true, History: history}, err
}

func (t twoPhaseTx) KeepConflict(ctx context.Context, ev delivery.Event) error {
	return t.inbox.KeepConflict(ctx, ev)
}

func (t twoPhaseTx) Load(ctx context.Context, k InboxKey) (delivery.Event, string, error) {
	return t.inbox.Load(ctx, k)
}

func (t twoPhaseTx) SetStatus(ctx context.Context, k InboxKey, from, to string) (bool, error) {
	return t.inbox.SetStatus(ctx, k, from, to)
}

func (t twoPhaseTx) Renormalize(ctx context.Context, k InboxKey, ev delivery.Event, from, to, actor string) (bool, error) {
	return t.inbox.Renormalize(ctx, k, ev, from, to, actor)
}

func (t twoPhaseTx) ReadStream(ctx context.Context, stream string) ([]eventstore.RecordedEvent, error) {
	h, err := t.streams.ReadStream(ctx, stream)
	return h, unavailable(ctx, err)
}

// StreamTails is an event store that can read a stream from a version on
// (esdb.Store): a kept fold then reads only what it lacks.
type StreamTails interface {
	ReadStreamFrom(ctx context.Context, stream string, from int) ([]eventstore.RecordedEvent, error)
}

var _ TailReader = twoPhaseTx{}

// ReadStreamFrom implements TailReader, from the store's own read from a
// version when it has one.
func (t twoPhaseTx) ReadStreamFrom(ctx context.Context, stream string, from int) ([]eventstore.RecordedEvent, error) {
	if st, ok := t.streams.(StreamTails); ok {
		h, err := st.ReadStreamFrom(ctx, stream, from)
		return h, unavailable(ctx, err)
	}
	h, err := t.ReadStream(ctx, stream)
	if err != nil || from >= len(h) {
		return nil, err
	}
	return h[from:], nil
}

func (t twoPhaseTx) Append(ctx context.Context, stream string, read int, events []eventstore.EventData) error {
	_, err := t.streams.Append(ctx, stream, eventstore.ExpectFor(read), events)
	if errors.Is(err, eventstore.ErrWrongVersion) {
		return err
	}
	return unavailable(ctx, err)
}

// unavailable makes a store error that only says the request's time ran out
// match eventstore.ErrUnavailable, as the adapters do for their own timeouts.
func unavailable(ctx context.Context, err error) error {
	if err == nil || errors.Is(err, eventstore.ErrUnavailable) || ctx.Err() == nil {
		return err
	}
	return fmt.Errorf("%w: %w", eventstore.ErrUnavailable, err)
}
