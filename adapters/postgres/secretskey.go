package postgres

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/adapters/outbox"
)

var _ outbox.KeyCheckStore = (*Subscriptions)(nil)

// LoadKeyCheck implements outbox.KeyCheckStore.
func (s *Subscriptions) LoadKeyCheck(ctx context.Context) ([]byte, error) {
	var sealed []byte
	err := s.pool.QueryRow(ctx, `SELECT sealed FROM secrets_key_check`).Scan(&sealed)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("postgres: load secrets key check: %w", err)
	}
	return sealed, nil
}

// SaveKeyCheck implements outbox.KeyCheckStore.
func (s *Subscriptions) SaveKeyCheck(ctx context.Context, sealed []byte, replace bool) ([]byte, error) {
	q := `INSERT INTO secrets_key_check (sealed) VALUES ($1) ON CONFLICT (id) DO NOTHING`
	if replace {
		q = `INSERT INTO secrets_key_check (sealed) VALUES ($1) ON CONFLICT (id) DO UPDATE SET sealed = $1, created_at = now()`
	}
	if _, err := s.pool.Exec(ctx, q, sealed); err != nil {
		return nil, fmt.Errorf("postgres: save secrets key check: %w", err)
	}
	return s.LoadKeyCheck(ctx)
}

// AnySealedSecret implements outbox.KeyCheckStore.
func (s *Subscriptions) AnySealedSecret(ctx context.Context) (string, []byte, bool, error) {
	var id string
	var sealed []byte
	err := s.pool.QueryRow(ctx, `SELECT id::text, secret FROM subscriptions ORDER BY created_at LIMIT 1`).Scan(&id, &sealed)
	if errors.Is(err, pgx.ErrNoRows) {
		return "", nil, false, nil
	}
	if err != nil {
		return "", nil, false, fmt.Errorf("postgres: a subscription secret: %w", err)
	}
	return id, sealed, true, nil
}
