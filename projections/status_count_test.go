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

// walkCounter is the Postgres event store adding up the index entries its
// lag counts walk (each count walks its n, and one more when capped).
type walkCounter struct {
	*postgres.EventStore
	walked atomic.Int64
}

func (w *walkCounter) CountFeed(ctx context.Context, after, upTo eventstore.Position, limit int64) (int64, time.Time, bool, error) {
	n, oldest, capped, err := w.EventStore.CountFeed(ctx, after, upTo, limit)
	w.walked.Add(n)
	if capped {
		w.walked.Add(1)
	}
	return n, oldest, capped, err
}

// One reading of the status walks the feed's index at most once up to the
// cap, however many projections stand behind: each stretch between
// neighbouring projections is counted once (it was counted once per
// projection behind it, up to the cap each: a quarter of serve's database
// time during a settlement import, polled five times a second). The lags,
// caps and ages are those of counting each projection alone.
func TestStatusCountsEachStretchOfTheFeedOnce(t *testing.T) {
	t.Parallel()
	f := newFixture(t)
	ctx := ctxT(t)
	g := newGenerator(7)
	f.apply(ctx, g.payments(60))
	events := int64(len(f.feed(ctx)))
	require.NoError(t, f.db.EnsureCheckpoints(ctx, f.svc.Names()))
	// Projections at four places: the start, 25 events, 60 events, and
	// the start again (a shared checkpoint).
	for i, n := range []int{25, 60} {
		p := projections.NewProjector(projections.Default()[i], f.es, f.db, nil)
		projections.SetBatchSize(p, n)
		_, err := p.Step(ctx)
		require.NoError(t, err)
	}
	now := func() time.Time { return time.Date(2030, 1, 1, 0, 0, 0, 0, time.UTC) }
	for _, limit := range []int64{0, 10, 25, 35, 36, 100, events - 25, events} {
		opts := projections.StatusOptions{LagCap: limit, Now: now}
		want, err := projections.Status(ctx, readingFeed{f.es}, f.db, opts)
		require.NoError(t, err)
		w := &walkCounter{EventStore: f.es}
		got, err := projections.Status(ctx, w, f.db, opts)
		require.NoError(t, err)
		require.Len(t, got.Projections, len(want.Projections))
		for i, wp := range want.Projections {
			p := got.Projections[i]
			assert.Equal(t, []any{wp.Name, wp.Lag, wp.LagCapped, wp.LagSeconds}, []any{p.Name, p.Lag, p.LagCapped, p.LagSeconds}, "cap %d", limit)
		}
		bound := events // every stretch once: the whole feed when nothing caps it
		if limit > 0 {
			// up to the cap and one more; then, for each projection
			// beyond the cap, its first event (its age), at most two
			// entries
			bound = min(events, limit+1) + 2*int64(len(got.Projections))
		}
		assert.LessOrEqual(t, w.walked.Load(), bound, "cap %d: entries walked by one reading", limit)
	}
}
