package postgres

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/adapters/ingest"
	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/money"
)

// Inbox is webhook_inbox for the paths that cannot record a delivery in one
// transaction with its facts: PayPal IPN (stored unverified, applied after
// PayPal's postback) and EventStoreDB (the append happens in another
// database). Rows are driven through statuses; everything a worker needs to
// resume after a crash is in the row.
type Inbox struct {
	pool *pgxpool.Pool
}

// NewInbox returns the inbox of pool's database.
func NewInbox(pool *pgxpool.Pool) *Inbox { return &Inbox{pool: pool} }

// ErrInboxRowMissing is returned for a (provider, dedup key) with no row.
var ErrInboxRowMissing = errors.New("inbox row missing")

// Key names one inbox row.
type Key = ingest.InboxKey

var (
	_ ingest.HeldInbox = (*Inbox)(nil)
	_ ingest.GateInbox = (*Inbox)(nil)
	_ ingest.Redriver  = (*Recorder)(nil)
)

// Gate inserts ev with status (ON CONFLICT DO NOTHING: the primary key
// judges) in its own transaction. For a redelivery it counts the delivery,
// keeps a conflicting payload in webhook_conflicts, and returns the stored
// row's status and hash.
func (in *Inbox) Gate(ctx context.Context, ev delivery.Event, status string) (inserted bool, existing Stored, err error) {
	err = inTx(ctx, in.pool, func(tx pgx.Tx) error {
		inserted, err = insertInbox(ctx, tx, ev, status)
		if err != nil || inserted {
			return err
		}
		existing, err = countRedelivery(ctx, tx, ev)
		return err
	})
	return inserted, existing, err
}

// Stored is what a redelivery learns about the first arrival. It is declared
// by its consumer, the two-phase recorder in ingest.
type Stored = ingest.Stored

func countRedelivery(ctx context.Context, tx pgx.Tx, ev delivery.Event) (Stored, error) {
	var st Stored
	var stream *string
	err := tx.QueryRow(ctx, `
		UPDATE webhook_inbox
		SET delivery_count = delivery_count + 1, last_seen_at = now()
		WHERE provider = $1 AND dedup_key = $2
		RETURNING status, payload_hash, stream_id`, ev.Provider, ev.DedupKey).Scan(&st.Status, &st.PayloadHash, &stream)
	if err != nil {
		return Stored{}, fmt.Errorf("count redelivery of %s: %w", ev.DedupKey, classify(err))
	}
	if stream != nil {
		st.StreamID = *stream
	}
	if st.PayloadHash != ev.PayloadHash {
		if err := recordConflict(ctx, tx, ev); err != nil {
			return Stored{}, err
		}
	}
	return st, nil
}

func recordConflict(ctx context.Context, tx pgx.Tx, ev delivery.Event) error {
	if _, err := tx.Exec(ctx, `
		INSERT INTO webhook_conflicts (provider, dedup_key, payload_hash, raw_body)
		VALUES ($1, $2, $3, $4)
		ON CONFLICT (provider, dedup_key, payload_hash) DO UPDATE
		SET delivery_count = webhook_conflicts.delivery_count + 1, last_seen_at = now()`,
		ev.Provider, ev.DedupKey, ev.PayloadHash, ev.Raw); err != nil {
		return fmt.Errorf("record conflicting redelivery of %s: %w", ev.DedupKey, classify(err))
	}
	if _, err := tx.Exec(ctx, `
		UPDATE webhook_inbox SET conflict_count = conflict_count + 1
		WHERE provider = $1 AND dedup_key = $2`, ev.Provider, ev.DedupKey); err != nil {
		return fmt.Errorf("count conflict of %s: %w", ev.DedupKey, classify(err))
	}
	return nil
}

// Load returns the stored, normalized delivery of a row and its status.
func (in *Inbox) Load(ctx context.Context, k Key) (delivery.Event, string, error) {
	return loadInbox(ctx, in.pool, k, false)
}

func loadInbox(ctx context.Context, q querier, k Key, forUpdate bool) (delivery.Event, string, error) {
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
		return delivery.Event{}, "", fmt.Errorf("load inbox %s/%s: %w", k.Provider, k.DedupKey, classify(err))
	}
	ev, err := decodeNormalized(normalized)
	if err != nil {
		return delivery.Event{}, "", fmt.Errorf("inbox %s/%s: %w", k.Provider, k.DedupKey, err)
	}
	ev.PayloadHash, ev.Raw = hash, raw
	return ev, status, nil
}

