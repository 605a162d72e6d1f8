package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/adapters/ingest"
	"github.com/onceledger/onceledger/domain/delivery"
)

var _ ingest.RedriveSource = (*Inbox)(nil)

// Renormalize implements ingest.Inbox.
func (in *Inbox) Renormalize(ctx context.Context, k ingest.InboxKey, ev delivery.Event, from, to, actor string) (bool, error) {
	return renormalize(ctx, in.pool, k, ev, from, to, actor)
}

func (t journalTx) Renormalize(ctx context.Context, k ingest.InboxKey, ev delivery.Event, from, to, actor string) (bool, error) {
	return renormalize(ctx, t.tx, k, ev, from, to, actor)
}

// renormalize replaces a row's normalized delivery (the raw bytes and
// their hash stay: they are what arrived) and moves its status.
func renormalize(ctx context.Context, q execer, k ingest.InboxKey, ev delivery.Event, from, to, actor string) (bool, error) {
	normalized, err := delivery.EncodeNormalized(ev)
	if err != nil {
		return false, fmt.Errorf("encode normalized %s: %w", ev.DedupKey, err)
	}
	var stream *string
	if !ev.Ignored() {
		s := ev.StreamID()
		stream = &s
	}
	tag, err := q.Exec(ctx, `
		UPDATE webhook_inbox
		SET event_type = $4, stream_id = $5, facts_hash = $6, normalized = $7, status = $8,
		    last_error = NULL, next_attempt_at = NULL, redriven_by = $9, redriven_at = now(),
		    applied_at = CASE WHEN $8 = '`+ingest.StatusApplied+`' THEN now() ELSE applied_at END
		WHERE provider = $1 AND dedup_key = $2 AND status = $3`,
		k.Provider, k.DedupKey, from, ev.Type, stream, ev.FactsHash(), normalized, to, actor)
	if err != nil {
		return false, fmt.Errorf("inbox %s/%s re-normalize: %w", k.Provider, k.DedupKey, markUnavailable(err))
	}
	return tag.RowsAffected() == 1, nil
}

// Redrivable implements ingest.RedriveSource: the rows f selects with their
// raw bodies (NULL once erased by the retention), in primary key order.
func (in *Inbox) Redrivable(ctx context.Context, f ingest.RedriveFilter, after *ingest.InboxKey, limit int) ([]ingest.RedriveRow, error) {
	var afterP, afterK string
	if after != nil {
		afterP, afterK = after.Provider, after.DedupKey
	}
	args := []any{f.Status, f.Provider, f.Type, nilTime(f.From), nilTime(f.To), afterP, afterK, limit}
	keysP, keysK := make([]string, len(f.Keys)), make([]string, len(f.Keys))
	for i, k := range f.Keys {
		keysP[i], keysK[i] = k.Provider, k.DedupKey
	}
	args = append(args, keysP, keysK)
	rows, err := in.pool.Query(ctx, `
		SELECT provider, dedup_key, raw_body FROM webhook_inbox
		WHERE status = $1 AND ($2 = '' OR provider = $2) AND ($3 = '' OR event_type = $3)
		  AND ($4::timestamptz IS NULL OR first_seen_at >= $4) AND ($5::timestamptz IS NULL OR first_seen_at < $5)
		  AND (provider, dedup_key) > ($6 COLLATE "C", $7 COLLATE "C")
		  AND (cardinality($9::text[]) = 0
		       OR (provider, dedup_key) IN (SELECT * FROM unnest($9::text[], $10::text[])))
		ORDER BY provider COLLATE "C", dedup_key COLLATE "C"
		LIMIT $8`, args...)
	if err != nil {
		return nil, fmt.Errorf("select deliveries to redrive: %w", markUnavailable(err))
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (ingest.RedriveRow, error) {
		var row ingest.RedriveRow
		err := r.Scan(&row.Key.Provider, &row.Key.DedupKey, &row.Raw)
		return row, err
	})
	if err != nil {
		return nil, fmt.Errorf("select deliveries to redrive: %w", markUnavailable(err))
	}
	return out, nil
}

// nilTime is NULL for the zero time (an unbounded end of a range).
func nilTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
