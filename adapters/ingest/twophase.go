package ingest

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/domain/delivery"
)

// StatusIgnored marks an inbox row whose delivery carries no fact we handle;
// it is kept for audit and never driven.
const StatusIgnored = "ignored"

// DefaultSweepAge is how long a row stays "received" before the sweeper
// takes it over: long enough that a row is no longer in its first request's
// hands (that request re-drives nothing, it just finishes), short enough that
// a fact lost to a crash reaches the ledger soon.
const DefaultSweepAge = 30 * time.Second

// Stored is what a redelivery learns about the first arrival of its dedup key.
type Stored struct {
	Status      string
	PayloadHash string
	StreamID    string // "" when the first arrival was ignored
}

// Redelivery is what a redelivery of a recorded dedup key means, for every
// recorder: the answer (always a duplicate; a conflict when the payload
// differs), and the stream a conflict fact must be appended to, "" when
// there is nothing to append.
func Redelivery(first Stored, ev delivery.Event) (Result, string) {
	res := Result{Outcome: Duplicate, StreamID: first.StreamID}
	if first.PayloadHash == ev.PayloadHash {
		return res, ""
	}
	res.Conflict = true
	if first.Status == StatusUnverified {
		// The conflict event carries the dedup key, and the aggregate takes
		// a key in its stream as applied: recorded now, it would swallow the
		// held delivery's facts once it is verified. webhook_conflicts keeps
		// the payload for reconciliation.
		return res, ""
	}
	// The conflict is a reconciliation fact of the payment the first payload
	// was about; if that one was ignored, of the payment the new one names;
	// if neither names one, webhook_conflicts alone keeps it.
	stream := first.StreamID
	if stream == "" && !ev.Ignored() {
		stream = ev.StreamID()
	}
	if stream != "" {
		res.StreamID = stream
	}
	return res, stream
}

// GateInbox is the inbox as the two-phase recorder uses it (postgres.Inbox).
type GateInbox interface {
	// Gate inserts ev with status unless its (provider, dedup key) is on
	// record (the primary key judges), in its own transaction. For a
	// redelivery it counts the delivery, keeps a conflicting payload for
	// reconciliation and returns the stored row.
	Gate(ctx context.Context, ev delivery.Event, status string) (inserted bool, existing Stored, err error)
	// Load returns a row's stored delivery and its status.
	Load(ctx context.Context, k InboxKey) (delivery.Event, string, error)
	// SetStatus moves a row from one status to another; false when it was
	// not in status from.
	SetStatus(ctx context.Context, k InboxKey, from, to string) (bool, error)
}

// Streams is the part of an event store the two-phase recorder needs;
// every eventstore.Store has it.
type Streams interface {
	ReadStream(ctx context.Context, stream string) ([]eventstore.RecordedEvent, error)
	Append(ctx context.Context, stream string, expected eventstore.ExpectedVersion, events []eventstore.EventData) (eventstore.AppendResult, error)
}

// TwoPhaseRecorder records deliveries when the event store is not the inbox's
// database (EventStoreDB), so the inbox row and the append cannot commit
// together. The inbox row is committed first with status "received"; the
// facts are then decided and appended with a concrete expected version;
// finally the row becomes "applied". A crash between the phases leaves a
// "received" row, which a redelivery of the same key or the sweeper (a
// Worker on status "received" with this recorder as Redriver) drives again.
//
// Driving a row twice, even concurrently, records its facts once: the payment
// aggregate remembers the dedup keys it has applied, so a decision on a
// history that already holds them is empty; two decisions on the same history
// carry the same deterministic event ids at the same expected version (the
// store takes the second as an idempotent no-op); and a decision on a stale
// history fails its expected-version check and is decided again.
type TwoPhaseRecorder struct {
	inbox GateInbox
	store Streams
	opts  Options
}

var (
	_ Recorder = (*TwoPhaseRecorder)(nil)
	_ Redriver = (*TwoPhaseRecorder)(nil)
)

