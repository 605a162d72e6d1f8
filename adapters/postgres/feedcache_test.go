package postgres

import (
	"context"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/eventstore"
)

// fakeFeed is a feed of n events at positions {i, i} (i = 1..n) that
// counts and records the reads asked of it; block, if set, holds every read
// until closed.
type fakeFeed struct {
	mu    sync.Mutex
	n     uint64
	reads []feedKey
	block chan struct{}
}

func (f *fakeFeed) query(_ context.Context, after eventstore.Position, limit int) ([]eventstore.RecordedEvent, error) {
	f.mu.Lock()
	f.reads = append(f.reads, feedKey{after: after, limit: limit})
	n := f.n
	f.mu.Unlock()
	if f.block != nil {
		<-f.block
	}
	var out []eventstore.RecordedEvent
	for i := after.Commit + 1; i <= n && len(out) < limit; i++ {
		out = append(out, eventstore.RecordedEvent{Version: i, Position: eventstore.Position{Commit: i, Prepare: i}})
	}
	return out, nil
}

func (f *fakeFeed) grow(n uint64) {
	f.mu.Lock()
	f.n = n
	f.mu.Unlock()
}

func at(i uint64) eventstore.Position { return eventstore.Position{Commit: i, Prepare: i} }

func versions(evs []eventstore.RecordedEvent) []uint64 {
	out := []uint64{}
	for _, e := range evs {
		out = append(out, e.Version)
	}
	return out
}

func TestFeedTailAnswersLikeTheFeed(t *testing.T) {
	ctx := context.Background()
	f := &fakeFeed{n: 5}
	var tail feedTail

	evs, err := tail.read(ctx, eventstore.Start, 3, f.query)
	require.NoError(t, err)
	assert.Equal(t, []uint64{1, 2, 3}, versions(evs))

	// Inside the tail and filled by it: no query.
	evs, err = tail.read(ctx, at(1), 2, f.query)
	require.NoError(t, err)
	assert.Equal(t, []uint64{2, 3}, versions(evs))
	assert.Len(t, f.reads, 1)

	// Inside the tail, more wanted: the database is asked only after its end.
	evs, err = tail.read(ctx, at(2), 10, f.query)
	require.NoError(t, err)
	assert.Equal(t, []uint64{3, 4, 5}, versions(evs))
	assert.Equal(t, feedKey{after: at(3), limit: 9}, f.reads[1])

	// The tail grew by that answer: a reader at its end asks after it.
	f.grow(7)
	evs, err = tail.read(ctx, at(5), 10, f.query)
	require.NoError(t, err)
	assert.Equal(t, []uint64{6, 7}, versions(evs))
	assert.Equal(t, feedKey{after: at(5), limit: 10}, f.reads[2])

	// A reader behind the tail reads the database, and its older run does
	// not replace the tail.
	var later feedTail
	_, err = later.read(ctx, at(4), 10, f.query)
	require.NoError(t, err)
	evs, err = later.read(ctx, at(1), 2, f.query)
	require.NoError(t, err)
	assert.Equal(t, []uint64{2, 3}, versions(evs))
	assert.Equal(t, feedKey{after: at(1), limit: 2}, f.reads[4])
	evs, err = later.read(ctx, at(4), 3, f.query)
	require.NoError(t, err)
	assert.Equal(t, []uint64{5, 6, 7}, versions(evs))
	assert.Len(t, f.reads, 5)

	// What a reader gets is its own: changing it leaves the tail alone.
	evs[0].Version = 99
	evs, err = later.read(ctx, at(4), 1, f.query)
	require.NoError(t, err)
	assert.Equal(t, []uint64{5}, versions(evs))
}

func TestFeedTailSharesConcurrentReads(t *testing.T) {
	ctx := context.Background()
	f := &fakeFeed{n: 10, block: make(chan struct{})}
	var tail feedTail
	var wg sync.WaitGroup
	got := make([][]uint64, 4)
	for i := range got {
		wg.Go(func() {
			evs, err := tail.read(ctx, eventstore.Start, 8, f.query)
			assert.NoError(t, err)
			got[i] = versions(evs)
		})
	}
	// Let the readers queue behind the first one's query.
	for {
		tail.mu.Lock()
		c := tail.inflight[feedKey{after: eventstore.Start, limit: 8}]
		tail.mu.Unlock()
		if c != nil {
			break
		}
	}
	close(f.block)
	wg.Wait()
	for _, g := range got {
		assert.Equal(t, []uint64{1, 2, 3, 4, 5, 6, 7, 8}, g)
	}
	assert.LessOrEqual(t, len(f.reads), 4)
	assert.GreaterOrEqual(t, len(f.reads), 1)
}

func TestFeedTailIsBounded(t *testing.T) {
	ctx := context.Background()
	f := &fakeFeed{n: feedTailMax + 10}
	var tail feedTail
	for at0 := uint64(0); at0 < f.n; at0 += 1000 {
		_, err := tail.read(ctx, at(at0), 1000, f.query)
		require.NoError(t, err)
	}
	tail.mu.Lock()
	defer tail.mu.Unlock()
	assert.LessOrEqual(t, len(tail.evs), feedTailMax)
	assert.Equal(t, f.n, tail.end().Commit)
	assert.Equal(t, tail.evs[0].Position.Commit-1, tail.after.Commit)
	evs, ok := tail.cached(tail.after, 2)
	assert.True(t, ok)
	assert.Equal(t, []uint64{tail.after.Commit + 1, tail.after.Commit + 2}, versions(evs))
}
