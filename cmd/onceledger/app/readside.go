package app

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/httpapi"
	"github.com/onceledger/onceledger/adapters/postgres"
	"github.com/onceledger/onceledger/adapters/postgres/readmodel"
	"github.com/onceledger/onceledger/projections"
)

// StatusLagCap bounds how many events one reading of the status counts per
// projection on behalf of /v1/projections and /metrics: the feed has no
// count, and a far-behind projection must not make every reading walk the
// whole history (the answer then says lag_capped). The CLI counts them all.
const StatusLagCap = 100_000

// monitorConns is the connection budget of the status readings: /readyz,
// /metrics and /v1/projections never take a connection from ingestion.
const monitorConns = 2

// readSide is the read path's wiring for serve, shared by both front ends
// (/v1 and the console): the read-model queries, and the projections'
// status (/v1/projections, the console's lag, /metrics) and readiness
// (/readyz), the status and readiness read by one background monitor on a
// small pool of its own.
type readSide struct {
	Query       *readmodel.Store
	Projections projections.StatusReader
	Monitor     *httpapi.Monitor
	pool        *pgxpool.Pool
}

// openReadSide wires the read side. pool is the main pool (the /v1
// queries); store is the configured event store, isPostgres whether it is
// the Postgres one (then the status reads its feed through the monitor's
// own pool too).
func openReadSide(ctx context.Context, url string, pool *pgxpool.Pool, store eventstore.Store, isPostgres bool) (*readSide, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("ONCELEDGER_DATABASE_URL: %w", err)
	}
	cfg.MaxConns, cfg.MinConns = monitorConns, 0
	mpool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to database (monitor pool): %w", err)
	}
	feed := projections.Feed(store)
	if isPostgres {
		feed = postgres.NewEventStore(mpool)
	}
	rs := &readSide{Query: readmodel.New(pool), pool: mpool}
	rs.Projections = projections.StatusReader{Feed: feed, DB: readmodel.New(mpool),
		Options: projections.StatusOptions{LagCap: StatusLagCap, Inbox: true, InboxCounter: &projections.InboxCounter{}}}
	rs.Monitor = httpapi.NewMonitor(httpapi.MonitorConfig{
		Status: rs.Projections,
		Ready: func(ctx context.Context) error {
			if err := mpool.Ping(ctx); err != nil {
				return &httpapi.NotReady{Component: "database", Err: err}
			}
			ok, err := postgres.MigrationsApplied(ctx, mpool)
			if err != nil {
				return &httpapi.NotReady{Component: "migrations", Err: err}
			}
			if !ok {
				return &httpapi.NotReady{Component: "migrations", Err: errors.New("migrations pending")}
			}
			if _, err := feed.Head(ctx); err != nil {
				return &httpapi.NotReady{Component: "event store", Err: err}
			}
			return nil
		},
	})
	return rs, nil
}

// Close closes the monitor's pool (after the monitor stopped).
func (rs *readSide) Close() { rs.pool.Close() }
