package readmodel

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/google/uuid"

	"github.com/onceledger/onceledger/projections"
)

// ApplyBank writes the bank read models (projections.BankWriter): inserts
// keep what is on record, so a replayed batch changes nothing.
func (w *writer) ApplyBank(ctx context.Context, c projections.BankChanges) error {
	if err := w.insertBankLines(ctx, c.Lines); err != nil {
		return err
	}
	for _, m := range c.Matches {
		refs, err := json.Marshal(m.Payouts)
		if err != nil {
			return err
		}
		if _, err := w.tx.Exec(ctx, `UPDATE `+w.table("bank_statement_lines")+` SET status = $3, payouts = $4::jsonb
			WHERE account = $1 AND line_key = $2`, m.Account, m.LineKey, m.Status, string(refs)); err != nil {
			return fmt.Errorf("bank line match: %w", err)
		}
	}
	for _, s := range c.Statements {
		if _, err := w.tx.Exec(ctx, `INSERT INTO `+w.table("bank_statements")+`
			(account, statement_key, format, statement_id, seq, page, covers, currency, opening, opening_on, closing, closing_on, entries, event_id)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
			ON CONFLICT (account, statement_key) DO NOTHING`,
			s.Account, s.Key, s.Format, s.StatementID, s.Seq, s.Page, s.Covers, s.Currency, s.Opening, optDate(s.OpeningOn),
			s.Closing, optDate(s.ClosingOn), s.Entries, s.EventID); err != nil {
			return fmt.Errorf("bank statement: %w", err)
		}
	}
	for _, b := range c.Banked {
		// A payout banked once stays banked by that line; a replay is the
		// same row.
		if _, err := w.tx.Exec(ctx, `INSERT INTO `+w.table("bank_payouts")+`
			(provider, payout_id, account, line_key, booked_on, line_amount, line_currency, matched_by) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
			ON CONFLICT (provider, payout_id) DO NOTHING`,
			b.Provider, b.PayoutID, b.Account, b.LineKey, b.BookedOn, b.Amount, b.Currency, b.By); err != nil {
			return fmt.Errorf("bank payout: %w", err)
		}
	}
	for _, r := range c.Returned {
		if _, err := w.tx.Exec(ctx, `UPDATE `+w.table("bank_payouts")+` SET returned = true WHERE provider = $1 AND payout_id = $2`,
			r.Provider, r.PayoutID); err != nil {
			return fmt.Errorf("bank payout returned: %w", err)
		}
	}
	for _, m := range c.Moves {
		for _, f := range m.From {
			if _, err := w.tx.Exec(ctx, `DELETE FROM `+w.table("bank_payouts")+`
				WHERE provider = $1 AND payout_id = $2 AND account = $3 AND line_key = $4`,
				f.Provider, f.ID, m.To.Account, m.To.LineKey); err != nil {
				return fmt.Errorf("bank payout moved: %w", err)
			}
		}
		b := m.To
		if _, err := w.tx.Exec(ctx, `INSERT INTO `+w.table("bank_payouts")+`
			(provider, payout_id, account, line_key, booked_on, line_amount, line_currency, matched_by) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
			ON CONFLICT (provider, payout_id) DO UPDATE SET account = excluded.account, line_key = excluded.line_key,
				booked_on = excluded.booked_on, line_amount = excluded.line_amount, line_currency = excluded.line_currency,
				matched_by = excluded.matched_by, returned = false`,
			b.Provider, b.PayoutID, b.Account, b.LineKey, b.BookedOn, b.Amount, b.Currency, b.By); err != nil {
			return fmt.Errorf("bank payout moved: %w", err)
		}
	}
	return nil
}

func (w *writer) insertBankLines(ctx context.Context, lines []projections.BankLineRow) error {
	if len(lines) == 0 {
		return nil
	}
	n := len(lines)
	text := make([][]string, 10)
	for i := range text {
		text[i] = make([]string, n)
	}
	booked, value := make([]time.Time, n), make([]*time.Time, n)
	amount, reversal := make([]int64, n), make([]bool, n)
	events, recorded := make([]uuid.UUID, n), make([]time.Time, n)
	for i, l := range lines {
		refs, err := json.Marshal(l.Payouts)
		if err != nil {
			return err
		}
		if l.Payouts == nil {
			refs = []byte("[]")
		}
		for j, v := range []string{l.Account, l.LineKey, l.Reference, l.Format, l.Statement, l.Currency, l.Code,
			l.Description, l.Status, string(refs)} {
			text[j][i] = v
		}
		booked[i], value[i], amount[i], reversal[i] = l.BookedOn, optDate(l.ValueOn), l.Amount, l.Reversal
		events[i], recorded[i] = l.EventID, l.RecordedAt
	}
	_, err := w.tx.Exec(ctx, `INSERT INTO `+w.table("bank_statement_lines")+`
		(account, line_key, reference, format, statement, currency, code, description, status, payouts,
		 booked_on, value_on, amount, reversal, event_id, recorded_at)
		SELECT account, line_key, reference, format, statement, currency, code, description, status, payouts::jsonb,
		 booked_on, value_on, amount, reversal, event_id, recorded_at
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::text[], $8::text[],
			$9::text[], $10::text[], $11::date[], $12::date[], $13::bigint[], $14::boolean[], $15::uuid[], $16::timestamptz[])
			AS r(account, line_key, reference, format, statement, currency, code, description, status, payouts,
			booked_on, value_on, amount, reversal, event_id, recorded_at)
		ON CONFLICT (account, line_key) DO NOTHING`,
		text[0], text[1], text[2], text[3], text[4], text[5], text[6], text[7], text[8], text[9],
		booked, value, amount, reversal, events, recorded)
	if err != nil {
		return fmt.Errorf("bank lines: %w", err)
	}
	return nil
}

func optDate(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}
