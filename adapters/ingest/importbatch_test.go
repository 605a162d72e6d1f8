package ingest_test

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/ingest"
	"github.com/onceledger/onceledger/adapters/postgres"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/domain/delivery"
)

// A batch answers each delivery as Ingest would (a key repeated inside the
// batch is a duplicate of its first arrival), records each fact once, and
// a batch again is all duplicates: on the one-transaction journal and, one
// by one, on the two-phase journal.
func TestIngestBatch(t *testing.T) {
	batch := []delivery.Event{
		capture("pay_a", "b1", 1000),
		capture("pay_b", "b2", 2000),
		deliveryOf("pay_a", "b3", "refund.succeeded", refunded("re_a", 300)),
		capture("pay_a", "b1", 1000),
	}
	check := func(t *testing.T, svc *ingest.Service, types func(string) []string) {
		res, err := svc.IngestBatch(tctx(t), batch)
		require.NoError(t, err)
		var got []ingest.Outcome
		for _, r := range res {
			got = append(got, r.Outcome)
		}
		assert.Equal(t, []ingest.Outcome{ingest.Accepted, ingest.Accepted, ingest.Accepted, ingest.Duplicate}, got)
		assert.Equal(t, []string{"payment.captured", "refund.posted"}, types(stream("pay_a")))
		assert.Equal(t, []string{"payment.captured"}, types(stream("pay_b")))

		res, err = svc.IngestBatch(tctx(t), batch)
		require.NoError(t, err)
		for _, r := range res {
			assert.Equal(t, ingest.Duplicate, r.Outcome)
		}
		assert.Equal(t, []string{"payment.captured", "refund.posted"}, types(stream("pay_a")))
	}
	t.Run("one transaction", func(t *testing.T) {
		pool := pgtest.NewPool(t)
		store := postgres.NewEventStore(pool)
		svc := ingest.New(postgres.NewJournal(pool, store), ingest.PaymentDecider{}, ingest.Options{})
		check(t, svc, func(s string) []string { return types(t, store, s) })
	})
	eachBackend(t, func(t *testing.T, b backend) {
		f := newFixture(t, b)
		check(t, f.svc, func(s string) []string { return types(t, f.store, s) })
	})
}
