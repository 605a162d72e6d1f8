package readmodel

import (
	"context"
	"errors"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/projections/views"
)

// The inbox's read side: deliveries listed, counted and read one by one
// (the console's inbox and a payment's timeline), and the counts by status
// the projections' status reports (InboxCounts).

const inboxColumns = `provider, dedup_key, event_type, coalesce(stream_id, ''), status, delivery_count,
	conflict_count, attempts, coalesce(last_error, ''), first_seen_at, last_seen_at, applied_at`

func scanInboxRow(row pgx.Row, r *views.InboxRow, extra ...any) error {
	var applied *time.Time
	dest := append([]any{&r.Provider, &r.DedupKey, &r.EventType, &r.StreamID, &r.Status, &r.DeliveryCount,
		&r.ConflictCount, &r.Attempts, &r.LastError, &r.FirstSeenAt, &r.LastSeenAt, &applied}, extra...)
	err := row.Scan(dest...)
	r.AppliedAt = derefTime(applied)
	return err
}

// kept is a stored body, nil once erased (an empty raw_body).
func kept(b []byte) []byte {
	if len(b) == 0 {
		return nil
	}
	return b
}

func inboxWhere(f views.InboxFilter) *where {
	w := &where{}
	w.opt("provider = ?", f.Provider)
	w.opt("status = ?", f.Status)
	w.opt("event_type = ?", f.Type)
	w.optTime("first_seen_at >= ?", f.From)
	w.optTime("first_seen_at < ?", f.To)
	return w
}

