package readmodel

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/domain/bankline"
	"github.com/onceledger/onceledger/domain/money"
)

// UnbankedPayouts lists the payouts paid that no bank line banked
// (bankimport.Payouts): what a bank account expects, and (Failed) those
// the provider since said failed, which it stops expecting. The arrival
// date is the payouts row's (the provider's, else the date of the
// payout's event); the id, the trace id and the statement descriptor are
// what a bank's remittance text may carry. A payout banked since is a
// duplicate at the account's gate.
//
// Also listed: a payout a line banked by less than its trace id when the
// payout has one (it may have become known after the match: Stripe fills
// it in up to 10 days after arrival_date), so that the account learns it
// and moves a line that names it (domain/bankstatement). Only for
// payouts arriving in the last 45 days: the trace id comes within 10 days
// of the arrival, and an older one would be told on every import for
// ever, a duplicate each time.
func (s *Store) UnbankedPayouts(ctx context.Context) ([]bankline.Payout, error) {
	rows, err := s.pool.Query(ctx, `
		SELECT p.provider, p.payout_id, p.amount, p.currency, p.arrival_date, p.failed,
		       coalesce(p.trace_id, ''), coalesce(p.statement_descriptor, '')
		FROM payouts p
		WHERE p.paid AND p.amount <> 0 AND p.currency IS NOT NULL AND p.arrival_date IS NOT NULL
		  AND (NOT EXISTS (SELECT 1 FROM bank_payouts b WHERE b.provider = p.provider AND b.payout_id = p.payout_id AND NOT b.returned)
		    OR (p.trace_id IS NOT NULL AND p.arrival_date >= now() - interval '45 days'
		        AND EXISTS (SELECT 1 FROM bank_payouts b WHERE b.provider = p.provider AND b.payout_id = p.payout_id
		                    AND NOT b.returned AND b.matched_by <> 'trace_id')))
		ORDER BY p.arrival_date, p.provider, p.payout_id`)
	if err != nil {
		return nil, fmt.Errorf("unbanked payouts: %w", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (bankline.Payout, error) {
		var p bankline.Payout
		var c string
		err := r.Scan(&p.Provider, &p.ID, &p.Amount, &c, &p.ArrivalOn, &p.Failed, &p.TraceID, &p.Descriptor)
		p.Currency = money.Currency(c)
		return p, err
	})
	if err != nil {
		return nil, fmt.Errorf("unbanked payouts: %w", err)
	}
	return out, nil
}
