package operations

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/onceledger/onceledger/adapters/command"
	"github.com/onceledger/onceledger/domain/expectation"
	"github.com/onceledger/onceledger/domain/payment"
)

// Expectations are the commands on expected payments (domain/expectation):
// the writer's register and cancel, and the process manager's capture,
// failure and clock. Each decides on the expectation's stream folded at
// its version and appends at that version (act.go): two registrations of
// one reference at once record one, a capture seen twice pays once.
type Expectations struct {
	store EventStore
	now   func() time.Time
}

// NewExpectations returns the expectation commands over store, with the
// clock now (nil means time.Now).
func NewExpectations(store EventStore, now func() time.Time) *Expectations {
	if now == nil {
		now = time.Now
	}
	return &Expectations{store: store, now: now}
}

// Register registers an expected payment, or finds the one registered
// with the same amount and currency (created is false); errors wrap
// expectation.ErrInvalid, ErrConflict, ErrActorRequired or ErrContention.
func (s *Expectations) Register(ctx context.Context, c expectation.RegisterCommand) (x expectation.Expectation, created bool, err error) {
	if c.Now.IsZero() {
		c.Now = s.now()
	}
	if _, err := c.Validate(); err != nil {
		return expectation.Expectation{}, false, err
	}
	id := expectation.IDOf(c.Provider, c.Reference)
	evs, x, err := s.act(ctx, id, func(h []payment.Event) ([]payment.Event, error) {
		return expectation.DecideRegister(h, c)
	})
	if err != nil {
		return expectation.Expectation{}, false, fmt.Errorf("register %s %s: %w", c.Provider, c.Reference, err)
	}
	return x, len(evs) > 0, nil
}

// Cancel cancels an expectation not yet paid; errors wrap
// expectation.ErrNotFound, ErrPaid, ErrActorRequired or ErrContention.
func (s *Expectations) Cancel(ctx context.Context, id uuid.UUID, actor, note string) (expectation.Expectation, error) {
	_, x, err := s.act(ctx, id, func(h []payment.Event) ([]payment.Event, error) {
		return expectation.DecideCancel(h, expectation.CancelCommand{Actor: actor, Note: note, Now: s.now()})
	})
	if err != nil {
		return expectation.Expectation{}, fmt.Errorf("cancel %s: %w", id, err)
	}
	return x, nil
}

// Get folds the expectation's stream as it is now; ErrNotFound when none.
func (s *Expectations) Get(ctx context.Context, id uuid.UUID) (expectation.Expectation, error) {
	recs, err := s.store.ReadStream(ctx, expectation.StreamID(id))
	if err != nil {
		return expectation.Expectation{}, err
	}
	h, err := command.Decode(recs, expectation.Decode)
	if err != nil {
		return expectation.Expectation{}, err
	}
	x := expectation.Fold(h)
	if !x.Exists() {
		return x, fmt.Errorf("%w: %s", expectation.ErrNotFound, id)
	}
	return x, nil
}

// Capture records that a capture was seen for the expectation (paid, late,
// amount_mismatch); nothing when it is paid, canceled or unknown. It
// reports whether it appended.
func (s *Expectations) Capture(ctx context.Context, id uuid.UUID, c expectation.CaptureSeen) (bool, error) {
	evs, _, err := s.act(ctx, id, func(h []payment.Event) ([]payment.Event, error) {
		return expectation.DecideCapture(h, c), nil
	})
	return len(evs) > 0, err
}

// Failure records a failed attempt of a waiting expectation.
func (s *Expectations) Failure(ctx context.Context, id uuid.UUID, f expectation.FailureSeen) (bool, error) {
	evs, _, err := s.act(ctx, id, func(h []payment.Event) ([]payment.Event, error) {
		return expectation.DecideFailure(h, f), nil
	})
	return len(evs) > 0, err
}

// Clock decides the expectation's overdue at now.
func (s *Expectations) Clock(ctx context.Context, id uuid.UUID, now time.Time) (bool, error) {
	evs, _, err := s.act(ctx, id, func(h []payment.Event) ([]payment.Event, error) {
		return expectation.DecideClock(h, now), nil
	})
	return len(evs) > 0, err
}

// act decides on the expectation's stream and appends the decision; it
// returns the decided events and the expectation after them.
func (s *Expectations) act(ctx context.Context, id uuid.UUID, decide func([]payment.Event) ([]payment.Event, error)) ([]payment.Event, expectation.Expectation, error) {
	var after expectation.Expectation
	evs, err := act(ctx, s.store, expectation.StreamID(id), expectation.Decode, expectation.Encode, func(h []payment.Event) ([]payment.Event, error) {
		d, err := decide(h)
		if err != nil {
			return nil, err
		}
		after = expectation.Fold(append(h[:len(h):len(h)], d...))
		return d, nil
	})
	return evs, after, err
}
