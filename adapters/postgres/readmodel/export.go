package readmodel

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/domain/delivery"
	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/domain/payment"
	"github.com/onceledger/onceledger/domain/period"
	"github.com/onceledger/onceledger/projections/views"
)

// The exports to accountants' tools read the journal by accounting date
// (GET /v1/export/{format}, `onceledger export`): the balances the range
// opens with, then every posting of the range in order, streamed row by
// row from one snapshot, so a year of entries never sits in memory and
// the opening balances agree with the entries that follow them.

// exportDate is an entry's accounting date: its effective date in the
// reporting zone ($zone), or, for a late adjustment, the first day of the
// period it is booked into (its effective date lies in a closed period).
const exportDate = `CASE WHEN e.late_adjustment THEN to_date(e.period, 'YYYY-MM')
	ELSE (e.occurred_at AT TIME ZONE %s)::date END`

// ExportAccounts lists the accounts with an entry effective before
// before (a probe of ledger_entries' (account, currency, occurred_at)
// index per account and currency), so that an export can refuse an
// account it cannot name before it writes a byte, and an account first
// used later never fails an earlier range's export.
func (s *Store) ExportAccounts(ctx context.Context, before time.Time) ([]string, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT DISTINCT b.account COLLATE "C" FROM account_balances b
		WHERE EXISTS (SELECT FROM ledger_entries e
		              WHERE e.account = b.account AND e.currency = b.currency AND e.occurred_at < $1)
		ORDER BY 1`, before)
	if err != nil {
		return nil, err
	}
	return pgx.CollectRows(rows, pgx.RowTo[string])
}

// ExportJournal reads, from one snapshot, the balances of the entries
// dated before f.From (opening, called once, nonzero balances sorted by
// account and currency), then, when f.Deposits is set, the settlement
// lines of the range's paid payouts (exportDeposits), then each entry
// dated in [f.From, f.To) (entry, in date order, then by currency when
// f.ByCurrency, then in feed order). It holds one connection throughout
// and needs no other.
// It stops at the first error a callback returns and returns it.
func (s *Store) ExportJournal(ctx context.Context, f views.ExportFilter,
	opening func([]views.ExportOpening) error, entry func(views.ExportEntry) error) error {
	loc := f.Zone
	if loc == nil {
		loc = time.UTC
	}
	zone := loc.String()
	if loc == time.Local {
		return fmt.Errorf("export: the reporting zone must be named, not Local")
	}
	date := fmt.Sprintf(exportDate, "$1::text")
	fromDay := f.From.In(loc).Format(time.DateOnly)
	toDay := f.To.In(loc).Format(time.DateOnly)
	// Two index-friendly halves: entries in their own period by their
	// effective time (occurred_at's index), late adjustments by the
	// period they are booked into (period's index, a superset); the
	// accounting date decides.
	firstPeriod := period.Of(f.From, loc).String()
	lastPeriod := period.Of(f.To.Add(-time.Nanosecond), loc).String()
	return pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `
			SELECT account, currency, sum(amount)::bigint FROM (
				SELECT e.account, e.currency, e.amount FROM ledger_entries e
				WHERE NOT e.late_adjustment AND e.occurred_at < $3
				UNION ALL
				SELECT e.account, e.currency, e.amount FROM ledger_entries e
				WHERE e.late_adjustment AND e.period <= $4 AND `+date+` < $2::date
			) x
			GROUP BY account, currency HAVING sum(amount) <> 0
			ORDER BY account COLLATE "C", currency COLLATE "C"`, zone, fromDay, f.From, firstPeriod)
		if err != nil {
			return err
		}
		open, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (views.ExportOpening, error) {
			var o views.ExportOpening
			var cur string
			err := r.Scan(&o.Account, &cur, &o.Balance)
			o.Currency = money.Currency(cur)
			return o, err
		})
		if err != nil {
			return err
		}
		if err := opening(open); err != nil {
			return err
		}
		// The entries dated in the range ($2 to $7 below), with the
		// columns asked for.
		inRange := func(columns string) string {
			return `SELECT * FROM (
				SELECT ` + date + ` AS d, ` + columns + ` FROM ledger_entries e
				WHERE NOT e.late_adjustment AND e.occurred_at >= $4 AND e.occurred_at < $5
				UNION ALL
				SELECT ` + date + ` AS d, ` + columns + ` FROM ledger_entries e
				WHERE e.late_adjustment AND e.period >= $6 AND e.period <= $7
			) x
			WHERE d >= $2::date AND d < $3::date`
		}
		args := []any{zone, fromDay, toDay, f.From, f.To, firstPeriod, lastPeriod}
		if f.Deposits != nil {
			if err := exportDeposits(ctx, tx, inRange, args, f.Deposits); err != nil {
				return err
			}
		}
		order := `d, `
		if f.ByCurrency {
			order += `currency, `
		}
		rows, err = tx.Query(ctx, inRange(`e.account, e.amount, e.currency, e.event_type, e.provider, e.stream_id,
			e.event_id, e.effective_at, e.period, e.late_adjustment, coalesce(e.adjusts_period, ''),
			e.position_commit, e.position_prepare, e.posting_index`)+`
			ORDER BY `+order+`position_commit, position_prepare, event_id, posting_index`, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var x views.ExportEntry
			var d time.Time
			var cur, booked, adjusts string
			var commit, prepare int64 // the order's, not written
			var posting int32
			if err := rows.Scan(&d, &x.Account, &x.Amount, &cur, &x.EventType, &x.Provider, &x.StreamID,
				&x.EventID, &x.EffectiveAt, &booked, &x.LateAdjustment, &adjusts, &commit, &prepare, &posting); err != nil {
				return err
			}
			x.Currency = money.Currency(cur)
			x.Date = d.Format(time.DateOnly)
			var err error
			if x.Period, err = period.Parse(booked); err != nil {
				return err
			}
			if x.LateAdjustment {
				if x.Adjusts, err = period.Parse(adjusts); err != nil {
					return err
				}
			}
			if err := entry(x); err != nil {
				return err
			}
		}
		return rows.Err()
	})
}

// exportDeposits sums, per kind, the settlement lines of each payout paid
// in the range (its payout.paid entries dated there), in the currency it
// was paid in (the payout line itself left out), and hands them to
// deposits. When the period the payout is booked into is closed, only the
// lines recorded (their delivery's first arrival in the inbox) by its
// close count: a deposit journal itemises a closed period's payout as the
// books stood when they were closed, so that a report imported later never
// changes that period's export (what it adds is booked, if anything, into
// an open period). A year's payouts by kind are few: they are read whole.
func exportDeposits(ctx context.Context, tx pgx.Tx, inRange func(string) string, args []any,
	deposits func([]views.ExportDeposit) error) error {
	rows, err := tx.Query(ctx, `
		WITH paid AS (
			SELECT DISTINCT provider, substr(stream_id, length(provider) + 9) AS payout_id, currency, period
			FROM (`+inRange(`e.provider, e.stream_id, e.currency, e.period, e.event_type`)+`) r
			WHERE event_type = '`+payment.TypePayoutPaid+`'
			  AND left(stream_id, length(provider) + 8) = '`+delivery.PayoutStreamPrefix+`' || provider || '-'
		)
		SELECT p.provider, p.payout_id, p.currency, p.period,
		       l.kind, count(*), sum(l.gross)::bigint, sum(l.fee)::bigint, sum(l.net)::bigint
		FROM paid p
		JOIN settlement_lines l ON l.provider = p.provider AND l.payout_id = p.payout_id AND l.currency = p.currency
		JOIN webhook_inbox i ON i.provider = l.provider AND i.dedup_key = l.line_key
		WHERE l.kind <> 'payout'
		  AND NOT EXISTS (SELECT FROM periods c
		                  WHERE c.period = p.period AND c.status = 'closed' AND i.first_seen_at > c.closed_at)
		GROUP BY p.provider, p.payout_id, p.currency, p.period, l.kind
		ORDER BY p.provider COLLATE "C", p.payout_id COLLATE "C", p.currency, p.period, l.kind COLLATE "C"`, args...)
	if err != nil {
		return err
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (views.ExportDeposit, error) {
		var d views.ExportDeposit
		var cur, booked string
		err := r.Scan(&d.Provider, &d.PayoutID, &cur, &booked, &d.Kind, &d.Lines, &d.Gross, &d.Fee, &d.Net)
		if err != nil {
			return d, err
		}
		d.Currency = money.Currency(cur)
		d.Period, err = period.Parse(booked)
		return d, err
	})
	if err != nil {
		return err
	}
	return deposits(out)
}
