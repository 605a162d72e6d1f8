package ingest_test

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/ingest"
	"github.com/onceledger/onceledger/adapters/postgres"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/payment"
)

// heldJournal is the Postgres journal with its first shared unit held open
// (its gate run, before its commit) until release is closed, and, when down
// is set, every unit failing: a shared unit rolls back after its work, a
// single-path one fails at once (a database gone).
type heldJournal struct {
	*postgres.Journal
	entered chan struct{} // one value: the first shared unit is open
	release chan struct{}
	down    atomic.Bool
	units   atomic.Int32 // shared units begun
}

var errDown = errors.New("injected: the database went away")

func (j *heldJournal) DoBatch(ctx context.Context, fn func(ingest.BatchTx) error) error {
	n := j.units.Add(1)
	return j.Journal.DoBatch(ctx, func(tx ingest.BatchTx) error {
		if err := fn(tx); err != nil {
			return err
		}
		if n == 1 {
			j.entered <- struct{}{}
			<-j.release
		}
		if j.down.Load() {
			return errDown
		}
		return nil
	})
}

func (j *heldJournal) Do(ctx context.Context, fn func(ingest.Tx) error) error {
	if j.down.Load() {
		return errDown
	}
	return j.Journal.Do(ctx, fn)
}

type answer struct {
	res ingest.Result
	err error
}

// twinsOfAHeldUnit sends ev, waits until its shared unit is open, sends
// twins more deliveries of ev's key with ev's facts (other bytes) and waits
// until they all wait behind the unit; then it lets the unit end and
// returns every answer, the first arrival's first.
func twinsOfAHeldUnit(t *testing.T, svc *ingest.Service, j *heldJournal, ev delivery.Event, twins int) []answer {
	ctx := tctx(t)
	answers := make([]answer, twins+1)
	var wg sync.WaitGroup
	send := func(i int, ev delivery.Event) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			res, err := svc.Ingest(ctx, ev)
			answers[i] = answer{res, err}
		}()
	}
	send(0, ev)
	<-j.entered
	for i := 1; i <= twins; i++ {
		send(i, withBody(ev, fmt.Sprintf("retry %d", i)))
	}
	for ingest.Waiting(svc) < twins {
		require.NoError(t, ctx.Err(), "the twins never queued")
		runtime.Gosched()
	}
	close(j.release)
	wg.Wait()
	return answers
}

// TestTwinsTakeTheirFirstArrivalsCommittedResult: redeliveries of a key
// whose first arrival's unit is in flight run no unit of their own; once
// that unit commits they are answered duplicates of it, counted on its row,
// and the payment holds the fact once.
func TestTwinsTakeTheirFirstArrivalsCommittedResult(t *testing.T) {
	pool := pgtest.NewPool(t)
	store := postgres.NewEventStore(pool)
	j := &heldJournal{Journal: postgres.NewJournal(pool, store), entered: make(chan struct{}, 1), release: make(chan struct{})}
	svc := ingest.New(j, ingest.PaymentDecider{}, ingest.Options{})
	const twins = 24
	answers := twinsOfAHeldUnit(t, svc, j, capture("pay_twin", "evt_twin", 1000), twins)
	for i, a := range answers {
		require.NoError(t, a.err, i)
		want := ingest.Duplicate
		if i == 0 {
			want = ingest.Accepted
		}
		assert.Equal(t, want, a.res.Outcome, i)
		assert.Equal(t, stream("pay_twin"), a.res.StreamID, i)
	}
	assert.EqualValues(t, 1, j.units.Load(), "the twins ran no unit of their own")
	st, n := inboxRow(t, pool, "evt_twin")
	assert.Equal(t, ingest.StatusApplied, st)
	assert.Equal(t, twins+1, n, "every arrival counted")
	equal(t, "stream", types(t, store, stream("pay_twin")), []string{payment.TypeCaptured})
}

// TestTwinsOfAUnitThatRollsBackAreNot2xx: the unit of the first arrival
// rolls back after its gate and the database stays away: none of the
// twins waiting on it is answered a success, and nothing is recorded.
func TestTwinsOfAUnitThatRollsBackAreNot2xx(t *testing.T) {
	pool := pgtest.NewPool(t)
	store := postgres.NewEventStore(pool)
	j := &heldJournal{Journal: postgres.NewJournal(pool, store), entered: make(chan struct{}, 1), release: make(chan struct{})}
	j.down.Store(true)
	svc := ingest.New(j, ingest.PaymentDecider{}, ingest.Options{})
	answers := twinsOfAHeldUnit(t, svc, j, capture("pay_lost", "evt_lost", 1000), 24)
	for i, a := range answers {
		require.ErrorIs(t, a.err, errDown, "answer %d: %+v", i, a.res)
	}
	assert.Zero(t, scalar(t, pool, `SELECT count(*) FROM webhook_inbox`))
	assert.Zero(t, scalar(t, pool, `SELECT count(*) FROM events`))
}

// TestConcurrentTwinsAreAnsweredOnce: many goroutines send several
// deliveries of each of a few keys at once, with no unit held: each key is
// accepted exactly once, its other arrivals are duplicates, every arrival
// is counted and each payment holds its fact once.
func TestConcurrentTwinsAreAnsweredOnce(t *testing.T) {
	pool := pgtest.NewPool(t)
	store := postgres.NewEventStore(pool)
	svc := ingest.New(postgres.NewJournal(pool, store), ingest.PaymentDecider{}, ingest.Options{MaxAttempts: 1000})
	const keys, copies = 8, 12
	outcomes, errs := ingestConcurrently(t, svc, keys*copies, func(i int) delivery.Event {
		pay := fmt.Sprintf("pay_t%d", i%keys)
		return withBody(capture(pay, "evt_"+pay, 1000), fmt.Sprint(i/keys))
	})
	accepted := map[int]int{}
	for i, o := range outcomes {
		require.NoError(t, errs[i])
		if o == ingest.Accepted {
			accepted[i%keys]++
		} else {
			require.Equal(t, ingest.Duplicate, o, i)
		}
	}
	for k := range keys {
		pay := fmt.Sprintf("pay_t%d", k)
		assert.Equal(t, 1, accepted[k], pay)
		_, n := inboxRow(t, pool, "evt_"+pay)
		assert.Equal(t, copies, n, pay)
		equal(t, pay, types(t, store, stream(pay)), []string{payment.TypeCaptured})
	}
}
