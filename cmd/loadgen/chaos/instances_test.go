package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/postgres"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/projections"
)

// failoverBound is how long the projections may stand still after the
// instance running them dies: a correctness bound (the survivors retry the
// projection locks every second), not a performance figure.
const failoverBound = 5 * time.Second

// feedPos is a place in the global feed: (tx_id, global_position).
type feedPos struct{ Commit, Prepare int64 }

func (p feedPos) less(q feedPos) bool {
	return p.Commit < q.Commit || (p.Commit == q.Commit && p.Prepare < q.Prepare)
}

// lastEvent is the newest committed event in feed order (zero if none).
func lastEvent(ctx context.Context, pool *pgxpool.Pool) (feedPos, error) {
	rows, err := pool.Query(ctx, `SELECT tx_id, global_position FROM events ORDER BY tx_id DESC, global_position DESC LIMIT 1`)
	if err != nil {
		return feedPos{}, err
	}
	ps, err := pgx.CollectRows(rows, pgx.RowToStructByPos[feedPos])
	if err != nil || len(ps) == 0 {
		return feedPos{}, err
	}
	return ps[0], nil
}

// checkpointsAt reports whether every projection's checkpoint is at or past p.
func checkpointsAt(ctx context.Context, pool *pgxpool.Pool, p feedPos) (bool, error) {
	rows, err := pool.Query(ctx, `SELECT position_commit, position_prepare FROM projection_checkpoints`)
	if err != nil {
		return false, err
	}
	cps, err := pgx.CollectRows(rows, pgx.RowToStructByPos[feedPos])
	if err != nil || len(cps) == 0 {
		return false, err
	}
	for _, cp := range cps {
		if cp.less(p) {
			return false, nil
		}
	}
	return true, nil
}

// projectionLocksHeldSince counts the advisory locks held by read-model
// connections of this database, and how many of them by sessions that began
// after t (the projection locks are session locks on read-model
// connections; nothing else holds one for long).
func projectionLocksHeldSince(ctx context.Context, pool *pgxpool.Pool, t time.Time) (all, since int, err error) {
	err = pool.QueryRow(ctx, `
		SELECT count(*), count(*) FILTER (WHERE a.backend_start >= $2)
		FROM pg_locks l JOIN pg_stat_activity a ON a.pid = l.pid
		WHERE l.locktype = 'advisory' AND l.granted
		  -- the projectors' session locks only (readmodel's lock class of
		  -- projections.LockActive, two-int4 keys): every batch also takes a
		  -- transaction-scoped shared pause lock, which proves nothing here
		  AND l.classid = 1867251713 AND l.objsubid = 2
		  AND l.database = (SELECT oid FROM pg_database WHERE datname = current_database())
		  AND a.application_name = $1`,
		postgres.ReadModelApplicationName, t).Scan(&all, &since)
	return all, since, err
}