// SetStatus moves a row from one status to another; it reports false when
// the row was not in status from (someone else moved it on).
func (in *Inbox) SetStatus(ctx context.Context, k Key, from, to string) (bool, error) {
	tag, err := in.pool.Exec(ctx, `
		UPDATE webhook_inbox
		SET status = $4, last_error = NULL, next_attempt_at = NULL,
		    applied_at = CASE WHEN $4 = 'applied' THEN now() ELSE applied_at END
		WHERE provider = $1 AND dedup_key = $2 AND status = $3`, k.Provider, k.DedupKey, from, to)
	if err != nil {
		return false, fmt.Errorf("inbox %s/%s %s→%s: %w", k.Provider, k.DedupKey, from, to, classify(err))
	}
	return tag.RowsAffected() == 1, nil
}

// Claim leases up to limit rows of provider in status whose next attempt is
// due (or, with olderThan > 0, rows first seen longer ago than that and never
// scheduled): it pushes their next attempt lease into the future and counts
// the attempt, so concurrent workers (other instances) take different rows
// and a worker that dies lets the lease expire.
func (in *Inbox) Claim(ctx context.Context, providerName, status string, olderThan, lease time.Duration, limit int) ([]Key, error) {
	rows, err := in.pool.Query(ctx, `
		UPDATE webhook_inbox AS w
		SET next_attempt_at = now() + $4::interval, attempts = attempts + 1
		FROM (
			SELECT provider, dedup_key FROM webhook_inbox
			WHERE status = $2 AND ($1 = '' OR provider = $1)
			  AND COALESCE(next_attempt_at, first_seen_at + $3::interval) <= now()
			ORDER BY COALESCE(next_attempt_at, first_seen_at)
			LIMIT $5
			FOR UPDATE SKIP LOCKED
		) AS due
		WHERE w.provider = due.provider AND w.dedup_key = due.dedup_key
		RETURNING w.provider, w.dedup_key`,
		providerName, status, olderThan.String(), lease.String(), limit)
	if err != nil {
		return nil, fmt.Errorf("claim %s inbox rows: %w", status, classify(err))
	}
	keys, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (Key, error) {
		var k Key
		return k, r.Scan(&k.Provider, &k.DedupKey)
	})
	if err != nil {
		return nil, fmt.Errorf("claim %s inbox rows: %w", status, classify(err))
	}
	return keys, nil
}

// Retry records a failed attempt: the next one is due after
// base·2^(attempts−1), at most an hour later (attempts counts claims).
func (in *Inbox) Retry(ctx context.Context, k Key, base time.Duration, cause error) error {
	_, err := in.pool.Exec(ctx, `
		UPDATE webhook_inbox
		SET next_attempt_at = now() + least(interval '1 hour', $3::interval * power(2, least(greatest(attempts - 1, 0), 12))),
		    last_error = $4
		WHERE provider = $1 AND dedup_key = $2`, k.Provider, k.DedupKey, base.String(), cause.Error())
	if err != nil {
		return fmt.Errorf("schedule retry of %s/%s: %w", k.Provider, k.DedupKey, classify(err))
	}
	return nil
}

// Hold stores a delivery that cannot be verified by signature as
// unverified; it is applied only after verification (IPN postback). It
// implements the HTTP layer's Holder.
func (in *Inbox) Hold(ctx context.Context, ev delivery.Event) (ingest.Result, error) {
	if err := ev.Validate(); err != nil {
		return ingest.Result{}, err
	}
	inserted, st, err := in.Gate(ctx, ev, StatusUnverified)
	if err != nil {
		return ingest.Result{}, err
	}
	if inserted {
		return ingest.Result{Outcome: ingest.Accepted}, nil
	}
	return ingest.Result{Outcome: ingest.Duplicate, Conflict: st.PayloadHash != ev.PayloadHash, StreamID: st.StreamID}, nil
}

func inTx(ctx context.Context, pool *pgxpool.Pool, fn func(pgx.Tx) error) error {
	tx, err := pool.Begin(ctx)
	if err != nil {
		return fmt.Errorf("begin: %w", classify(err))
	}
	defer func() { _ = tx.Rollback(context.WithoutCancel(ctx)) }()
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(ctx); err != nil {
		return fmt.Errorf("commit: %w", classify(err))
	}
	return nil
}

func decodeNormalized(b []byte) (delivery.Event, error) {
	var n normalizedEvent
	if err := json.Unmarshal(b, &n); err != nil {
		return delivery.Event{}, fmt.Errorf("decode normalized delivery: %w", err)
	}
	ev := delivery.Event{Provider: n.Provider, DedupKey: n.DedupKey, Type: n.Type,
		PaymentKey: n.PaymentKey, OccurredAt: n.OccurredAt}
	for _, f := range n.Facts {
		ev.Facts = append(ev.Facts, delivery.Fact{Kind: delivery.Kind(f.Kind), BusinessID: f.BusinessID,
			Amount: f.Amount, Fee: f.Fee, Currency: money.Currency(f.Currency), Reason: f.Reason})
	}
	return ev, nil
}
