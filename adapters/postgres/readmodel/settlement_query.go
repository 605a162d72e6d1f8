package readmodel

import (
	"context"
	"time"

	"github.com/onceledger/onceledger/projections/views"
)

// The settlement read side: payouts and their settlement lines (GET
// /v1/payouts… and the console's payouts pages, the same queries), the
// last import per provider (the status and the console's overview), and
// the candidates of the unsettled check.

const payoutSelect = `
	SELECT provider, payout_id, amount, coalesce(currency, ''), arrival_date, status, line_count, lines_net,
		difference, updated_at` + payoutBankColumns + `
	FROM payouts` + payoutBankJoin

func payoutDest(p *views.Payout, arrival **time.Time, b *payoutBank) []any {
	return append([]any{&p.Provider, &p.PayoutID, &p.Amount, &p.Currency, arrival, &p.Status, &p.LineCount, &p.LinesNet,
		&p.Difference, &p.UpdatedAt}, b.dest()...) // bank_query.go
}

// payoutArrival is the payouts' sort key: an unknown arrival date sorts
// first.
const payoutArrival = `coalesce(arrival_date, '-infinity'::timestamptz)`

// Payouts streams payouts, by arrival date (unknown first), then provider
// and payout id, or the reverse (f.Newest), after f.After: GET /v1/payouts
// and the console's payouts page.
func (s *Store) Payouts(ctx context.Context, f views.PayoutFilter, fn func(views.Payout) error) error {
	var w where
	w.opt("provider = ?", f.Provider)
	w.opt("status = ?", f.Status)
	w.opt("currency = ?", f.Currency)
	w.optTime("arrival_date >= ?", f.From)
	w.optTime("arrival_date < ?", f.To)
	bankedFilter(&w, f.Banked) // bank_query.go
	dir, after := "", ">"
	if f.Newest {
		dir, after = " DESC", "<"
	}
	if k := f.After; k != nil {
		w.add("("+payoutArrival+`, provider COLLATE "C", payout_id COLLATE "C") `+after+" (?, ?, ?)",
			orNegInfinity(k.ArrivalDate), k.Provider, k.PayoutID)
	}
	var p views.Payout
	var arrival *time.Time
	var b payoutBank
	return s.each(ctx, "payouts", payoutSelect+w.sql()+
		` ORDER BY `+payoutArrival+dir+`, provider COLLATE "C"`+dir+`, payout_id COLLATE "C"`+dir+w.limit(f.Limit),
		w.args, payoutDest(&p, &arrival, &b), func() error {
			p.ArrivalDate = derefTime(arrival)
			p.BankLine = b.line()
			return fn(p)
		})
}

// Payout returns one payout; found is false when the read model has none.
func (s *Store) Payout(ctx context.Context, provider, payoutID string) (p views.Payout, found bool, err error) {
	var arrival *time.Time
	var b payoutBank
	err = s.each(ctx, "payout", payoutSelect+` WHERE provider = $1 AND payout_id = $2`,
		[]any{provider, payoutID}, payoutDest(&p, &arrival, &b), func() error {
			p.ArrivalDate = derefTime(arrival)
			p.BankLine = b.line()
			found = true
			return nil
		})
	return p, found, err
}

// SettlementLines streams the lines of one payout (the payout line
// included), in the order the provider booked them.
func (s *Store) SettlementLines(ctx context.Context, provider, payoutID string, fn func(views.SettlementLine) error) error {
	var l views.SettlementLine
	var avail *time.Time
	dest := settlementLineDest(&l, &avail)
	return s.each(ctx, "settlement lines", `
		SELECT `+joinQuoted("", settlementLineColumns)+`
		FROM settlement_lines WHERE provider = $1 AND payout_id = $2
		ORDER BY occurred_at, line_key COLLATE "C"`,
		[]any{provider, payoutID}, dest, func() error {
			l.AvailableOn = derefTime(avail)
			return fn(l)
		})
}

// LastImports returns, per provider, the latest time a settlement line was
// recorded (the inbox's first_seen_at of its settlement deliveries).
func (s *Store) LastImports(ctx context.Context) (map[string]time.Time, error) {
	out := map[string]time.Time{}
	var prov string
	var at time.Time
	err := s.each(ctx, "last imports", `
		SELECT provider, max(first_seen_at) FROM webhook_inbox
		WHERE event_type LIKE 'settlement.%' GROUP BY provider`, nil, []any{&prov, &at}, func() error {
		out[prov] = at
		return nil
	})
	return out, err
}

// UnsettledCandidates lists the payments of provider with a capture that
// occurred at or before cutoff and no charge line recorded for it in the
// read model (settlement.Line.KindCharge).
func (s *Store) UnsettledCandidates(ctx context.Context, provider string, cutoff time.Time) ([]string, error) {
	var out []string
	var id string
	err := s.each(ctx, "unsettled candidates", `
		SELECT p.payment_id FROM payments p
		WHERE p.provider = $1 AND p.captured_amount > 0
		  AND EXISTS (SELECT 1 FROM ledger_entries e
		              WHERE e.stream_id = p.stream_id AND e.event_type = 'payment.captured' AND e.occurred_at <= $2)
		  AND (SELECT count(*) FROM settlement_lines l
		       WHERE l.provider = p.provider AND l.payment_id = p.payment_id AND l.kind = 'charge')
		      < (SELECT count(*) FROM ledger_entries e
		         WHERE e.stream_id = p.stream_id AND e.event_type = 'payment.captured' AND e.account = 'revenue:sales')
		ORDER BY p.payment_id COLLATE "C"`, []any{provider, cutoff}, []any{&id}, func() error {
		out = append(out, id)
		return nil
	})
	return out, err
}

// OpenItemCounts counts the open reconciliation items per kind.
func (s *Store) OpenItemCounts(ctx context.Context) (map[string]int64, error) {
	out := map[string]int64{}
	var kind string
	var n int64
	err := s.each(ctx, "open items", `SELECT kind, count(*) FROM reconciliation_items WHERE status = 'open' GROUP BY kind`,
		nil, []any{&kind, &n}, func() error {
			out[kind] = n
			return nil
		})
	return out, err
}

// LinkedPayment returns the payment a settlement line of provider belongs
// to when the report does not name it (reportimport.Linker): the payment
// key under which the inbox already holds the line itself (lineKey, its
// dedup key: a line recorded before keeps the stream it was recorded in,
// so importing its file again changes nothing), else the payment key the
// provider's webhooks gave captureID (a capture, authorization or failure
// of that charge; the first seen). ok is false when neither is known.
func (s *Store) LinkedPayment(ctx context.Context, provider, lineKey, captureID string) (string, bool, error) {
	var key string
	found := false
	err := s.each(ctx, "linked payment", `
		SELECT payment_key FROM (
		    SELECT 0 AS rank, normalized->>'payment_key' AS payment_key FROM webhook_inbox
		    WHERE provider = $1 AND dedup_key = $2 AND normalized->>'payment_key' <> ''
		    UNION ALL
		    (SELECT 1, normalized->>'payment_key' FROM webhook_inbox
		     WHERE provider = $1 AND normalized #>> '{facts,0,business_id}' = $3
		       AND normalized #>> '{facts,0,kind}' IN ('captured', 'authorized', 'failed')
		       AND status IN ('applied', 'received') AND normalized->>'payment_key' <> ''
		     ORDER BY first_seen_at LIMIT 1)
		) q ORDER BY rank LIMIT 1`, []any{provider, lineKey, captureID}, []any{&key}, func() error {
		found = true
		return nil
	})
	return key, found, err
}
