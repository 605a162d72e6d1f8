package chaos

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// catchUp is how far the projectors are: per projection, the number of
// events at or below its checkpoint (the feed is ordered by tx_id, then
// global_position).
type catchUp map[string]int

func (c catchUp) sum() int {
	n := 0
	for _, v := range c {
		n += v
	}
	return n
}

func (c catchUp) done(events int) bool {
	if len(c) == 0 {
		return false
	}
	for _, v := range c {
		if v != events {
			return false
		}
	}
	return true
}

func (c catchUp) String() string {
	var parts []string
	for k, v := range c {
		parts = append(parts, fmt.Sprintf("%s=%d", k, v))
	}
	return strings.Join(parts, " ")
}

func readCatchUp(ctx context.Context, pool *pgxpool.Pool) (catchUp, error) {
	rows, err := pool.Query(ctx, `
		SELECT c.name,
		       (SELECT count(*) FROM events e
		        WHERE (e.tx_id, e.global_position) <= (c.position_commit, c.position_prepare))
		FROM projection_checkpoints c`)
	if err != nil {
		return nil, err
	}
	type progress struct {
		Name   string
		Events int
	}
	ps, err := pgx.CollectRows(rows, pgx.RowToStructByPos[progress])
	if err != nil {
		return nil, err
	}
	out := catchUp{}
	for _, p := range ps {
		out[p.Name] = p.Events
	}
	return out, nil
}

// TestProjectorKilledMidCatchUp builds a backlog with a serve that does not
// project (--projections=false: the inbox and events fill, the read models
// stay empty), then starts projecting servers and kills each with SIGKILL as
// soon as its projectors have committed progress but not caught up, so the
// kill lands while the next batch is in flight. After a last restart the read
// models must equal the model exactly: ledger_entries rows, their sums,
// account_balances, one payments row per payment. A batch and its checkpoint
// commit together, so a replayed batch must not count twice.
func TestProjectorKilledMidCatchUp(t *testing.T) {
	r, cancel := beginChaos(t, 10*time.Minute, false)
	defer cancel()
	start, ctx, k, srv, pool := r.start, r.ctx, r.k, r.srv, r.pool
	seed := loggedSeed(t)
	w := newWorkload(t, seed, 400*k)
	s := newSender(t, srv, workers, func(answer) bool { return false })
	s.deliver(ctx, w.seqs, workers, policy{tries: 3, backoff: 20 * time.Millisecond, until: time.Now().Add(5 * time.Minute)})
	s.report(t)
	n := s.ackedCount()
	require.Equal(t, len(w.all), n, "backlog: %d of %d deliveries unacknowledged", len(w.all)-n, len(w.all))
	checkInbox(ctx, t, pool, w, s.ackedSet(), true)
	l, entries, err := sqlLedger(ctx, pool)
	require.NoError(t, err)
	require.True(t, entries == 0 && len(l.Balances()) == 0,
		"serve --projections=false projected anyway: %d ledger_entries, %d balances", entries, len(l.Balances()))
	sent := time.Since(start)
	srv.stop()
	var events int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM events`).Scan(&events))
	t.Logf("backlog: %d deliveries, %d events, sent in %v, serve stopped (SIGTERM) after %v",
		len(w.all), events, sent.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))

	srv.projections = true
	kills := 0
	for cycle := 0; cycle < 2+3*k; cycle++ {
		srv.start()
		before, err := readCatchUp(ctx, pool)
		require.NoError(t, err)
		killed := false
		deadline := time.Now().Add(30 * time.Second)
		for !killed && time.Now().Before(deadline) {
			now, err := readCatchUp(ctx, pool)
			require.NoError(t, err)
			if now.done(events) {
				break
			}
			if now.sum() > before.sum() {
				srv.kill9()
				killed = true
				t.Logf("kill -9 #%d while catching up (of %d events: %v)", kills+1, events, now)
				break
			}
			time.Sleep(2 * time.Millisecond)
		}
		if !killed {
			break // caught up: nothing left to interrupt
		}
		kills++
	}
	if !srv.alive() {
		srv.start()
	}
	assert.NotZero(t, kills, "the projectors caught up on %d events before any kill: nothing was interrupted (raise ONCELEDGER_CHAOS_SCALE)", events)
	checkLedger(ctx, t, pool, srv, w, 60*time.Second)
	var payments int
	require.NoError(t, pool.QueryRow(ctx, `SELECT count(*) FROM payments`).Scan(&payments))
	want := 0
	for _, seq := range w.seqs {
		if seq[0].typ != "payout.paid" {
			want++
		}
	}
	assert.Equal(t, want, payments, "payments rows: %d, want %d (one per payment)", payments, want)
	t.Logf("%d events, %d kills mid catch-up, %d ledger entries: read models == model in %v",
		events, kills, w.entries, time.Since(start).Round(time.Millisecond))
}
