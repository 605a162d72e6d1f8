package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/postgres"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
)

// gather scrapes reg and returns every sample as "name{k=v,...}" -> value.
func gather(t *testing.T, reg *prometheus.Registry) map[string]float64 {
	t.Helper()
	mfs, err := reg.Gather()
	require.NoError(t, err)
	out := map[string]float64{}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+l.GetValue())
			}
			sort.Strings(labels)
			key := mf.GetName()
			if len(labels) > 0 {
				key += "{" + strings.Join(labels, ",") + "}"
			}
			switch {
			case m.GetGauge() != nil:
				out[key] = m.GetGauge().GetValue()
			case m.GetCounter() != nil:
				out[key] = m.GetCounter().GetValue()
			}
		}
	}
	return out
}

func inboxRow(t *testing.T, pool *pgxpool.Pool, key, status string) {
	t.Helper()
	_, err := pool.Exec(context.Background(), `
		INSERT INTO webhook_inbox (provider, dedup_key, payload_hash, raw_body, status)
		VALUES ('test', $1, 'h', '\x7b7d', $2)`, key, status)
	require.NoError(t, err)
}

// appendVisible appends n events and waits until feed readers see them all.
func appendVisible(t *testing.T, pool *pgxpool.Pool, n int) []eventstore.RecordedEvent {
	t.Helper()
	ctx := context.Background()
	store := postgres.NewEventStore(pool)
	for i := 0; i < n; i++ {
		_, err := store.Append(ctx, "payment-test-stats", eventstore.Any, []eventstore.EventData{
			{ID: uuid.New(), Type: "test.event", Data: []byte(`{}`)},
		})
		require.NoError(t, err)
	}
	var all []eventstore.RecordedEvent
	require.Eventually(t, func() bool {
		var err error
		all, err = store.ReadAll(ctx, eventstore.Start, 100)
		require.NoError(t, err)
		return len(all) == n
	}, 30*time.Second, 20*time.Millisecond)
	return all
}

func TestStatsCollectorInboxAndLag(t *testing.T) {
	pool := pgtest.NewPool(t)
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		inboxRow(t, pool, fmt.Sprintf("a%d", i), "applied")
	}
	inboxRow(t, pool, "r0", "received")
	inboxRow(t, pool, "i0", "invalid")

	all := appendVisible(t, pool, 4)
	// Back-date the events so that the lag in seconds is measurable: the
	// oldest unprojected event of the ledger projection is the third.
	for i, r := range all {
		_, err := pool.Exec(ctx, `UPDATE events SET recorded_at = now() - make_interval(secs => $1) WHERE event_id = $2`,
			float64(1000-100*i), r.ID)
		require.NoError(t, err)
	}
	at := all[1].Position
	_, err := pool.Exec(ctx, `
		UPDATE projection_checkpoints SET position_commit = $1, position_prepare = $2, status = 'live'
		WHERE name = 'ledger'`, int64(at.Commit), int64(at.Prepare))
	require.NoError(t, err)
	last := all[3].Position
	_, err = pool.Exec(ctx, `
		UPDATE projection_checkpoints SET position_commit = $1, position_prepare = $2, status = 'live'
		WHERE name = 'reconciliation'`, int64(last.Commit), int64(last.Prepare))
	require.NoError(t, err)
	_, err = pool.Exec(ctx, `
		UPDATE projection_checkpoints SET last_error = 'poison', status = 'stopped',
			error_position_commit = $1, error_position_prepare = $2
		WHERE name = 'payments'`, int64(all[0].Position.Commit), int64(all[0].Position.Prepare))
	require.NoError(t, err)

	store := postgres.NewEventStore(pool)
	reg := prometheus.NewRegistry()
	reg.MustRegister(postgres.NewStatsCollector(pool, store.Head))
	got := gather(t, reg)

	require.Equal(t, 1.0, got["onceledger_stats_up"])
	require.Equal(t, 3.0, got["onceledger_inbox_rows{status=applied}"])
	require.Equal(t, 1.0, got["onceledger_inbox_rows{status=received}"])
	require.Equal(t, 1.0, got["onceledger_inbox_rows{status=invalid}"])
	// Statuses without rows are reported as 0, not omitted.
	v, ok := got["onceledger_inbox_rows{status=unverified}"]
	require.True(t, ok, "unverified missing: %v", got)
	require.Zero(t, v)

	require.Equal(t, 2.0, got["onceledger_projection_lag_events{projection=ledger}"])
	require.Equal(t, 4.0, got["onceledger_projection_lag_events{projection=payments}"])
	require.Equal(t, 0.0, got["onceledger_projection_lag_events{projection=reconciliation}"])

	require.InDelta(t, 800, got["onceledger_projection_lag_seconds{projection=ledger}"], 30)
	require.InDelta(t, 1000, got["onceledger_projection_lag_seconds{projection=payments}"], 30)
	lag, ok := got["onceledger_projection_lag_seconds{projection=reconciliation}"]
	require.True(t, ok)
	require.Zero(t, lag, "caught up means 0 seconds of lag")

	require.Equal(t, float64(at.Prepare), got["onceledger_projection_position{projection=ledger}"])
	require.Equal(t, 1.0, got["onceledger_projection_errors{projection=payments}"])
	require.Equal(t, 0.0, got["onceledger_projection_errors{projection=ledger}"])
	require.Equal(t, float64(last.Prepare), got["onceledger_feed_head_position"])

	// ReadStats is the same reading, for the CLI.
	st, err := postgres.ReadStats(ctx, pool)
	require.NoError(t, err)
	require.Equal(t, map[string]int64{"applied": 3, "received": 1, "invalid": 1}, st.Inbox)
	require.Len(t, st.Projections, 3)
	require.Equal(t, "ledger", st.Projections[0].Name)
	require.Equal(t, at, st.Projections[0].Position)
	require.Equal(t, "poison", st.Projections[1].LastError)
	require.Equal(t, "stopped", st.Projections[1].Status)
}

