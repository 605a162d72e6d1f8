package outbound_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/postgres"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/projections/outbound"
)

// Issue 33, finding 4: the feed amplified. These tests run the feed over
// the Postgres event store, through a recorder of what it asks the store.

// recordingSource is the real store, recording each ReadAll's position and
// size and how many events all of them returned.
type recordingSource struct {
	eventstore.Store
	mu     sync.Mutex
	reads  map[string]int // "after/limit" → reads
	sizes  map[int]bool
	events int
}

func (r *recordingSource) ReadAll(ctx context.Context, after eventstore.Position, limit int) ([]eventstore.RecordedEvent, error) {
	evs, err := r.Store.ReadAll(ctx, after, limit)
	r.mu.Lock()
	r.reads[fmt.Sprintf("%v/%d", after, limit)]++
	r.sizes[limit] = true
	r.events += len(evs)
	r.mu.Unlock()
	return evs, err
}

func (r *recordingSource) reset() {
	r.mu.Lock()
	r.reads, r.sizes, r.events = map[string]int{}, map[int]bool{}, 0
	r.mu.Unlock()
}

// TestWaitingPollsWithDistinctLimitsShareReads: 100 polls waiting at the
// head, each with its own limit, read the store with a handful of sizes
// (the store shares one query among reads of one position and size), and
// each still gets at most its limit. Before, each limit was its own read:
// 1,000 limits made 62 → 1,812 Postgres transactions/s.
func TestWaitingPollsWithDistinctLimitsShareReads(t *testing.T) {
	ctx := testCtx(t)
	src := &recordingSource{Store: postgres.NewEventStore(pgtest.NewPool(t))}
	src.reset()
	feed := outbound.NewFeed(src)
	require.NoError(t, feed.Start(ctx))
	var evs []eventstore.EventData
	for i := range 3 {
		evs = append(evs, captured(t, "pi_limits", i))
	}
	_, err := src.Append(ctx, delivery.PaymentStream("stripe", "pi_limits0"), eventstore.NoStream, evs[:1])
	require.NoError(t, err)
	_, head := drain(t, ctx, feed, eventstore.Start, 100)
	src.reset()

	const polls = 100
	var wg sync.WaitGroup
	got := make([]int, polls+1)
	for limit := 1; limit <= polls; limit++ {
		wg.Go(func() {
			page, err := feed.Page(ctx, outbound.Query{After: head, Limit: limit, Wait: 20 * time.Second})
			assert.NoError(t, err)
			got[limit] = len(page.Events)
		})
	}
	_, err = src.Append(ctx, delivery.PaymentStream("stripe", "pi_limits"), eventstore.NoStream, evs[1:])
	require.NoError(t, err)
	wg.Wait()
	for limit := 1; limit <= polls; limit++ {
		assert.Equal(t, min(limit, 2), got[limit], "limit %d", limit)
	}
	assert.LessOrEqual(t, len(src.sizes), 4, "read sizes %v", src.sizes)
}

// TestWaitingPollIsBoundByTheScanCap: a waiting poll for a type none of
// 10,500 new events has scans no more than a page may (10,000 events)
// and answers at once, empty, with a cursor where it stopped. Before, it
// went on scanning every new event for its whole wait (one poll scanned
// 200,000 events, 20× the cap).
func TestWaitingPollIsBoundByTheScanCap(t *testing.T) {
	ctx := testCtx(t)
	src := &recordingSource{Store: postgres.NewEventStore(pgtest.NewPool(t))}
	src.reset()
	feed := outbound.NewFeed(src)
	require.NoError(t, feed.Start(ctx))
	const total = 10_500
	for b := range total / 500 {
		batch := make([]eventstore.EventData, 500)
		for i := range batch {
			batch[i] = captured(t, fmt.Sprintf("pi_scan%d", b), i)
		}
		_, err := src.Append(ctx, delivery.PaymentStream("stripe", fmt.Sprintf("pi_scan%d", b)), eventstore.NoStream, batch)
		require.NoError(t, err)
	}
	src.reset()
	page, err := feed.Page(ctx, outbound.Query{Types: []string{outbound.PaymentFailed}, Wait: 5 * time.Second})
	require.NoError(t, err)
	assert.Empty(t, page.Events)
	assert.Equal(t, 10_000, src.events, "scanned no more than the cap")
	require.NotEqual(t, eventstore.Start, page.Next)

	// The cursor continues where the cap stopped: the rest, then the end.
	rest, err := feed.Page(ctx, outbound.Query{After: page.Next, Types: []string{outbound.PaymentFailed}})
	require.NoError(t, err)
	assert.Empty(t, rest.Events)
	assert.NotEqual(t, page.Next, rest.Next, "the next page scans what the cap left")
}

// TestTypeFilterDeduplicatedAndCapped: a type repeated is one type; more
// distinct types than the vocabulary has is ErrTooManyTypes, before any
// is looked up.
func TestTypeFilterDeduplicatedAndCapped(t *testing.T) {
	many := make([]string, 60_000)
	for i := range many {
		many[i] = outbound.PaymentCaptured
	}
	many = append(many, outbound.PaymentFailed)
	got, err := outbound.NormalizeTypes(many)
	require.NoError(t, err)
	assert.Equal(t, []string{outbound.PaymentCaptured, outbound.PaymentFailed}, got)

	distinct := append(outbound.Types(), "one.more")
	_, err = outbound.NormalizeTypes(distinct)
	require.ErrorIs(t, err, outbound.ErrTooManyTypes)

	_, err = outbound.NormalizeTypes([]string{outbound.PaymentCaptured, "nope", "nope2"})
	require.ErrorIs(t, err, outbound.ErrUnknownType)
	assert.Contains(t, err.Error(), `"nope"`, "the first unknown is named")

	// Through the feed: the page applies it.
	feed := outbound.NewFeed(postgres.NewEventStore(pgtest.NewPool(t)))
	_, err = feed.Page(testCtx(t), outbound.Query{Types: distinct})
	require.ErrorIs(t, err, outbound.ErrTooManyTypes)
}
