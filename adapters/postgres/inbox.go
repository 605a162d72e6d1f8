package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/adapters/ingest"
	"github.com/onceledger/onceledger/domain/delivery"
)

// Inbox is webhook_inbox on its own, each call its own transaction: the
// inbox of the two-phase journal (ingest.TwoPhase, when the events live in
// EventStoreDB) and the queue the background workers claim rows from. Rows
// are driven through ingest's statuses; everything a worker needs to resume
// after a crash is in the row.
type Inbox struct {
	pool *pgxpool.Pool
}

// NewInbox returns the inbox of pool's database.
func NewInbox(pool *pgxpool.Pool) *Inbox { return &Inbox{pool: pool} }

// ErrInboxRowMissing is returned for a (provider, dedup key) with no row.
var ErrInboxRowMissing = errors.New("inbox row missing")

var (
	_ ingest.Inbox = (*Inbox)(nil)
	_ ingest.Queue = (*Inbox)(nil)
)

// Gate implements ingest.Inbox: it inserts ev with status (ON CONFLICT DO
// NOTHING: the primary key judges); for a redelivery it counts the delivery
// and returns the stored row.
func (in *Inbox) Gate(ctx context.Context, ev delivery.Event, status string) (inserted bool, first ingest.Stored, err error) {
	err = inTx(ctx, in.pool, func(tx pgx.Tx) error {
		inserted, _, err = insertInboxAndRead(ctx, tx, ev, status, "")
		if err != nil || inserted {
			return err
		}
		first, err = countRedelivery(ctx, tx, ev)
		return err
	})
	return inserted, first, err
}

// KeepConflict implements ingest.Inbox.
func (in *Inbox) KeepConflict(ctx context.Context, ev delivery.Event) error {
	return inTx(ctx, in.pool, func(tx pgx.Tx) error { return keepConflict(ctx, tx, ev) })
}

// countRedelivery counts a delivery of a key on record and returns the
// first arrival's row. A row older than migration 00005 has no facts hash:
// it is computed from the row's normalized delivery.
func countRedelivery(ctx context.Context, tx pgx.Tx, ev delivery.Event) (ingest.Stored, error) {
	var st ingest.Stored
	var stream, factsHash *string
	var normalized []byte
	err := tx.QueryRow(ctx, `
		UPDATE webhook_inbox
		SET delivery_count = delivery_count + 1, last_seen_at = now()
		WHERE provider = $1 AND dedup_key = $2
		RETURNING status, payload_hash, facts_hash, stream_id, CASE WHEN facts_hash IS NULL THEN normalized END`,
		ev.Provider, ev.DedupKey).Scan(&st.Status, &st.PayloadHash, &factsHash, &stream, &normalized)
	if err != nil {
		return ingest.Stored{}, fmt.Errorf("count redelivery of %s: %w", ev.DedupKey, markUnavailable(err))
	}
	if stream != nil {
		st.StreamID = *stream
	}
	switch {
	case factsHash != nil:
		st.FactsHash = *factsHash
	case normalized != nil:
		first, err := delivery.DecodeNormalized(normalized)
		if err != nil {
			return ingest.Stored{}, fmt.Errorf("inbox %s/%s: %w", ev.Provider, ev.DedupKey, err)
		}
		st.FactsHash = first.FactsHash()
	}
	return st, nil
}

// keepConflict keeps a conflicting payload (once per hash, counted) and
// counts the conflict on the inbox row.
func keepConflict(ctx context.Context, tx pgx.Tx, ev delivery.Event) error {
	if _, err := tx.Exec(ctx, `
		INSERT INTO webhook_conflicts (provider, dedup_key, payload_hash, raw_body)
		VALUES ($1, $2, $3, $4)
		ON CONFLICT (provider, dedup_key, payload_hash) DO UPDATE
		SET delivery_count = webhook_conflicts.delivery_count + 1, last_seen_at = now()`,
		ev.Provider, ev.DedupKey, ev.PayloadHash, ev.Raw); err != nil {
		return fmt.Errorf("record conflicting redelivery of %s: %w", ev.DedupKey, markUnavailable(err))
	}
	if _, err := tx.Exec(ctx, `
		UPDATE webhook_inbox SET conflict_count = conflict_count + 1
		WHERE provider = $1 AND dedup_key = $2`, ev.Provider, ev.DedupKey); err != nil {
		return fmt.Errorf("count conflict of %s: %w", ev.DedupKey, markUnavailable(err))
	}
	return nil
}

// Load implements ingest.Inbox: the stored, normalized delivery of a row and
// its status.
func (in *Inbox) Load(ctx context.Context, k ingest.InboxKey) (delivery.Event, string, error) {
	return loadInbox(ctx, in.pool, k, false)
}

func loadInbox(ctx context.Context, q querier, k ingest.InboxKey, forUpdate bool) (delivery.Event, string, error) {
	sql := `SELECT status, payload_hash, raw_body, normalized FROM webhook_inbox WHERE provider = $1 AND dedup_key = $2`
	if forUpdate {
		sql += ` FOR UPDATE`
	}
	var status, hash string
	var raw, normalized []byte
	err := q.QueryRow(ctx, sql, k.Provider, k.DedupKey).Scan(&status, &hash, &raw, &normalized)
	if errors.Is(err, pgx.ErrNoRows) {
		return delivery.Event{}, "", fmt.Errorf("%w: %s/%s", ErrInboxRowMissing, k.Provider, k.DedupKey)
	}
	if err != nil {
		return delivery.Event{}, "", fmt.Errorf("load inbox %s/%s: %w", k.Provider, k.DedupKey, markUnavailable(err))
	}
	ev, err := delivery.DecodeNormalized(normalized)
	if err != nil {
		return delivery.Event{}, "", fmt.Errorf("inbox %s/%s: %w", k.Provider, k.DedupKey, err)
	}
	ev.PayloadHash, ev.Raw = hash, raw
	return ev, status, nil
}

