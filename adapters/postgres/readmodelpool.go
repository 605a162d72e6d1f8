package postgres

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5/pgxpool"
)

// ReadModelApplicationName is the application_name reserved for connections
// that never write events: the read model's (projector batches, rebuild
// shadow tables, checkpoints). The feed horizon passes over their open
// transactions (migrations/00050_feed_horizon_readmodel.sql), so a rebuild's
// long write transaction does not hold the live projectors back; a trigger
// on events refuses any write through such a connection. Never use it, or
// SET it, on a connection that appends.
const ReadModelApplicationName = "onceledger-readmodel"

// NewReadModelPool opens a pool like base (same database, credentials and
// pool settings) whose connections carry ReadModelApplicationName from
// their start: give it to the read-model store, never to an event store or
// recorder. The caller closes it.
func NewReadModelPool(ctx context.Context, base *pgxpool.Pool) (*pgxpool.Pool, error) {
	cfg := base.Config() // a copy
	if cfg.ConnConfig.RuntimeParams == nil {
		cfg.ConnConfig.RuntimeParams = map[string]string{}
	}
	cfg.ConnConfig.RuntimeParams["application_name"] = ReadModelApplicationName
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("read-model pool: %w", err)
	}
	return pool, nil
}
