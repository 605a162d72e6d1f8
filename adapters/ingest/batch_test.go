package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/ingest"
	"github.com/onceledger/onceledger/adapters/postgres"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/payment"
)

// meddler is the payment decider with two faults for chosen dedup keys:
// bad fails the decision; raced has another writer append to the stream
// (committed) between the shared gate's read and the shared append, so that
// the shared append loses the race for that stream.
type meddler struct {
	ingest.PaymentDecider
	store *postgres.EventStore
	bad   string
	raced string

	mu   sync.Mutex
	done bool // raced once: the single path's retry decides normally
}

var errBad = errors.New("this delivery cannot be decided")

// Fold: the meddler decides on histories, its own Decide.
func (*meddler) Fold(delivery.Event) ingest.Fold { return nil }

func (m *meddler) Decide(history []eventstore.RecordedEvent, ev delivery.Event) ([]eventstore.EventData, error) {
	if ev.DedupKey == m.bad {
		return nil, errBad
	}
	m.mu.Lock()
	race := ev.DedupKey == m.raced && !m.done
	m.done = m.done || race
	m.mu.Unlock()
	if race {
		// Another delivery of the payment, recorded meanwhile by someone else.
		other := capture(ev.PaymentKey, "evt_other_"+ev.PaymentKey, 500)
		evs, err := m.PaymentDecider.Decide(history, other)
		if err != nil {
			return nil, err
		}
		if _, err := m.store.Append(context.Background(), ev.StreamID(), eventstore.ExpectFor(len(history)), evs); err != nil {
			return nil, err
		}
	}
	return m.PaymentDecider.Decide(history, ev)
}

