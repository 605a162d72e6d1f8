package ingest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/onceledger/onceledger/adapters/command"
	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/domain/delivery"
)

// Options tune the retry of a lost race for a stream. Zero values take the
// defaults.
type Options struct {
	// MaxAttempts bounds how often a unit of work that lost the race for its
	// stream is run again. Default 8.
	MaxAttempts int
	// BaseBackoff is the first retry's mean pause; it doubles per attempt,
	// with full jitter, so racing writers spread out. Default 2ms.
	BaseBackoff time.Duration
	// OnRetry, if set, is called once per lost race (metrics).
	OnRetry func(provider string)
	// Hold bounds the candidates of held deliveries (see Hold).
	Hold HoldOptions
	// MaxDriveAttempts bounds how often a worker drives a row whose facts
	// cannot be recorded before it marks the row failed (see Worker).
	// Default 10.
	MaxDriveAttempts int
	// Batch tunes group commit: concurrent first arrivals sharing one unit
	// of work, on a journal that can (BatchJournal). On by default.
	Batch BatchOptions
}

func (o Options) withDefaults() Options {
	if o.MaxAttempts <= 0 {
		o.MaxAttempts = 8
	}
	if o.BaseBackoff <= 0 {
		o.BaseBackoff = 2 * time.Millisecond
	}
	if o.MaxDriveAttempts <= 0 {
		o.MaxDriveAttempts = 10
	}
	o.Hold = o.Hold.withDefaults()
	return o
}

// Service records verified deliveries exactly once.
type Service struct {
	journal Journal
	dec     Decider
	opts    Options
	batch   *batcher // nil: every delivery its own unit of work
	folds   *folds   // folds of long streams kept between units (folds.go)
}

// New wires a Service over journal. The decider is normally PaymentDecider{}.
// First arrivals share units of work (group commit) when the journal can
// and opts.Batch does not turn it off.
func New(journal Journal, dec Decider, opts Options) *Service {
	s := &Service{journal: journal, dec: dec, opts: opts.withDefaults(), folds: &folds{}}
	s.batch = newBatcher(s, journal, s.opts.Batch)
	return s
}

// ErrContention is returned when a delivery lost the race for its stream
// MaxAttempts times in a row; nothing was recorded and the provider's retry
// will try again (webhooks answer 503).
var ErrContention = errors.New("stream contention: too many concurrent writers")

// Ingest validates ev and records it. It returns only after the facts are
// durable, or with an error, in which case nothing of this attempt is
// acknowledged.
func (s *Service) Ingest(ctx context.Context, ev delivery.Event) (Result, error) {
	return s.record(ctx, ev, false)
}

func (s *Service) record(ctx context.Context, ev delivery.Event, held bool) (Result, error) {
	if err := ev.Validate(); err != nil {
		return Result{}, err
	}
	if !held && s.batch != nil {
		res, alone, err := s.batch.record(ctx, ev)
		if !alone {
			return res, err
		}
	}
	return s.recordAlone(ctx, ev, held)
}

// recordAlone records ev in a unit of work of its own, run again when it
// loses the race for its stream.
func (s *Service) recordAlone(ctx context.Context, ev delivery.Event, held bool) (Result, error) {
	return s.retry(ctx, ev.Provider, ev.StreamID(), func() (res Result, err error) {
		uctx, pending := withPending(ctx)
		err = s.journal.Do(ctx, func(tx Tx) error {
			res, err = s.recordOnce(uctx, tx, ev, held)
			return err
		})
		if err == nil {
			s.folds.keepAll(pending)
		}
		return res, err
	})
}

// Redrive applies the stored delivery of a row in status from (a "received"
// row a crash left behind, a verified held delivery) and marks it applied.
// A row no longer in status from was driven by someone else: Duplicate,
// nothing done. Safe to run concurrently with the row's first arrival and
// with other redrives.
func (s *Service) Redrive(ctx context.Context, k InboxKey, from string) (Result, error) {
	return s.retry(ctx, k.Provider, k.Provider+"/"+k.DedupKey, func() (res Result, err error) {
		err = s.journal.Do(ctx, func(tx Tx) error {
			res, err = s.redrive(ctx, tx, k, from)
			return err
		})
		return res, err
	})
}

