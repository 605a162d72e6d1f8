package main

import (
	"context"
	"fmt"
	"strconv"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/onceledger/onceledger/adapters/esdb"
	"github.com/onceledger/onceledger/adapters/esdb/esdbfake"
	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/httpapi"
	"github.com/onceledger/onceledger/adapters/postgres/pgtest"
	"github.com/onceledger/onceledger/adapters/postgres/readmodel"
	"github.com/onceledger/onceledger/projections"
)

// lagEvents is more than projections.Status reads in one page, so the
// count has to page.
const lagEvents = 12345

// esdbFeed is an EventStoreDB store (the in-process test double) holding
// n events over a few streams, and those events in feed order.
func esdbFeed(t *testing.T, n int) (*esdb.Store, []eventstore.RecordedEvent) {
	t.Helper()
	fake := esdbfake.Start(t)
	store, err := esdb.Dial(fake.URL())
	require.NoError(t, err)
	t.Cleanup(func() { _ = store.Close() })
	ctx := context.Background()
	for i := 0; i < n; {
		batch := make([]eventstore.EventData, 0, 500)
		for ; len(batch) < cap(batch) && i < n; i++ {
			batch = append(batch, eventstore.EventData{ID: uuid.New(), Type: "test.event", Data: []byte(`{}`)})
		}
		_, err := store.Append(ctx, fmt.Sprintf("payment-test-%d", i%3), eventstore.Any, batch)
		require.NoError(t, err)
	}
	var feed []eventstore.RecordedEvent
	for after := eventstore.Start; ; {
		evs, err := store.ReadAll(ctx, after, 1000)
		require.NoError(t, err)
		if len(evs) == 0 {
			break
		}
		feed = append(feed, evs...)
		after = evs[len(evs)-1].Position
	}
	require.Len(t, feed, n)
	return store, feed
}

// projectionLags GETs /v1/projections and returns lag and lag_capped by name.
func projectionLags(a *qapi) (map[string]int64, map[string]bool) {
	a.t.Helper()
	var body struct {
		Projections []struct {
			Name      string `json:"name"`
			Lag       int64  `json:"lag"`
			LagCapped bool   `json:"lag_capped"`
		} `json:"projections"`
	}
	a.getJSON("/v1/projections", &body)
	lags, capped := map[string]int64{}, map[string]bool{}
	for _, p := range body.Projections {
		lags[p.Name], capped[p.Name] = p.Lag, p.LagCapped
	}
	return lags, capped
}

// With EventStoreDB the Postgres events table is empty, so the lag has to
// come from the configured feed: the events after each checkpoint.
func TestProjectionsLagFromEventStoreDB(t *testing.T) {
	store, feed := esdbFeed(t, lagEvents)
	pool := pgtest.NewPool(t)
	setCheckpoint := func(name string, p eventstore.Position) {
		_, err := pool.Exec(context.Background(),
			`UPDATE projection_checkpoints SET position_commit = $1, position_prepare = $2, status = 'live' WHERE name = $3`,
			int64(p.Commit), int64(p.Prepare), name)
		require.NoError(t, err)
	}
	// payments stays at the start: it lags by every event.
	setCheckpoint("ledger", feed[344].Position)
	setCheckpoint("reconciliation", feed[len(feed)-1].Position)

	start := func(t *testing.T, lagCap int64) *qapi {
		return startQAPI(t, pool, httpapi.Config{
			APITokens: []string{qToken1, qToken2}, Events: store,
			Projections: projections.StatusReader{Feed: store, DB: readmodel.New(pool),
				Options: projections.StatusOptions{LagCap: lagCap}},
		})
	}

	t.Run("counted from the feed", func(t *testing.T) {
		a := start(t, 100_000)
		lags, capped := projectionLags(a)
		assert.Equal(t, map[string]int64{"ledger": lagEvents - 345, "payments": lagEvents, "payouts": lagEvents, "reconciliation": 0}, lags)
		assert.Equal(t, map[string]bool{"ledger": false, "payments": false, "payouts": false, "reconciliation": false}, capped)

		header, rows, _ := a.getCSV("/v1/projections")
		assert.Equal(t, "lag", header[3])
		require.NotEmpty(t, rows)
		assert.Equal(t, "ledger", rows[0][0])
		assert.Equal(t, strconv.Itoa(lagEvents-345), rows[0][3])
	})

	t.Run("capped", func(t *testing.T) {
		lags, capped := projectionLags(start(t, 1500))
		assert.Equal(t, map[string]int64{"ledger": 1500, "payments": 1500, "payouts": 1500, "reconciliation": 0}, lags)
		assert.Equal(t, map[string]bool{"ledger": true, "payments": true, "payouts": true, "reconciliation": false}, capped)
	})

	t.Run("exactly at the cap is not capped", func(t *testing.T) {
		lags, capped := projectionLags(start(t, lagEvents))
		assert.Equal(t, int64(lagEvents), lags["payments"])
		assert.False(t, capped["payments"])
	})
}
