package readmodel

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/projections/views"
)

// The read side of the /v1 API: hand-written SELECTs over the read models
// (account_balances, ledger_entries, payments, reconciliation_items), in
// the shapes of package views. Lists are streamed to a callback row by row
// (pgx.ForEachRow), so a large answer is never held in memory; the callback
// runs while the query's connection is held, so it should write to its
// destination and return.

// Balances streams balances sorted by account, then currency (byte order, so
// the order does not depend on the database's collation).
func (s *Store) Balances(ctx context.Context, f views.BalanceFilter, fn func(views.Balance) error) error {
	var sql string
	args := []any{likePrefix(f.AccountPrefix), f.Currency}
	if f.AsOf.IsZero() {
		sql = `
			SELECT account, currency, balance
			FROM account_balances
			WHERE account LIKE $1 ESCAPE '\' AND ($2 = '' OR currency = $2)
			ORDER BY account COLLATE "C", currency COLLATE "C"`
	} else {
		sql = `
			SELECT account, currency, sum(amount)::bigint
			FROM ledger_entries
			WHERE account LIKE $1 ESCAPE '\' AND ($2 = '' OR currency = $2)
				AND ` + timeColumn(f.Booked) + ` <= $3
			GROUP BY account, currency
			ORDER BY account COLLATE "C", currency COLLATE "C"`
		args = append(args, f.AsOf)
	}
	var b views.Balance
	return s.each(ctx, "balances", sql, args, []any{&b.Account, &b.Currency, &b.Balance}, func() error { return fn(b) })
}

// Entries streams ledger entries in feed order: (position_commit,
// position_prepare, event_id, posting_index), the unique index
// ledger_entries_feed_order_idx, after f.After.
//
// Why this is a stable pagination order: ledger_entries is append-only and
// only the ledger projector writes it, one instance at a time (it holds the
// projection's lock), one batch transaction after the other, in feed order,
// and the feed shows events in position order (feed_horizon). So every
// entry committed after a reader took its cursor sorts after every entry
// committed before, and lands after the cursor: paging never skips or
// repeats an entry that existed when paging started. And the key is made of
// history (the event's position and id, the posting's index), not of the
// row: a rebuild writes each entry with the same key, so a cursor taken
// before its swap points at the same place in the swapped-in table. (The id
// column is a bigserial a rebuild renumbers: it is no cursor.)
func (s *Store) Entries(ctx context.Context, f views.EntryFilter, fn func(views.Entry) error) error {
	after := `true`
	args := []any{likePrefix(f.AccountPrefix), f.Currency, nullTime(f.From), nullTime(f.To)}
	if f.After != nil {
		c, p, err := position64(f.After.Position)
		if err != nil {
			return qwrap("ledger entries", err)
		}
		after = `(position_commit, position_prepare, event_id, posting_index) > ($5, $6, $7, $8)`
		args = append(args, c, p, pgtype.UUID{Bytes: f.After.EventID, Valid: true}, int32(f.After.PostingIndex))
	}
	sql := `
		SELECT id, event_id, posting_index, stream_id, event_type, provider, account,
			currency, amount, occurred_at, recorded_at, position_commit, position_prepare
		FROM ledger_entries
		WHERE ` + after + `
			AND account LIKE $1 ESCAPE '\'
			AND ($2 = '' OR currency = $2)
			AND ($3::timestamptz IS NULL OR ` + timeColumn(f.Booked) + ` >= $3)
			AND ($4::timestamptz IS NULL OR ` + timeColumn(f.Booked) + ` < $4)
		ORDER BY position_commit, position_prepare, event_id, posting_index`
	if f.Limit > 0 {
		sql += ` LIMIT ` + strconv.Itoa(f.Limit)
	}
	var e views.Entry
	var commit, prepare int64
	dest := []any{&e.ID, &e.EventID, &e.PostingIndex, &e.StreamID, &e.EventType, &e.Provider, &e.Account,
		&e.Currency, &e.Amount, &e.OccurredAt, &e.RecordedAt, &commit, &prepare}
	return s.each(ctx, "ledger entries", sql, args, dest, func() error {
		e.Position = eventstore.Position{Commit: uint64(commit), Prepare: uint64(prepare)}
		return fn(e)
	})
}

// timeColumn is the ledger_entries column of an as_of query's time:
// occurred_at (= effective_at, when the provider says it happened) or, for
// time=booked, recorded_at (= booked_at, when the ledger recorded it). The
// older names, which the indexes are on.
func timeColumn(booked bool) string {
	if booked {
		return "recorded_at"
	}
	return "occurred_at"
}

// Payment returns the read model's row of one payment; found is false when
// there is none.
func (s *Store) Payment(ctx context.Context, provider, paymentID string) (p views.Payment, found bool, err error) {
	rows, err := s.pool.Query(ctx, `SELECT `+paymentColumns+` FROM payments WHERE provider = $1 AND payment_id = $2`,
		provider, paymentID)
	if err != nil {
		return views.Payment{}, false, qwrap("payment", err)
	}
	p, err = pgx.CollectExactlyOneRow(rows, scanPayment)
	if errors.Is(err, pgx.ErrNoRows) {
		return views.Payment{}, false, nil
	}
	if err != nil {
		return views.Payment{}, false, qwrap("payment", err)
	}
	return p, true, nil
}

// Reconciliation streams items, oldest first.
func (s *Store) Reconciliation(ctx context.Context, f views.ReconciliationFilter, fn func(views.ReconciliationItem) error) error {
	var it views.ReconciliationItem
	var opened, resolved *time.Time
	dest := []any{&it.StreamID, &it.Kind, &it.Key, &it.Status, &it.Provider, &it.PaymentID, &it.Details, &opened, &resolved,
		&it.ResolvedBy, &it.Note}
	return s.each(ctx, "reconciliation items", `
		SELECT stream_id, kind, item_key, status, provider, payment_id, details, opened_at, resolved_at,
		       coalesce(resolved_by, ''), coalesce(note, '')
		FROM reconciliation_items
		WHERE ($1 = '' OR status = $1) AND ($2 = '' OR kind = $2)
		ORDER BY coalesce(opened_at, resolved_at), stream_id COLLATE "C", kind COLLATE "C", item_key COLLATE "C"`,
		[]any{f.Status, f.Kind}, dest, func() error {
			it.OpenedAt, it.ResolvedAt = derefTime(opened), derefTime(resolved)
			return fn(it)
		})
}

// each runs sql and calls fn once per row, after scanning it into dest. An
// error of fn stops the iteration and is returned as it is.
func (s *Store) each(ctx context.Context, what, sql string, args, dest []any, fn func() error) error {
	rows, err := s.pool.Query(ctx, sql, args...)
	if err != nil {
		return qwrap(what, err)
	}
	var fnErr error
	_, err = pgx.ForEachRow(rows, dest, func() error {
		fnErr = fn()
		return fnErr
	})
	if fnErr != nil {
		return fnErr
	}
	return qwrap(what, err)
}

// likePrefix is a LIKE pattern (with ESCAPE '\') matching every string that
// starts with prefix, taken literally: "%", "_" and "\" in it match only
// themselves.
func likePrefix(prefix string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return r.Replace(prefix) + "%"
}

// qwrap names the failed query. The API answers any read-model failure
// with 503 (retry later).
func qwrap(what string, err error) error {
	if err == nil {
		return nil
	}
	return fmt.Errorf("read model: query %s: %w", what, err)
}

func nullTime(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func derefTime(t *time.Time) time.Time {
	if t == nil {
		return time.Time{}
	}
	return *t
}
