// Package eventstore holds the vocabulary shared by the event store adapters
// (postgres, esdb) and their consumers: expected versions, event data,
// recorded events, global positions and the one wrong-version error. The
// interfaces that use this vocabulary are declared by their consumers
// (ingestion, projections); Store below is the full set the shared contract
// suite in eventstoretest checks every adapter against.
package eventstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
)

// ExpectedVersion is the optimistic concurrency condition of an append.
// Stream versions start at 0 for the first event (EventStoreDB revisions).
type ExpectedVersion struct {
	kind    expectKind
	version uint64
}

type expectKind uint8

const (
	expectAny expectKind = iota
	expectNoStream
	expectStreamExists
	expectExact
)

var (
	// Any appends whatever the stream's state. Not idempotent in EventStoreDB.
	Any = ExpectedVersion{kind: expectAny}
	// NoStream requires that the stream has no events.
	NoStream = ExpectedVersion{kind: expectNoStream}
	// StreamExists requires at least one event.
	StreamExists = ExpectedVersion{kind: expectStreamExists}
)

// Exact requires that the stream's last event has version v.
func Exact(v uint64) ExpectedVersion { return ExpectedVersion{kind: expectExact, version: v} }

// ExpectFor is the condition for appending after a stream read with n events:
// NoStream when n == 0, else Exact(n-1).
func ExpectFor(n int) ExpectedVersion {
	if n == 0 {
		return NoStream
	}
	return Exact(uint64(n - 1))
}

func (e ExpectedVersion) IsAny() bool          { return e.kind == expectAny }
func (e ExpectedVersion) IsNoStream() bool     { return e.kind == expectNoStream }
func (e ExpectedVersion) IsStreamExists() bool { return e.kind == expectStreamExists }

// Exact returns the exact version and true, if e is an exact expectation.
func (e ExpectedVersion) Exact() (uint64, bool) { return e.version, e.kind == expectExact }

func (e ExpectedVersion) String() string {
	switch e.kind {
	case expectNoStream:
		return "no stream"
	case expectStreamExists:
		return "stream exists"
	case expectExact:
		return fmt.Sprintf("version %d", e.version)
	default:
		return "any"
	}
}

// EventData is an event to append. ID is deterministic (see payment.EventID):
// appending the same IDs at the same position again is a no-op success.
type EventData struct {
	ID       uuid.UUID
	Type     string
	Data     []byte // JSON
	Metadata []byte // JSON, may be nil
}

// Position is a place in the global feed. For EventStoreDB it is the $all
// position; for Postgres, Commit is the writing transaction's id and Prepare
// the event's global sequence number (the feed is ordered by both, see the
// postgres adapter). The zero Position is the start.
type Position struct {
	Commit  uint64
	Prepare uint64
}

// Start is the position before the first event.
var Start = Position{}

// Less orders positions as the global feed does.
func (p Position) Less(q Position) bool {
	if p.Commit != q.Commit {
		return p.Commit < q.Commit
	}
	return p.Prepare < q.Prepare
}

func (p Position) String() string { return fmt.Sprintf("%d/%d", p.Commit, p.Prepare) }

// RecordedEvent is an event as stored.
type RecordedEvent struct {
	ID         uuid.UUID
	StreamID   string
	Version    uint64
	Type       string
	Data       []byte
	Metadata   []byte
	Position   Position
	RecordedAt time.Time
}

// AppendResult tells where the last appended event landed.
type AppendResult struct {
	NextExpected uint64 // version of the stream's last event after the append
}

var (
	// ErrWrongVersion is the one error for a failed expected-version check.
	// Adapters return a *WrongVersionError, which matches it with errors.Is.
	ErrWrongVersion = errors.New("wrong expected version")
	// ErrUnavailable wraps connection failures and timeouts: the caller may
	// retry later (webhooks answer 503).
	ErrUnavailable = errors.New("event store unavailable")
)

// WrongVersionError details a failed expected-version check.
type WrongVersionError struct {
	Stream   string
	Expected ExpectedVersion
	Actual   int64 // version of the last event; -1 when the stream does not exist; -2 when unknown
}

func (e *WrongVersionError) Error() string {
	return fmt.Sprintf("append to %s: expected %s, stream is at %d: %v", e.Stream, e.Expected, e.Actual, ErrWrongVersion)
}

func (e *WrongVersionError) Is(target error) bool { return target == ErrWrongVersion }

// Store is the whole port, as checked by the contract suite.
type Store interface {
	// Append writes events atomically if expected holds.
	Append(ctx context.Context, stream string, expected ExpectedVersion, events []EventData) (AppendResult, error)
	// ReadStream returns a stream's events in version order; a stream that
	// does not exist is empty, not an error.
	ReadStream(ctx context.Context, stream string) ([]RecordedEvent, error)
	// ReadAll returns up to limit events of the global feed strictly after
	// the position, in feed order. It never returns an event while an event
	// before it in the feed may still commit later.
	ReadAll(ctx context.Context, after Position, limit int) ([]RecordedEvent, error)
	// Changes returns a channel that receives (coalesced) wake-ups after
	// appends commit, until ctx ends. A wake-up is a hint: readers also poll.
	Changes(ctx context.Context) (<-chan struct{}, error)
	// Head is the position of the last event ReadAll can return now
	// (Start when the feed is empty).
	Head(ctx context.Context) (Position, error)
}