// recordOnce is the record algorithm, one unit of work:
//
//  1. gate: insert the inbox row (the primary key judges first arrivals)
//     and, for a first arrival, read its stream;
//  2. decide on that history and append at the version read;
//  3. set the row's status, where the journal did not write it final at once.
//
// An atomic journal writes the row "applied" at the gate: nothing sees it
// before the commit, and a failure rolls it back with the append. A
// two-phase journal commits it "received", so a crash before step 3 leaves a
// row that a redelivery or the sweeper drives again.
//
// Driving a row twice, even concurrently, records its facts once: the payment
// aggregate remembers the dedup keys it has applied, so a decision on a
// history that already holds them is empty; two decisions on the same history
// carry the same deterministic event ids at the same expected version (the
// store takes the second as an idempotent no-op); and a decision on a stale
// history fails its expected-version check and is decided again.
func (s *Service) recordOnce(ctx context.Context, tx Tx, ev delivery.Event, held bool) (Result, error) {
	status, read := StatusReceived, ev.StreamID()
	switch {
	case held:
		status, read = StatusUnverified, ""
	case ev.Ignored():
		status, read = StatusIgnored, ""
	case s.journal.Atomic():
		status = StatusApplied
	}
	tail := read != "" && s.folds.tails(tx, read)
	if tail {
		read = "" // the kept fold reads what it lacks (foldedAct)
	}
	g, err := tx.Gate(ctx, ev, status, read)
	if err != nil {
		return Result{}, err
	}
	if !g.Inserted {
		return s.redelivered(ctx, tx, ev, g.First, held)
	}
	switch {
	case held:
		return Result{Outcome: Accepted}, nil
	case ev.Ignored():
		return Result{Outcome: Ignored}, nil
	}
	gated := &g
	if tail {
		gated = nil
	}
	res, err := s.apply(ctx, tx, ev, gated)
	if err != nil {
		return Result{}, err
	}
	if status != StatusApplied {
		// false: a redelivery or the sweeper marked it meanwhile; same facts.
		if _, err := tx.SetStatus(ctx, InboxKey{ev.Provider, ev.DedupKey}, status, StatusApplied); err != nil {
			return Result{}, err
		}
	}
	return res, nil
}

// redelivered answers a dedup key that is on record: always a duplicate.
// A first arrival still "received" may have died before its append (or be
// in flight): it is re-driven from the inbox's copy before the answer, so a
// 2xx for any delivery of the key means its facts are in the stream.
// Different facts are kept for reconciliation and recorded as a conflict on
// the first one's stream, after the first one's facts, never instead of
// them; the same facts in other bytes are a plain duplicate.
func (s *Service) redelivered(ctx context.Context, tx Tx, ev delivery.Event, first Stored, held bool) (Result, error) {
	if first.Status == StatusReceived {
		if _, err := s.redrive(ctx, tx, InboxKey{ev.Provider, ev.DedupKey}, StatusReceived); err != nil {
			return Result{}, err
		}
	}
	res, stream := Redelivery(first, ev)
	if res.Conflict {
		if err := tx.KeepConflict(ctx, ev); err != nil {
			return Result{}, err
		}
	}
	if stream == "" || held {
		// A held payload is unverified: it is kept, never a fact on a stream.
		return res, nil
	}
	n, err := s.act(ctx, tx, ev.Provider, stream, func(h []eventstore.RecordedEvent) ([]eventstore.EventData, error) {
		return s.dec.Conflict(h, ev, first.PayloadHash)
	})
	if err != nil {
		return Result{}, err
	}
	res.Appended = n
	return res, nil
}

