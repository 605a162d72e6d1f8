package chaos

import (
	"context"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"
)

const workers = 16

// duringOutage tolerates what a provider sees while serve is down or
// restarting: no connection, or 503 (retry later).
func duringOutage(a answer) bool {
	return a.status == 0 || a.status == http.StatusServiceUnavailable
}

// waitAcked blocks until the sender has n acknowledgements or done closes;
// it reports whether the load was still running.
func waitAcked(ctx context.Context, s *sender, n int, done <-chan struct{}) bool {
	for s.ackedCount() < n {
		select {
		case <-done:
			return false
		case <-ctx.Done():
			return false
		case <-time.After(2 * time.Millisecond):
		}
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// redeliverAndCheck is the provider's retry schedule after the load pass:
// everything unacknowledged plus 30% of what was acknowledged (which must
// answer "duplicate"), in random order. Then every delivery must be
// acknowledged and applied, and the read models must equal the model.
func redeliverAndCheck(ctx context.Context, t *testing.T, pool *pgxpool.Pool, srv *server, s *sender, w *workload, rng *rand.Rand) {
	t.Helper()
	unacked, again := s.redeliveryList(w, rng, 0.3)
	redo := append(unacked, again...)
	rng.Shuffle(len(redo), func(i, j int) { redo[i], redo[j] = redo[j], redo[i] })
	s.redeliver(ctx, redo, workers, policy{backoff: 50 * time.Millisecond, until: time.Now().Add(3 * time.Minute)})
	t.Logf("redelivered %d unacknowledged and %d acknowledged", len(unacked), len(again))
	s.report(t)
	n := s.ackedCount()
	require.Equal(t, len(w.all), n, "%d of %d deliveries still unacknowledged after redelivery", len(w.all)-n, len(w.all))
	checkInbox(ctx, t, pool, w, s.ackedSet(), true)
	checkLedger(ctx, t, pool, srv, w, 60*time.Second)
}

// TestCrashKill9Redeliver proves that a 2xx means durable, across a crash:
// serve is killed with SIGKILL in the middle of a concurrent load (more than
// once at larger scales) and restarted. Right after the restart every
// acknowledged webhook-id must be in the inbox as applied. Then the sender
// redelivers everything unacknowledged plus 30% of what was acknowledged (a
// redelivered acknowledged delivery must answer "duplicate"), and the read
// models must equal the independent model exactly.
func TestCrashKill9Redeliver(t *testing.T) {
	r, cancel := beginChaos(t, 10*time.Minute, true)
	defer cancel()
	start, ctx, k, srv, pool := r.start, r.ctx, r.k, r.srv, r.pool
	seed := loggedSeed(t)
	w := newWorkload(t, seed, 150*k)
	s := newSender(t, srv, workers, duringOutage)

	marks := []float64{0.4}
	if k > 1 {
		marks = []float64{0.25, 0.5, 0.75}
	}
	loadDone := make(chan struct{})
	go func() {
		defer close(loadDone)
		// Few tries per pass: what fails while serve is down is left for the
		// redelivery pass, as a provider's retry schedule would.
		s.deliver(ctx, w.seqs, workers, policy{tries: 3, backoff: 20 * time.Millisecond, until: time.Now().Add(5 * time.Minute)})
	}()
	for _, m := range marks {
		require.True(t, waitAcked(ctx, s, int(m*float64(len(w.all))), loadDone),
			"the load ended before the kill at %.0f%% acknowledged: nothing crashed mid-load", m*100)
		srv.kill9()
		t.Logf("kill -9 at %d/%d acknowledged", s.ackedCount(), len(w.all))
		time.Sleep(200 * time.Millisecond) // deliveries fail meanwhile
		srv.start()
	}
	<-loadDone
	acked := s.ackedSet()
	t.Logf("load pass: %d/%d acknowledged", len(acked), len(w.all))
	// Before any redelivery can paper over a loss: each 2xx is applied.
	checkInbox(ctx, t, pool, w, acked, false)

	redeliverAndCheck(ctx, t, pool, srv, s, w, rand.New(rand.NewPCG(seed, 1)))
	t.Logf("%d deliveries, %d kills, %d ledger entries: ledger == model in %v",
		len(w.all), len(marks), w.entries, time.Since(start).Round(time.Millisecond))
}
