package postgres_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/ingest"
	"github.com/onceledger/onceledger/adapters/postgres"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
)

// A group-committed unit no longer notifies inside its transaction (wake.go):
// the feed's readers are still woken, by the wake-up sent after its commit.
func TestSharedUnitWakesTheReadersAfterItsCommit(t *testing.T) {
	pool := pgtest.NewPool(t)
	ctx := testCtx(t)
	store := postgres.NewEventStore(pool)
	ch, err := store.Changes(ctx)
	require.NoError(t, err)
	waitListening(t, ctx, pool)
	svc := ingest.New(postgres.NewJournal(pool, store), ingest.PaymentDecider{}, ingest.Options{})
	for i, id := range []string{"wake_1", "wake_2", "wake_3"} {
		select { // a wake-up of the previous round, if it came late
		case <-ch:
		default:
		}
		ev := recCaptureOf(id, id, int64(1000+i))
		ev.PaymentKey, ev.Facts[0].BusinessID = "pay_"+id, "cap_"+id // a new payment each: each unit appends
		res, err := svc.Ingest(ctx, ev)
		require.NoError(t, err)
		require.EqualValues(t, ingest.Accepted, res.Outcome)
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			require.FailNow(t, "no wake-up after the unit committed", "delivery %s", id)
		}
	}
}
