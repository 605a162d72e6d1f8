package ingest_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/ingest"
	"github.com/onceledger/onceledger/adapters/postgres"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/settlement"
)

// countingDecider is PaymentDecider counting every stored event it is
// handed to fold (decoded), by Decide or by a fold: the work of deciding,
// which re-folding a stream per delivery makes grow with the stream.
type countingDecider struct {
	ingest.PaymentDecider
	folded *atomic.Int64
}

func (c countingDecider) Decide(h []eventstore.RecordedEvent, ev delivery.Event) ([]eventstore.EventData, error) {
	c.folded.Add(int64(len(h)))
	return c.PaymentDecider.Decide(h, ev)
}

func (c countingDecider) Fold(ev delivery.Event) ingest.Fold {
	return countingFold{c.PaymentDecider.Fold(ev), c.folded}
}

type countingFold struct {
	ingest.Fold
	folded *atomic.Int64
}

func (c countingFold) Apply(h []eventstore.RecordedEvent) error {
	c.folded.Add(int64(len(h)))
	return c.Fold.Apply(h)
}

// feeLines are n fee rows of one payout: they all join its stream.
func feeLines(payout string, n int) []delivery.Event {
	at := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	out := make([]delivery.Event, n)
	for i := range out {
		l := settlement.Line{Provider: "stripe", Kind: settlement.KindFee, SourceType: "fee",
			LineID: fmt.Sprintf("txn_%s_%d", payout, i), Gross: -5, Net: -5, Currency: "USD",
			OriginalAmount: -5, OriginalCurrency: "USD", PayoutID: payout, OccurredAt: at}
		out[i] = delivery.Settled(l, []byte(l.LineID))
	}
	return out
}

// perLine imports a payout of n fee lines in sets of 200 (as the report
// importer does) and returns the stored events folded per line.
func perLine(t *testing.T, svc *ingest.Service, folded *atomic.Int64, payout string, n int) float64 {
	t.Helper()
	evs := feeLines(payout, n)
	folded.Store(0)
	// Lines one by one on a loaded machine (two-phase) take longer than tctx.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	for i := 0; i < n; i += 200 {
		res, err := svc.IngestBatch(ctx, evs[i:min(i+200, n)])
		require.NoError(t, err)
		for _, r := range res {
			require.Equal(t, ingest.Accepted, r.Outcome)
		}
	}
	return float64(folded.Load()) / float64(n)
}

// TestDecidingALineDoesNotRefoldItsStream (issue 24, item 7): the cost of
// deciding a payout's line, counted as the stored events read and folded
// for it, does not grow with the lines already in the payout's stream: a
// 5,000-line payout costs per line what a 500-line one does, on the
// one-transaction journal (import sets) and on the two-phase journals
// (lines one by one, EventStoreDB among them; 50 and 300 lines, each its
// own commits). Re-folding the stream per
// line made it about half the stream per line.
func TestDecidingALineDoesNotRefoldItsStream(t *testing.T) {
	check := func(t *testing.T, svc *ingest.Service, folded *atomic.Int64, small, large int) {
		a := perLine(t, svc, folded, "po_small", small)
		b := perLine(t, svc, folded, "po_large", large)
		t.Logf("events folded per line: %.2f for %d lines, %.2f for %d", a, small, b, large)
		assert.LessOrEqual(t, b, 1.3*a+1, "per-line cost grew with the stream: %.2f for %d lines, %.2f for %d", a, small, b, large)
	}
	t.Run("one transaction", func(t *testing.T) {
		pool := pgtest.NewPool(t)
		store := postgres.NewEventStore(pool)
		var folded atomic.Int64
		svc := ingest.New(postgres.NewJournal(pool, store), countingDecider{folded: &folded}, ingest.Options{})
		check(t, svc, &folded, 500, 5000)
	})
	eachBackend(t, func(t *testing.T, b backend) {
		f := newFixture(t, b)
		var folded atomic.Int64
		svc := ingest.New(ingest.TwoPhase(f.inbox, f.store), countingDecider{folded: &folded}, ingest.Options{})
		check(t, svc, &folded, 50, 300)
	})
}
