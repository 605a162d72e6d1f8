package readmodel

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/onceledger/onceledger/adapters/eventstore"
	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/period"
	"github.com/onceledger/onceledger/projections"
	"github.com/onceledger/onceledger/projections/views"
)

// ErrUnknownPeriod is views.ErrUnknownPeriod, for callers of this package.
var ErrUnknownPeriod = views.ErrUnknownPeriod

// Queries over the accounting periods, for `GET /v1/periods`,
// `GET /v1/periods/{p}/trial-balance` and `GET /v1/journal` (and the
// console), and the frozen periods `verify` checks.

const periodInfoColumns = `p.period, p.status, p.books_start, coalesce(p.zone, ''), p.closed_at, coalesce(p.closed_by, ''),
	coalesce(p.close_note, ''), p.reopened_at, coalesce(p.reopened_by, ''), coalesce(p.reopen_reason, ''),
	coalesce(p.content_hash, ''),
	(SELECT count(*) FROM ledger_entries e WHERE e.period = p.period),
	(SELECT count(*) FROM ledger_entries e WHERE e.period = p.period AND e.late_adjustment)`

func scanPeriodInfo(r pgx.CollectableRow) (views.PeriodInfo, error) {
	var pi views.PeriodInfo
	var name string
	if err := r.Scan(&name, &pi.Status, &pi.BooksStart, &pi.Zone, &pi.ClosedAt, &pi.ClosedBy, &pi.CloseNote,
		&pi.ReopenedAt, &pi.ReopenedBy, &pi.ReopenReason, &pi.ContentHash, &pi.Entries, &pi.Adjustments); err != nil {
		return pi, err
	}
	var err error
	pi.Period, err = period.Parse(name)
	return pi, err
}

// Periods lists the periods (those with entries, and those ever closed),
// oldest first.
func (s *Store) Periods(ctx context.Context) ([]views.PeriodInfo, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+periodInfoColumns+` FROM periods p ORDER BY p.period`)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, scanPeriodInfo)
}

// TrialBalance returns the trial balance of p, with the late entries
// booked into it as adjustments, from one snapshot. A period with no row
// (nothing booked, never closed) is ErrUnknownPeriod.
func (s *Store) TrialBalance(ctx context.Context, p period.Period) (views.TrialBalance, error) {
	var tb views.TrialBalance
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `SELECT `+periodInfoColumns+` FROM periods p WHERE p.period = $1`, p.String())
		if err != nil {
			return err
		}
		tb.Info, err = pgx.CollectExactlyOneRow(rows, scanPeriodInfo)
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: %s", ErrUnknownPeriod, p)
		}
		if err != nil {
			return err
		}
		tb.Frozen = tb.Info.Status == views.PeriodClosed
		if tb.Frozen {
			tb.Lines, err = frozenLines(ctx, tx, p)
		} else {
			var sums []period.Sum
			if sums, err = periodSums(ctx, tx, quoted, p); err == nil {
				tb.Lines, err = period.Lines(sums)
			}
		}
		if err != nil {
			return err
		}
		rows, err = tx.Query(ctx, `
			SELECT event_id, posting_index, stream_id, event_type, provider, account, currency, amount,
			       effective_at, booked_at, adjusts_period
			FROM ledger_entries WHERE period = $1 AND late_adjustment ORDER BY id`, p.String())
		if err != nil {
			return err
		}
		tb.Adjustments, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (views.Adjustment, error) {
			var a views.Adjustment
			var cur, adjusts string
			if err := r.Scan(&a.EventID, &a.PostingIndex, &a.StreamID, &a.EventType, &a.Provider, &a.Account, &cur,
				&a.Amount, &a.EffectiveAt, &a.BookedAt, &adjusts); err != nil {
				return a, err
			}
			a.Currency = money.Currency(cur)
			var err error
			a.Adjusts, err = period.Parse(adjusts)
			return a, err
		})
		return err
	})
	return tb, err
}

func frozenLines(ctx context.Context, tx pgx.Tx, p period.Period) ([]period.Balance, error) {
	rows, err := tx.Query(ctx, `
		SELECT account, currency, opening, debits, credits, closing FROM period_balances
		WHERE period = $1 ORDER BY account, currency`, p.String())
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (period.Balance, error) {
		var b period.Balance
		var cur string
		err := r.Scan(&b.Account, &cur, &b.Opening, &b.Debits, &b.Credits, &b.Closing)
		b.Currency = money.Currency(cur)
		return b, err
	})
}

