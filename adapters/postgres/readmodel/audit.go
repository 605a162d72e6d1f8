package readmodel

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/projections"
)

// CheckLedger compares balances with their entries and checks that each
// event's entries balance, in one snapshot: a batch commits entries and
// balances together, so any difference seen here is real.
func (s *Store) CheckLedger(ctx context.Context, limit int) ([]projections.Violation, error) {
	var out []projections.Violation
	err := pgx.BeginTxFunc(ctx, s.pool, pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, `
			WITH e AS (SELECT account, currency, sum(amount) AS total, count(*) AS n FROM ledger_entries GROUP BY 1, 2)
			SELECT coalesce(b.account, e.account), coalesce(b.currency, e.currency),
			       coalesce(b.balance::text, 'none'), coalesce(e.total::text, 'none'),
			       coalesce(b.entry_count::text, 'none'), coalesce(e.n::text, 'none')
			FROM account_balances b FULL JOIN e ON b.account = e.account AND b.currency = e.currency
			WHERE b.balance IS DISTINCT FROM e.total OR b.entry_count IS DISTINCT FROM e.n
			ORDER BY 1, 2 LIMIT $1`, limit)
		if err != nil {
			return err
		}
		balances, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (projections.Violation, error) {
			var account, currency, balance, total, count, n string
			err := r.Scan(&account, &currency, &balance, &total, &count, &n)
			return projections.Violation{Check: projections.CheckBalancesMatch, Detail: fmt.Sprintf(
				"%s %s: balance %s (%s entries) but entries sum to %s (%s entries)", account, currency, balance, count, total, n)}, err
		})
		if err != nil {
			return err
		}
		rows, err = tx.Query(ctx, `
			SELECT event_id::text, currency, sum(amount)::text
			FROM ledger_entries GROUP BY event_id, currency HAVING sum(amount) <> 0
			ORDER BY 1, 2 LIMIT $1`, limit)
		if err != nil {
			return err
		}
		events, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (projections.Violation, error) {
			var id, currency, sum string
			err := r.Scan(&id, &currency, &sum)
			return projections.Violation{Check: projections.CheckEntriesBalance, Detail: fmt.Sprintf(
				"event %s: %s entries sum to %s", id, currency, sum)}, err
		})
		out = append(balances, events...)
		return err
	})
	return out, err
}
