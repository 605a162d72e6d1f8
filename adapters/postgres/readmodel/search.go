package readmodel

import (
	"context"
	"strconv"
	"strings"

	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/projections/views"
)

// SearchPayments finds the payments an id names, whatever the id is: the
// payment's own id (payments.payment_id, of any provider), or a business
// id its events carry (payment_ids: authorization, capture, refund,
// dispute, settlement line, merchant reference). Exact match, most recently active first, at
// most limit (<= 0: no cap); each hit lists the kinds of id that matched
// ("payment" for the payment's own). The console's search (GET
// /console/search).
func (s *Store) SearchPayments(ctx context.Context, id string, limit int) ([]views.PaymentHit, error) {
	if id == "" {
		return nil, nil
	}
	capped := ""
	if limit > 0 {
		capped = " LIMIT " + strconv.Itoa(limit)
	}
	rows, err := s.pool.Query(ctx, `
		WITH hits AS (
			SELECT stream_id, 'payment' AS kind FROM payments WHERE payment_id = $1
			UNION ALL
			SELECT stream_id, kind FROM payment_ids WHERE business_id = $1
		), kinds AS (
			SELECT stream_id, array_agg(DISTINCT kind ORDER BY kind) AS kinds FROM hits GROUP BY stream_id
		)
		SELECT `+prefixed("p.", paymentColumns)+`, k.kinds
		FROM kinds k JOIN payments p ON p.stream_id = k.stream_id
		ORDER BY p.updated_at DESC, p.provider DESC, p.payment_id DESC`+capped, id)
	if err != nil {
		return nil, qwrap("search payments", err)
	}
	out, err := pgx.CollectRows(rows, func(r pgx.CollectableRow) (views.PaymentHit, error) {
		var h views.PaymentHit
		err := scanPaymentInto(r, &h.Payment, &h.Kinds)
		return h, err
	})
	return out, qwrap("search payments", err)
}

// prefixed qualifies each column of a column list with prefix ("p.").
func prefixed(prefix, columns string) string {
	cols := strings.Split(columns, ",")
	for i, c := range cols {
		cols[i] = prefix + strings.TrimSpace(c)
	}
	return strings.Join(cols, ", ")
}
