package postgres_test

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/ingest"
	"github.com/onceledger/onceledger/adapters/postgres"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/payment"
)

// TestRecorderConcurrentDeliveriesOneStream: many different deliveries of
// one payment (and a copy of each) race for the stream. The recorder's
// append goes straight to the insert after its read; every lost race must
// fall back to the version check and retry, never lose or double a fact:
// each refund is in the stream exactly once, versions are 0..n without
// gaps, each delivery is answered as a first arrival exactly once, and the
// inbox rows are all applied.
func TestRecorderConcurrentDeliveriesOneStream(t *testing.T) {
	pool := pgtest.NewPool(t)
	ctx := testCtx(t)
	store := postgres.NewEventStore(pool)
	svc := ingest.New(postgres.NewJournal(pool, store), ingest.PaymentDecider{}, ingest.Options{MaxAttempts: 1000, BaseBackoff: time.Millisecond})

	deliveryOf := func(id string, f delivery.Fact) delivery.Event {
		sum := sha256.Sum256([]byte(id))
		return delivery.Event{Provider: "stripe", DedupKey: id, Type: "test", PaymentKey: "pay_race",
			OccurredAt: time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC), PayloadHash: hex.EncodeToString(sum[:]),
			Raw: []byte(id), Facts: []delivery.Fact{f}}
	}
	capture := deliveryOf("evt_cap", delivery.Fact{Kind: delivery.KindCaptured, BusinessID: "ch_1", Amount: 100_000, Fee: 300, Currency: "USD"})
	res, err := svc.Ingest(ctx, capture)
	require.NoError(t, err, "capture: %+v, %v", res, err)
	require.EqualValues(t, 1, res.Appended, "capture: %+v, %v", res, err)

	const refunds = 24
	var wg sync.WaitGroup
	var mu sync.Mutex
	accepted := map[string]int{}
	errs := make(chan error, 2*refunds)
	for i := range refunds {
		ev := deliveryOf(fmt.Sprintf("evt_re%d", i), delivery.Fact{Kind: delivery.KindRefunded, BusinessID: fmt.Sprintf("re_%d", i), Amount: 100, Currency: "USD"})
		for range 2 { // the delivery and its concurrent twin
			wg.Go(func() {
				res, err := svc.Ingest(ctx, ev)
				if err != nil {
					errs <- fmt.Errorf("%s: %w", ev.DedupKey, err)
					return
				}
				if res.Outcome == ingest.Accepted {
					mu.Lock()
					accepted[ev.DedupKey]++
					mu.Unlock()
				}
			})
		}
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		assert.NoError(t, err)
	}
	for i := range refunds {
		n := accepted[fmt.Sprintf("evt_re%d", i)]
		assert.EqualValues(t, 1, n, "evt_re%d accepted %d times, want 1", i, n)
	}

	evs, err := store.ReadStream(ctx, capture.StreamID())
	require.NoError(t, err)
	require.Len(t, evs, 1+refunds, "stream has %d events, want %d", len(evs), 1+refunds)
	seen := map[string]bool{}
	for i, e := range evs {
		require.EqualValues(t, uint64(i), e.Version, "event %d has version %d", i, e.Version)
		if i == 0 {
			continue
		}
		d, err := payment.Decode(e.Type, e.Data)
		require.NoError(t, err)
		r, ok := d.(payment.RefundPosted)
		require.True(t, ok, "event %d: %#v (twice, or not a refund)", i, d)
		require.False(t, seen[r.RefundID], "event %d: %#v (twice, or not a refund)", i, d)
		seen[r.RefundID] = true
	}
	var notApplied int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM webhook_inbox WHERE status <> 'applied' OR applied_at IS NULL`).Scan(&notApplied), "inbox rows not applied: %d, %v", notApplied, err)
	require.EqualValues(t, 0, notApplied, "inbox rows not applied: %d, %v", notApplied, err)
}
