package expectstore

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/adapters/expectations"
)

var _ expectations.Schedule = (*Store)(nil)

// claimSQL is Claim's one statement ($1 owner, $2 lease seconds, $3
// providers, $4 limit, $5 now). Its read of expected_payments is an index
// range scan of next_query_at (expected_payments_query_idx) up to now,
// whatever the number of outstanding rows: TestClaimPlanUsesTheIndex
// EXPLAINs it on a table of 50,000 outstanding expectations (bench/run.sh
// expect prints the plan on 100,000). pending_payments has its own
// (pending_payments_query_idx), which the planner skips while the table
// is tiny.
const claimSQL = `
		WITH e AS (
			UPDATE expected_payments e SET lease_owner = $1, lease_until = now() + make_interval(secs => $2)
			WHERE e.id IN (
				SELECT id FROM expected_payments
				WHERE next_query_at IS NOT NULL AND next_query_at <= $5 AND provider = ANY($3)
					AND (lease_until IS NULL OR lease_until < now())
				ORDER BY next_query_at LIMIT $4 FOR UPDATE SKIP LOCKED)
			RETURNING e.id, false AS pending, e.provider, e.reference, e.query_attempts, e.next_query_at),
		p AS (
			UPDATE pending_payments p SET lease_owner = $1, lease_until = now() + make_interval(secs => $2)
			WHERE (p.provider, p.reference) IN (
				SELECT provider, reference FROM pending_payments
				WHERE next_query_at IS NOT NULL AND next_query_at <= $5 AND provider = ANY($3)
					AND (lease_until IS NULL OR lease_until < now())
				ORDER BY next_query_at LIMIT $4 FOR UPDATE SKIP LOCKED)
			RETURNING '00000000-0000-0000-0000-000000000000'::uuid AS id, true AS pending, p.provider, p.reference,
				p.query_attempts, p.next_query_at)
		SELECT id, pending, provider, reference, query_attempts FROM (SELECT * FROM e UNION ALL SELECT * FROM p) c
		ORDER BY next_query_at, provider, reference`

// Claim implements expectations.Schedule: one indexed read per table
// (expected_payments_query_idx, pending_payments_query_idx) of the due rows
// no live lease holds, locked with SKIP LOCKED so that instances claiming
// at once share them, asked in the order they fell due. Due is by the
// caller's clock (the one that scheduled); the lease's clock is the
// database's, common to every instance.
func (s *Store) Claim(ctx context.Context, owner string, providers []string, now time.Time, lease time.Duration, limit int) ([]expectations.Due, error) {
	rows, err := s.pool.Query(ctx, claimSQL, owner, lease.Seconds(), providers, limit, now)
	if err != nil {
		return nil, fmt.Errorf("expectstore: claim: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (expectations.Due, error) {
		var d expectations.Due
		err := r.Scan(&d.ID, &d.Pending, &d.Provider, &d.Reference, &d.Attempts)
		return d, err
	})
	if err != nil {
		return nil, fmt.Errorf("expectstore: claim: %w", err)
	}
	return out, nil
}

// ClaimPlan is the plan Postgres chooses for Claim's statement with these
// arguments (EXPLAIN, nothing executed): the test of the schedule's cost
// and bench/run.sh expect print it.
func (s *Store) ClaimPlan(ctx context.Context, providers []string, now time.Time, limit int) (string, error) {
	rows, err := s.pool.Query(ctx, "EXPLAIN "+claimSQL, "explain", 60.0, providers, limit, now)
	if err != nil {
		return "", fmt.Errorf("expectstore: explain claim: %w", err)
	}
	lines, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return "", fmt.Errorf("expectstore: explain claim: %w", err)
	}
	return strings.Join(lines, "\n"), nil
}

// Reschedule implements expectations.Schedule. Only the lease's owner
// reschedules (a question that outlived its lease changes nothing); a
// terminal row is never asked about again.
func (s *Store) Reschedule(ctx context.Context, d expectations.Due, owner string, next time.Time, attempts int) error {
	var at *time.Time
	if !next.IsZero() {
		at = &next
	}
	if d.Pending {
		_, err := s.pool.Exec(ctx, `
			UPDATE pending_payments SET lease_owner = NULL, lease_until = NULL, query_attempts = $4, next_query_at = $5
			WHERE provider = $1 AND reference = $2 AND lease_owner = $3`, d.Provider, d.Reference, owner, attempts, at)
		if err != nil {
			return fmt.Errorf("expectstore: reschedule: %w", err)
		}
		return nil
	}
	id := d.ID
	_, err := s.pool.Exec(ctx, `
		UPDATE expected_payments SET lease_owner = NULL, lease_until = NULL, query_attempts = $3,
			next_query_at = CASE WHEN status IN ('paid', 'canceled') THEN NULL ELSE $4::timestamptz END
		WHERE id = $1 AND lease_owner = $2`, id, owner, attempts, at)
	if err != nil {
		return fmt.Errorf("expectstore: reschedule: %w", err)
	}
	return nil
}

// ScanPending implements expectations.Schedule: the inbox rows of payments
// a webhook said are pending (ignored: no fact) seen since the last scan
// (read again 5 minutes back, for rows that committed late) become
// pending_payments asked about queryAfter after they were seen, unless an
// expected payment of the same reference has its own schedule. Alipay's
// reference is the notification's out_trade_no (its first reference),
// Stripe's the PaymentIntent (the payment key).
func (s *Store) ScanPending(ctx context.Context, queryAfter time.Duration) (int, error) {
	var n int
	err := s.pool.QueryRow(ctx, `
		WITH scan AS (SELECT seen_until FROM pending_scan WHERE id FOR UPDATE),
		found AS (
			SELECT i.provider, COALESCE(i.normalized->'references'->>0, i.normalized->>'payment_key') AS reference, i.first_seen_at
			FROM webhook_inbox i, scan
			WHERE i.status = 'ignored' AND i.event_type IN ('WAIT_BUYER_PAY', 'payment_intent.processing')
				AND i.first_seen_at >= scan.seen_until - interval '5 minutes'
				AND ((i.provider = 'alipay' AND i.event_type = 'WAIT_BUYER_PAY')
					OR (i.provider = 'stripe' AND i.event_type = 'payment_intent.processing'))
			ORDER BY i.first_seen_at LIMIT 1000),
		ins AS (
			INSERT INTO pending_payments (provider, reference, seen_at, next_query_at)
			SELECT f.provider, f.reference, f.first_seen_at, f.first_seen_at + make_interval(secs => $1) FROM found f
			WHERE f.reference IS NOT NULL AND f.reference <> '' AND NOT EXISTS (
				SELECT 1 FROM expected_payments e WHERE e.provider = f.provider AND e.reference = f.reference)
			ON CONFLICT DO NOTHING RETURNING 1)
		UPDATE pending_scan SET seen_until = GREATEST(seen_until, COALESCE((SELECT max(first_seen_at) FROM found), seen_until))
		WHERE id RETURNING (SELECT count(*) FROM ins)`, queryAfter.Seconds()).Scan(&n)
	if err != nil {
		return 0, fmt.Errorf("expectstore: scan pending: %w", err)
	}
	return n, nil
}