// TestSharedUnitAnswersEachDeliveryOnItsOwn: one shared unit holding first
// arrivals, an ignored type, a plain redelivery, a redelivery with other
// facts, a delivery whose decision fails and one whose stream moves under
// the unit. The first arrivals, the ignored one and the plain redelivery
// share the commit; the others are recorded alone by the single path, with
// the answer they would have had alone, and without failing their
// neighbours.
func TestSharedUnitAnswersEachDeliveryOnItsOwn(t *testing.T) {
	pool := pgtest.NewPool(t)
	ctx := tctx(t)
	store := postgres.NewEventStore(pool)
	dec := &meddler{store: store, bad: "evt_bad", raced: "evt_raced"}
	commits := 0
	svc := ingest.New(postgres.NewJournal(pool, store), dec, ingest.Options{
		Batch: ingest.BatchOptions{AfterCommit: func(int) { commits++ }},
	})

	mustIngest(t, svc, capture("pay_known", "evt_known", 1000), ingest.Accepted)
	mustIngest(t, svc, capture("pay_changed", "evt_changed", 1000), ingest.Accepted)
	commits = 0 // units of their own
	evs := []delivery.Event{
		// a plain redelivery (other bytes, same facts): counted in the unit
		withBody(capture("pay_known", "evt_known", 1000), "new envelope"),
		// ignored: shares the unit
		deliveryOf("", "evt_ping", "ping"),
		// the decision fails: alone, and its error
		capture("pay_bad", "evt_bad", 1000),
		// the stream moves under the unit: alone
		deliveryOf("pay_raced", "evt_raced", "charge.refunded", refunded("re_raced", 100)),
		// a redelivery with other facts: alone, a conflict
		withBody(capture("pay_changed", "evt_changed", 1001), "changed"),
	}
	for i := range 8 {
		evs = append(evs, twoFacts(fmt.Sprintf("pay_%d", i), fmt.Sprintf("evt_%d", i)))
	}

	res, alone, errs := ingest.IngestBatch(ctx, svc, evs)
	require.Equal(t, 1, commits, "one shared commit")
	for i, ev := range evs {
		switch ev.DedupKey {
		case "evt_bad":
			assert.ErrorIs(t, errs[i], errBad)
			assert.True(t, alone[i])
		case "evt_known":
			require.NoError(t, errs[i])
			assert.False(t, alone[i], "a plain redelivery is answered in the unit")
			assert.Equal(t, ingest.Duplicate, res[i].Outcome)
			assert.False(t, res[i].Conflict)
		case "evt_changed":
			require.NoError(t, errs[i])
			assert.True(t, alone[i], "a conflict is the single path's")
			assert.Equal(t, ingest.Duplicate, res[i].Outcome)
			assert.True(t, res[i].Conflict)
		case "evt_raced":
			require.NoError(t, errs[i])
			assert.True(t, alone[i], "a stream that moved under the unit is recorded alone")
			assert.Equal(t, ingest.Accepted, res[i].Outcome)
			assert.Equal(t, 1, res[i].Appended)
		case "evt_ping":
			require.NoError(t, errs[i])
			assert.False(t, alone[i])
			assert.Equal(t, ingest.Ignored, res[i].Outcome)
		default:
			require.NoError(t, errs[i], ev.DedupKey)
			assert.False(t, alone[i], "%s shares the unit", ev.DedupKey)
			assert.Equal(t, ingest.Accepted, res[i].Outcome)
			assert.Equal(t, 2, res[i].Appended)
		}
	}

	for i := range 8 {
		equal(t, "stream", types(t, store, stream(fmt.Sprintf("pay_%d", i))), []string{payment.TypeCaptured, payment.TypeRefundPosted})
		wantInboxStatus(t, pool, fmt.Sprintf("evt_%d", i), ingest.StatusApplied, "")
	}
	equal(t, "raced stream", types(t, store, stream("pay_raced")), []string{payment.TypeCaptured, payment.TypeRefundPosted})
	wantInboxStatus(t, pool, "evt_raced", ingest.StatusApplied, "")
	wantInboxStatus(t, pool, "evt_ping", ingest.StatusIgnored, "")
	_, n := inboxRow(t, pool, "evt_known")
	assert.Equal(t, 2, n, "evt_known delivered twice")
	_, n = inboxRow(t, pool, "evt_changed")
	assert.Equal(t, 2, n, "evt_changed delivered twice")
	assert.EqualValues(t, 1, scalar(t, pool, `SELECT count(*) FROM webhook_conflicts WHERE dedup_key = 'evt_changed'`))
	assert.Zero(t, scalar(t, pool, `SELECT count(*) FROM webhook_inbox WHERE dedup_key = 'evt_bad'`), "a failed delivery leaves no row")
	assert.Zero(t, scalar(t, pool, `SELECT count(*) FROM events WHERE stream_id = $1`, stream("pay_bad")))
}

// TestSharedUnitsUnderConcurrency: many senders, each payment's deliveries
// sent at once together with a twin of each, through the batcher. Every
// delivery is answered as a first arrival exactly once, and every stream
// holds each fact once, versions contiguous.
func TestSharedUnitsUnderConcurrency(t *testing.T) {
	pool := pgtest.NewPool(t)
	store := postgres.NewEventStore(pool)
	var mu sync.Mutex
	shared := 0
	svc := ingest.New(postgres.NewJournal(pool, store), ingest.PaymentDecider{}, ingest.Options{
		MaxAttempts: 1000,
		Batch: ingest.BatchOptions{Size: 16, AfterCommit: func(n int) {
			mu.Lock()
			shared += n
			mu.Unlock()
		}},
	})
	const payments = 40
	var evs []delivery.Event
	for p := range payments {
		pay := fmt.Sprintf("pay_c%d", p)
		evs = append(evs, capture(pay, "evt_cap_"+pay, 1000))
		for r := range 3 {
			evs = append(evs, deliveryOf(pay, fmt.Sprintf("evt_re%d_%s", r, pay), "refund.succeeded", refunded(fmt.Sprintf("re%d_%s", r, pay), 100)))
		}
	}
	outcomes, errs := ingestConcurrently(t, svc, 2*len(evs), func(i int) delivery.Event { return evs[i/2] })
	accepted := map[string]int{}
	for i, o := range outcomes {
		require.NoError(t, errs[i])
		if o == ingest.Accepted {
			accepted[evs[i/2].DedupKey]++
		}
	}
	for _, ev := range evs {
		assert.Equal(t, 1, accepted[ev.DedupKey], "%s accepted once", ev.DedupKey)
		wantInboxStatus(t, pool, ev.DedupKey, ingest.StatusApplied, "")
	}
	for p := range payments {
		s := stream(fmt.Sprintf("pay_c%d", p))
		count := typeCounts(t, store, s)
		assert.Equal(t, 1, count[payment.TypeCaptured], s)
		assert.Equal(t, 3, count[payment.TypeRefundPosted], s)
	}
	mu.Lock()
	defer mu.Unlock()
	t.Logf("%d of %d deliveries were members of a shared unit", shared, 2*len(evs))
}

