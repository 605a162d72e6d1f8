package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/google/uuid"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/onceledger/onceledger/adapters/eventstore"
)

// Query is the read side of the /v1 API: hand-written SELECTs over the read
// models (account_balances, ledger_entries, payments, reconciliation_items,
// projection_checkpoints). Lists are streamed to a callback row by row, so a
// large answer is never held in memory; the callback runs while the query's
// connection is held, so it should write to its destination and return.
type Query struct {
	pool *pgxpool.Pool
}

// NewQuery returns the read-model queries over pool.
func NewQuery(pool *pgxpool.Pool) *Query { return &Query{pool: pool} }

// BalanceFilter selects balances. Empty fields do not filter.
type BalanceFilter struct {
	AccountPrefix string // accounts starting with this (no wildcards)
	Currency      string // exact, upper-case ISO 4217
	// AsOf, when not zero, sums the entries that occurred at or before it
	// instead of reading the maintained balances.
	AsOf time.Time
}

// Balance is the sum of one account's entries in one currency.
type Balance struct {
	Account  string
	Currency string
	Balance  int64
}

// Balances streams balances sorted by account, then currency (byte order, so
// the order does not depend on the database's collation).
func (q *Query) Balances(ctx context.Context, f BalanceFilter, fn func(Balance) error) error {
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
				AND occurred_at <= $3
			GROUP BY account, currency
			ORDER BY account COLLATE "C", currency COLLATE "C"`
		args = append(args, f.AsOf)
	}
	var b Balance
	return q.each(ctx, "balances", sql, args, []any{&b.Account, &b.Currency, &b.Balance}, func() error { return fn(b) })
}

// EntryFilter selects one page of ledger entries. Empty fields do not filter.
type EntryFilter struct {
	AccountPrefix string
	Currency      string
	From          time.Time // occurred_at >= From, when not zero
	To            time.Time // occurred_at < To, when not zero
	AfterID       int64     // keyset: only entries with id > AfterID
	Limit         int       // at most this many; <= 0 means no limit
}

// Entry is one posting of the journal.
type Entry struct {
	ID           int64
	EventID      uuid.UUID
	PostingIndex int
	StreamID     string
	EventType    string
	Provider     string
	Account      string
	Currency     string
	Amount       int64
	OccurredAt   time.Time
	RecordedAt   time.Time
	Position     eventstore.Position
}

// Entries streams ledger entries in id order.
//
// Why id order is a stable pagination order: ledger_entries is append-only and
// only the ledger projector writes it, one instance at a time (it holds the
// projection's lock) and one batch transaction after the other, in feed
// order. So every entry committed after a reader took its cursor has a larger
// id than every entry committed before, and lands after the cursor: paging
// never skips or repeats an entry that existed when paging started. (A
// rebuild that swaps in a new table renumbers the entries; a cursor taken
// before the swap then points into the new numbering.)
func (q *Query) Entries(ctx context.Context, f EntryFilter, fn func(Entry) error) error {
	sql := `
		SELECT id, event_id, posting_index, stream_id, event_type, provider, account,
			currency, amount, occurred_at, recorded_at, position_commit, position_prepare
		FROM ledger_entries
		WHERE id > $1
			AND account LIKE $2 ESCAPE '\'
			AND ($3 = '' OR currency = $3)
			AND ($4::timestamptz IS NULL OR occurred_at >= $4)
			AND ($5::timestamptz IS NULL OR occurred_at < $5)
		ORDER BY id`
	args := []any{f.AfterID, likePrefix(f.AccountPrefix), f.Currency, nullTime(f.From), nullTime(f.To)}
	if f.Limit > 0 {
		sql += ` LIMIT $6`
		args = append(args, f.Limit)
	}
	var e Entry
	var commit, prepare int64
	dest := []any{&e.ID, &e.EventID, &e.PostingIndex, &e.StreamID, &e.EventType, &e.Provider, &e.Account,
		&e.Currency, &e.Amount, &e.OccurredAt, &e.RecordedAt, &commit, &prepare}
	return q.each(ctx, "ledger entries", sql, args, dest, func() error {
		e.Position = eventstore.Position{Commit: uint64(commit), Prepare: uint64(prepare)}
		return fn(e)
	})
}

// Payment is one row of the payments read model.
type Payment struct {
	Provider       string
	PaymentID      string
	StreamID       string
	Status         string
	Currency       string // "" until an event with an amount fixed it
	Authorized     int64
	Captured       int64
	Fees           int64
	Refunded       int64
	RefundsPending int64
	DisputeOpen    int64
	DisputeLost    int64
	Failed         bool
	Canceled       bool
	Version        uint64
	UpdatedAt      time.Time
}

// Payment returns the read model's row of one payment; found is false when
// there is none.
func (q *Query) Payment(ctx context.Context, provider, paymentID string) (p Payment, found bool, err error) {
	var currency *string
	var version int64
	err = q.pool.QueryRow(ctx, `
		SELECT provider, payment_id, stream_id, status, currency, authorized_amount,
			captured_amount, fee_amount, refunded_amount, refund_pending_amount,
			dispute_open_amount, dispute_lost_amount, failed, canceled, version, updated_at
		FROM payments
		WHERE provider = $1 AND payment_id = $2`, provider, paymentID).Scan(
		&p.Provider, &p.PaymentID, &p.StreamID, &p.Status, &currency, &p.Authorized,
		&p.Captured, &p.Fees, &p.Refunded, &p.RefundsPending,
		&p.DisputeOpen, &p.DisputeLost, &p.Failed, &p.Canceled, &version, &p.UpdatedAt)
	if errors.Is(err, pgx.ErrNoRows) {
		return Payment{}, false, nil
	}
	if err != nil {
		return Payment{}, false, qwrap("query payment", err)
	}
	if currency != nil {
		p.Currency = *currency
	}
	p.Version = uint64(version)
	return p, true, nil
}

// ReconciliationFilter selects reconciliation items. Empty fields do not
// filter.
type ReconciliationFilter struct {
	Status string // "open" or "resolved"
	Kind   string
}

// ReconciliationItem is one row of reconciliation_items.
type ReconciliationItem struct {
	StreamID   string
	Kind       string
	Key        string
	Status     string
	Provider   string
	PaymentID  string
	Details    string
	OpenedAt   time.Time // zero when unknown
	ResolvedAt time.Time // zero while open
}

// Reconciliation streams items, oldest first.
func (q *Query) Reconciliation(ctx context.Context, f ReconciliationFilter, fn func(ReconciliationItem) error) error {
	var it ReconciliationItem
	var opened, resolved *time.Time
	dest := []any{&it.StreamID, &it.Kind, &it.Key, &it.Status, &it.Provider, &it.PaymentID, &it.Details, &opened, &resolved}
	return q.each(ctx, "reconciliation items", `
		SELECT stream_id, kind, item_key, status, provider, payment_id, details, opened_at, resolved_at
		FROM reconciliation_items
		WHERE ($1 = '' OR status = $1) AND ($2 = '' OR kind = $2)
		ORDER BY coalesce(opened_at, resolved_at), stream_id COLLATE "C", kind COLLATE "C", item_key COLLATE "C"`,
		[]any{f.Status, f.Kind}, dest, func() error {
			it.OpenedAt, it.ResolvedAt = derefTime(opened), derefTime(resolved)
			return fn(it)
		})
}

// ProjectionState is a projection's checkpoint and how far behind the feed
// it is.
type ProjectionState struct {
	Name     string
	Position eventstore.Position
	Status   string // live, stopped, rebuilding
	// Lag is the number of events of the Postgres feed after the checkpoint
	// that readers can see now (the same visibility rule as ReadAll).
	Lag           int64
	LastError     string
	ErrorPosition *eventstore.Position
	UpdatedAt     time.Time
}

// Projections returns every projection's state, by name.
func (q *Query) Projections(ctx context.Context) ([]ProjectionState, error) {
	rows, err := q.pool.Query(ctx, `
		SELECT c.name, c.position_commit, c.position_prepare, c.status, c.last_error,
			c.error_position_commit, c.error_position_prepare, c.updated_at,
			(SELECT count(*) FROM events e
			 WHERE (e.tx_id, e.global_position) > (c.position_commit, c.position_prepare))
		FROM projection_checkpoints c
		ORDER BY c.name COLLATE "C"`)
	if err != nil {
		return nil, qwrap("query projections", err)
	}
	defer rows.Close()
	var out []ProjectionState
	for rows.Next() {
		var s ProjectionState
		var commit, prepare int64
		var lastError *string
		var errCommit, errPrepare *int64
		if err := rows.Scan(&s.Name, &commit, &prepare, &s.Status, &lastError, &errCommit, &errPrepare, &s.UpdatedAt, &s.Lag); err != nil {
			return nil, qwrap("query projections", err)
		}
		s.Position = eventstore.Position{Commit: uint64(commit), Prepare: uint64(prepare)}
		if lastError != nil {
			s.LastError = *lastError
		}
		if errCommit != nil && errPrepare != nil {
			s.ErrorPosition = &eventstore.Position{Commit: uint64(*errCommit), Prepare: uint64(*errPrepare)}
		}
		out = append(out, s)
	}
	if err := rows.Err(); err != nil {
		return nil, qwrap("query projections", err)
	}
	return out, nil
}

// each runs sql and calls fn once per row, after scanning it into dest. An
// error of fn stops the iteration and is returned as it is.
func (q *Query) each(ctx context.Context, what, sql string, args, dest []any, fn func() error) error {
	rows, err := q.pool.Query(ctx, sql, args...)
	if err != nil {
		return qwrap("query "+what, err)
	}
	defer rows.Close()
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return qwrap("query "+what, err)
		}
		if err := fn(); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return qwrap("query "+what, err)
	}
	return nil
}

// likePrefix is a LIKE pattern (with ESCAPE '\') matching every string that
// starts with prefix, taken literally: "%", "_" and "\" in it match only
// themselves.
func likePrefix(prefix string) string {
	r := strings.NewReplacer(`\`, `\\`, `%`, `\%`, `_`, `\_`)
	return r.Replace(prefix) + "%"
}

// qwrap names the failed query and marks connection failures and timeouts
// as eventstore.ErrUnavailable (the API answers 503).
func qwrap(op string, err error) error {
	return fmt.Errorf("postgres read model: %s: %w", op, markUnavailable(err))
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
