// Package ingest turns one verified, normalized delivery into durable facts:
// the inbox gate decides first arrivals, the payment aggregate decides what
// they mean, the event store appends them with an expected version, retrying
// a lost race with bounded, jittered backoff. The HTTP layer calls it after a
// provider adapter verified and normalized the request.
package ingest

import (
	"context"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/domain/delivery"
)

// Outcome of recording one delivery, as the webhook answer reports it.
type Outcome string

const (
	Accepted  Outcome = "accepted"  // first arrival, facts durable
	Duplicate Outcome = "duplicate" // same dedup key seen before (same or different payload)
	Ignored   Outcome = "ignored"   // type not handled; raw event kept in the inbox
)

// Result of Record.
type Result struct {
	Outcome  Outcome
	Conflict bool   // duplicate key with a different payload; recorded for reconciliation
	StreamID string // stream the facts went to, if any
	Appended int    // domain events appended (0 when every fact was known already)
}

// Decider turns a stream's history and a delivery into the events to append.
// It is pure; Record calls it inside its unit of work, and again after a lost race.
type Decider interface {
	// Decide returns the events a first-arrival delivery adds.
	Decide(history []eventstore.RecordedEvent, ev delivery.Event) ([]eventstore.EventData, error)
	// Conflict returns the events that record a redelivery of an already
	// recorded dedup key with a different payload hash (firstHash is the
	// original's). Deterministic ids make a repeated conflict a no-op.
	Conflict(history []eventstore.RecordedEvent, ev delivery.Event, firstHash string) ([]eventstore.EventData, error)
}

// Recorder is the unit of work behind one delivery: insert into the inbox
// with ON CONFLICT (the constraint is the judge), and for a first arrival
// load the stream, decide and append with the expected version. It returns an
// error matching eventstore.ErrWrongVersion when the race for the stream was
// lost (nothing was committed; the caller retries), and one matching
// eventstore.ErrUnavailable when the storage could not be reached.
type Recorder interface {
	Record(ctx context.Context, ev delivery.Event, d Decider) (Result, error)
}