// FrozenPeriods returns every closed period with its stored hash and
// frozen lines, and the ledger projection's checkpoint, from one snapshot
// (projections.AuditDB).
func (s *Store) FrozenPeriods(ctx context.Context) (eventstore.Position, []projections.FrozenPeriod, error) {
	var at eventstore.Position
	var out []projections.FrozenPeriod
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		var c, p int64
		err := tx.QueryRow(ctx, `SELECT position_commit, position_prepare FROM projection_checkpoints WHERE name = $1`,
			projections.NameLedger).Scan(&c, &p)
		if err != nil && !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		at = eventstore.Position{Commit: uint64(c), Prepare: uint64(p)}
		rows, err := tx.Query(ctx, `SELECT period, content_hash FROM periods WHERE status = 'closed' ORDER BY period`)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (projections.FrozenPeriod, error) {
			var f projections.FrozenPeriod
			var name string
			if err := r.Scan(&name, &f.Hash); err != nil {
				return f, err
			}
			var err error
			f.Period, err = period.Parse(name)
			return f, err
		})
		if err != nil {
			return err
		}
		for i := range out {
			if out[i].Lines, err = frozenLines(ctx, tx, out[i].Period); err != nil {
				return err
			}
		}
		return nil
	})
	return at, out, err
}

// Journal returns journal rows in ledger_entries.id order (the order the
// ledger projected them).
//
// Date is the accounting date in the reporting zone: the effective date,
// except for a late adjustment, which is dated the first day of the
// period it is booked into (its effective date lies in a closed period,
// which an accounting tool importing the journal would refuse, too).
// Memo says what happened ("payment.captured"), and for an adjustment,
// which period it adjusts.
func (s *Store) Journal(ctx context.Context, f views.JournalFilter) ([]views.JournalRow, error) {
	if f.Limit <= 0 {
		f.Limit = 1000
	}
	loc := f.Zone
	if loc == nil {
		loc = time.UTC
	}
	// The older names of effective_at and booked_at, which are indexed.
	timeCol := "e." + timeColumn(f.Booked)
	var from, to pgtype.Timestamptz
	if !f.From.IsZero() {
		from = pgtype.Timestamptz{Time: f.From, Valid: true}
	}
	if !f.To.IsZero() {
		to = pgtype.Timestamptz{Time: f.To, Valid: true}
	}
	var per *string
	if !f.Period.IsZero() {
		s := f.Period.String()
		per = &s
	}
	// Paged in feed order by the key a rebuild keeps (see Entries).
	after := `true`
	args := []any{from, to, per, f.Limit}
	if f.After != nil {
		c, p, err := position64(f.After.Position)
		if err != nil {
			return nil, err
		}
		after = `(e.position_commit, e.position_prepare, e.event_id, e.posting_index) > ($5, $6, $7, $8)`
		args = append(args, c, p, pgtype.UUID{Bytes: f.After.EventID, Valid: true}, int32(f.After.PostingIndex))
	}
	rows, err := s.pool.Query(ctx, `
		SELECT e.id, e.account, e.amount, e.currency, e.event_type, e.provider, coalesce(p.payment_id, ''),
		       e.event_id, e.effective_at, e.booked_at, e.period, e.late_adjustment, coalesce(e.adjusts_period, ''),
		       e.position_commit, e.position_prepare, e.posting_index, coalesce(a.actor, '')
		FROM ledger_entries e LEFT JOIN payments p ON p.stream_id = e.stream_id
		LEFT JOIN ledger_actors a ON a.event_id = e.event_id
		WHERE `+after+`
		  AND ($1::timestamptz IS NULL OR `+timeCol+` >= $1)
		  AND ($2::timestamptz IS NULL OR `+timeCol+` < $2)
		  AND ($3::text IS NULL OR e.period = $3)
		ORDER BY e.position_commit, e.position_prepare, e.event_id, e.posting_index LIMIT $4`, args...)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, func(r pgx.CollectableRow) (views.JournalRow, error) {
		var j views.JournalRow
		var amount int64
		var cur, eventType, booked, adjusts string
		var commit, prepare int64
		if err := r.Scan(&j.ID, &j.Account, &amount, &cur, &eventType, &j.Provider, &j.PaymentID, &j.EventID,
			&j.EffectiveAt, &j.BookedAt, &booked, &j.LateAdjustment, &adjusts, &commit, &prepare, &j.Key.PostingIndex, &j.Actor); err != nil {
			return j, err
		}
		j.Key.Position = eventstore.Position{Commit: uint64(commit), Prepare: uint64(prepare)}
		j.Key.EventID = j.EventID
		j.Currency = money.Currency(cur)
		var err error
		if j.Period, err = period.Parse(booked); err != nil {
			return j, err
		}
		j.Memo = eventType
		j.Date = j.EffectiveAt.In(loc).Format(time.DateOnly)
		if j.LateAdjustment {
			if j.Adjusts, err = period.Parse(adjusts); err != nil {
				return j, err
			}
			j.Memo += " (late: adjusts " + j.Adjusts.String() + ")"
			j.Date = j.Period.Start(loc).Format(time.DateOnly)
		}
		if amount >= 0 {
			j.Debit, j.DebitDecimal = amount, money.FormatMinor(amount, j.Currency)
		} else {
			// -MinInt64 does not exist; no posting reaches it (amounts are
			// capped at 10^15 minor units at the gate).
			j.Credit, j.CreditDecimal = -amount, money.FormatMinor(-amount, j.Currency)
		}
		return j, nil
	})
}
