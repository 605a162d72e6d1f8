// Package sessionstore keeps the console's sessions (access.Session) in
// Postgres (table console_sessions), so that every instance of the service
// sees the same sessions and signing out on one ends the session on all.
// It stores the SHA-256 of each session id, never the id itself, and owns
// only that table's SQL; it imports no front end.
package sessionstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/adapters/access"
)

// Store keeps access.Session values: the console's Sessions port over
// Postgres (the console asserts it; this package knows no front end).
type Store struct {
	pool *pgxpool.Pool
}

// New returns a store over pool (migrations applied).
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// purgeBatch bounds how many expired sessions one sign-in deletes, so that
// a sign-in never waits on a large cleanup.
const purgeBatch = 100

// Create stores s, and deletes a batch of expired sessions: sign-ins are
// rare enough to carry the cleanup, and no background job is needed.
func (st *Store) Create(ctx context.Context, s access.Session) error {
	_, err := st.pool.Exec(ctx, `
		WITH expired AS (
			DELETE FROM console_sessions WHERE id_hash IN (
				SELECT id_hash FROM console_sessions WHERE expires_at < $6
				ORDER BY expires_at LIMIT `+fmt.Sprint(purgeBatch)+`))
		INSERT INTO console_sessions (id_hash, actor, role, token_digest, created_at, expires_at)
		VALUES ($1, $2, $3, $4, $5, $7)`,
		s.IDHash[:], s.Actor, string(s.Role), s.TokenDigest[:], s.CreatedAt, s.CreatedAt, s.ExpiresAt)
	if err != nil {
		return fmt.Errorf("sessionstore: create: %w", err)
	}
	return nil
}

// Get returns the session with this id hash unless it expired at now.
func (st *Store) Get(ctx context.Context, idHash [32]byte, now time.Time) (access.Session, bool, error) {
	var s access.Session
	var role string
	var digest []byte
	err := st.pool.QueryRow(ctx, `
		SELECT actor, role, token_digest, created_at, expires_at FROM console_sessions
		WHERE id_hash = $1 AND expires_at > $2`, idHash[:], now).
		Scan(&s.Actor, &role, &digest, &s.CreatedAt, &s.ExpiresAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return s, false, nil
	}
	if err != nil {
		return s, false, fmt.Errorf("sessionstore: get: %w", err)
	}
	if len(digest) != len(s.TokenDigest) {
		return s, false, fmt.Errorf("sessionstore: get: token digest of %d bytes", len(digest))
	}
	s.IDHash, s.Role = idHash, access.Role(role)
	copy(s.TokenDigest[:], digest)
	return s, true, nil
}

// Delete ends the session (signing out); an unknown one is no error.
func (st *Store) Delete(ctx context.Context, idHash [32]byte) error {
	if _, err := st.pool.Exec(ctx, `DELETE FROM console_sessions WHERE id_hash = $1`, idHash[:]); err != nil {
		return fmt.Errorf("sessionstore: delete: %w", err)
	}
	return nil
}
