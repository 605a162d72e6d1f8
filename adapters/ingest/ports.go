// Package ingest owns the record protocol of deliveries: it turns one
// verified, normalized delivery into durable facts. The inbox gate decides
// first arrivals (a database constraint judges), the payment aggregate
// decides what they mean, the ledger's one write protocol (adapters/command)
// appends them with an expected version, and the inbox row's status says how
// far the delivery got. The record algorithm, redeliveries, conflicts,
// holding unverified deliveries, redrives, the bounded jittered retry of a
// lost race, the inbox statuses and the background workers (sweeper,
// postback verifier) all live here, once, over a small transactional port
// (Journal) that the storage adapters implement: adapters/postgres in one
// transaction, TwoPhase when the streams live in another database
// (EventStoreDB). Shared units of work are protocol too, and live here:
// group commit of concurrent first arrivals (batch.go) and import sets
// (importbatch.go), one algorithm (shared.go) on a journal that can
// (BatchJournal). The HTTP layer calls the Service after a provider adapter
// verified and normalized the request.
package ingest

import (
	"context"
	"errors"
	"time"

	"github.com/onceledger/onceledger/adapters/command"
	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/domain/delivery"
)

// Outcome of recording one delivery, as the webhook answer reports it.
type Outcome string

const (
	Accepted  Outcome = "accepted"  // first arrival, facts durable (or held durably)
	Duplicate Outcome = "duplicate" // same dedup key seen before (same or different facts)
	Ignored   Outcome = "ignored"   // type not handled; raw event kept in the inbox
)

// Result of recording one delivery.
type Result struct {
	Outcome  Outcome
	Conflict bool   // known dedup key with different facts; recorded for reconciliation
	StreamID string // stream the facts went to, if any
	Appended int    // domain events appended (0 when every fact was known already)
}

// Decider turns a stream's history and a delivery into the events to append.
// It is pure; the record algorithm calls it inside its unit of work, and
// again after a lost race.
type Decider interface {
	// Decide returns the events a first-arrival delivery adds.
	Decide(history []eventstore.RecordedEvent, ev delivery.Event) ([]eventstore.EventData, error)
	// Conflict returns the events that record a redelivery of an already
	// recorded dedup key with different facts (firstHash is the original
	// payload's hash, for the record). Deterministic ids make a repeated
	// conflict a no-op.
	Conflict(history []eventstore.RecordedEvent, ev delivery.Event, firstHash string) ([]eventstore.EventData, error)
}

// Inbox statuses (webhook_inbox.status): how far a delivery got.
const (
	StatusReceived   = "received"   // stored, facts not yet in the stream (two-phase, in flight or crashed)
	StatusApplied    = "applied"    // facts recorded in the stream
	StatusIgnored    = "ignored"    // type not handled; kept for audit, never driven
	StatusUnverified = "unverified" // held until its provider verifies it (PayPal IPN postback)
	StatusInvalid    = "invalid"    // the provider said it never sent it: kept, never posted
	// StatusFailed: the facts could not be recorded after
	// Options.MaxDriveAttempts (a decision that fails permanently); the
	// row keeps its last error and is re-driven from "failed" after a fix.
	StatusFailed = "failed"
)

// ErrRawErased: the row's raw body was erased (retention or `onceledger
// erase`), so nothing that needs it (a postback, a re-normalization) can be
// done with the row; its normalized facts are still there.
var ErrRawErased = errors.New("raw body erased")

// InboxKey names one inbox row.
type InboxKey struct {
	Provider string
	DedupKey string
}

// Stored is what a redelivery learns about the first arrival of its dedup key.
type Stored struct {
	Status      string
	PayloadHash string // of the first arrival's bytes
	FactsHash   string // of its normalized facts (delivery.Event.FactsHash)
	StreamID    string // "" when the first arrival was ignored
}

// Gated is the answer of the inbox gate.
type Gated struct {
	Inserted bool   // a first arrival: the row is this delivery's
	First    Stored // for a redelivery, the first arrival's row
	// History is the stream named by the gate's read argument as it stands
	// after the gate, for a first arrival.
	History []eventstore.RecordedEvent
}

// Journal is the storage the record algorithm runs on: the inbox and the
// streams, with the boundary of a unit of work.
type Journal interface {
	// Atomic reports whether one unit of work commits all its steps together
	// (inbox row and append in one Postgres transaction). A lost race then
	// rolls the gate back too and the whole unit is run again. A journal that
	// is not atomic commits every step by itself (two-phase): the inbox row
	// is committed "received" first, a lost race is decided again inside
	// the unit, and the row is marked applied at the end.
	Atomic() bool
	// Do runs fn as one unit of work: committed when fn returns nil, rolled
	// back (where the journal can) when it returns an error.
	Do(ctx context.Context, fn func(Tx) error) error
}

// Tx is the journal inside one unit of work. Errors from storage that could
// not be reached match eventstore.ErrUnavailable; a lost race for a stream
// matches eventstore.ErrWrongVersion.
type Tx interface {
	// Gate inserts ev's inbox row with status unless its (provider, dedup
	// key) is on record: the primary key judges, never a prior read. A
	// redelivery is counted and the first arrival's row returned. For a
	// first arrival, a non-empty read names the stream to read after the
	// gate (in the same round trip where the journal can).
	Gate(ctx context.Context, ev delivery.Event, status, read string) (Gated, error)
	// KeepConflict keeps a redelivery's different payload for
	// reconciliation (webhook_conflicts) and counts it on the inbox row.
	KeepConflict(ctx context.Context, ev delivery.Event) error
	// Load returns a row's stored delivery and its status; an atomic
	// journal locks the row for the rest of the unit.
	Load(ctx context.Context, k InboxKey) (delivery.Event, string, error)
	// SetStatus moves a row from one status to another; false when it was
	// not in status from (someone else moved it on).
	SetStatus(ctx context.Context, k InboxKey, from, to string) (bool, error)
	// Renormalize replaces a row's normalized delivery with ev (the same
	// raw bytes, normalized by the current code: type, stream, facts) and
	// moves it from one status to another, recording who re-drove it;
	// false when it was not in status from.
	Renormalize(ctx context.Context, k InboxKey, ev delivery.Event, from, to, actor string) (bool, error)
	// ReadStream returns a stream's events in order (none: empty).
	ReadStream(ctx context.Context, stream string) ([]eventstore.RecordedEvent, error)
	// Append writes events after the read events of stream: the expected
	// version is the one the decision was made on.
	Append(ctx context.Context, stream string, read int, events []eventstore.EventData) error
}

// A unit of work's Tx is where the write protocol reads and appends.
var _ command.Store = Tx(nil)

// Queue is the inbox as the background workers see it: rows waiting in a
// status, leased so that several instances share the work.
type Queue interface {
	// Claim leases up to limit due rows in status: rows whose scheduled
	// attempt is due or, never scheduled, first seen longer ago than
	// olderThan. A claimed row is left alone for lease.
	Claim(ctx context.Context, status string, olderThan, lease time.Duration, limit int) ([]InboxKey, error)
	// Retry schedules the next attempt after base·2^(attempts−1), capped,
	// and keeps cause as the row's last error. When failAfter > 0 and the
	// row was claimed failAfter times or more, it moves the row to
	// StatusFailed instead and returns true.
	Retry(ctx context.Context, k InboxKey, base time.Duration, cause error, failAfter int) (failed bool, err error)
}

// Postback verifies a held delivery with its provider (PayPal IPN): true for
// VERIFIED, false for INVALID, an error when the answer was neither (retry).
type Postback interface {
	Verify(ctx context.Context, raw []byte) (bool, error)
}
