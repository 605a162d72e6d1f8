package readmodel

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/onceledger/onceledger/projections"
	"github.com/onceledger/onceledger/projections/views"
)

// payoutStatus recomputes a payouts row's status and difference from its
// totals (alias p): failed is final; a paid payout with no line counted yet
// (in any currency) is paid; otherwise its lines in its currency prove it
// or they do not (lines only in other currencies: mismatch).
const payoutStatus = `
	status = CASE WHEN p.failed THEN 'failed'
	              WHEN p.paid AND p.line_count = 0 AND p.lines_by_currency = '{}' THEN 'paid'
	              WHEN p.lines_net = p.amount THEN 'reconciled'
	              ELSE 'mismatch' END,
	difference = p.lines_net - p.amount`

// settlementLineColumns are the columns of settlement_lines, the one list
// the insert and the select name (in views.SettlementLine's order).
var settlementLineColumns = []string{"provider", "line_key", "kind", "source_type", "line_id", "payment_id",
	"capture_id", "refund_id", "dispute_id", "gross", "fee", "net", "currency", "original_amount",
	"original_currency", "exchange_rate", "payout_id", "occurred_at", "available_on", "stream_id"}

// settlementLineDest is where a row of settlementLineColumns scans to, in
// their order.
func settlementLineDest(l *views.SettlementLine, avail **time.Time) []any {
	return []any{&l.Provider, &l.LineKey, &l.Kind, &l.SourceType, &l.LineID, &l.PaymentID, &l.CaptureID, &l.RefundID,
		&l.DisputeID, &l.Gross, &l.Fee, &l.Net, &l.Currency, &l.OriginalAmount, &l.OriginalCurrency, &l.ExchangeRate,
		&l.PayoutID, &l.OccurredAt, avail, &l.StreamID}
}

func (w *writer) InsertSettlementLines(ctx context.Context, lines []projections.SettlementLineRow) error {
	n := len(lines)
	cols := make([][]string, 13)
	for i := range cols {
		cols[i] = make([]string, n)
	}
	gross, fee, net, orig := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	occurred, avail := make([]time.Time, n), make([]*time.Time, n)
	for i, l := range lines {
		for j, v := range []string{l.Provider, l.LineKey, l.Kind, l.SourceType, l.LineID, l.PaymentID, l.CaptureID,
			l.RefundID, l.DisputeID, l.Currency, l.OriginalCurrency, l.ExchangeRate, l.PayoutID} {
			cols[j][i] = v
		}
		gross[i], fee[i], net[i], orig[i] = l.Gross, l.Fee, l.Net, l.OriginalAmount
		occurred[i] = l.OccurredAt
		if !l.AvailableOn.IsZero() {
			a := l.AvailableOn
			avail[i] = &a
		}
	}
	streams := make([]string, n)
	for i, l := range lines {
		streams[i] = l.StreamID
	}
	// Only the lines actually inserted are counted in their payout, so a
	// replayed batch changes nothing. The payout line itself is what the
	// others must sum to, not one of them.
	_, err := w.tx.Exec(ctx, `
		WITH inserted AS (
			INSERT INTO `+w.table("settlement_lines")+` (`+joinQuoted("", settlementLineColumns)+`)
			SELECT `+joinQuoted("", settlementLineColumns)+`
			FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[],
				$8::text[], $9::text[], $10::text[], $11::text[], $12::text[], $13::text[],
				$14::bigint[], $15::bigint[], $16::bigint[], $17::bigint[], $18::timestamptz[], $19::timestamptz[], $20::text[])
				AS r(provider, line_key, kind, source_type, line_id, payment_id, capture_id, refund_id, dispute_id,
				currency, original_currency, exchange_rate, payout_id, gross, fee, net, original_amount,
				occurred_at, available_on, stream_id)
			ON CONFLICT (provider, line_key) DO NOTHING
			RETURNING provider, payout_id, kind, net, occurred_at, currency
		), by_currency AS (
			SELECT provider, payout_id, currency, count(*) AS n, sum(net)::bigint AS net, max(occurred_at) AS at
			FROM inserted WHERE payout_id <> '' AND kind <> 'payout'
			GROUP BY provider, payout_id, currency
		), counted AS (
			SELECT provider, payout_id, sum(n)::bigint AS n, sum(net)::bigint AS net, max(at) AS at,
			       jsonb_object_agg(currency, jsonb_build_array(n, net)) AS lbc
			FROM by_currency GROUP BY provider, payout_id
		)
		INSERT INTO `+w.table("payouts")+` AS p (provider, payout_id, line_count, lines_net, lines_by_currency, status, difference, updated_at)
		SELECT provider, payout_id, n, net, lbc, 'mismatch', net, at FROM counted
		ON CONFLICT (provider, payout_id) DO UPDATE
		SET line_count = p.line_count + CASE WHEN p.currency IS NULL THEN excluded.line_count
		                                     ELSE coalesce((excluded.lines_by_currency -> p.currency ->> 0)::bigint, 0) END,
		    lines_net = p.lines_net + CASE WHEN p.currency IS NULL THEN excluded.lines_net
		                                   ELSE coalesce((excluded.lines_by_currency -> p.currency ->> 1)::bigint, 0) END,
		    lines_by_currency = `+mergeLinesByCurrency+`,
		    updated_at = greatest(p.updated_at, excluded.updated_at)`,
		cols[0], cols[1], cols[2], cols[3], cols[4], cols[5], cols[6], cols[7], cols[8], cols[9], cols[10], cols[11], cols[12],
		gross, fee, net, orig, occurred, avail, streams)
	if err != nil {
		return classify(err)
	}
	return w.refreshPayouts(ctx)
}

