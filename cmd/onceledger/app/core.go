package app

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/onceledger/onceledger/adapters/ingest"
	"github.com/onceledger/onceledger/adapters/operations"
	"github.com/onceledger/onceledger/adapters/outbox"
	"github.com/onceledger/onceledger/adapters/postgres"
	"github.com/onceledger/onceledger/adapters/postgres/readmodel"
	"github.com/onceledger/onceledger/adapters/providers"
	"github.com/onceledger/onceledger/adapters/providers/paypalipn"
	"github.com/onceledger/onceledger/adapters/reportimport"
	"github.com/onceledger/onceledger/projections"
)

// Core is what every command that records or acts needs, and nothing of
// the web: the database pools, the event store and its journal, the
// ingest service and its background workers, the read-model queries, the
// projections runtime and the acting services (reconciliation, redrive,
// periods, the report importer). `settle import`, `settle sync`,
// `backfill` and `redrive` build only this (NewCore); App adds the HTTP
// server, the console, the monitor and the metrics on top of it.
type Core struct {
	cfg  Config
	log  *slog.Logger
	pool *pgxpool.Pool
	// rmPool writes the read models: its connections are marked so that
	// the feed horizon passes their transactions (postgres.NewReadModelPool);
	// it must never append events.
	rmPool   *pgxpool.Pool
	events   EventStore
	service  *ingest.Service
	workers  []*ingest.Worker
	query    *readmodel.Store
	recon    *operations.Reconciliation
	redriver *ingest.Redriver
	// sealer seals push subscriptions' secrets (nil: ONCELEDGER_SECRETS_KEY
	// not set).
	sealer *outbox.Sealer
	// sender is the push subscriptions' sender serve runs (nil elsewhere):
	// the operators' service wakes it on each change (subscriptions.go).
	sender atomic.Pointer[outbox.Sender]
	// retries counts appends retried after a lost race; App registers it
	// for /metrics (a command has none: it counts for nobody).
	retries *prometheus.CounterVec
	closed  sync.Once
}

// NewCore builds the core from cfg; the web's settings (Addr, tokens,
// timeouts of the server) are not read. It opens the database (migrating
// it first when cfg.Migrate) and the event store; Close releases them.
func NewCore(ctx context.Context, cfg Config) (*Core, error) {
	c := &Core{cfg: cfg, log: cfg.Logger}
	if c.log == nil {
		c.log = slog.Default()
	}
	var err error
	if c.sealer, err = sealer(cfg.SecretsKey); err != nil {
		return nil, err
	}
	if cfg.Migrate {
		if err := Migrate(ctx, cfg.DatabaseURL, c.log); err != nil {
			return nil, err
		}
	}
	pool, err := OpenPool(ctx, cfg.DatabaseURL)
	if err != nil {
		return nil, err
	}
	c.pool = pool
	if c.rmPool, err = postgres.NewReadModelPool(ctx, pool); err != nil {
		pool.Close()
		return nil, err
	}
	c.events, err = OpenEventStore(cfg.EventStore, pool)
	if err != nil {
		c.rmPool.Close()
		pool.Close()
		return nil, err
	}
	c.retries = prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "onceledger_append_retries_total",
		Help: "Appends retried after losing the race for a stream (wrong expected version).",
	}, []string{"provider"})

	inbox, postback := postgres.NewInbox(pool), c.postback()
	// Bank accounts' deliveries are decided by their own aggregate
	// (bank.go); every other by the payments'.
	c.service = ingest.New(c.events.Journal, bankDecider(cfg), ingest.Options{
		OnRetry: func(p string) { c.retries.WithLabelValues(p).Inc() },
		// Unverified deliveries (IPN) are bounded: past the bounds they are
		// verified inline (ingest.Hold).
		Hold:  ingest.HoldOptions{Pending: inbox, Postback: postback},
		Batch: ingest.BatchOptions{Size: cfg.IngestBatch, AfterCommit: cfg.AfterBatchCommit},
	})
	c.workers = c.service.Workers(inbox, ingest.WorkerOptions{
		SweepAge: cfg.SweepAge, Postback: postback, Log: c.log,
	})
	c.query = readmodel.New(pool)
	c.actions() // console.go
	return c, nil
}

// postback is the verifier of held deliveries, when a configured provider
// holds its deliveries (PayPal IPN).
func (c *Core) postback() ingest.Postback {
	for _, p := range c.cfg.Providers {
		if providers.Holds(p) {
			return ipnPostback{paypalipn.Verifier{URL: c.cfg.PostbackURL, Client: c.cfg.PostbackClient}}
		}
	}
	return nil
}

