// Package command owns the one way to act on a stream: read it, decode its
// history, decide on it, encode the decision, append it at the version it
// was decided on, and, when another writer won the stream meanwhile (the
// append's expected version no longer holds), decide again on the new
// history, within a bound (Retry). The decision is the caller's and pure;
// the write protocol around it is here, once, for every writer of the
// ledger: deliveries (adapters/ingest) and the operators' actions
// (adapters/operations). Concurrency is judged by the event store's
// expected-version check, never by a prior read.
package command

import (
	"context"
	"errors"
	"fmt"

	"github.com/onceledger/onceledger/adapters/eventstore"
)

// Store is one unit of work's view of the streams: read one, append to it
// after the events read. Read counts the events the decision was made on,
// so the expected version is that one's (eventstore.ExpectFor); an append
// that finds the stream moved fails with an error matching
// eventstore.ErrWrongVersion.
type Store interface {
	ReadStream(ctx context.Context, stream string) ([]eventstore.RecordedEvent, error)
	Append(ctx context.Context, stream string, read int, events []eventstore.EventData) error
}

// VersionedStore is an event store whose Append takes the expected version
// itself (eventstore.Store's).
type VersionedStore interface {
	ReadStream(ctx context.Context, stream string) ([]eventstore.RecordedEvent, error)
	Append(ctx context.Context, stream string, expected eventstore.ExpectedVersion, events []eventstore.EventData) (eventstore.AppendResult, error)
}

// Versioned is s as a Store: each append expects the version of the events
// read.
func Versioned(s VersionedStore) Store { return versioned{s} }

type versioned struct{ s VersionedStore }

func (v versioned) ReadStream(ctx context.Context, stream string) ([]eventstore.RecordedEvent, error) {
	return v.s.ReadStream(ctx, stream)
}

func (v versioned) Append(ctx context.Context, stream string, read int, events []eventstore.EventData) error {
	_, err := v.s.Append(ctx, stream, eventstore.ExpectFor(read), events)
	return err
}

// Decision is the pure step of an act: the events to append to a stream,
// given its history. It is called again after a lost race, on the new
// history, so it must not keep state of a previous call it relies on.
type Decision func(history []eventstore.RecordedEvent) ([]eventstore.EventData, error)

// Act reads stream, decides on it and appends the decision at the version
// read. A lost race is met as r says: decided again on the stream as it is
// then. It returns how many events the appended decision held (0: the
// decision was empty, nothing appended).
func Act(ctx context.Context, s Store, stream string, decide Decision, r Retry) (int, error) {
	return act(ctx, s, stream, nil, false, decide, r)
}

// ActOn is Act on a history read already in the unit of work (the inbox
// gate reads the stream in its own round trip): the first decision is made
// on it, a decision after a lost race on the stream read again.
func ActOn(ctx context.Context, s Store, stream string, history []eventstore.RecordedEvent, decide Decision, r Retry) (int, error) {
	return act(ctx, s, stream, history, true, decide, r)
}

func act(ctx context.Context, s Store, stream string, history []eventstore.RecordedEvent, read bool, decide Decision, r Retry) (int, error) {
	for attempt := 1; ; attempt++ {
		if attempt > 1 || !read {
			var err error
			if history, err = s.ReadStream(ctx, stream); err != nil {
				return 0, err
			}
		}
		decided, err := decide(history)
		if err != nil {
			return 0, err
		}
		if len(decided) == 0 {
			return 0, nil
		}
		err = s.Append(ctx, stream, len(history), decided)
		if err == nil {
			return len(decided), nil
		}
		// Only the append can lose the race: any other error is final.
		if !errors.Is(err, eventstore.ErrWrongVersion) {
			return 0, err
		}
		if err := r.next(ctx, attempt, err); err != nil {
			return 0, err
		}
	}
}

// Retry bounds how a lost race (an error matching eventstore.ErrWrongVersion)
// is met. The zero Retry tries once and returns the lost race as it is.
type Retry struct {
	// Attempts is how often the work is run at most (below 1: once).
	Attempts int
	// Pause, if set, is called after lost race number attempt, before the
	// next: a backoff, a metric. Its error ends the work.
	Pause func(ctx context.Context, attempt int) error
	// GiveUp, if set, makes the error returned after the last lost race
	// (attempts of them); else that race's error is returned as it is.
	GiveUp func(attempts int, err error) error
}

// Run runs work (attempt counts from 1) until it returns nil or an error
// that is not a lost race, at most r.Attempts times: the retry of a whole
// unit of work that lost the race for its stream.
func (r Retry) Run(ctx context.Context, work func(attempt int) error) error {
	for attempt := 1; ; attempt++ {
		err := work(attempt)
		if err == nil || !errors.Is(err, eventstore.ErrWrongVersion) {
			return err
		}
		if err := r.next(ctx, attempt, err); err != nil {
			return err
		}
	}
}

// next meets lost race number attempt (err): nil to run again, else the
// error to end with.
func (r Retry) next(ctx context.Context, attempt int, err error) error {
	if attempt >= r.Attempts {
		if r.GiveUp != nil {
			return r.GiveUp(attempt, err)
		}
		return err
	}
	if r.Pause != nil {
		return r.Pause(ctx, attempt)
	}
	return nil
}

// Decode decodes a stream's history with decode (a domain codec's Decode),
// naming the event that does not decode.
func Decode[E any](history []eventstore.RecordedEvent, decode func(typ string, data []byte) (E, error)) ([]E, error) {
	out := make([]E, len(history))
	for i, h := range history {
		e, err := decode(h.Type, h.Data)
		if err != nil {
			return nil, fmt.Errorf("decode %s/%d: %w", h.StreamID, h.Version, err)
		}
		out[i] = e
	}
	return out, nil
}
