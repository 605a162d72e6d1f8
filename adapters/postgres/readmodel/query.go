package readmodel

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgerrcode"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/projections/views"
)

// The one read side both front ends query (the /v1 API and the console):
// hand-written SELECTs over the read models (account_balances,
// ledger_entries, payments, reconciliation_items), in the shapes of package
// views. Streamed lists go to a callback row by row (pgx.ForEachRow), so a
// large answer is never held in memory; the callback runs while the
// query's connection is held, so it should write to its destination and
// return. Pages (the console's) are keyset pages: at most Limit rows
// strictly after the filter's After key.

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

// Payments reads a page of payments, most recently active first, after
// f.After (the console's search; the index payments_console_recent_idx and, for the
// id prefix, payments_console_id_prefix_idx).
func (s *Store) Payments(ctx context.Context, f views.PaymentFilter) ([]views.Payment, error) {
	var w where
	w.opt("provider = ?", f.Provider)
	if f.PaymentID != "" {
		// LIKE with a literal prefix uses the text_pattern_ops index.
		w.add(`payment_id LIKE ? ESCAPE '\'`, likePrefix(f.PaymentID))
	}
	w.opt("status = ?", f.Status)
	w.opt("currency = ?", f.Currency)
	w.optTime("updated_at >= ?", f.From)
	w.optTime("updated_at < ?", f.To)
	if k := f.After; k != nil {
		w.add("(updated_at, provider, payment_id) < (?, ?, ?)", k.UpdatedAt, k.Provider, k.PaymentID)
	}
	rows, err := s.pool.Query(ctx, `SELECT `+paymentColumns+` FROM payments`+w.sql()+
		` ORDER BY updated_at DESC, provider DESC, payment_id DESC`+w.limit(f.Limit), w.args...)
	if err != nil {
		return nil, qwrap("payments", err)
	}
	out, err := pgx.CollectRows(rows, scanPayment)
	return out, qwrap("payments", err)
}

// reconOpened is the items' sort key: an unknown opening time sorts first
// (the index reconciliation_items_console_age_idx).
const reconOpened = `coalesce(opened_at, '-infinity'::timestamptz)`