func TestStatsCollectorFailureDoesNotFailScrape(t *testing.T) {
	pool := pgtest.NewPool(t)
	inboxRow(t, pool, "a", "applied")

	// A failing head: the database gauges are still there, up is 0.
	reg := prometheus.NewRegistry()
	reg.MustRegister(postgres.NewStatsCollector(pool, func(context.Context) (eventstore.Position, error) {
		return eventstore.Position{}, eventstore.ErrUnavailable
	}))
	got := gather(t, reg)
	require.Equal(t, 0.0, got["onceledger_stats_up"])
	require.Equal(t, 1.0, got["onceledger_inbox_rows{status=applied}"])
	_, ok := got["onceledger_feed_head_position"]
	require.False(t, ok)

	// A table locked by someone else: the scrape gives up after its
	// timeout instead of hanging, and still succeeds.
	ctx := context.Background()
	tx, err := pool.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(ctx) }()
	_, err = tx.Exec(ctx, `LOCK TABLE webhook_inbox IN ACCESS EXCLUSIVE MODE`)
	require.NoError(t, err)
	reg = prometheus.NewRegistry()
	reg.MustRegister(postgres.NewStatsCollector(pool, nil))
	start := time.Now()
	got = gather(t, reg)
	require.Less(t, time.Since(start), 10*time.Second)
	require.Equal(t, 0.0, got["onceledger_stats_up"])
	_, ok = got["onceledger_inbox_rows{status=applied}"]
	require.False(t, ok, "nothing read, nothing reported")
	require.NoError(t, tx.Rollback(ctx))

	// A closed pool.
	closed := pgtest.NewPool(t)
	closed.Close()
	reg = prometheus.NewRegistry()
	reg.MustRegister(postgres.NewStatsCollector(closed, nil))
	require.Equal(t, 0.0, gather(t, reg)["onceledger_stats_up"])
	_, err = postgres.ReadStats(ctx, closed)
	require.Error(t, err)
}

func TestRebuildProgressGauges(t *testing.T) {
	// Without a registry the gauges work and are simply not exported.
	p, err := postgres.NewRebuildProgress(nil)
	require.NoError(t, err)
	p.Done.WithLabelValues("ledger").Set(5)

	reg := prometheus.NewRegistry()
	p, err = postgres.NewRebuildProgress(reg)
	require.NoError(t, err)
	p.Total.WithLabelValues("ledger").Set(100)
	p.Done.WithLabelValues("ledger").Add(40)
	got := gather(t, reg)
	require.Equal(t, 100.0, got["onceledger_rebuild_events_total{projection=ledger}"])
	require.Equal(t, 40.0, got["onceledger_rebuild_events_done{projection=ledger}"])

	_, err = postgres.NewRebuildProgress(reg)
	var already prometheus.AlreadyRegisteredError
	require.True(t, errors.As(err, &already), "second registration: %v", err)
}
