package ingest_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/ingest"
	"github.com/onceledger/onceledger/adapters/postgres"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/payment"
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

// TestImportSetAnswersEachDeliveryOnItsOwn: one import set holding several
// deliveries of one stream (each decided on what the earlier ones decided),
// an ignored type, a plain redelivery, a redelivery with other facts, a key
// repeated inside the set, and a stream that another writer moves under the
// set. Each is answered as Ingest would answer it; the ones the set cannot
// settle are recorded alone after it, without failing the others.
func TestImportSetAnswersEachDeliveryOnItsOwn(t *testing.T) {
	pool := pgtest.NewPool(t)
	store := postgres.NewEventStore(pool)
	dec := &meddler{store: store, raced: "evt_raced"}
	svc := ingest.New(postgres.NewJournal(pool, store), dec, ingest.Options{})
	mustIngest(t, svc, capture("pay_known", "evt_known", 1000), ingest.Accepted)
	mustIngest(t, svc, capture("pay_changed", "evt_changed", 1000), ingest.Accepted)

	evs := []delivery.Event{
		capture("pay_multi", "evt_m1", 1000),
		deliveryOf("pay_multi", "evt_m2", "refund.succeeded", refunded("re_m2", 100)),
		withBody(capture("pay_known", "evt_known", 1000), "new envelope"),
		deliveryOf("", "evt_ping", "ping"),
		deliveryOf("pay_raced", "evt_raced", "charge.refunded", refunded("re_raced", 100)),
		deliveryOf("pay_raced", "evt_raced2", "refund.succeeded", refunded("re_raced2", 50)),
		withBody(capture("pay_changed", "evt_changed", 1001), "changed"),
		deliveryOf("pay_multi", "evt_m3", "refund.succeeded", refunded("re_m3", 200)),
		capture("pay_multi", "evt_m1", 1000), // the same line twice in one file
	}
	res, err := svc.IngestBatch(tctx(t), evs)
	require.NoError(t, err)
	want := map[string]ingest.Result{
		"evt_m1":      {Outcome: ingest.Accepted, StreamID: stream("pay_multi"), Appended: 1},
		"evt_m2":      {Outcome: ingest.Accepted, StreamID: stream("pay_multi"), Appended: 1},
		"evt_m3":      {Outcome: ingest.Accepted, StreamID: stream("pay_multi"), Appended: 1},
		"evt_known":   {Outcome: ingest.Duplicate, StreamID: stream("pay_known")},
		"evt_ping":    {Outcome: ingest.Ignored},
		"evt_raced":   {Outcome: ingest.Accepted, StreamID: stream("pay_raced"), Appended: 1},
		"evt_raced2":  {Outcome: ingest.Accepted, StreamID: stream("pay_raced"), Appended: 1},
		"evt_changed": {Outcome: ingest.Duplicate, StreamID: stream("pay_changed"), Conflict: true, Appended: 1},
	}
	for i, ev := range evs {
		w := want[ev.DedupKey]
		if i == len(evs)-1 {
			w = ingest.Result{Outcome: ingest.Duplicate, StreamID: stream("pay_multi")}
		}
		assert.Equal(t, w, res[i], "%d: %s", i, ev.DedupKey)
	}
	equal(t, "one stream, three deliveries in one set", types(t, store, stream("pay_multi")),
		[]string{payment.TypeCaptured, payment.TypeRefundPosted, payment.TypeRefundPosted})
	equal(t, "raced stream: the other writer's capture, then both refunds once",
		types(t, store, stream("pay_raced")), []string{payment.TypeCaptured, payment.TypeRefundPosted, payment.TypeRefundPosted})
	_, n := inboxRow(t, pool, "evt_known")
	assert.Equal(t, 2, n, "evt_known counted")
	_, n = inboxRow(t, pool, "evt_m1")
	assert.Equal(t, 2, n, "evt_m1 counted twice")
	assert.EqualValues(t, 1, scalar(t, pool, `SELECT count(*) FROM webhook_conflicts WHERE dedup_key = 'evt_changed'`))
	wantInboxStatus(t, pool, "evt_ping", ingest.StatusIgnored, "")
	wantInboxStatus(t, pool, "evt_raced2", ingest.StatusApplied, "")
}

