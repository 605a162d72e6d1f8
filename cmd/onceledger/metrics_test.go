package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/httpapi"
	"github.com/onceledger/onceledger/adapters/postgres"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/adapters/postgres/readmodel"
	"github.com/onceledger/onceledger/cmd/onceledger/app"
	"github.com/onceledger/onceledger/projections"
)

// gatherGauges gathers reg and returns every gauge as "name{k=v,...}" -> value.
func gatherGauges(t *testing.T, reg *prometheus.Registry) map[string]float64 {
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
			if g := m.GetGauge(); g != nil {
				out[key] = g.GetValue()
			}
		}
	}
	return out
}

// metricsFixture sets the checkpoints over feed (ledger after the second
// event, payments stopped at the start, reconciliation caught up) and
// writes 5 inbox rows; it returns a registry exporting a monitor that reads
// projections.Status over feed, and the monitor.
func metricsFixture(t *testing.T, pool *pgxpool.Pool, feed projections.Feed, evs []eventstore.RecordedEvent) (*prometheus.Registry, *httpapi.Monitor) {
	t.Helper()
	ctx := context.Background()
	setCP := func(name string, at eventstore.Position, status, lastError string) {
		_, err := pool.Exec(ctx, `UPDATE projection_checkpoints SET position_commit = $1, position_prepare = $2,
			status = $3, last_error = nullif($4, '') WHERE name = $5`,
			int64(at.Commit), int64(at.Prepare), status, lastError, name)
		require.NoError(t, err)
	}
	setCP("ledger", evs[1].Position, "live", "")
	setCP("payments", eventstore.Start, "stopped", "poison")
	setCP("reconciliation", evs[len(evs)-1].Position, "live", "")
	for i, st := range []string{"applied", "applied", "applied", "received", "invalid"} {
		_, err := pool.Exec(ctx, `
			INSERT INTO webhook_inbox (provider, dedup_key, payload_hash, raw_body, status)
			VALUES ('test', $1, 'h', '\x7b7d', $2)`, fmt.Sprintf("m%d", i), st)
		require.NoError(t, err)
	}
	m := httpapi.NewMonitor(httpapi.MonitorConfig{Status: projections.StatusReader{
		Feed: feed, DB: readmodel.New(pool), Options: projections.StatusOptions{LagCap: app.StatusLagCap, Inbox: true},
	}})
	reg := prometheus.NewRegistry()
	reg.MustRegister(m)
	return reg, m
}

// The lag gauges count the configured feed: right with the Postgres event
// store and with EventStoreDB (whose events are not in Postgres at all).
func TestMetricsLagBothEventStores(t *testing.T) {
	ctx := context.Background()
	check := func(t *testing.T, pool *pgxpool.Pool, feed projections.Feed, evs []eventstore.RecordedEvent) {
		reg, m := metricsFixture(t, pool, feed, evs)
		m.RefreshStatus(ctx)
		got := gatherGauges(t, reg)
		n := float64(len(evs))
		assert.Equal(t, 1.0, got["onceledger_stats_up"])
		assert.Equal(t, n-2, got["onceledger_projection_lag_events{projection=ledger}"])
		assert.Equal(t, n, got["onceledger_projection_lag_events{projection=payments}"])
		assert.Equal(t, 0.0, got["onceledger_projection_lag_events{projection=reconciliation}"])
		assert.Equal(t, 0.0, got["onceledger_projection_lag_seconds{projection=reconciliation}"])
		assert.Greater(t, got["onceledger_projection_lag_seconds{projection=ledger}"], 0.0)
		assert.Equal(t, float64(evs[1].Position.Prepare), got["onceledger_projection_position{projection=ledger}"])
		assert.Equal(t, 1.0, got["onceledger_projection_errors{projection=payments}"])
		assert.Equal(t, 0.0, got["onceledger_projection_errors{projection=ledger}"])
		assert.Equal(t, float64(evs[len(evs)-1].Position.Prepare), got["onceledger_feed_head_position"])
		assert.Equal(t, 3.0, got["onceledger_inbox_rows{status=applied}"])
		assert.Equal(t, 0.0, got["onceledger_inbox_rows{status=unverified}"])

		// The figures are the last reading's until the next one: a scrape
		// reads nothing from the database.
		_, err := pool.Exec(ctx, `
			INSERT INTO webhook_inbox (provider, dedup_key, payload_hash, raw_body, status)
			VALUES ('test', 'late', 'h', '\x7b7d', 'applied')`)
		require.NoError(t, err)
		assert.Equal(t, 3.0, gatherGauges(t, reg)["onceledger_inbox_rows{status=applied}"])
		m.RefreshStatus(ctx)
		assert.Equal(t, 4.0, gatherGauges(t, reg)["onceledger_inbox_rows{status=applied}"])
	}

	t.Run("postgres", func(t *testing.T) {
		pool := pgtest.NewPool(t)
		store := postgres.NewEventStore(pool)
		for i := 0; i < 4; i++ {
			_, err := store.Append(ctx, "payment-test-metrics", eventstore.Any, []eventstore.EventData{
				{ID: uuid.New(), Type: "test.event", Data: []byte(`{}`)},
			})
			require.NoError(t, err)
		}
		var evs []eventstore.RecordedEvent
		require.Eventually(t, func() bool {
			var err error
			evs, err = store.ReadAll(ctx, eventstore.Start, 100)
			require.NoError(t, err)
			return len(evs) == 4
		}, 30*time.Second, 20*time.Millisecond)
		check(t, pool, store, evs)
	})

	t.Run("eventstoredb", func(t *testing.T) {
		store, evs := esdbFeed(t, 7)
		check(t, pgtest.NewPool(t), store, evs)
	})
}
