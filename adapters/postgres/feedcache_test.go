package postgres

import (
	"context"
	"runtime"
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
	rows  int // events returned, all reads together
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
	f.mu.Lock()
	f.rows += len(out)
	f.mu.Unlock()
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

	// Inside the tail, more wanted: the database is asked only after its
	// end (for feedChunk events, so that readers inside it ask alike).
	evs, err = tail.read(ctx, at(2), 10, f.query)
	require.NoError(t, err)
	assert.Equal(t, []uint64{3, 4, 5}, versions(evs))
	assert.Equal(t, feedKey{after: at(3), limit: feedChunk}, f.reads[1])

	// The tail grew by that answer: a reader at its end asks after it.
	f.grow(7)
	evs, err = tail.read(ctx, at(5), 10, f.query)
	require.NoError(t, err)
	assert.Equal(t, []uint64{6, 7}, versions(evs))
	assert.Equal(t, feedKey{after: at(5), limit: feedChunk}, f.reads[2])

	// A reader behind the tail reads the database, and its older run is
	// kept beside the tail's, not in its place.
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
	require.Len(t, tail.runs, 1)
	run := tail.runs[0]
	assert.LessOrEqual(t, len(run.evs), feedTailMax)
	assert.Equal(t, f.n, run.end().Commit)
	assert.Equal(t, run.evs[0].Position.Commit-1, run.after.Commit)
	evs, ok := run.cached(run.after, 2)
	assert.True(t, ok)
	assert.Equal(t, []uint64{run.after.Commit + 1, run.after.Commit + 2}, versions(evs))
}

// TestFeedTailKeepsFewRuns: readers scattered over the feed keep at most
// feedRuns runs, the least recently used one giving way.
func TestFeedTailKeepsFewRuns(t *testing.T) {
	ctx := context.Background()
	f := &fakeFeed{n: 100_000}
	var tail feedTail
	for i := range 2 * feedRuns {
		_, err := tail.read(ctx, at(uint64(i)*10_000), 100, f.query)
		require.NoError(t, err)
	}
	// The first runs went; the last ones answer without a query.
	n := len(f.reads)
	last := uint64(2*feedRuns-1) * 10_000
	evs, err := tail.read(ctx, at(last+10), 50, f.query)
	require.NoError(t, err)
	assert.Equal(t, last+11, evs[0].Version)
	assert.Len(t, f.reads, n)
	_, err = tail.read(ctx, at(10), 50, f.query)
	require.NoError(t, err)
	assert.Len(t, f.reads, n+1)
	tail.mu.Lock()
	assert.Len(t, tail.runs, feedRuns)
	tail.mu.Unlock()
}

// TestFeedTailReadersAtDifferentSpeeds: the projectors read one feed at
// their own pace while it grows (a settlement import commits hundreds of
// events at a time, and the ledger's projector falls behind the others).
// Readers that keep together share their reads; one that falls behind
// reads alone, once per event: rows read per event stay at most the
// number of paces (here 3), never one per read (in a 50,000-line import
// with serve's four projectors, pg_stat_statements counted 10.2 feed rows
// per event, issue 40 item 4).
func TestFeedTailReadersAtDifferentSpeeds(t *testing.T) {
	ctx := context.Background()
	f := &fakeFeed{}
	var tail feedTail
	const batch, commit, total = 500, 600, 60_000
	// Steps per round of each reader: the slow one falls further behind
	// every round, until the feed stops growing and it catches up.
	speeds := []int{3, 3, 2, 1}
	pos := make([]eventstore.Position, len(speeds))
	for round := 0; ; round++ {
		if f.n < total {
			f.grow(min(total, f.n+2*commit))
		}
		moved := false
		for i, speed := range speeds {
			for range speed {
				evs, err := tail.read(ctx, pos[i], batch, f.query)
				require.NoError(t, err)
				if len(evs) > 0 {
					require.Equal(t, pos[i].Commit+1, evs[0].Position.Commit, "reader %d reads on from where it was", i)
					pos[i], moved = evs[len(evs)-1].Position, true
				}
			}
		}
		if !moved && f.n == total {
			break
		}
	}
	for i := range pos {
		require.Equal(t, uint64(total), pos[i].Commit, "reader %d read the whole feed", i)
	}
	perEvent := float64(f.rows) / total
	t.Logf("%d queries, %.2f rows read per event, %d readers", len(f.reads), perEvent, len(speeds))
	assert.LessOrEqual(t, perEvent, 3.0)
}

// TestFeedTailReadersInsideOneRunShareTheirQuery: readers at several
// places of one run, asking at once, send the database one question (the
// run's end, a whole limit), not one per place: before, each asked for
// what it lacked, so no two questions were alike.
func TestFeedTailReadersInsideOneRunShareTheirQuery(t *testing.T) {
	ctx := context.Background()
	f := &fakeFeed{n: 100}
	var tail feedTail
	_, err := tail.read(ctx, eventstore.Start, 40, f.query)
	require.NoError(t, err)
	f.block = make(chan struct{})
	var wg sync.WaitGroup
	got := make([][]uint64, 4)
	for i := range got {
		wg.Go(func() {
			evs, err := tail.read(ctx, at(uint64(10*i)), 40, f.query)
			assert.NoError(t, err)
			got[i] = versions(evs)
		})
	}
	for {
		tail.mu.Lock()
		c := tail.inflight[feedKey{after: at(40), limit: feedChunk}]
		tail.mu.Unlock()
		if c != nil {
			break
		}
	}
	// Let the other readers reach the in-flight query (or ask their own).
	for range 1000 {
		runtime.Gosched()
	}
	close(f.block)
	wg.Wait()
	for i, g := range got {
		want := make([]uint64, 40)
		for j := range want {
			want[j] = uint64(10*i + j + 1)
		}
		assert.Equal(t, want, g, "reader %d", i)
	}
	assert.Len(t, f.reads, 2, "one question for the four of them: %v", f.reads[1:])
}
