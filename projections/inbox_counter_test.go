package projections_test

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/projections"
)

// slowCounts is an inbox whose count takes `cost` on a fake clock, as a
// GROUP BY over a large table does.
type slowCounts struct {
	mu     sync.Mutex
	clock  *fakeClock
	cost   time.Duration
	counts map[string]int64
	calls  int
	err    error
}

func (s *slowCounts) InboxCounts(context.Context) (map[string]int64, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.calls++
	s.clock.advance(s.cost)
	if s.err != nil {
		return nil, s.err
	}
	out := map[string]int64{}
	for k, v := range s.counts {
		out[k] = v
	}
	return out, nil
}

type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// The metrics refresher reads the status every 5 s. A count that takes
// 1 s is kept for 20 s (Ratio 20): the refresher counts once in four
// readings, so the count costs 1/20 of a connection's time, not 1/5.
func TestInboxCounterBoundsTheCountsCost(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)}
	db := &slowCounts{clock: clock, cost: time.Second, counts: map[string]int64{"applied": 10}}
	c := &projections.InboxCounter{Ratio: 20, Now: clock.now}
	ctx := context.Background()

	start := clock.now()
	for clock.now().Sub(start) < 10*time.Minute {
		got, err := c.Counts(ctx, db)
		require.NoError(t, err)
		assert.Equal(t, int64(10), got["applied"])
		clock.advance(5 * time.Second)
	}
	// 600 s of readings every 5 s (100 readings with the counts' own
	// seconds): one count per 21 s of clock at most.
	assert.LessOrEqual(t, db.calls, 600/21+1, "counted %d times", db.calls)
	assert.GreaterOrEqual(t, db.calls, 600/26, "counted %d times: kept too long", db.calls)
}

// A small inbox (a count of 10 ms) is counted at every 5 s reading: the
// bound costs nothing where the count is cheap.
func TestInboxCounterCountsACheapInboxEveryTime(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)}
	db := &slowCounts{clock: clock, cost: 10 * time.Millisecond, counts: map[string]int64{"applied": 1}}
	c := &projections.InboxCounter{Now: clock.now}
	for i := range 10 {
		db.counts["applied"] = int64(i)
		got, err := c.Counts(context.Background(), db)
		require.NoError(t, err)
		assert.Equal(t, int64(i), got["applied"], "reading %d answered an old count", i)
		clock.advance(5 * time.Second)
	}
	assert.Equal(t, 10, db.calls)
}

// Kept counts are the caller's to change, a failed count is an error (not
// the old counts), and the next reading counts again.
func TestInboxCounterAnswersCopiesAndErrors(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)}
	db := &slowCounts{clock: clock, cost: time.Second, counts: map[string]int64{"applied": 3}}
	c := &projections.InboxCounter{Now: clock.now}
	ctx := context.Background()
	got, err := c.Counts(ctx, db)
	require.NoError(t, err)
	got["applied"] = 99
	again, err := c.Counts(ctx, db)
	require.NoError(t, err)
	assert.Equal(t, int64(3), again["applied"], "a caller's change reached the kept counts")
	assert.Equal(t, 1, db.calls)

	clock.advance(time.Minute)
	db.err = errors.New("connection lost")
	_, err = c.Counts(ctx, db)
	require.Error(t, err)
	db.err = nil
	_, err = c.Counts(ctx, db)
	require.NoError(t, err)
	assert.Equal(t, 3, db.calls, "the reading after a failed count counts again")
}

// Concurrent readers (the refresher, the console, /metrics) share one count.
func TestInboxCounterConcurrentReadersShareACount(t *testing.T) {
	clock := &fakeClock{t: time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)}
	db := &slowCounts{clock: clock, cost: time.Second, counts: map[string]int64{"applied": 5}}
	c := &projections.InboxCounter{Now: clock.now}
	var wg sync.WaitGroup
	for range 50 {
		wg.Go(func() {
			got, err := c.Counts(context.Background(), db)
			assert.NoError(t, err)
			assert.Equal(t, int64(5), got["applied"])
		})
	}
	wg.Wait()
	assert.Equal(t, 1, db.calls)
}
