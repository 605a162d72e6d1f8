package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/postgres"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/adapters/postgres/readmodel"
	"github.com/onceledger/onceledger/projections"
	"github.com/onceledger/onceledger/projections/views"
)

// statusFixture is a database with 4 events (recorded 1000, 900, 800 and
// 700 seconds ago), the ledger projection live after the second event and
// active, payments stopped on the first event, reconciliation caught up,
// and 5 inbox rows.
func statusFixture(t *testing.T) (url string, evs []eventstore.RecordedEvent) {
	t.Helper()
	url = pgtest.NewDatabase(t)
	ctx := context.Background()
	pool, err := pgxpool.New(ctx, url)
	require.NoError(t, err)
	t.Cleanup(pool.Close)

	store := postgres.NewEventStore(pool)
	for i := 0; i < 4; i++ {
		_, err := store.Append(ctx, "payment-test-status", eventstore.Any, []eventstore.EventData{
			{ID: uuid.New(), Type: "test.event", Data: []byte(`{}`)},
		})
		require.NoError(t, err)
	}
	// Events become visible once no older transaction of the server runs.
	require.Eventually(t, func() bool {
		evs, err = store.ReadAll(ctx, eventstore.Start, 100)
		require.NoError(t, err)
		return len(evs) == 4
	}, 30*time.Second, 20*time.Millisecond)
	for i, r := range evs {
		_, err := pool.Exec(ctx, `UPDATE events SET recorded_at = now() - make_interval(secs => $1) WHERE event_id = $2`,
			float64(1000-100*i), r.ID)
		require.NoError(t, err)
	}
	setCP := func(name string, at eventstore.Position, status string) {
		_, err := pool.Exec(ctx, `UPDATE projection_checkpoints SET position_commit = $1, position_prepare = $2, status = $3 WHERE name = $4`,
			int64(at.Commit), int64(at.Prepare), status, name)
		require.NoError(t, err)
	}
	setCP("ledger", evs[1].Position, "live")
	setCP("reconciliation", evs[3].Position, "live")
	_, err = pool.Exec(ctx, `
		UPDATE projection_checkpoints SET status = 'stopped', last_error = 'decode payment.teleported: unknown event type',
			error_position_commit = $1, error_position_prepare = $2
		WHERE name = 'payments'`, int64(evs[0].Position.Commit), int64(evs[0].Position.Prepare))
	require.NoError(t, err)
	for i, st := range []string{"applied", "applied", "applied", "received", "invalid"} {
		_, err := pool.Exec(ctx, `
			INSERT INTO webhook_inbox (provider, dedup_key, payload_hash, raw_body, status)
			VALUES ('standard', $1, 'h', '\x7b7d', $2)`, fmt.Sprintf("msg_%d", i), st)
		require.NoError(t, err)
	}
	// A projector of the ledger runs (holds its lock) for the test's span.
	lock, ok, err := readmodel.New(pool).TryLock(ctx, projections.LockActive, "ledger")
	require.NoError(t, err)
	require.True(t, ok)
	t.Cleanup(func() { _ = lock.Release(context.Background()) })
	return url, evs
}

func runStatus(t *testing.T, url string, asJSON bool) string {
	t.Helper()
	var buf bytes.Buffer
	g := &globals{ctx: context.Background(), log: slog.New(slog.DiscardHandler),
		cli: &cli{DatabaseURL: url, EventStore: "postgres"}}
	require.NoError(t, (&statusCmd{JSON: asJSON}).run(g, &buf))
	return buf.String()
}