// Redelivery is what a redelivery of a recorded dedup key means: the answer
// (always a duplicate; a conflict when its normalized facts differ from the
// first arrival's, whatever its bytes), and the stream a conflict fact must
// be appended to, "" when there is nothing to append.
func Redelivery(first Stored, ev delivery.Event) (Result, string) {
	res := Result{Outcome: Duplicate, StreamID: first.StreamID}
	if first.FactsHash == ev.FactsHash() || first.FactsHash == ev.FactsHashBeforeFailureAmounts() ||
		first.FactsHash == ev.FactsHashBeforeCoupons() {
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

// redrive applies the stored delivery of row k if it is in status from.
func (s *Service) redrive(ctx context.Context, tx Tx, k InboxKey, from string) (Result, error) {
	ev, status, err := tx.Load(ctx, k)
	if err != nil {
		return Result{}, err
	}
	if status != from {
		return Result{Outcome: Duplicate}, nil
	}
	if real, ok := CandidateOf(k.DedupKey); ok && from == StatusUnverified {
		return s.promote(ctx, tx, k, real, ev)
	}
	if ev.Ignored() {
		if _, err := tx.SetStatus(ctx, k, from, StatusIgnored); err != nil {
			return Result{}, err
		}
		return Result{Outcome: Ignored}, nil
	}
	res, err := s.apply(ctx, tx, ev, nil)
	if err != nil {
		return Result{}, err
	}
	if _, err := tx.SetStatus(ctx, k, from, StatusApplied); err != nil {
		return Result{}, err
	}
	return res, nil
}

// apply records ev's facts: decided as a first arrival on its stream and
// appended (act). With gated (the gate's answer, which read the stream in
// the same unit), the first decision is made on its History.
func (s *Service) apply(ctx context.Context, tx Tx, ev delivery.Event, gated *Gated) (Result, error) {
	stream := ev.StreamID()
	decide := func(h []eventstore.RecordedEvent) ([]eventstore.EventData, error) { return s.dec.Decide(h, ev) }
	r := s.raceRetry(ev.Provider, stream)
	n, how, err := s.foldedAct(ctx, tx, ev, gated)
	switch {
	case how == foldLostRace:
		// The fold's append was this unit's first attempt (err the lost
		// race): the others decide on the stream as it is now.
		if r.Attempts <= 1 {
			if r.GiveUp != nil {
				err = r.GiveUp(1, err)
			}
			return Result{}, err
		}
		if r.Pause != nil {
			if err := r.Pause(ctx, 1); err != nil {
				return Result{}, err
			}
		}
		r.Attempts--
		n, err = command.Act(ctx, tx, stream, decide, r)
	case err != nil:
		return Result{}, err
	case how == notFolded && gated != nil:
		n, err = command.ActOn(ctx, tx, stream, gated.History, decide, r)
	case how == notFolded:
		n, err = command.Act(ctx, tx, stream, decide, r)
	}
	if err != nil {
		return Result{}, err
	}
	return Result{Outcome: Accepted, StreamID: stream, Appended: n}, nil
}

// act decides on stream and appends the decision at the version it was
// decided on, by the ledger's one write protocol (command.Act), met with
// this unit's retry of a lost race (raceRetry). It returns how many events
// the decision held (an idempotent repeat counts them too).
func (s *Service) act(ctx context.Context, tx Tx, providerName, stream string, decide command.Decision) (int, error) {
	return command.Act(ctx, tx, stream, decide, s.raceRetry(providerName, stream))
}

// raceRetry is how a lost race inside a unit of work is met. The append is
// at a concrete expectation, so EventStoreDB treats a repeated append of the
// same ids as idempotent.
//
// In an atomic journal a lost race ends the unit (Postgres rolls the whole
// transaction back) and retry runs it again. In a two-phase journal the
// inbox row is already committed and is this delivery's: giving up would
// make the retry look like a redelivery and answer "duplicate" to a first
// arrival, so the race is decided again here, up to raceBudget·MaxAttempts
// times (each lost race means another writer progressed). Only then does
// the error reach retry, which finds the row "received", re-drives it and
// answers "duplicate".
func (s *Service) raceRetry(providerName, stream string) command.Retry {
	if s.journal.Atomic() {
		return command.Retry{Attempts: 1}
	}
	return command.Retry{
		Attempts: raceBudget * s.opts.MaxAttempts,
		Pause: func(ctx context.Context, attempt int) error {
			return s.backoff(ctx, providerName, attempt, 6)
		},
		GiveUp: func(attempts int, err error) error {
			return fmt.Errorf("%s: lost the race %d times: %w", stream, attempts, err)
		},
	}
}

// retry runs a unit of work until it does not lose the race for its stream,
// at most MaxAttempts times.
func (s *Service) retry(ctx context.Context, providerName, what string, unit func() (Result, error)) (Result, error) {
	var res Result
	err := command.Retry{
		Attempts: s.opts.MaxAttempts,
		Pause: func(ctx context.Context, attempt int) error {
			return s.backoff(ctx, providerName, attempt, 8)
		},
		GiveUp: func(attempts int, err error) error {
			return fmt.Errorf("%w: %s after %d attempts: %v", ErrContention, what, attempts, err)
		},
	}.Run(ctx, func(int) (err error) {
		res, err = unit()
		return err
	})
	if err != nil {
		return Result{}, err
	}
	return res, nil
}

// backoff counts a lost race and pauses with full jitter: a uniformly
// random pause up to base·2^min(attempt, maxShift). The retry inside a
// two-phase unit caps lower: it has more attempts, and each lost one means
// progress.
func (s *Service) backoff(ctx context.Context, providerName string, attempt, maxShift int) error {
	if s.opts.OnRetry != nil {
		s.opts.OnRetry(providerName)
	}
	ceiling := s.opts.BaseBackoff << min(attempt, maxShift)
	select {
	case <-time.After(time.Duration(rand.Int64N(int64(ceiling)) + 1)):
		return nil
	case <-ctx.Done():
		return fmt.Errorf("%w: %w", eventstore.ErrUnavailable, ctx.Err())
	}
}

// raceBudget multiplies MaxAttempts for a delivery whose inbox row is
// already committed (two-phase). Giving up there would make the provider's
// retry look like a redelivery and answer "duplicate" to a first arrival, so
// in practice the request's deadline (→ 503) ends the loop first: with the
// default 2 ms base and the 128 ms cap, 64·8 attempts take far longer than
// the ingest timeout.
const raceBudget = 64