// Reconciliation streams items, oldest first, after f.After: GET
// /v1/reconciliation and the console's list, a payment's items and its
// CSV export alike.
func (s *Store) Reconciliation(ctx context.Context, f views.ReconciliationFilter, fn func(views.ReconciliationItem) error) error {
	var w where
	w.opt("status = ?", f.Status)
	w.opt("kind = ?", f.Kind)
	w.opt("provider = ?", f.Provider)
	w.opt("stream_id = ?", f.StreamID)
	w.optTime(reconOpened+" < ?", f.OpenedBefore)
	if k := f.After; k != nil {
		w.add("("+reconOpened+", stream_id, kind, item_key) > (?, ?, ?, ?)", orNegInfinity(k.OpenedAt), k.StreamID, k.Kind, k.Key)
	}
	var it views.ReconciliationItem
	var opened, resolved *time.Time
	var atStake *int64
	dest := []any{&it.StreamID, &it.Kind, &it.Key, &it.Status, &it.Provider, &it.PaymentID, &it.Details, &opened, &resolved,
		&it.ResolvedBy, &it.Note, &atStake, &it.AtStakeCurrency}
	if f.AtStakeCurrency != "" {
		w.add("at_stake_currency = ?", f.AtStakeCurrency)
		w.add("at_stake >= ?", f.MinAtStake)
	}
	// Each item with the amount at stake from its payment's row (by the
	// stream's unique key) or its payout's (by its primary key: the payout
	// id is the rest of the stream id); the filters, the order and the
	// limit apply to the joined rows, so that the amount filters too.
	return s.each(ctx, "reconciliation items", `
		SELECT stream_id, kind, item_key, status, provider, payment_id, details, opened_at,
		       resolved_at, coalesce(resolved_by, ''), coalesce(note, ''), at_stake, at_stake_currency
		FROM (SELECT ri.*,
		       CASE
		         WHEN ri.kind = 'over_refund' THEN p.refunded_amount - p.captured_amount
		         WHEN ri.kind = 'over_reversal' THEN p.refunded_amount + p.dispute_open_amount + p.dispute_lost_amount - p.captured_amount
		         WHEN ri.kind = 'payout_mismatch' THEN po.difference
		         WHEN p.stream_id IS NOT NULL THEN p.captured_amount
		         ELSE po.amount
		       END AS at_stake,
		       coalesce(p.currency, po.currency, '') AS at_stake_currency
		      FROM reconciliation_items ri
		      LEFT JOIN payments p ON p.stream_id = ri.stream_id
		      LEFT JOIN payouts po ON po.provider = ri.provider
		           AND ri.stream_id LIKE 'payout-%'
		           AND po.payout_id = substr(ri.stream_id, length('payout-' || ri.provider || '-') + 1)) x`+w.sql()+`
		ORDER BY `+reconOpened+`, stream_id, kind, item_key`+w.limit(f.Limit),
		w.args, dest, func() error {
			it.OpenedAt, it.ResolvedAt = derefTime(opened), derefTime(resolved)
			it.AtStake = 0
			if atStake != nil {
				it.AtStake = *atStake
			}
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

// qwrap names the failed query and marks an unreachable or timed-out
// database as eventstore.ErrUnavailable: both front ends answer a
// read-model failure with 503 (retry later).
func qwrap(what string, err error) error {
	if err == nil {
		return nil
	}
	if unreachable(err) {
		return fmt.Errorf("read model: query %s: %w: %w", what, eventstore.ErrUnavailable, err)
	}
	return fmt.Errorf("read model: query %s: %w", what, err)
}

func unreachable(err error) bool {
	if errors.Is(err, eventstore.ErrUnavailable) || errors.Is(err, context.DeadlineExceeded) ||
		pgconn.Timeout(err) || pgconn.SafeToRetry(err) {
		return true
	}
	var connectErr *pgconn.ConnectError
	var netErr net.Error
	if errors.As(err, &connectErr) || errors.As(err, &netErr) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) {
		return true
	}
	var pgErr *pgconn.PgError
	if errors.As(err, &pgErr) {
		return pgerrcode.IsConnectionException(pgErr.Code) || pgErr.Code == pgerrcode.AdminShutdown ||
			pgErr.Code == pgerrcode.CrashShutdown || pgErr.Code == pgerrcode.CannotConnectNow ||
			pgErr.Code == pgerrcode.QueryCanceled || pgErr.Code == pgerrcode.TooManyConnections
	}
	return false
}

// where builds a WHERE clause of optional conditions with numbered
// arguments, so that each query names only the filters in use and the
// planner sees plain index conditions.
type where struct {
	conds []string
	args  []any
}

// add appends cond, in which each "?" is the next argument.
func (w *where) add(cond string, args ...any) {
	for _, a := range args {
		w.args = append(w.args, a)
		cond = strings.Replace(cond, "?", "$"+strconv.Itoa(len(w.args)), 1)
	}
	w.conds = append(w.conds, cond)
}

// opt adds cond unless v is empty (an unset filter).
func (w *where) opt(cond, v string) {
	if v != "" {
		w.add(cond, v)
	}
}

// optTime adds cond unless t is zero (an unset bound).
func (w *where) optTime(cond string, t time.Time) {
	if !t.IsZero() {
		w.add(cond, t)
	}
}

func (w *where) sql() string {
	if len(w.conds) == 0 {
		return ""
	}
	return " WHERE " + strings.Join(w.conds, " AND ")
}

// limit appends a LIMIT argument and returns the clause; n <= 0 is no
// limit.
func (w *where) limit(n int) string {
	if n <= 0 {
		return ""
	}
	w.args = append(w.args, n)
	return " LIMIT $" + strconv.Itoa(len(w.args))
}

// orNegInfinity is a keyset's time: zero (unknown) is the -infinity the
// sort keys put unknown times at.
func orNegInfinity(t time.Time) pgtype.Timestamptz {
	if t.IsZero() {
		return pgtype.Timestamptz{InfinityModifier: pgtype.NegativeInfinity, Valid: true}
	}
	return pgtype.Timestamptz{Time: t, Valid: true}
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