// Deliveries reads a page of deliveries, most recent first, after f.After.
func (s *Store) Deliveries(ctx context.Context, f views.InboxFilter) ([]views.InboxRow, error) {
	w := inboxWhere(f)
	if k := f.After; k != nil {
		w.add("(first_seen_at, provider, dedup_key) < (?, ?, ?)", k.FirstSeenAt, k.Provider, k.DedupKey)
	}
	rows, err := s.pool.Query(ctx, `SELECT `+inboxColumns+` FROM webhook_inbox`+w.sql()+
		` ORDER BY first_seen_at DESC, provider DESC, dedup_key DESC`+w.limit(f.Limit), w.args...)
	if err != nil {
		return nil, qwrap("inbox", err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (views.InboxRow, error) {
		var r views.InboxRow
		return r, scanInboxRow(row, &r)
	})
	return out, qwrap("inbox", err)
}

// DeliveryCounts counts the deliveries matching f (paging ignored) by
// provider and status, in byte order.
func (s *Store) DeliveryCounts(ctx context.Context, f views.InboxFilter) ([]views.InboxCount, error) {
	w := inboxWhere(f)
	rows, err := s.pool.Query(ctx, `SELECT provider, status, count(*) FROM webhook_inbox`+w.sql()+
		` GROUP BY provider, status ORDER BY provider COLLATE "C", status COLLATE "C"`, w.args...)
	if err != nil {
		return nil, qwrap("inbox counts", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[views.InboxCount])
	return out, qwrap("inbox counts", err)
}

// InboxCounts counts every delivery by status, for the projections' status
// and /metrics. It reads the whole inbox, on one core: a background figure
// must not take the cores the deliveries need, and a parallel scan spent
// twice the CPU of a plain one for a 40 % shorter wait (1.35M rows: 2.5 CPU s
// against 1.25 s; docs/benchmarks.md, "Where the machine's time goes").
// projections.InboxCounter bounds how often the monitor asks.
func (s *Store) InboxCounts(ctx context.Context) (map[string]int64, error) {
	out := map[string]int64{}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SET LOCAL max_parallel_workers_per_gather = 0`); err != nil {
			return err
		}
		rows, err := tx.Query(ctx, `SELECT status, count(*) FROM webhook_inbox GROUP BY status`)
		if err != nil {
			return err
		}
		var status string
		var n int64
		_, err = pgx.ForEachRow(rows, []any{&status, &n}, func() error {
			out[status] = n
			return nil
		})
		return err
	})
	return out, qwrap("inbox counts", err)
}

// Delivery reads one delivery with its payload and its conflicting
// redeliveries; found is false when there is none.
func (s *Store) Delivery(ctx context.Context, provider, dedupKey string) (views.Delivery, bool, error) {
	var d views.Delivery
	err := scanInboxRow(s.pool.QueryRow(ctx, `SELECT `+inboxColumns+`, payload_hash, raw_body, normalized
		FROM webhook_inbox WHERE provider = $1 AND dedup_key = $2`, provider, dedupKey),
		&d.InboxRow, &d.PayloadHash, &d.Raw, &d.Normalized)
	if errors.Is(err, pgx.ErrNoRows) {
		return d, false, nil
	}
	if err != nil {
		return d, false, qwrap("delivery", err)
	}
	d.Raw = kept(d.Raw)
	rows, err := s.pool.Query(ctx, `SELECT payload_hash, delivery_count, first_seen_at, raw_body
		FROM webhook_conflicts WHERE provider = $1 AND dedup_key = $2 ORDER BY first_seen_at`, provider, dedupKey)
	if err != nil {
		return d, false, qwrap("delivery conflicts", err)
	}
	d.Conflicts, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (views.Conflict, error) {
		var cf views.Conflict
		err := row.Scan(&cf.PayloadHash, &cf.DeliveryCount, &cf.FirstSeenAt, &cf.Raw)
		cf.Raw = kept(cf.Raw)
		return cf, err
	})
	return d, true, qwrap("delivery conflicts", err)
}

// StreamDeliveries reads every delivery of a stream, in arrival order,
// with its body (not its normalized facts).
func (s *Store) StreamDeliveries(ctx context.Context, stream string) ([]views.Delivery, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+inboxColumns+`, payload_hash, raw_body
		FROM webhook_inbox WHERE stream_id = $1 ORDER BY first_seen_at, provider, dedup_key`, stream)
	if err != nil {
		return nil, qwrap("deliveries of "+stream, err)
	}
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (views.Delivery, error) {
		var d views.Delivery
		err := scanInboxRow(row, &d.InboxRow, &d.PayloadHash, &d.Raw)
		d.Raw = kept(d.Raw)
		return d, err
	})
	return out, qwrap("deliveries of "+stream, err)
}

// DailyVolume sums captures, refunds (net of reversals) and disputes
// opened per UTC day and currency, from the journal, for days in [from,
// to) (an index-only scan of ledger_entries_console_volume_idx).
func (s *Store) DailyVolume(ctx context.Context, from, to time.Time) ([]views.DayVolume, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT (occurred_at AT TIME ZONE 'UTC')::date AS day, currency,
			coalesce(sum(-amount) FILTER (WHERE account = 'revenue:sales'), 0)::bigint,
			coalesce(sum(amount) FILTER (WHERE account = 'revenue:refunds'), 0)::bigint,
			coalesce(sum(amount) FILTER (WHERE account LIKE 'receivable:disputes:%'
				AND event_type = 'dispute.opened'), 0)::bigint
		FROM ledger_entries
		WHERE occurred_at >= $1 AND occurred_at < $2
		  AND (account IN ('revenue:sales', 'revenue:refunds') OR account LIKE 'receivable:disputes:%')
		GROUP BY 1, 2 ORDER BY 1, 2`, from, to)
	if err != nil {
		return nil, qwrap("daily volume", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[views.DayVolume])
	return out, qwrap("daily volume", err)
}

// InboxMix counts deliveries per UTC day of first arrival and status, for
// days in [from, to).
func (s *Store) InboxMix(ctx context.Context, from, to time.Time) ([]views.DayOutcome, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT (first_seen_at AT TIME ZONE 'UTC')::date, status, count(*)
		FROM webhook_inbox WHERE first_seen_at >= $1 AND first_seen_at < $2
		GROUP BY 1, 2 ORDER BY 1, 2`, from, to)
	if err != nil {
		return nil, qwrap("inbox mix", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[views.DayOutcome])
	return out, qwrap("inbox mix", err)
}