// TestThreeInstancesKill9: three `serve` processes on one database, the
// sender spreading deliveries across them round-robin per attempt
// (duplicates included: redeliveries, the same capture under a second
// webhook-id, and twins sent to two instances at the same instant), and
// kill -9 of the instance that runs the projectors in the middle of the
// load. The ledger must equal the model; the projections must move again
// within failoverBound; no delivery may be answered 5xx (or cut off)
// except on the killed instance's own connections.
func TestThreeInstancesKill9(t *testing.T) {
	if testing.Short() {
		t.Skip("chaos: skipped in -short mode")
	}
	start := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	k := scale(t)
	dbURL := pgtest.UnusedDatabaseURL(t)
	sec := newSecrets(t)

	// The first instance alone, until its projectors are active: it holds
	// the projection locks when the others arrive.
	first := newServer(t, dbURL, sec, true)
	first.start()
	pool := openPool(t, dbURL)
	require.NoError(t, eventually(ctx, 60*time.Second, 50*time.Millisecond, func() error {
		// Every projection's lock (it said 3, from when there were three: the
		// fourth could go to a later instance, and the premise below failed
		// in CI: "4 held, 1 by sessions of the later instances").
		all, _, err := projectionLocksHeldSince(ctx, pool, time.Now())
		if want := len(projections.Default()); err == nil && all < want {
			err = fmt.Errorf("%d projection locks held, want %d", all, want)
		}
		return err
	}), "the first instance's projectors did not become active")
	othersStarted := time.Now()
	srvs := []*server{first, newServer(t, dbURL, sec, true), newServer(t, dbURL, sec, true)}
	for _, s := range srvs[1:] {
		s.start()
	}

	seed := loggedSeed(t)
	w := newWorkload(t, seed, 150*k)
	// Kept back and sent after the kill, so that events certainly arrive
	// while the survivors take the projections over.
	probe := w.seqs[len(w.seqs)-1]
	w.seqs = w.seqs[:len(w.seqs)-1]

	var killed atomic.Bool
	s := newClusterSender(t, srvs, workers, func(a answer) bool {
		// Only the killed instance may fail, and only from the kill on:
		// its connections cut (status 0), refused, or a 5xx on the way down.
		return a.target == 0 && killed.Load() && (a.status == 0 || a.status >= http.StatusInternalServerError)
	})
	s.twins = 0.1

	loadDone := make(chan struct{})
	go func() {
		defer close(loadDone)
		// Until acknowledged: an attempt that fails on the dead instance is
		// retried on the next one, as behind a load balancer.
		s.deliver(ctx, w.seqs, workers, policy{backoff: 20 * time.Millisecond, until: time.Now().Add(5 * time.Minute)})
	}()
	require.True(t, waitAcked(ctx, s, int(0.4*float64(len(w.all))), loadDone),
		"the load ended before the kill at 40%% acknowledged: nothing crashed mid-load")
	all, late, err := projectionLocksHeldSince(ctx, pool, othersStarted)
	require.NoError(t, err)
	require.True(t, all >= len(projections.Default()) && late == 0,
		"test premise: the first instance holds the projection locks (%d held, %d by sessions of the later instances)", all, late)

	killed.Store(true)
	srvs[0].kill9()
	killedAt := time.Now()
	t.Logf("kill -9 of the projecting instance at %d/%d acknowledged", s.ackedCount(), len(w.all))

	// Failover: an event committed after the kill (the dead process cannot
	// have projected it) must reach every projection's checkpoint.
	before, err := lastEvent(ctx, pool)
	require.NoError(t, err)
	probeDone := make(chan struct{})
	go func() {
		defer close(probeDone)
		s.deliver(ctx, [][]*delivery{probe}, 1, policy{backoff: 20 * time.Millisecond, until: time.Now().Add(time.Minute)})
	}()
	var after feedPos
	require.NoError(t, eventually(ctx, time.Minute, 10*time.Millisecond, func() error {
		p, err := lastEvent(ctx, pool)
		if err == nil && !before.less(p) {
			err = fmt.Errorf("no event after %v yet", before)
		}
		after = p
		return err
	}))
	require.NoError(t, eventually(ctx, 2*time.Minute, 20*time.Millisecond, func() error {
		ok, err := checkpointsAt(ctx, pool, after)
		if err == nil && !ok {
			err = fmt.Errorf("projections not yet at %v", after)
		}
		return err
	}), "the projections never moved again after the kill")
	failover := time.Since(killedAt)
	t.Logf("projections moving again %v after the kill", failover.Round(time.Millisecond))
	require.LessOrEqual(t, failover, failoverBound, "projection failover took %v", failover)

	<-loadDone
	<-probeDone
	t.Logf("load pass: %d/%d acknowledged", s.ackedCount(), len(w.all))
	// Every acknowledged delivery is applied before any redelivery.
	checkInbox(ctx, t, pool, w, s.ackedSet(), false)
	redeliverAndCheck(ctx, t, pool, srvs[1], s, w, rand.New(rand.NewPCG(seed, 2)))
	t.Logf("%d deliveries over 3 instances, one killed; failover %v; ledger == model in %v",
		len(w.all), failover.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
}
