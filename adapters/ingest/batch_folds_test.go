package ingest_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/ingest"
	"github.com/onceledger/onceledger/adapters/postgres"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
)

// A delivery recorded through group commit (Ingest, a unit shared with
// concurrent arrivals) on a long stream keeps the stream's fold, as an
// import set does: a payout's lines interleaved with single deliveries on
// its stream (its payout-lines deliveries, a webhook) cost per line what
// they cost in a short payout. Group commit took the kept fold and dropped
// it, so the next set re-read and re-folded the whole stream: per-line
// cost growing with the payout (issue 24 item 7; a 30,000-line payout of
// fee rows took six minutes, a 1,000-line one a quarter of a second).
func TestGroupCommitKeepsTheStreamsFold(t *testing.T) {
	pool := pgtest.NewPool(t)
	store := postgres.NewEventStore(pool)
	var folded atomic.Int64
	svc := ingest.New(postgres.NewJournal(pool, store), countingDecider{folded: &folded}, ingest.Options{})
	perLine := func(payout string, n int) float64 {
		evs := feeLines(payout, n)
		folded.Store(0)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		for i := 0; i < n; i += 100 {
			res, err := svc.IngestBatch(ctx, evs[i:i+99])
			require.NoError(t, err)
			for _, r := range res {
				require.Equal(t, ingest.Accepted, r.Outcome)
			}
			one, err := svc.Ingest(ctx, evs[i+99]) // alone: through group commit
			require.NoError(t, err)
			require.Equal(t, ingest.Accepted, one.Outcome)
		}
		return float64(folded.Load()) / float64(n)
	}
	a := perLine("po_small", 300)
	b := perLine("po_large", 3000)
	t.Logf("events folded per line: %.2f for 300 lines, %.2f for 3,000", a, b)
	assert.LessOrEqual(t, b, 1.3*a+1, "per-line cost grew with the stream")
}
