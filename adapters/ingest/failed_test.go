package ingest_test

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/esdb/esdbfake"
	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/ingest"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/adapters/postgres/readmodel"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/projections"
)

// brokenDecider stands for a bug: every decision fails, permanently.
type brokenDecider struct{ ingest.PaymentDecider }

var errBug = errors.New("decision bug: cannot decide this delivery")

// Fold: the bug is in Decide, on histories.
func (brokenDecider) Fold(delivery.Event) ingest.Fold { return nil }

func (brokenDecider) Decide([]eventstore.RecordedEvent, delivery.Event) ([]eventstore.EventData, error) {
	return nil, errBug
}

// TestPermanentlyFailingDeliveryIsMarkedFailed (EventStoreDB mode): a
// delivery whose decision always fails stays "received" after its request
// (503), is re-driven by the sweeper a bounded number of times, then moves
// to "failed" with its error, is counted as such in status, is left alone
// by the sweeper, and is recorded by a re-drive from "failed" once the code
// is fixed (issue 13).
func TestPermanentlyFailingDeliveryIsMarkedFailed(t *testing.T) {
	pool := pgtest.NewPool(t)
	store := dialESDB(t, esdbfake.Start(t).URL())
	f := fixtureOver(t, pool, store)
	const attempts = 3
	broken := ingest.New(ingest.TwoPhase(f.inbox, f.store), brokenDecider{}, ingest.Options{MaxDriveAttempts: attempts})

	ev := capture("p1", "evt_bug", 1000)
	_, err := broken.Ingest(tctx(t), ev)
	require.ErrorIs(t, err, errBug)
	wantInboxStatus(t, pool, "evt_bug", ingest.StatusReceived, " after the failing request")

	sweeper := broken.Sweeper(f.inbox, 0, nil)
	sweeper.OlderThan, sweeper.Interval = time.Millisecond, time.Millisecond
	require.Eventually(t, func() bool {
		_, _ = sweeper.Once(tctx(t))
		st, _ := inboxRow(t, pool, "evt_bug")
		return st == ingest.StatusFailed
	}, 30*time.Second, 5*time.Millisecond, "the sweeper gives up and marks the row failed")
	assert.EqualValues(t, attempts, scalar(t, pool, `SELECT attempts FROM webhook_inbox WHERE dedup_key = 'evt_bug'`))
	var lastError string
	require.NoError(t, pool.QueryRow(tctx(t), `SELECT last_error FROM webhook_inbox WHERE dedup_key = 'evt_bug'`).Scan(&lastError))
	assert.Contains(t, lastError, errBug.Error())

	rep, err := projections.Status(tctx(t), store, readmodel.New(pool), projections.StatusOptions{Inbox: true})
	require.NoError(t, err)
	assert.EqualValues(t, 1, rep.Inbox[ingest.StatusFailed], "status counts failed rows")

	n, err := sweeper.Once(tctx(t))
	require.NoError(t, err)
	assert.Zero(t, n, "the sweeper leaves failed rows alone")
	equal(t, "stream while failed", types(t, f.store, stream("p1")), []string{})

	// After the fix: a re-drive from "failed" records the facts, once.
	res, err := f.svc.Redrive(tctx(t), ingest.InboxKey{Provider: "standard", DedupKey: "evt_bug"}, ingest.StatusFailed)
	require.NoError(t, err)
	assert.Equal(t, ingest.Accepted, res.Outcome)
	assert.Equal(t, 1, res.Appended)
	wantInboxStatus(t, pool, "evt_bug", ingest.StatusApplied, " after the re-drive")
	res, err = f.svc.Redrive(tctx(t), ingest.InboxKey{Provider: "standard", DedupKey: "evt_bug"}, ingest.StatusFailed)
	require.NoError(t, err)
	assert.Equal(t, ingest.Duplicate, res.Outcome, "a second re-drive does nothing")
	equal(t, "stream after the fix", types(t, f.store, stream("p1")), []string{"payment.captured"})
}
