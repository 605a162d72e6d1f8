package ingest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/domain/delivery"
)

// Options tune the retry loop. Zero values take the defaults.
type Options struct {
	// MaxAttempts bounds how often a delivery that lost the race for its
	// stream is decided again. Default 8.
	MaxAttempts int
	// BaseBackoff is the first retry's mean pause; it doubles per attempt,
	// with full jitter, so racing writers spread out. Default 2ms.
	BaseBackoff time.Duration
	// OnRetry, if set, is called once per lost race (metrics).
	OnRetry func(provider string)
}

// Service records verified deliveries exactly once.
type Service struct {
	rec  Recorder
	dec  Decider
	opts Options
}

// New wires a Service. The decider is normally PaymentDecider{}.
func New(rec Recorder, dec Decider, opts Options) *Service {
	if opts.MaxAttempts <= 0 {
		opts.MaxAttempts = 8
	}
	if opts.BaseBackoff <= 0 {
		opts.BaseBackoff = 2 * time.Millisecond
	}
	return &Service{rec: rec, dec: dec, opts: opts}
}

// ErrContention is returned when a delivery lost the race for its stream
// MaxAttempts times in a row; nothing was recorded and the provider's retry
// will try again (webhooks answer 503).
var ErrContention = errors.New("stream contention: too many concurrent writers")

// Ingest validates ev and records it. It returns only after the facts are
// durable, or with an error, in which case nothing of this attempt is
// acknowledged.
func (s *Service) Ingest(ctx context.Context, ev delivery.Event) (Result, error) {
	if err := ev.Validate(); err != nil {
		return Result{}, err
	}
	for attempt := 1; ; attempt++ {
		res, err := s.rec.Record(ctx, ev, s.dec)
		if err == nil {
			return res, nil
		}
		if !errors.Is(err, eventstore.ErrWrongVersion) {
			return Result{}, err
		}
		if attempt >= s.opts.MaxAttempts {
			return Result{}, fmt.Errorf("%w: %s after %d attempts: %v", ErrContention, ev.StreamID(), attempt, err)
		}
		if s.opts.OnRetry != nil {
			s.opts.OnRetry(ev.Provider)
		}
		// Full jitter: a uniformly random pause up to base·2^attempt.
		ceiling := s.opts.BaseBackoff << min(attempt, 8)
		pause := time.Duration(rand.Int64N(int64(ceiling)) + 1)
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return Result{}, fmt.Errorf("%w: %w", eventstore.ErrUnavailable, ctx.Err())
		}
	}
}
