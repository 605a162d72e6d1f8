package outbox

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/onceledger/onceledger/adapters/eventstore"
)

// SenderStore is the sender's storage (adapters/postgres.Subscriptions):
// leases, the queue, the per-stream pending state and the attempts log.
type SenderStore interface {
	// Lease claims (or renews) for owner, for d, every subscription that is
	// not disabled and whose lease is free, expired or owner's already; it
	// returns those owner holds now.
	Lease(ctx context.Context, owner string, d time.Duration) ([]Leased, error)
	// Release gives owner's leases up (a clean stop: another instance may
	// take over at once).
	Release(ctx context.Context, owner string) error
	// Enqueue adds each Queueing's rows to the queue (a stream's pending
	// state created when the stream has none, due at now) and moves its
	// checkpoint from From to To in the same transaction, if the
	// subscription is still at From and owner leases it (else that part is
	// skipped: another sender moved it). moved[i] says whether qs[i] was.
	Enqueue(ctx context.Context, owner string, now time.Time, qs []Queueing) (moved []bool, err error)
	// Claim takes up to n due heads of a lane (next_attempt_at <= now, not
	// in skip) and sets them due at hold (an attempt under way: a crash
	// retries it then).
	Claim(ctx context.Context, sub uuid.UUID, lane int, now, hold time.Time, skip []string, n int) ([]Delivery, error)
	// Record applies results in one transaction: attempts logged, acked
	// heads removed (the stream's next event becomes its head, due now),
	// failed heads rescheduled, the subscription's state and last error.
	Record(ctx context.Context, now time.Time, rs []Result) error
}

// Leased is a subscription as its sender needs it.
type Leased struct {
	ID        uuid.UUID
	URL       string
	Filter    Filter
	State     string
	Position  eventstore.Position
	Secret    []byte // sealed
	OldSecret []byte // sealed; nil unless rotating
	OldUntil  time.Time
	Replay    *Replay
	// ReplayPending counts the replay lane's queued events (bounded by the
	// query: replayQueueBound is enough to know).
	ReplayPending int
}

// Queued is one queue row.
type Queued struct {
	Lane      int
	StreamKey string
	EventID   uuid.UUID
	EventType string
	Position  eventstore.Position
	Body      []byte
}

// Queueing is what one subscription queues in one step, and how its
// checkpoint moves. Replay says the step reads a replay: From and To are
// then the replay's position (To == Replay.Until ends it).
type Queueing struct {
	Sub      uuid.UUID
	Replay   bool
	From, To eventstore.Position
	Done     bool // the replay reached its end
	Rows     []Queued
}

// Delivery is a claimed head.
type Delivery struct {
	Sub       uuid.UUID
	Lane      int
	StreamKey string
	Seq       int64
	EventID   uuid.UUID
	EventType string
	Body      []byte
	Attempt   int // this attempt's number (1 = first)
}

// Result is one attempt's outcome and what follows from it.
type Result struct {
	Delivery
	At        time.Time
	Status    int
	Latency   time.Duration
	Error     string
	Succeeded bool
	// NextAt: a failed head is due again then; Disable: the schedule ran
	// out, the subscription is disabled.
	NextAt  time.Time
	Disable bool
}
