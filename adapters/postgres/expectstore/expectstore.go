// Package expectstore is the expected-payment process manager's Postgres
// side (expectations.Store): the expected_payments rows with their query
// schedule, the payment facts it has seen (expectation_captures) and its
// checkpoint with the lease of the one instance that runs it
// (expectation_checkpoint, migration 00130). It holds SQL, no rules.
package expectstore

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/adapters/expectations"
	"github.com/onceledger/onceledger/domain/money"
)

var _ expectations.Store = (*Store)(nil)

// Store implements expectations.Store over pool.
type Store struct {
	pool *pgxpool.Pool
}

// New returns a store over pool (migrations applied).
func New(pool *pgxpool.Pool) *Store { return &Store{pool: pool} }

// Lease implements expectations.Store. The lease's clock is the
// database's, common to every instance.
func (s *Store) Lease(ctx context.Context, owner string, d time.Duration) (eventstore.Position, bool, error) {
	var c, p int64
	err := s.pool.QueryRow(ctx, `
		UPDATE expectation_checkpoint SET lease_owner = $1, lease_until = now() + make_interval(secs => $2)
		WHERE id AND (lease_owner = $1 OR lease_owner IS NULL OR lease_until < now())
		RETURNING commit_pos, prepare_pos`, owner, d.Seconds()).Scan(&c, &p)
	if errors.Is(err, pgx.ErrNoRows) {
		return eventstore.Position{}, false, nil
	}
	if err != nil {
		return eventstore.Position{}, false, fmt.Errorf("expectstore: lease: %w", err)
	}
	return eventstore.Position{Commit: uint64(c), Prepare: uint64(p)}, true, nil
}

// Release gives the lease up (a clean shutdown), so another instance
// takes over at once.
func (s *Store) Release(ctx context.Context, owner string) error {
	_, err := s.pool.Exec(ctx, `UPDATE expectation_checkpoint SET lease_owner = NULL, lease_until = NULL WHERE lease_owner = $1`, owner)
	return err
}

// RecordPayments implements expectations.Store.
func (s *Store) RecordPayments(ctx context.Context, facts []expectations.PaymentFact) error {
	b := &pgx.Batch{}
	for _, f := range facts {
		b.Queue(`INSERT INTO expectation_captures (provider, reference, payment_stream, capture_id, amount, currency, failed, reason, occurred_at)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT DO NOTHING`,
			f.Provider, f.Reference, f.PaymentStream, f.CaptureID, f.Amount, string(f.Currency), f.Failed, f.Reason, f.At)
	}
	if err := s.pool.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("expectstore: record payments: %w", err)
	}
	return nil
}

// Registered implements expectations.Store.
func (s *Store) Registered(ctx context.Context, ids []uuid.UUID) ([]uuid.UUID, error) {
	rows, err := s.pool.Query(ctx, `SELECT id FROM expected_payments WHERE id = ANY($1)`, ids)
	if err != nil {
		return nil, fmt.Errorf("expectstore: registered: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, fmt.Errorf("expectstore: registered: %w", err)
	}
	return out, nil
}

// PaymentsOf implements expectations.Store.
func (s *Store) PaymentsOf(ctx context.Context, provider, reference string) ([]expectations.PaymentFact, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT payment_stream, capture_id, amount, currency, failed, reason, occurred_at FROM expectation_captures
		WHERE provider = $1 AND reference = $2 ORDER BY failed, occurred_at, capture_id`, provider, reference)
	if err != nil {
		return nil, fmt.Errorf("expectstore: payments of: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (expectations.PaymentFact, error) {
		f := expectations.PaymentFact{Provider: provider, Reference: reference}
		var cur string
		err := r.Scan(&f.PaymentStream, &f.CaptureID, &f.Amount, &cur, &f.Failed, &f.Reason, &f.At)
		f.Currency = money.Currency(cur)
		return f, err
	})
	if err != nil {
		return nil, fmt.Errorf("expectstore: payments of: %w", err)
	}
	return out, nil
}

// errLeaseLost is expectations.ErrLeaseLost, wrapped.
var errLeaseLost = fmt.Errorf("expectstore: save: %w", expectations.ErrLeaseLost)

// Save implements expectations.Store. A row's schedule (next_query_at,
// attempts, lease) belongs to the asker: an update keeps it, except that a
// terminal status ends it.
func (s *Store) Save(ctx context.Context, owner string, rows []expectations.Row, at eventstore.Position) error {
	return pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE expectation_checkpoint SET commit_pos = $2, prepare_pos = $3
			WHERE id AND lease_owner = $1 AND lease_until > now()`, owner, int64(at.Commit), int64(at.Prepare))
		if err != nil {
			return fmt.Errorf("expectstore: save: %w", err)
		}
		if tag.RowsAffected() == 0 {
			return errLeaseLost
		}
		b := &pgx.Batch{}
		for _, r := range rows {
			var paidAt, queryAt *time.Time
			if !r.PaidAt.IsZero() {
				paidAt = &r.PaidAt
			}
			if !r.QueryAt.IsZero() {
				queryAt = &r.QueryAt
			}
			b.Queue(`
				INSERT INTO expected_payments AS e (id, provider, reference, amount, currency, expires_at, registered_at, status,
					late, payment_stream, capture_id, paid_amount, paid_currency, paid_at, version, updated_at, next_query_at)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)
				ON CONFLICT (id) DO UPDATE SET status = excluded.status, late = excluded.late,
					payment_stream = excluded.payment_stream, capture_id = excluded.capture_id,
					paid_amount = excluded.paid_amount, paid_currency = excluded.paid_currency, paid_at = excluded.paid_at,
					version = excluded.version, updated_at = excluded.updated_at,
					next_query_at = CASE WHEN excluded.next_query_at IS NULL THEN NULL
						ELSE COALESCE(e.next_query_at, excluded.next_query_at) END
				WHERE e.version < excluded.version`,
				r.ID, r.Provider, r.Reference, r.Amount, string(r.Currency), r.ExpiresAt, r.RegisteredAt, string(r.Status),
				r.Late, r.PaymentStream, r.CaptureID, r.PaidAmount, string(r.PaidCurrency), paidAt, r.Version, r.UpdatedAt, queryAt)
		}
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("expectstore: save rows: %w", err)
		}
		return nil
	})
}

// DueOverdue implements expectations.Store: one indexed read
// (expected_payments_due_idx).
func (s *Store) DueOverdue(ctx context.Context, now time.Time, limit int) ([]uuid.UUID, error) {
	rows, err := s.pool.Query(ctx, `SELECT id FROM expected_payments
		WHERE status IN ('expected', 'failed') AND expires_at <= $1 ORDER BY expires_at LIMIT $2`, now, limit)
	if err != nil {
		return nil, fmt.Errorf("expectstore: due: %w", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[uuid.UUID])
	if err != nil {
		return nil, fmt.Errorf("expectstore: due: %w", err)
	}
	return out, nil
}

// PruneCaptures implements expectations.Store, in batches so that a large
// backlog never holds one long transaction.
func (s *Store) PruneCaptures(ctx context.Context, window time.Duration) error {
	for {
		tag, err := s.pool.Exec(ctx, `DELETE FROM expectation_captures WHERE ctid IN (
			SELECT ctid FROM expectation_captures WHERE seen_at < now() - make_interval(secs => $1) LIMIT 10000)`, window.Seconds())
		if err != nil {
			return fmt.Errorf("expectstore: prune captures: %w", err)
		}
		if tag.RowsAffected() < 10000 {
			return nil
		}
	}
}
