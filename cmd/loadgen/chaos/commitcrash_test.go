package chaos

import (
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// failpointExit is the exit status of serve's failpoint
// (ONCELEDGER_TEST_EXIT_AFTER_BATCH_COMMIT).
const failpointExit = 75

// TestCrashBetweenSharedCommitAndAnswers: the window group commit opens.
// serve runs with a failpoint that makes it exit right after a shared commit
// (several first arrivals in one transaction) and before answering any of
// them: their facts are durable and no sender knows. The sender redelivers
// everything unacknowledged, as providers do; every delivery must end
// recorded exactly once (answered "duplicate" where an earlier attempt was
// recorded), and the read models must equal the model.
func TestCrashBetweenSharedCommitAndAnswers(t *testing.T) {
	r, cancel := beginChaos(t, 10*time.Minute, true)
	defer cancel()
	start, ctx, k, srv, pool := r.start, r.ctx, r.k, r.srv, r.pool
	seed := loggedSeed(t)
	w := newWorkload(t, seed, 150*k)
	s := newSender(t, srv, workers, duringOutage)

	// Restart with the failpoint armed: exit after the 5th shared commit.
	srv.stop()
	srv.env = []string{"ONCELEDGER_TEST_EXIT_AFTER_BATCH_COMMIT=5"}
	srv.start()
	srv.env = nil

	loadDone := make(chan struct{})
	go func() {
		defer close(loadDone)
		s.deliver(ctx, w.seqs, workers, policy{tries: 3, backoff: 20 * time.Millisecond, until: time.Now().Add(5 * time.Minute)})
	}()
	require.NoError(t, eventually(ctx, 2*time.Minute, 5*time.Millisecond, func() error {
		if srv.alive() {
			return errFailpointPending
		}
		return nil
	}), "serve did not reach its failpoint: fewer than 5 shared commits during the load")
	code := srv.exitCode()
	log, err := os.ReadFile(srv.logPath)
	require.NoError(t, err)
	require.Equal(t, failpointExit, code, "serve exited with %d, not at the failpoint:\n%s", code, tail(srv.logPath, 20))
	require.True(t, strings.Contains(string(log), "failpoint: exiting after shared commit"), tail(srv.logPath, 20))
	t.Logf("serve exited at its failpoint with %d acknowledged", s.ackedCount())
	srv.start()
	<-loadDone
	acked := s.ackedSet()
	t.Logf("load pass: %d/%d acknowledged", len(acked), len(w.all))
	checkInbox(ctx, t, pool, w, acked, false)

	redeliverAndCheck(ctx, t, pool, srv, s, w, rand.New(rand.NewPCG(seed, 1)))
	s.mu.Lock()
	lost := s.recordedUnanswered
	s.mu.Unlock()
	require.Positive(t, lost, "no delivery was recorded without its answer: the crash missed the window")
	t.Logf("%d deliveries, %d recorded by the shared commit before the crash without an answer, %d ledger entries: ledger == model in %v",
		len(w.all), lost, w.entries, time.Since(start).Round(time.Millisecond))
}