func TestStatusJSON(t *testing.T) {
	url, evs := statusFixture(t)
	var v statusView
	var out string
	// The head and the lags are counted below the feed horizon, which a
	// transaction elsewhere on the server can hold back for a moment: wait
	// until they show every event, then check the whole answer.
	require.Eventually(t, func() bool {
		out = runStatus(t, url, true)
		v = statusView{}
		require.NoError(t, json.Unmarshal([]byte(out), &v), out)
		lags := map[string]int64{}
		for _, p := range v.Projections {
			lags[p.Name] = p.Lag
		}
		return v.Head == evs[3].Position.Prepare && lags["ledger"] == 2 && lags["payments"] == 4
	}, 30*time.Second, 20*time.Millisecond, "status never showed the head at the fourth event")

	require.Equal(t, evs[3].Position.Prepare, v.Head)
	require.Equal(t, evs[3].Position.Commit, v.HeadCommit)
	require.Equal(t, map[string]int64{"applied": 3, "received": 1, "invalid": 1, "ignored": 0, "unverified": 0, "verified": 0, "failed": 0}, v.Inbox)
	require.Len(t, v.Projections, len(projections.Default()))
	by := map[string]views.ProjectionStatus{}
	for _, p := range v.Projections {
		by[p.Name] = p
	}

	l := by["ledger"]
	require.Equal(t, "live", l.Status)
	require.True(t, l.Active)
	require.Equal(t, evs[1].Position, l.Position)
	require.Equal(t, int64(2), l.Lag)
	require.InDelta(t, 800, l.LagSeconds, 30, "age of the third event")
	require.Empty(t, l.LastError)
	require.Nil(t, l.ErrorPosition)

	p := by["payments"]
	require.Equal(t, "stopped", p.Status)
	require.False(t, p.Active)
	require.Equal(t, int64(4), p.Lag)
	require.InDelta(t, 1000, p.LagSeconds, 30)
	require.Contains(t, p.LastError, "unknown event type")
	require.Equal(t, &evs[0].Position, p.ErrorPosition)

	r := by["reconciliation"]
	require.Equal(t, int64(0), r.Lag)
	require.Zero(t, r.LagSeconds)

	// The keys scripts rely on.
	var raw map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &raw))
	for _, k := range []string{"head", "head_commit", "projections", "inbox"} {
		require.Contains(t, raw, k)
	}
	first := raw["projections"].([]any)[0].(map[string]any)
	for _, k := range []string{"name", "status", "active", "position", "position_commit", "lag", "lag_seconds", "updated_at"} {
		require.Contains(t, first, k)
	}
}

func TestStatusText(t *testing.T) {
	url, evs := statusFixture(t)
	var out string
	// Wait for the head and the lags past a momentarily held-back horizon
	// (see TestStatusJSON).
	ledgerRow := regexp.MustCompile(fmt.Sprintf(`(?m)^ledger +live +yes +%d +2 +1[34]m\d+s +\S+$`, evs[1].Position.Prepare))
	require.Eventually(t, func() bool {
		out = runStatus(t, url, false)
		return strings.Contains(out, fmt.Sprintf("feed head  %d\n", evs[3].Position.Prepare)) &&
			ledgerRow.MatchString(out) && regexp.MustCompile(`(?m)^payments +\S+ \S+ +no +0 \(start\) +4 `).MatchString(out)
	}, 30*time.Second, 20*time.Millisecond, "status never showed the head at the fourth event")
	t.Log("\n" + out)

	require.Contains(t, out, fmt.Sprintf("feed head  %d\n", evs[3].Position.Prepare))
	header := regexp.MustCompile(`(?m)^PROJECTION +STATUS +RUNNING +POSITION +LAG \(EVENTS\) +LAG \(TIME\) +UPDATED$`)
	require.Regexp(t, header, out)
	// One aligned row per projection: name, status, running, position, lag, age.
	require.Regexp(t, regexp.MustCompile(fmt.Sprintf(`(?m)^ledger +live +yes +%d +2 +1[34]m\d+s +\S+$`, evs[1].Position.Prepare)), out)
	require.Regexp(t, regexp.MustCompile(`(?m)^payments +stopped \(error\) +no +0 \(start\) +4 +1[67]m\d+s +\S+$`), out)
	require.Regexp(t, regexp.MustCompile(fmt.Sprintf(`(?m)^reconciliation +live +no +%d +0 +0s +\S+$`, evs[3].Position.Prepare)), out)
	// The full error of the stopped projection, with where it stopped.
	require.Contains(t, out, fmt.Sprintf("payments stopped at event %d (%s):\n  decode payment.teleported: unknown event type\n",
		evs[0].Position.Prepare, evs[0].Position))
	// The inbox, every status, zeros included.
	for _, line := range []string{"applied     3", "received    1", "invalid     1", "ignored     0", "unverified  0"} {
		require.Contains(t, out, line+"\n")
	}
	require.True(t, strings.Index(out, "INBOX") > strings.Index(out, "PROJECTION"))
}

func TestStatusEmptyDatabase(t *testing.T) {
	url := pgtest.NewDatabase(t)
	var v statusView
	require.NoError(t, json.Unmarshal([]byte(runStatus(t, url, true)), &v))
	require.Zero(t, v.Head)
	require.Len(t, v.Projections, len(projections.Default()))
	for _, p := range v.Projections {
		require.Zero(t, p.Lag)
		require.Zero(t, p.LagSeconds)
	}
	out := runStatus(t, url, false)
	require.Contains(t, out, "feed head  0 (start)")
}

func TestStatusAgo(t *testing.T) {
	require.Equal(t, "0s", ago(0))
	require.Equal(t, "<1s", ago(0.2))
	require.Equal(t, "1m32s", ago(92.4))
	require.Equal(t, "3h0m5s", ago(3*3600+5))
}
