package expectstore

import (
	"context"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/adapters/expectations"
)

var _ expectations.Schedule = (*Store)(nil)

// Claim implements expectations.Schedule: one indexed read
// (expected_payments_query_idx) of the due rows no live lease holds,
// locked with SKIP LOCKED so that instances claiming at once share them.
// Due is by the caller's clock (the one that scheduled); the lease's clock
// is the database's, common to every instance.
func (s *Store) Claim(ctx context.Context, owner string, providers []string, now time.Time, lease time.Duration, limit int) ([]expectations.Due, error) {
	// Asked in the order they fell due (UPDATE … RETURNING has none).
	rows, err := s.pool.Query(ctx, `
		WITH claimed AS (
			UPDATE expected_payments e SET lease_owner = $1, lease_until = now() + make_interval(secs => $2)
			WHERE e.id IN (
				SELECT id FROM expected_payments
				WHERE next_query_at IS NOT NULL AND next_query_at <= $5 AND provider = ANY($3)
					AND (lease_until IS NULL OR lease_until < now())
				ORDER BY next_query_at LIMIT $4 FOR UPDATE SKIP LOCKED)
			RETURNING e.id, e.provider, e.reference, e.query_attempts, e.next_query_at)
		SELECT id, provider, reference, query_attempts FROM claimed ORDER BY next_query_at, id`, owner, lease.Seconds(), providers, limit, now)
	if err != nil {
		return nil, fmt.Errorf("expectstore: claim: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (expectations.Due, error) {
		var d expectations.Due
		err := r.Scan(&d.ID, &d.Provider, &d.Reference, &d.Attempts)
		return d, err
	})
	if err != nil {
		return nil, fmt.Errorf("expectstore: claim: %w", err)
	}
	return out, nil
}

// Reschedule implements expectations.Schedule. Only the lease's owner
// reschedules (a question that outlived its lease changes nothing); a
// terminal row is never asked about again.
func (s *Store) Reschedule(ctx context.Context, id uuid.UUID, owner string, next time.Time, attempts int) error {
	var at *time.Time
	if !next.IsZero() {
		at = &next
	}
	_, err := s.pool.Exec(ctx, `
		UPDATE expected_payments SET lease_owner = NULL, lease_until = NULL, query_attempts = $3,
			next_query_at = CASE WHEN status IN ('paid', 'canceled') THEN NULL ELSE $4::timestamptz END
		WHERE id = $1 AND lease_owner = $2`, id, owner, attempts, at)
	if err != nil {
		return fmt.Errorf("expectstore: reschedule: %w", err)
	}
	return nil
}
