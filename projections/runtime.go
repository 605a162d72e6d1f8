package projections

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/onceledger/onceledger/adapters/eventstore"
)

// Feed is the part of the event store projections read: the global feed.
type Feed interface {
	ReadAll(ctx context.Context, after eventstore.Position, limit int) ([]eventstore.RecordedEvent, error)
	Changes(ctx context.Context) (<-chan struct{}, error)
	Head(ctx context.Context) (eventstore.Position, error)
}

var _ Feed = eventstore.Store(nil)

// LockKind tells apart the advisory locks a projection has.
type LockKind int

const (
	// LockActive is held, for as long as it runs, by the one projector of a
	// projection that may apply batches.
	LockActive LockKind = iota + 1
	// LockPause is taken shared by every live batch transaction and
	// exclusively by a rebuild that needs the live tables to stand still.
	LockPause
	// LockRebuild keeps two rebuilds of one projection apart.
	LockRebuild
)

// Lock is a session-level lock held on a dedicated connection: it is
// released when the connection ends, so a crashed holder frees it.
type Lock interface {
	// Alive fails once the connection (and so the lock) is gone.
	Alive(ctx context.Context) error
	Release(ctx context.Context) error
}

// Checkpoint is one projection_checkpoints row.
type Checkpoint struct {
	Name          string
	Position      eventstore.Position
	Status        string
	LastError     string
	ErrorPosition *eventstore.Position
	UpdatedAt     time.Time
}

// Batch is one read-model transaction.
type Batch interface {
	Writer
	// Commit stores the checkpoint (live batches) and commits.
	Commit(ctx context.Context, to eventstore.Position) error
	Rollback(ctx context.Context) error
}

// Errors BeginLive returns when the batch must not run now; neither is a
// failure.
var (
	// ErrPaused: a rebuild holds the projection's pause lock.
	ErrPaused = errors.New("projection paused by a rebuild")
	// ErrCheckpointMoved: someone else advanced the checkpoint since it was
	// read; re-read and go on from there.
	ErrCheckpointMoved = errors.New("checkpoint moved")
)

// RuntimeDB is what the projector runtime needs from the read-model
// database.
type RuntimeDB interface {
	// TryLock takes the lock of kind for the projection, if free.
	TryLock(ctx context.Context, kind LockKind, name string) (Lock, bool, error)
	// Lock waits for the lock of kind for the projection.
	Lock(ctx context.Context, kind LockKind, name string) (Lock, error)
	// EnsureCheckpoints creates missing checkpoint rows (at the start).
	EnsureCheckpoints(ctx context.Context, names []string) error
	Checkpoint(ctx context.Context, name string) (Checkpoint, error)
	Checkpoints(ctx context.Context) ([]Checkpoint, error)
	SetStatus(ctx context.Context, name, status string) error
	// RecordPoison stores the error and the position of the event the
	// projection stopped at, and sets its status to stopped.
	RecordPoison(ctx context.Context, name string, at eventstore.Position, msg string) error
	// BeginLive starts a live batch of the projection: it fails with
	// ErrPaused if honorPause and a rebuild paused the projection, and with
	// ErrCheckpointMoved if the checkpoint is no longer at from (it locks
	// the checkpoint row, so batches of one projection are serial).
	BeginLive(ctx context.Context, name string, from eventstore.Position, honorPause bool) (Batch, error)
}

// Runtime settings; variables so that tests can shorten them.
var (
	liveBatchSize = 500
	// behindFactor multiplies the batch of a projector that is behind
	// (its last batch was full): a backlog, a settlement import writing
	// faster than the projectors follow, is caught up in batches of
	// liveBatchSize·behindFactor events, each still one transaction with
	// its checkpoint, so that the per-batch costs (the transaction and its
	// WAL flush, the checkpoint, the feed query, one statement per table)
	// are paid a quarter as often per event. 2,000 events: within half of
	// the shared feed's run (postgres.feedTailMax), so that the projectors
	// behind one another still share their reads.
	behindFactor    = 4
	pollInterval    = 200 * time.Millisecond
	lockRetry       = time.Second
	backoffMin      = 100 * time.Millisecond
	backoffMax      = 5 * time.Second
	finalWriteLimit = 5 * time.Second
	// stepGap spaces a projector's batches while it keeps up: a wake-up
	// less than stepGap after the last batch started waits for the rest of
	// it. Under load every append commit notifies; one batch per
	// notification cost each projector a transaction (and its WAL flush)
	// for a handful of events, hundreds per second, competing with ingest
	// for the same cores. Gathering for a few ms bounds them (20 per second
	// per projection) for at most that much lag. A full batch (a backlog)
	// goes on at once.
	stepGap = 50 * time.Millisecond
)

