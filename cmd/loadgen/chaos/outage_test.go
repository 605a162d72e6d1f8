package chaos

import (
	"context"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestPostgresOutage stops the database under a concurrent load and starts
// it again: a throwaway cluster of the test's own (initdb in a temp dir, its
// own port), never the machine's shared server. While it is down serve must
// answer only 503 (no other 5xx, no connection failures: serve stays up, and
// /healthz stays 200 while /readyz says 503); every acknowledged delivery
// must be applied afterwards, and after the sender's redeliveries the read
// models must equal the model exactly.
func TestPostgresOutage(t *testing.T) {
	start := time.Now()
	cl := newCluster(t) // skips under -short
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	k := scale(t)
	dbURL := cl.url("onceledger_chaos")
	srv := newServer(t, dbURL, newSecrets(t), true)
	srv.start()
	pool := openPool(t, dbURL)
	seed := loggedSeed(t)
	w := newWorkload(t, seed, 150*k)
	s := newSender(t, srv, workers, func(a answer) bool { return a.status == http.StatusServiceUnavailable })

	outages := 1
	if k > 1 {
		outages = 2
	}
	loadDone := make(chan struct{})
	go func() {
		defer close(loadDone)
		// Retry each delivery until acknowledged: the load rides through
		// the outage in order, one 503 after another.
		s.deliver(ctx, w.seqs, workers, policy{backoff: 50 * time.Millisecond, until: time.Now().Add(5 * time.Minute)})
	}()
	probe := &http.Client{Timeout: 5 * time.Second}
	status := func(path string) int {
		resp, err := probe.Get(srv.url(path))
		if err != nil {
			return 0
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	for i := range outages {
		mark := float64(i+1) / float64(outages+1)
		require.True(t, waitAcked(ctx, s, int(mark*float64(len(w.all))), loadDone),
			"the load ended before outage %d: the database was never down under load", i+1)
		before := s.refusals()
		cl.stop()
		t.Logf("postgres stopped at %d/%d acknowledged", s.ackedCount(), len(w.all))
		time.Sleep(1500 * time.Millisecond)
		assert.Equal(t, http.StatusOK, status("/healthz"), "/healthz during the outage: want 200 (the process is alive)")
		assert.Equal(t, http.StatusServiceUnavailable, status("/readyz"), "/readyz during the outage: want 503")
		refused := s.refusals() - before
		cl.start()
		t.Logf("postgres restarted; %d requests answered 503 meanwhile", refused)
		assert.NotZero(t, refused, "no 503 during outage %d: the load did not hit the outage", i+1)
		if !srv.alive() {
			require.Fail(t, "serve died during the outage", tail(srv.logPath, 30))
		}
	}
	<-loadDone
	acked := s.ackedSet()
	checkInbox(ctx, t, pool, w, acked, false)

	redeliverAndCheck(ctx, t, pool, srv, s, w, rand.New(rand.NewPCG(seed, 2)))
	assert.True(t, srv.alive(), "serve is not running at the end")
	t.Logf("%d deliveries, %d outages, %d ledger entries: ledger == model in %v",
		len(w.all), outages, w.entries, time.Since(start).Round(time.Millisecond))
}