// SetStatus implements ingest.Inbox: it moves a row from one status to
// another and reports false when the row was not in status from.
func (in *Inbox) SetStatus(ctx context.Context, k ingest.InboxKey, from, to string) (bool, error) {
	return setStatus(ctx, in.pool, k, from, to)
}

func setStatus(ctx context.Context, q execer, k ingest.InboxKey, from, to string) (bool, error) {
	tag, err := q.Exec(ctx, `
		UPDATE webhook_inbox
		SET status = $4, last_error = NULL, next_attempt_at = NULL,
		    applied_at = CASE WHEN $4 = 'applied' THEN now() ELSE applied_at END
		WHERE provider = $1 AND dedup_key = $2 AND status = $3`, k.Provider, k.DedupKey, from, to)
	if err != nil {
		return false, fmt.Errorf("inbox %s/%s %s→%s: %w", k.Provider, k.DedupKey, from, to, markUnavailable(err))
	}
	return tag.RowsAffected() == 1, nil
}

// Claim implements ingest.Queue: it leases up to limit rows in status whose
// next attempt is due (or, never scheduled, first seen longer ago than
// olderThan): it pushes their next attempt lease into the future and counts
// the attempt, so concurrent workers (other instances) take different rows
// and a worker that dies lets the lease expire.
//
// The literal status list (the only statuses workers drive) repeats the
// predicate of webhook_inbox_pending_idx, so that even a generic plan of
// this prepared statement (status a parameter) can use that partial index:
// the sweeper polls on every instance, and an idle poll must not scan the
// whole inbox.
func (in *Inbox) Claim(ctx context.Context, status string, olderThan, lease time.Duration, limit int) ([]ingest.InboxKey, error) {
	rows, err := in.pool.Query(ctx, `
		UPDATE webhook_inbox AS w
		SET next_attempt_at = now() + $3::interval, attempts = attempts + 1
		FROM (
			SELECT provider, dedup_key FROM webhook_inbox
			WHERE status = $1
			  AND status IN ('`+ingest.StatusReceived+`', '`+ingest.StatusUnverified+`')
			  AND COALESCE(next_attempt_at, first_seen_at + $2::interval) <= now()
			ORDER BY COALESCE(next_attempt_at, first_seen_at)
			LIMIT $4
			FOR UPDATE SKIP LOCKED
		) AS due
		WHERE w.provider = due.provider AND w.dedup_key = due.dedup_key
		RETURNING w.provider, w.dedup_key`,
		status, olderThan.String(), lease.String(), limit)
	if err != nil {
		return nil, fmt.Errorf("claim %s inbox rows: %w", status, markUnavailable(err))
	}
	keys, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ingest.InboxKey, error) {
		var k ingest.InboxKey
		return k, r.Scan(&k.Provider, &k.DedupKey)
	})
	if err != nil {
		return nil, fmt.Errorf("claim %s inbox rows: %w", status, markUnavailable(err))
	}
	return keys, nil
}

// Retry implements ingest.Queue: it records a failed attempt; the next one
// is due after base·2^(attempts−1), at most an hour later (attempts counts
// claims). With failAfter > 0, a row claimed that often moves to failed
// instead, keeping cause as its last error.
func (in *Inbox) Retry(ctx context.Context, k ingest.InboxKey, base time.Duration, cause error, failAfter int) (bool, error) {
	var status string
	err := in.pool.QueryRow(ctx, `
		UPDATE webhook_inbox
		SET status = CASE WHEN $5 > 0 AND attempts >= $5 THEN '`+ingest.StatusFailed+`' ELSE status END,
		    next_attempt_at = CASE WHEN $5 > 0 AND attempts >= $5 THEN NULL
		        ELSE now() + least(interval '1 hour', $3::interval * power(2, least(greatest(attempts - 1, 0), 12))) END,
		    last_error = $4
		WHERE provider = $1 AND dedup_key = $2
		RETURNING status`, k.Provider, k.DedupKey, base.String(), cause.Error(), failAfter).Scan(&status)
	if errors.Is(err, pgx.ErrNoRows) {
		return false, nil // gone (erased with its key): nothing to retry
	}
	if err != nil {
		return false, fmt.Errorf("schedule retry of %s/%s: %w", k.Provider, k.DedupKey, markUnavailable(err))
	}
	return status == ingest.StatusFailed, nil
}

var _ ingest.Pending = (*Inbox)(nil)

// PendingCandidates implements ingest.Pending: the unverified candidates of
// dedupKey, and the raw bytes of all of provider's (the partial index on
// unverified rows keeps this to the short queue).
func (in *Inbox) PendingCandidates(ctx context.Context, provider, dedupKey string) (int, int64, error) {
	var n int
	var bytes int64
	err := in.pool.QueryRow(ctx, `
		SELECT count(*) FILTER (WHERE starts_with(dedup_key, $2)),
		       COALESCE(sum(octet_length(raw_body)), 0)
		FROM webhook_inbox
		WHERE status = '`+ingest.StatusUnverified+`' AND provider = $1`,
		provider, dedupKey+ingest.CandidateMarker).Scan(&n, &bytes)
	if err != nil {
		return 0, 0, fmt.Errorf("count pending candidates of %s/%s: %w", provider, dedupKey, markUnavailable(err))
	}
	return n, bytes, nil
}