// Projector runs one projection live: it reads the feed after the
// projection's checkpoint and applies batches, each batch and its new
// checkpoint in one transaction, so a crash replays at most one batch.
type Projector struct {
	batchSize int
	proj      Projection
	feed      Feed
	db        RuntimeDB
	log       *slog.Logger

	// at is the checkpoint as this projector's last batch left it, when
	// known: the next batch starts there without reading it back (a round
	// trip per batch). BeginLive still checks it under the row lock, and
	// ErrCheckpointMoved (a rebuild's swap, another instance's step) makes
	// it read again.
	at    eventstore.Position
	atSet bool
	// behind: the last batch read was full, so more is waiting; the next
	// batch is batchSize·behindFactor events (the bulk path).
	behind bool
}

// NewProjector returns a projector of p. log may be nil.
func NewProjector(p Projection, feed Feed, db RuntimeDB, log *slog.Logger) *Projector {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return &Projector{batchSize: liveBatchSize, proj: p, feed: feed, db: db, log: log.With("projection", p.Name())}
}

// Name is the projection's name.
func (p *Projector) Name() string { return p.proj.Name() }

// Run projects until ctx ends (then it returns nil) or the projection hits
// a poison event (then it returns the *PoisonError, after recording it in
// projection_checkpoints; do not restart it in a loop: it would stop at the
// same event again). Only one projector per projection applies batches
// across all processes: the others wait for the active lock and retry every
// second, so one of them takes over when the holder stops or its connection
// dies.
func (p *Projector) Run(ctx context.Context) error {
	name := p.proj.Name()
	if err := p.retry(ctx, func() error { return p.db.EnsureCheckpoints(ctx, []string{name}) }); err != nil {
		return nil // ctx ended
	}
	for {
		lock, ok, err := p.db.TryLock(ctx, LockActive, name)
		if err != nil && ctx.Err() == nil {
			p.log.Warn("projection lock", "err", err)
		}
		if ok {
			err = p.runLocked(ctx, lock)
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finalWriteLimit)
			// A clean stop, while still holding the lock, says so; after a
			// lost lock another projector may be live already.
			if ctx.Err() != nil {
				if serr := p.db.SetStatus(rctx, name, StatusStopped); serr != nil {
					p.log.Warn("set status", "err", serr)
				}
			}
			_ = lock.Release(rctx)
			cancel()
			if ctx.Err() != nil {
				return nil
			}
			if _, poisoned := errors.AsType[*PoisonError](err); poisoned {
				return err
			}
			p.log.Warn("projector lost its lock; retrying", "err", err)
		}
		if !sleep(ctx, lockRetry) {
			return nil
		}
	}
}

// runLocked is the loop of the active projector.
func (p *Projector) runLocked(ctx context.Context, lock Lock) error {
	ctx, cancel := context.WithCancel(ctx) // ends the change listener with the turn
	defer cancel()
	name := p.proj.Name()
	p.log.Info("projector active")
	if err := p.db.SetStatus(ctx, name, StatusLive); err != nil {
		return err
	}
	// Without a change feed the poll alone keeps the projection going.
	changes, err := p.feed.Changes(ctx)
	if err != nil {
		p.log.Warn("change notifications unavailable; polling", "err", err)
	}
	ticker := time.NewTicker(pollInterval)
	defer ticker.Stop()
	backoff := backoffMin
	// The lock's connection is checked once per poll interval, not before
	// every batch (a round trip each): a batch run after the lock was lost
	// is still correct (BeginLive locks the checkpoint row), only no longer
	// alone.
	var alive, started time.Time
	for {
		if time.Since(alive) >= pollInterval {
			if err := lock.Alive(ctx); err != nil {
				return fmt.Errorf("active lock lost: %w", err)
			}
			alive = time.Now()
		}
		started = time.Now()
		_, err := p.step(ctx)
		var pe *PoisonError
		switch {
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.As(err, &pe):
			p.log.Error("projection stopped at a poison event", "err", err)
			werr := p.retry(ctx, func() error {
				return p.db.RecordPoison(ctx, name, pe.Event.Position, pe.Error())
			})
			if werr != nil {
				return werr
			}
			return pe
		case errors.Is(err, ErrPaused), errors.Is(err, ErrCheckpointMoved):
			backoff = backoffMin
			if !sleep(ctx, pollInterval) {
				return ctx.Err()
			}
			continue
		case err != nil:
			p.log.Warn("projection batch failed; retrying", "err", err, "backoff", backoff)
			if !sleep(ctx, backoff) {
				return ctx.Err()
			}
			backoff = min(backoff*2, backoffMax)
			continue
		}
		backoff = backoffMin
		if p.behind {
			continue // more is waiting
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case _, ok := <-changes:
			if !ok {
				changes = nil // closed: keep polling
			}
		case <-ticker.C:
		}
		if wait := stepGap - time.Since(started); wait > 0 && !sleep(ctx, wait) {
			return ctx.Err()
		}
	}
}

