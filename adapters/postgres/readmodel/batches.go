package readmodel

import (
	"context"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/onceledger/onceledger/domain/money"
	"github.com/onceledger/onceledger/projections"
)

// batch_links, written by the reconciliation projection
// (projections/batches.go says why).

var _ projections.BatchWriter = (*writer)(nil)

func (w *writer) BatchLinks(ctx context.Context, keys []string) (map[string]projections.BatchLink, error) {
	rows, err := w.tx.Query(ctx, `SELECT link, payout_id, currency, amount, event_id FROM `+w.table("batch_links")+`
		WHERE link = ANY($1::text[])`, keys)
	if err != nil {
		return nil, classify(err)
	}
	out := make(map[string]projections.BatchLink, len(keys))
	var l projections.BatchLink
	var cur string
	var id pgtype.UUID
	_, err = pgx.ForEachRow(rows, []any{&l.Key, &l.PayoutID, &cur, &l.Amount, &id}, func() error {
		l.Currency, l.Event = money.Currency(cur), id.Bytes
		out[l.Key] = l
		return nil
	})
	return out, classify(err)
}

func (w *writer) UpsertBatchLinks(ctx context.Context, links []projections.BatchLink) error {
	if len(links) == 0 {
		return nil
	}
	n := len(links)
	keys, payouts, curs := make([]string, n), make([]string, n), make([]string, n)
	amounts, ids := make([]int64, n), make([]pgtype.UUID, n)
	for i, l := range links {
		keys[i], payouts[i], curs[i], amounts[i] = l.Key, l.PayoutID, string(l.Currency), l.Amount
		ids[i] = pgtype.UUID{Bytes: l.Event, Valid: true}
	}
	_, err := w.tx.Exec(ctx, `INSERT INTO `+w.table("batch_links")+` (link, payout_id, currency, amount, event_id)
		SELECT * FROM unnest($1::text[], $2::text[], $3::text[], $4::bigint[], $5::uuid[])
		ON CONFLICT (link) DO UPDATE SET payout_id = excluded.payout_id, currency = excluded.currency,
			amount = excluded.amount, event_id = excluded.event_id`, keys, payouts, curs, amounts, ids)
	return classify(err)
}