// TestImportSetNamesTheDeliveryThatFails: a delivery whose decision fails
// is recorded alone after the set; its error names it (BatchError.At), the
// rest of the set is recorded and reported, and nothing of it is kept.
func TestImportSetNamesTheDeliveryThatFails(t *testing.T) {
	pool := pgtest.NewPool(t)
	store := postgres.NewEventStore(pool)
	svc := ingest.New(postgres.NewJournal(pool, store), &meddler{store: store, bad: "evt_bad"}, ingest.Options{MaxAttempts: 2})
	evs := []delivery.Event{capture("pay_1", "evt_1", 1000), capture("pay_bad", "evt_bad", 1000), capture("pay_2", "evt_2", 1000)}
	res, err := svc.IngestBatch(tctx(t), evs)
	var be *ingest.BatchError
	require.ErrorAs(t, err, &be)
	assert.Equal(t, 1, be.At)
	require.ErrorIs(t, err, errBad)
	assert.Equal(t, ingest.Accepted, res[0].Outcome)
	assert.Equal(t, ingest.Outcome(""), res[1].Outcome)
	assert.Equal(t, ingest.Accepted, res[2].Outcome)
	equal(t, "pay_2", types(t, store, stream("pay_2")), []string{payment.TypeCaptured})
	assert.Zero(t, scalar(t, pool, `SELECT count(*) FROM webhook_inbox WHERE dedup_key = 'evt_bad'`))
}

// TestImportSetsRaceWebhooks: importers submitting overlapping, shuffled
// sets while webhooks for the same payments (other dedup keys, the same
// business ids) arrive one by one through group commit. Each import
// delivery is accepted exactly once across all sets; each stream holds
// each fact once, versions contiguous, postings as one capture and three
// refunds.
func TestImportSetsRaceWebhooks(t *testing.T) {
	pool := pgtest.NewPool(t)
	store := postgres.NewEventStore(pool)
	svc := ingest.New(postgres.NewJournal(pool, store), ingest.PaymentDecider{}, ingest.Options{MaxAttempts: 1000})
	const payments = 60
	var lines, hooks []delivery.Event
	for p := range payments {
		pay := fmt.Sprintf("pay_r%d", p)
		lines = append(lines, capture(pay, "line_cap_"+pay, 1000))
		hooks = append(hooks, capture(pay, "hook_cap_"+pay, 1000))
		for r := range 3 {
			re := deliveryOf(pay, fmt.Sprintf("line_re%d_%s", r, pay), "refund.succeeded", refunded(fmt.Sprintf("re%d_%s", r, pay), 100))
			lines = append(lines, re)
			re.DedupKey = fmt.Sprintf("hook_re%d_%s", r, pay)
			hooks = append(hooks, withBody(re, ""))
		}
	}
	const importers = 6
	var mu sync.Mutex
	accepted := map[string]int{}
	var wg sync.WaitGroup
	for w := range importers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(w), 7))
			set := slices.Clone(lines)
			rng.Shuffle(len(set), func(i, j int) { set[i], set[j] = set[j], set[i] })
			for len(set) > 0 {
				n := min(len(set), 1+rng.IntN(60))
				res, err := svc.IngestBatch(tctx(t), set[:n])
				if !assert.NoError(t, err) {
					return
				}
				mu.Lock()
				for i, r := range res {
					if r.Outcome == ingest.Accepted {
						accepted[set[i].DedupKey]++
					}
				}
				mu.Unlock()
				set = set[n:]
			}
		})
	}
	for _, h := range hooks {
		wg.Go(func() {
			_, err := svc.Ingest(tctx(t), h)
			assert.NoError(t, err, h.DedupKey)
		})
	}
	wg.Wait()
	sequential := ingest.New(postgres.NewJournal(pool, store), ingest.PaymentDecider{}, ingest.Options{})
	var ref []delivery.Event
	for _, ev := range lines[:4] {
		ev.PaymentKey = "pay_ref"
		ref = append(ref, ev)
	}
	for _, ev := range ref {
		ev.DedupKey = "ref_" + ev.DedupKey
		mustIngest(t, sequential, ev, ingest.Accepted)
	}
	want := balances(t, store, stream("pay_ref"))
	for _, l := range lines {
		assert.Equal(t, 1, accepted[l.DedupKey], "%s accepted once", l.DedupKey)
		wantInboxStatus(t, pool, l.DedupKey, ingest.StatusApplied, "")
	}
	for p := range payments {
		s := stream(fmt.Sprintf("pay_r%d", p))
		count := typeCounts(t, store, s)
		// A refund before its capture is pending (and flagged) until the
		// capture: the order of arrival shows, the facts do not.
		assert.Equal(t, 1, count[payment.TypeCaptured], s)
		assert.Equal(t, 3, count[payment.TypeRefundPosted], s)
		assert.Equal(t, count[payment.TypeFlagged], count[payment.TypeCleared], s)
		assert.Equal(t, want, balances(t, store, s), s)
	}
}
