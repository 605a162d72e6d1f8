package main

import (
	"context"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/cmd/onceledger/app"
)

// The commands other than serve open the event store through the app's
// one definition of ONCELEDGER_EVENT_STORE.

func usesPostgresEventStore(setting string) bool { return app.UsesPostgresEventStore(setting) }

func openEventStore(_ context.Context, setting string, pool *pgxpool.Pool) (eventstore.Store, func() error, bool, error) {
	es, err := app.OpenEventStore(setting, pool)
	if err != nil {
		return nil, nil, false, err
	}
	return es.Store, es.Close, es.IsPostgres, nil
}

func redactSetting(setting string) string { return app.RedactSetting(setting) }

func openPool(ctx context.Context, url string) (*pgxpool.Pool, error) { return app.OpenPool(ctx, url) }

// withEventStore opens the configured event store (and, for the Postgres
// store, its pool) for a command that needs nothing else, runs fn and
// closes both.
func withEventStore(g *globals, fn func(eventstore.Store) error) error {
	var pool *pgxpool.Pool
	if usesPostgresEventStore(g.cli.EventStore) {
		p, err := openPool(g.ctx, g.cli.DatabaseURL)
		if err != nil {
			return err
		}
		defer p.Close()
		pool = p
	}
	store, closeStore, _, err := openEventStore(g.ctx, g.cli.EventStore, pool)
	if err != nil {
		return err
	}
	defer func() { _ = closeStore() }()
	return fn(store)
}