// NewTwoPhaseRecorder wires a recorder with the inbox in inbox and the
// streams in store. opts bounds its own retries of a lost race for a stream
// (raceBudget·MaxAttempts, see Record); zero values take the Service's defaults.
func NewTwoPhaseRecorder(inbox GateInbox, store Streams, opts Options) *TwoPhaseRecorder {
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = 8
	}
	if opts.BaseBackoff <= 0 {
		opts.BaseBackoff = 2 * time.Millisecond
	}
	return &TwoPhaseRecorder{inbox: inbox, store: store, opts: opts}
}

// Sweeper returns the worker that re-drives rows left "received" for longer
// than olderThan (DefaultSweepAge when 0) through r. Run it in one goroutine
// per instance; leases in the inbox keep instances off each other's rows.
func (r *TwoPhaseRecorder) Sweeper(inbox HeldInbox, d Decider, olderThan time.Duration) *Worker {
	if olderThan <= 0 {
		olderThan = DefaultSweepAge
	}
	return &Worker{
		Name:      "received-sweeper",
		Inbox:     inbox,
		Redriver:  r,
		Decider:   d,
		Status:    StatusReceived,
		OlderThan: olderThan,
		Lease:     time.Minute,
		Interval:  time.Second,
		Log:       slog.Default(), // Once, unlike Run, does not default it
	}
}

// Record implements Recorder.
//
// Unlike the one-transaction Postgres recorder, a lost race for the stream
// after the inbox row committed is retried here (bounded, jittered), not by
// the Service: the row is this delivery's and must not be gated again (that
// would count a redelivery that never happened and answer "duplicate" to the
// first arrival). The budget is raceBudget·MaxAttempts, as every lost race means
// another writer progressed. Only when it is used up does the error, which
// matches eventstore.ErrWrongVersion, reach the Service; its retry then
// finds the row "received", re-drives it and answers "duplicate". Errors
// reaching the storage match eventstore.ErrUnavailable; the row then stays
// "received" and the sweeper or the provider's retry finishes it.
func (r *TwoPhaseRecorder) Record(ctx context.Context, ev delivery.Event, d Decider) (Result, error) {
	status := StatusReceived
	if ev.Ignored() {
		status = StatusIgnored
	}
	inserted, first, err := r.inbox.Gate(ctx, ev, status)
	if err != nil {
		return Result{}, err
	}
	if !inserted {
		return r.redelivered(ctx, ev, first, d)
	}
	if ev.Ignored() {
		return Result{Outcome: Ignored}, nil
	}
	stream := ev.StreamID()
	n, err := r.decideAndAppend(ctx, ev.Provider, stream, func(h []eventstore.RecordedEvent) ([]eventstore.EventData, error) {
		return d.Decide(h, ev)
	})
	if err != nil {
		return Result{}, err
	}
	// false: a redelivery or the sweeper marked it meanwhile; same facts.
	if _, err := r.inbox.SetStatus(ctx, InboxKey{ev.Provider, ev.DedupKey}, StatusReceived, StatusApplied); err != nil {
		return Result{}, err
	}
	return Result{Outcome: Accepted, StreamID: stream, Appended: n}, nil
}

// redelivered answers a dedup key that is on record. A first arrival still
// "received" may have died before its append (or be in flight): it is
// re-driven from the inbox's copy before the answer, so a 2xx for any
// delivery of the key means its facts are in the stream. A different payload
// is kept (by Gate) and recorded as a conflict on the first one's stream,
// after the first one's facts, never instead of them.
func (r *TwoPhaseRecorder) redelivered(ctx context.Context, ev delivery.Event, first Stored, d Decider) (Result, error) {
	if first.Status == StatusReceived {
		if _, err := r.Redrive(ctx, InboxKey{ev.Provider, ev.DedupKey}, StatusReceived, d); err != nil {
			return Result{}, err
		}
	}
	res, stream := Redelivery(first, ev)
	if stream == "" {
		return res, nil
	}
	n, err := r.decideAndAppend(ctx, ev.Provider, stream, func(h []eventstore.RecordedEvent) ([]eventstore.EventData, error) {
		return d.Conflict(h, ev, first.PayloadHash)
	})
	if err != nil {
		return Result{}, err
	}
	res.Appended = n
	return res, nil
}

