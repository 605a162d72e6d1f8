package outbound

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/onceledger/onceledger/adapters/eventstore"
)

// Publisher sends events to a broker and returns once the broker holds
// every one (adapters/jetstream).
type Publisher interface {
	Publish(ctx context.Context, evs []Event) error
}

// Checkpoint stores how far a relay has published.
type Checkpoint interface {
	Load(ctx context.Context) (eventstore.Position, error)
	Save(ctx context.Context, p eventstore.Position) error
}

// Relay is the projector that publishes the committed feed: it reads the
// events after its checkpoint, publishes them, and advances the checkpoint
// only once every one is acknowledged. So nothing is published that is not
// committed, and a crash re-publishes at most the batch after the
// checkpoint (with the same ids, which the broker's deduplication drops),
// never skips.
type Relay struct {
	Feed       *Feed
	Publisher  Publisher
	Checkpoint Checkpoint
	Batch      int // events per publish; default DefaultLimit
	Log        *slog.Logger
}

// relayRetry is the pause after a failed read, publish or save.
const relayRetry = time.Second

// Run publishes until ctx ends.
func (r *Relay) Run(ctx context.Context) error {
	log := r.Log
	if log == nil {
		log = slog.Default()
	}
	at, err := r.Checkpoint.Load(ctx)
	if err != nil {
		return fmt.Errorf("outbound relay: load checkpoint: %w", err)
	}
	for ctx.Err() == nil {
		next, err := r.Step(ctx, at, 10*time.Second)
		if err != nil {
			if ctx.Err() == nil {
				log.Warn("outbound relay: retrying", "error", err, "at", at.String())
				sleep(ctx, relayRetry)
			}
			continue
		}
		at = next
	}
	return nil
}

// Step publishes one page after at (waiting up to wait for one) and saves
// the checkpoint after it; it returns the new position.
func (r *Relay) Step(ctx context.Context, at eventstore.Position, wait time.Duration) (eventstore.Position, error) {
	page, err := r.Feed.Page(ctx, Query{After: at, Limit: r.Batch, Wait: wait})
	if err != nil {
		return at, err
	}
	if len(page.Events) > 0 {
		if err := r.Publisher.Publish(ctx, page.Events); err != nil {
			return at, err
		}
	}
	if page.Next == at {
		return at, nil
	}
	if err := r.Checkpoint.Save(ctx, page.Next); err != nil {
		return at, err
	}
	return page.Next, nil
}

func sleep(ctx context.Context, d time.Duration) {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
	case <-ctx.Done():
	}
}