// TestSharedGateCountsOnlyPlainRedeliveries: the shared gate counts a
// redelivery in its own insert only when the row on record is a plain
// duplicate of it (same facts hash, not "received"). A row older than the
// facts hash (NULL) and a row still "received" are left to the single
// path, which counts each once more, no more: delivery_count says how many
// times the key arrived.
func TestSharedGateCountsOnlyPlainRedeliveries(t *testing.T) {
	pool := pgtest.NewPool(t)
	ctx := tctx(t)
	store := postgres.NewEventStore(pool)
	commits := 0
	svc := ingest.New(postgres.NewJournal(pool, store), ingest.PaymentDecider{}, ingest.Options{
		Batch: ingest.BatchOptions{AfterCommit: func(int) { commits++ }},
	})
	for _, id := range []string{"plain", "legacy", "received"} {
		mustIngest(t, svc, capture("pay_"+id, "evt_"+id, 1000), ingest.Accepted)
	}
	// A row from before migration 00005, and a row whose first arrival
	// died before its append (two-phase): its facts are not in the stream.
	_, err := pool.Exec(ctx, `UPDATE webhook_inbox SET facts_hash = NULL WHERE dedup_key = 'evt_legacy'`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `UPDATE webhook_inbox SET status = 'received', applied_at = NULL WHERE dedup_key = 'evt_received'`)
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `DELETE FROM events WHERE stream_id = $1`, stream("pay_received"))
	require.NoError(t, err)
	commits = 0

	evs := []delivery.Event{
		withBody(capture("pay_plain", "evt_plain", 1000), "again"),
		withBody(capture("pay_legacy", "evt_legacy", 1000), "again"),
		withBody(capture("pay_received", "evt_received", 1000), "again"),
		capture("pay_new", "evt_new", 1000),
	}
	res, alone, errs := ingest.IngestBatch(ctx, svc, evs)
	require.Equal(t, 1, commits, "one shared commit")
	for i, ev := range evs {
		require.NoError(t, errs[i], ev.DedupKey)
		want, wantAlone := ingest.Duplicate, ev.DedupKey != "evt_plain"
		if ev.DedupKey == "evt_new" {
			want, wantAlone = ingest.Accepted, false
		}
		assert.Equal(t, want, res[i].Outcome, ev.DedupKey)
		assert.False(t, res[i].Conflict, ev.DedupKey)
		assert.Equal(t, wantAlone, alone[i], ev.DedupKey)
	}
	for _, id := range []string{"plain", "legacy", "received"} {
		st, n := inboxRow(t, pool, "evt_"+id)
		assert.Equal(t, ingest.StatusApplied, st, id)
		assert.Equal(t, 2, n, "evt_%s arrived twice", id)
		equal(t, id+" stream", types(t, store, stream("pay_"+id)), []string{payment.TypeCaptured})
	}
	_, n := inboxRow(t, pool, "evt_new")
	assert.Equal(t, 1, n)
	assert.Zero(t, scalar(t, pool, `SELECT count(*) FROM webhook_conflicts`))
}
