package postgres

import (
	"context"
	"errors"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/adapters/eventstore"
)

// OutboundCheckpoint is one row of outbound_checkpoints (migrations/00080):
// how far the outbound relay of that name has published the feed.
type OutboundCheckpoint struct {
	pool *pgxpool.Pool
	name string
}

// NewOutboundCheckpoint returns the checkpoint of the relay name.
func NewOutboundCheckpoint(pool *pgxpool.Pool, name string) *OutboundCheckpoint {
	return &OutboundCheckpoint{pool: pool, name: name}
}

// Load returns the saved position; Start when none was saved.
func (c *OutboundCheckpoint) Load(ctx context.Context) (eventstore.Position, error) {
	var commit, prepare int64
	err := c.pool.QueryRow(ctx, `SELECT commit_pos, prepare_pos FROM outbound_checkpoints WHERE name = $1`, c.name).Scan(&commit, &prepare)
	if errors.Is(err, pgx.ErrNoRows) {
		return eventstore.Start, nil
	}
	if err != nil {
		return eventstore.Position{}, wrap("outbound checkpoint", err)
	}
	return eventstore.Position{Commit: uint64(commit), Prepare: uint64(prepare)}, nil
}

// Save stores p; it never moves the checkpoint back (a second relay that
// lags behind cannot undo the first one's progress).
func (c *OutboundCheckpoint) Save(ctx context.Context, p eventstore.Position) error {
	commit, prepare := clampPosition(p)
	_, err := c.pool.Exec(ctx, `
		INSERT INTO outbound_checkpoints (name, commit_pos, prepare_pos) VALUES ($1, $2, $3)
		ON CONFLICT (name) DO UPDATE SET commit_pos = EXCLUDED.commit_pos, prepare_pos = EXCLUDED.prepare_pos, updated_at = now()
		WHERE (outbound_checkpoints.commit_pos, outbound_checkpoints.prepare_pos) < (EXCLUDED.commit_pos, EXCLUDED.prepare_pos)`,
		c.name, commit, prepare)
	if err != nil {
		return wrap("outbound checkpoint", err)
	}
	return nil
}
