package projections_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/postgres"
	"github.com/onceledger/onceledger/projections"
)

var _ projections.FeedCounter = (*postgres.EventStore)(nil)

// readingFeed is a feed without a count: Status reads its events.
type readingFeed struct{ inner projections.Feed }

func (r readingFeed) ReadAll(ctx context.Context, after eventstore.Position, limit int) ([]eventstore.RecordedEvent, error) {
	return r.inner.ReadAll(ctx, after, limit)
}
func (r readingFeed) Changes(ctx context.Context) (<-chan struct{}, error) {
	return r.inner.Changes(ctx)
}
func (r readingFeed) Head(ctx context.Context) (eventstore.Position, error) { return r.inner.Head(ctx) }

// countingStore is the Postgres event store counting the events read.
type countingStore struct {
	*postgres.EventStore
	read atomic.Int64
}

func (c *countingStore) ReadAll(ctx context.Context, after eventstore.Position, limit int) ([]eventstore.RecordedEvent, error) {
	evs, err := c.EventStore.ReadAll(ctx, after, limit)
	c.read.Add(int64(len(evs)))
	return evs, err
}

// TestStatusCountsLagsWithoutReadingThem: on the Postgres event store the
// projections' lags are counted on the feed's index (CountFeed), not by
// reading every event behind each projection on every poll, and they are
// what reading them says: the same lags, caps and ages (issue 40 item 4:
// a poll of /v1/projections cost as much as a catch-up).
func TestStatusCountsLagsWithoutReadingThem(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := ctxT(t)
	g := newGenerator(5)
	f.apply(ctx, g.payments(60))
	events := len(f.feed(ctx))
	require.NoError(t, f.db.EnsureCheckpoints(ctx, f.svc.Names()))
	// Projections at three places: the start, part way, the head.
	ledger := projections.NewProjector(projections.Ledger(), f.es, f.db, nil)
	projections.SetBatchSize(ledger, 25)
	_, err := ledger.Step(ctx)
	require.NoError(t, err)
	pay := projections.NewProjector(projections.Default()[1], f.es, f.db, nil)
	projections.SetBatchSize(pay, events)
	_, err = pay.Step(ctx)
	require.NoError(t, err)

	now := func() time.Time { return time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC) }
	store := &countingStore{EventStore: f.es}
	for _, limit := range []int64{0, 10, 25, int64(events)} {
		opts := projections.StatusOptions{LagCap: limit, Now: now}
		want, err := projections.Status(ctx, readingFeed{f.es}, f.db, opts)
		require.NoError(t, err)
		got, err := projections.Status(ctx, store, f.db, opts)
		require.NoError(t, err)
		assert.Equal(t, want.Head, got.Head)
		require.Len(t, got.Projections, len(want.Projections))
		for i, w := range want.Projections {
			p := got.Projections[i]
			assert.Equal(t, []any{w.Name, w.Lag, w.LagCapped, w.LagSeconds}, []any{p.Name, p.Lag, p.LagCapped, p.LagSeconds}, "cap %d", limit)
		}
	}
	assert.Zero(t, store.read.Load(), "events read to count the lags")
}