// ipnPostback adapts the PayPal IPN verifier to the worker's port.
type ipnPostback struct{ v paypalipn.Verifier }

func (p ipnPostback) Verify(ctx context.Context, raw []byte) (bool, error) {
	verdict, err := p.v.Verify(ctx, raw)
	if err != nil {
		return false, err
	}
	return verdict == paypalipn.Verified, nil
}

// Pool is the app's database pool.
func (c *Core) Pool() *pgxpool.Pool { return c.pool }

// Events is the configured event store.
func (c *Core) Events() EventStore { return c.events }

// Importer is the settlement report importer (settlements.go), with the
// registry's report parsers.
func (c *Core) Importer() *reportimport.Importer {
	after := c.cfg.UnsettledAfter
	if after <= 0 {
		after = DefaultUnsettledAfter
	}
	im := NewImporter(c.service, c.query, after)
	im.Balances = c.Balances() // balances.go: the balances a file states
	return im
}

// Service is the ingest service.
func (c *Core) Service() *ingest.Service { return c.service }

// Workers are the background workers Run starts (sweeper, held-delivery
// verifier), for tests that drive them by hand.
func (c *Core) Workers() []*ingest.Worker { return c.workers }

// Periods closes and reopens accounting periods in the reporting zone.
func (c *Core) Periods() *operations.Periods {
	return operations.NewPeriods(c.events.Store, c.cfg.ReportingZone, c.cfg.Now)
}

// Projections is the projections runtime: the projectors over the
// configured event store, writing the read models through their marked
// pool.
func (c *Core) Projections() *projections.Service {
	return projections.NewService(c.events.Store, readmodel.New(c.rmPool), c.log, projections.ReportingZone(c.cfg.ReportingZone))
}

// Eraser erases raw bodies on request (`onceledger erase`, POST
// /v1/inbox/erase).
func (c *Core) Eraser() *postgres.Eraser { return postgres.NewEraser(c.pool) }

// Close releases the event store and the pools, once.
func (c *Core) Close() {
	c.closed.Do(func() {
		_ = c.events.Close()
		c.rmPool.Close()
		c.pool.Close()
	})
}

// Migrate creates the database if needed and applies pending migrations.
func Migrate(ctx context.Context, url string, log *slog.Logger) error {
	if err := postgres.EnsureDatabase(ctx, url); err != nil {
		return err
	}
	applied, err := postgres.Migrate(ctx, url)
	if err != nil {
		return err
	}
	log.Info("migrations applied", "count", len(applied))
	return nil
}

// OpenPool opens a pool on ONCELEDGER_DATABASE_URL.
func OpenPool(ctx context.Context, url string) (*pgxpool.Pool, error) {
	cfg, err := pgxpool.ParseConfig(url)
	if err != nil {
		return nil, fmt.Errorf("ONCELEDGER_DATABASE_URL: %w", err)
	}
	customPlans(cfg)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to database: %w", err)
	}
	return pool, nil
}

// customPlans makes Postgres plan every execution of the pool's prepared
// statements for the tables as they are (plan_cache_mode, unless the URL
// sets it). By default it switches a statement to a generic plan after five
// executions and keeps that plan for the connection's life: planned when
// the tables were empty (a server started on a new database), the shared
// unit's inbox read was a hash join over a sequential scan of
// webhook_inbox, and such plans stayed while the tables grew, so each
// delivery cost more the longer the server ran (bench step 3b: Postgres
// CPU per delivery at 1,000/s doubled after steps 2 and 3, with thousands
// of sequential scans of webhook_inbox and events; a new autovacuum
// ANALYZE would replace them, but a growing database can go minutes
// without one). Planning each execution costs tens of microseconds.
//
// JIT compilation is off for the same reason (jit, unless the URL sets
// it): it starts above an estimated cost, and estimates made without
// statistics can pass that for a query that reads a few rows, paying
// milliseconds of compilation for microseconds of work.
func customPlans(cfg *pgxpool.Config) {
	if cfg.ConnConfig.RuntimeParams == nil {
		cfg.ConnConfig.RuntimeParams = map[string]string{}
	}
	for k, v := range map[string]string{"plan_cache_mode": "force_custom_plan", "jit": "off"} {
		if _, set := cfg.ConnConfig.RuntimeParams[k]; !set {
			cfg.ConnConfig.RuntimeParams[k] = v
		}
	}
}