// mergeLinesByCurrency adds excluded's lines_by_currency to p's, currency
// by currency ({"EUR": [count, net]}): a payout is proven only by its lines
// in its own currency (migration 00110).
const mergeLinesByCurrency = `(
	SELECT coalesce(jsonb_object_agg(k, jsonb_build_array(
		coalesce((p.lines_by_currency -> k ->> 0)::bigint, 0) + coalesce((excluded.lines_by_currency -> k ->> 0)::bigint, 0),
		coalesce((p.lines_by_currency -> k ->> 1)::bigint, 0) + coalesce((excluded.lines_by_currency -> k ->> 1)::bigint, 0))), '{}')
	FROM (SELECT jsonb_object_keys(p.lines_by_currency) UNION SELECT jsonb_object_keys(excluded.lines_by_currency)) AS ks(k))`

// ownCurrencyLines sets line_count and lines_net to the lines in the
// currency a payout report just gave a row that had none (they counted
// every line until then).
const ownCurrencyLines = `
	line_count = CASE WHEN p.currency IS NULL THEN coalesce((p.lines_by_currency -> excluded.currency ->> 0)::bigint, 0) ELSE p.line_count END,
	lines_net = CASE WHEN p.currency IS NULL THEN coalesce((p.lines_by_currency -> excluded.currency ->> 1)::bigint, 0) ELSE p.lines_net END,`

// refreshPayouts recomputes the status of the rows whose totals changed in
// this transaction (their stored status or difference no longer matches).
func (w *writer) refreshPayouts(ctx context.Context) error {
	_, err := w.tx.Exec(ctx, `
		UPDATE `+w.table("payouts")+` AS p SET `+payoutStatus+`
		WHERE p.difference <> p.lines_net - p.amount
		   OR p.status <> CASE WHEN p.failed THEN 'failed'
		                       WHEN p.paid AND p.line_count = 0 AND p.lines_by_currency = '{}' THEN 'paid'
		                       WHEN p.lines_net = p.amount THEN 'reconciled'
		                       ELSE 'mismatch' END`)
	return classify(err)
}

// optText is NULL for "".
func optText(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

// arrivalOf is a paid payout's arrival_date: the provider's word when it
// gave one, else the time of the report that said it was paid.
func arrivalOf(c projections.PayoutChange) time.Time {
	if !c.Arrival.IsZero() {
		return c.Arrival
	}
	return c.At
}

func (w *writer) ApplyPayouts(ctx context.Context, changes []projections.PayoutChange) error {
	t := w.table("payouts")
	b := &pgx.Batch{}
	for _, c := range changes {
		if c.Paid {
			// The first report of the amount stands (the domain flags a
			// different one); a replay sets the same values again.
			b.Queue(`
				INSERT INTO `+t+` AS p (provider, payout_id, amount, currency, arrival_date, paid, status, updated_at,
				                        trace_id, statement_descriptor)
				VALUES ($1, $2, $3, $4, $6, true, 'paid', $5, $7, $8)
				ON CONFLICT (provider, payout_id) DO UPDATE
				SET amount = CASE WHEN p.paid THEN p.amount ELSE excluded.amount END,`+ownCurrencyLines+`
				    currency = coalesce(p.currency, excluded.currency),
				    arrival_date = coalesce(p.arrival_date, excluded.arrival_date),
				    paid = true,
				    trace_id = coalesce(p.trace_id, excluded.trace_id),
				    statement_descriptor = coalesce(p.statement_descriptor, excluded.statement_descriptor),
				    updated_at = greatest(p.updated_at, excluded.updated_at)`,
				c.Provider, c.PayoutID, c.Amount, c.Currency, c.At, arrivalOf(c), optText(c.TraceID), optText(c.Descriptor))
		}
		if c.Traced {
			// After its PayoutPaid (one stream, feed order): the row is
			// there. The first value of each stands.
			b.Queue(`UPDATE `+t+` SET trace_id = coalesce(trace_id, $3), statement_descriptor = coalesce(statement_descriptor, $4),
				updated_at = greatest(updated_at, $5) WHERE provider = $1 AND payout_id = $2`,
				c.Provider, c.PayoutID, optText(c.TraceID), optText(c.Descriptor), c.At)
		}
		if c.Failed {
			b.Queue(`
				INSERT INTO `+t+` AS p (provider, payout_id, amount, currency, failed, status, updated_at)
				VALUES ($1, $2, $3, $4, true, 'failed', $5)
				ON CONFLICT (provider, payout_id) DO UPDATE
				SET failed = true,`+ownCurrencyLines+`
				    currency = coalesce(p.currency, excluded.currency),
				    updated_at = greatest(p.updated_at, excluded.updated_at)`,
				c.Provider, c.PayoutID, c.Amount, c.Currency, c.At)
		}
	}
	if err := w.tx.SendBatch(ctx, b).Close(); err != nil {
		return classify(err)
	}
	return w.refreshPayouts(ctx)
}