// Redrive implements Redriver: it applies the stored delivery of a row in
// status from (a "received" row a crash left behind, a verified IPN) and
// marks it applied. A row no longer in status from was driven by someone
// else: Duplicate, nothing done. Safe to run concurrently with the row's
// first arrival and with other redrives (see TwoPhaseRecorder).
func (r *TwoPhaseRecorder) Redrive(ctx context.Context, k InboxKey, from string, d Decider) (Result, error) {
	ev, status, err := r.inbox.Load(ctx, k)
	if err != nil {
		return Result{}, err
	}
	if status != from {
		return Result{Outcome: Duplicate}, nil
	}
	if ev.Ignored() {
		if _, err := r.inbox.SetStatus(ctx, k, from, StatusIgnored); err != nil {
			return Result{}, err
		}
		return Result{Outcome: Ignored}, nil
	}
	stream := ev.StreamID()
	n, err := r.decideAndAppend(ctx, ev.Provider, stream, func(h []eventstore.RecordedEvent) ([]eventstore.EventData, error) {
		return d.Decide(h, ev)
	})
	if err != nil {
		return Result{}, err
	}
	if _, err := r.inbox.SetStatus(ctx, k, from, StatusApplied); err != nil {
		return Result{}, err
	}
	return Result{Outcome: Accepted, StreamID: stream, Appended: n}, nil
}

// decideAndAppend reads stream, decides and appends with the version the
// decision was made on (a concrete expectation, so EventStoreDB treats a
// repeated append of the same ids as idempotent). A lost race is decided
// again on the new history, up to raceBudget·MaxAttempts times (the inbox row is
// committed, so giving up costs a re-gate; see Record). It returns how many
// events the decision held (an idempotent repeat counts them too).
func (r *TwoPhaseRecorder) decideAndAppend(ctx context.Context, providerName, stream string,
	decide func([]eventstore.RecordedEvent) ([]eventstore.EventData, error)) (int, error) {
	for attempt := 1; ; attempt++ {
		history, err := r.store.ReadStream(ctx, stream)
		if err != nil {
			return 0, unavailable(ctx, err)
		}
		decided, err := decide(history)
		if err != nil {
			return 0, err
		}
		if len(decided) == 0 {
			return 0, nil
		}
		_, err = r.store.Append(ctx, stream, eventstore.ExpectFor(len(history)), decided)
		if err == nil {
			return len(decided), nil
		}
		if !errors.Is(err, eventstore.ErrWrongVersion) {
			return 0, unavailable(ctx, err)
		}
		if attempt >= raceBudget*r.opts.MaxAttempts {
			return 0, fmt.Errorf("%s: lost the race %d times: %w", stream, attempt, err)
		}
		if r.opts.OnRetry != nil {
			r.opts.OnRetry(providerName)
		}
		// Full jitter up to base·2^attempt, capped lower than the Service's
		// pauses: there are more attempts, and each lost one means progress.
		ceiling := r.opts.BaseBackoff << min(attempt, 6)
		select {
		case <-time.After(time.Duration(rand.Int64N(int64(ceiling)) + 1)):
		case <-ctx.Done():
			return 0, fmt.Errorf("%w: %w", eventstore.ErrUnavailable, ctx.Err())
		}
	}
}

// unavailable makes a store error that only says the request's time ran out
// match eventstore.ErrUnavailable, as the adapters do for their own timeouts.
func unavailable(ctx context.Context, err error) error {
	if errors.Is(err, eventstore.ErrUnavailable) || ctx.Err() == nil {
		return err
	}
	return fmt.Errorf("%w: %w", eventstore.ErrUnavailable, err)
}

// raceBudget multiplies MaxAttempts for a delivery whose inbox row is
// already committed. Giving up there would make the provider's retry look
// like a redelivery and answer "duplicate" to a first arrival, so in practice
// the request's deadline (→ 503) ends the loop first: with the default
// 2 ms base and the 128 ms cap, 64·8 attempts take far longer than the
// ingest timeout.
const raceBudget = 64