// Step applies the next batch after the checkpoint and returns the number
// of events applied. It is exported for the CLI's one-shot catch-up and for
// tests; it does not take the active lock (the checkpoint row lock keeps
// concurrent steps correct).
func (p *Projector) Step(ctx context.Context) (int, error) {
	p.atSet = false // the CLI and tests step a projector others may move
	return p.step(ctx)
}

// step is Step from the checkpoint the last batch left, when known.
func (p *Projector) step(ctx context.Context) (int, error) {
	if !p.atSet {
		cp, err := p.db.Checkpoint(ctx, p.proj.Name())
		if err != nil {
			return 0, err
		}
		p.at, p.atSet = cp.Position, true
	}
	size := p.batchSize
	if p.behind {
		size *= behindFactor
	}
	evs, err := p.feed.ReadAll(ctx, p.at, size)
	p.behind = err == nil && len(evs) == size
	if err != nil || len(evs) == 0 {
		// Idle (or failing): read the row next time, so that a checkpoint
		// moved back by someone else is seen without waiting for an event.
		p.atSet = false
		return 0, err
	}
	n, err := applyLive(ctx, p.db, p.proj, p.at, evs, true)
	if err != nil {
		p.atSet = false // where it stands now is the checkpoint row's to say
		p.behind = false
		return n, err
	}
	p.at = evs[len(evs)-1].Position
	return n, nil
}

// applyLive applies evs (the feed right after from) to the live tables of
// proj in one transaction. On a permanent failure of a batch of several
// events it applies them one by one, so that the events before the culprit
// are committed and the PoisonError names the culprit.
func applyLive(ctx context.Context, db RuntimeDB, proj Projection, from eventstore.Position, evs []eventstore.RecordedEvent, honorPause bool) (int, error) {
	envs, derr := decode(proj.Name(), evs)
	if len(envs) > 0 {
		err := applyLiveEnvs(ctx, db, proj, from, envs, honorPause)
		if errors.Is(err, ErrPoison) && len(envs) > 1 {
			done := 0
			for _, env := range envs {
				if err := applyLiveEnvs(ctx, db, proj, from, []Envelope{env}, honorPause); err != nil {
					return done, err
				}
				from = env.Recorded.Position
				done++
			}
			err = nil
		}
		if err != nil {
			return 0, err
		}
	}
	return len(envs), derr
}

func applyLiveEnvs(ctx context.Context, db RuntimeDB, proj Projection, from eventstore.Position, envs []Envelope, honorPause bool) (err error) {
	b, err := db.BeginLive(ctx, proj.Name(), from, honorPause)
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = b.Rollback(context.WithoutCancel(ctx))
		}
		err = poisonAt(proj.Name(), envs, err)
	}()
	if err := safeApply(ctx, proj, b, envs); err != nil {
		return err
	}
	return b.Commit(ctx, envs[len(envs)-1].Recorded.Position)
}

// safeApply turns a panic in domain code into a permanent failure: it would
// panic again on every retry.
func safeApply(ctx context.Context, proj Projection, w Writer, envs []Envelope) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("%w: panic: %v", ErrPoison, r)
		}
	}()
	return proj.Apply(ctx, w, envs)
}

// poisonAt turns a permanent failure into a *PoisonError naming the batch's
// event (the first one, when the batch has several: the caller then retries
// them one by one to find the culprit).
func poisonAt(name string, envs []Envelope, err error) error {
	if err == nil || !errors.Is(err, ErrPoison) {
		return err
	}
	if _, ok := errors.AsType[*PoisonError](err); ok {
		return err
	}
	return &PoisonError{Projection: name, Event: envs[0].Recorded, Err: err}
}

// retry runs f until it succeeds or ctx ends, with backoff.
func (p *Projector) retry(ctx context.Context, f func() error) error {
	backoff := backoffMin
	for {
		err := f()
		if err == nil {
			return nil
		}
		p.log.Warn("retrying", "err", err)
		if !sleep(ctx, backoff) {
			return ctx.Err()
		}
		backoff = min(backoff*2, backoffMax)
	}
}

// sleep waits d; false if ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
