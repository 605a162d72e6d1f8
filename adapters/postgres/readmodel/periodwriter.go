package readmodel

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/period"
	"github.com/onceledger/onceledger/projections"
)

// The ledger projection's period tables: periods (one row per period with
// entries or ever closed) and period_balances (the frozen trial balances of
// the closed periods). The calendar's state is not stored apart: it is the
// books_start row and the closed rows from it on.

var _ projections.PeriodWriter = (*writer)(nil)

func (w *writer) Calendar(ctx context.Context) (period.State, error) {
	var start, zone string
	var through *string
	err := w.tx.QueryRow(ctx, `
		SELECT s.period, coalesce(s.zone, ''),
		       (SELECT max(c.period) FROM `+w.table("periods")+` c WHERE c.status = 'closed' AND c.period >= s.period)
		FROM `+w.table("periods")+` s WHERE s.books_start`).Scan(&start, &zone, &through)
	if errors.Is(err, pgx.ErrNoRows) {
		return period.State{}, nil // the books were never closed
	}
	if err != nil {
		return period.State{}, classify(err)
	}
	st := period.State{Zone: zone}
	if st.Start, err = period.Parse(start); err != nil {
		return period.State{}, fmt.Errorf("%w: periods row: %w", projections.ErrPoison, err)
	}
	st.Through = st.Start.Prev() // every period from the start reopened
	if through != nil {
		if st.Through, err = period.Parse(*through); err != nil {
			return period.State{}, fmt.Errorf("%w: periods row: %w", projections.ErrPoison, err)
		}
	}
	return st, nil
}

func (w *writer) EnsurePeriods(ctx context.Context, ps []period.Period) error {
	_, err := w.tx.Exec(ctx, `
		INSERT INTO `+w.table("periods")+` (period, status) SELECT unnest($1::text[]), 'open'
		ON CONFLICT (period) DO NOTHING`, periodStrings(ps))
	return classify(err)
}

func (w *writer) OpenPeriodsBefore(ctx context.Context, p period.Period) ([]period.Period, error) {
	rows, err := w.tx.Query(ctx, `SELECT period FROM `+w.table("periods")+` WHERE status = 'open' AND period < $1 ORDER BY period`, p.String())
	if err != nil {
		return nil, classify(err)
	}
	names, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return nil, classify(err)
	}
	out := make([]period.Period, len(names))
	for i, n := range names {
		if out[i], err = period.Parse(n); err != nil {
			return nil, fmt.Errorf("%w: periods row: %w", projections.ErrPoison, err)
		}
	}
	return out, nil
}

// PeriodSums adds p's figures up from the entries (see periodSums).
func (w *writer) PeriodSums(ctx context.Context, p period.Period) ([]period.Sum, error) {
	sums, err := periodSums(ctx, w.tx, w.table, p)
	return sums, classify(err)
}

// periodSums adds p's figures up from the entries, in tables named by
// table (live or shadow). The opening is the previous period's frozen
// closing when that period is closed with a frozen balance (nothing can be
// booked before p any more, so it is the same sum, without scanning the
// whole history); otherwise the sum of every entry booked before p. Sums
// overflowing bigint fail the cast (numeric_value_out_of_range).
func periodSums(ctx context.Context, tx pgx.Tx, table func(string) string, p period.Period) ([]period.Sum, error) {
	var prevFrozen bool
	if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM `+table("periods")+`
		WHERE period = $1 AND status = 'closed' AND content_hash IS NOT NULL)`, p.Prev().String()).Scan(&prevFrozen); err != nil {
		return nil, err
	}
	args := []any{p.String()}
	opening := `SELECT account, currency, sum(amount)::bigint AS amount FROM ` + table("ledger_entries") + `
		WHERE period < $1 GROUP BY account, currency`
	if prevFrozen {
		opening = `SELECT account, currency, closing AS amount FROM ` + table("period_balances") + ` WHERE period = $2`
		args = append(args, p.Prev().String())
	}
	rows, err := tx.Query(ctx, `
		WITH opening AS (`+opening+`),
		activity AS (
			SELECT account, currency,
			       coalesce(sum(amount) FILTER (WHERE amount > 0), 0)::bigint AS debits,
			       coalesce(-sum(amount) FILTER (WHERE amount < 0), 0)::bigint AS credits
			FROM `+table("ledger_entries")+` WHERE period = $1 GROUP BY account, currency)
		SELECT account, currency, coalesce(o.amount, 0), coalesce(a.debits, 0), coalesce(a.credits, 0)
		FROM opening o FULL JOIN activity a USING (account, currency)`, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (period.Sum, error) {
		var s period.Sum
		var cur string
		err := r.Scan(&s.Account, &cur, &s.Opening, &s.Debits, &s.Credits)
		s.Currency = money.Currency(cur)
		return s, err
	})
}

func (w *writer) FreezePeriod(ctx context.Context, c projections.PeriodClose) error {
	b := &pgx.Batch{}
	b.Queue(`
		INSERT INTO `+w.table("periods")+` AS p (period, status, books_start, zone, closed_at, closed_by, close_note, close_event_id, content_hash)
		VALUES ($1, 'closed', $2, $3, $4, $5, $6, $7, $8)
		ON CONFLICT (period) DO UPDATE
		SET status = 'closed', books_start = p.books_start OR excluded.books_start, zone = excluded.zone,
		    closed_at = excluded.closed_at, closed_by = excluded.closed_by, close_note = excluded.close_note,
		    close_event_id = excluded.close_event_id, content_hash = excluded.content_hash`,
		c.Period.String(), c.BooksStart, c.Zone, c.At, c.Actor, c.Note, pgtype.UUID{Bytes: c.EventID, Valid: true}, c.Hash)
	b.Queue(`DELETE FROM `+w.table("period_balances")+` WHERE period = $1`, c.Period.String())
	n := len(c.Lines)
	accts, curs := make([]string, n), make([]string, n)
	opening, debits, credits, closing := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	for i, l := range c.Lines {
		accts[i], curs[i] = l.Account, string(l.Currency)
		opening[i], debits[i], credits[i], closing[i] = l.Opening, l.Debits, l.Credits, l.Closing
	}
	b.Queue(`
		INSERT INTO `+w.table("period_balances")+` (period, account, currency, opening, debits, credits, closing, content_hash)
		SELECT $1::text, *, $8::text FROM unnest($2::text[], $3::text[], $4::bigint[], $5::bigint[], $6::bigint[], $7::bigint[])`,
		c.Period.String(), accts, curs, opening, debits, credits, closing, c.Hash)
	return classify(w.tx.SendBatch(ctx, b).Close())
}

func (w *writer) ReopenPeriod(ctx context.Context, r projections.PeriodReopen) error {
	b := &pgx.Batch{}
	b.Queue(`
		UPDATE `+w.table("periods")+`
		SET status = 'open', content_hash = NULL, reopened_at = $2, reopened_by = $3, reopen_reason = $4, reopen_event_id = $5
		WHERE period = $1`,
		r.Period.String(), r.At, r.Actor, r.Reason, pgtype.UUID{Bytes: r.EventID, Valid: true})
	b.Queue(`DELETE FROM `+w.table("period_balances")+` WHERE period = $1`, r.Period.String())
	return classify(w.tx.SendBatch(ctx, b).Close())
}

func periodStrings(ps []period.Period) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.String()
	}
	return out
}
