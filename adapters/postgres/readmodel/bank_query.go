package readmodel

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/onceledger/onceledger/projections/views"
)

// A payout's bank line (its reference: the bank's, else the line's key),
// joined into the payouts queries (GET /v1/payouts,
// the console): bank_payouts names the line that banked it; a returned
// payout is not banked. Its columns are named apart from payouts' own.
const (
	payoutBankColumns = `, b.account,
		coalesce(nullif((SELECT bl.reference FROM bank_statement_lines bl
			WHERE bl.account = b.account AND bl.line_key = b.line_key), ''), b.line_key),
		b.booked_on, b.line_amount, b.returned`
	payoutBankJoin = ` LEFT JOIN bank_payouts b USING (provider, payout_id)`
)

type payoutBank struct {
	account, reference *string
	bookedOn           *time.Time
	amount             *int64
	returned           *bool
}

func (b *payoutBank) dest() []any {
	return []any{&b.account, &b.reference, &b.bookedOn, &b.amount, &b.returned}
}

// line is the payout's bank line, nil when none banked it or it came back.
func (b *payoutBank) line() *views.PayoutBankLine {
	if b.account == nil || b.returned == nil || *b.returned {
		return nil
	}
	l := &views.PayoutBankLine{Account: *b.account, BookedOn: derefTime(b.bookedOn)}
	if b.reference != nil {
		l.Reference = *b.reference
	}
	if b.amount != nil {
		l.Amount = *b.amount
	}
	return l
}

// bankedFilter keeps the payouts banked (true) or not (false).
func bankedFilter(w *where, banked *bool) {
	switch {
	case banked == nil:
	case *banked:
		w.add("b.line_key IS NOT NULL AND NOT b.returned")
	default:
		w.add("(b.line_key IS NULL OR b.returned)")
	}
}

// BankStatements streams the statements imported, by account, then the
// last booking date each covers (newest first): the console's bank page.
func (s *Store) BankStatements(ctx context.Context, fn func(views.BankStatement) error) error {
	var st views.BankStatement
	var openOn, closeOn *time.Time
	return s.each(ctx, "bank statements", `
		SELECT account, statement_key, format, statement_id, seq, page, covers, currency, opening, opening_on,
			closing, closing_on, entries
		FROM bank_statements ORDER BY account COLLATE "C", covers DESC, seq DESC, page DESC, statement_key COLLATE "C"`,
		nil, []any{&st.Account, &st.Key, &st.Format, &st.StatementID, &st.Seq, &st.Page, &st.Covers, &st.Currency,
			&st.Opening, &openOn, &st.Closing, &closeOn, &st.Entries}, func() error {
			st.OpeningOn, st.ClosingOn = derefTime(openOn), derefTime(closeOn)
			return fn(st)
		})
}

// BankLines streams an account's lines, newest booking date first.
func (s *Store) BankLines(ctx context.Context, f views.BankLineFilter, fn func(views.BankLine) error) error {
	var w where
	w.add("account = ?", f.Account)
	w.opt("status = ?", f.Status)
	if k := f.After; k != nil {
		w.add(`(booked_on, line_key COLLATE "C") < (?, ?)`, k.BookedOn, k.LineKey)
	}
	var l views.BankLine
	var value *time.Time
	var payouts []byte
	return s.each(ctx, "bank lines", `
		SELECT account, line_key, reference, format, statement, booked_on, value_on, amount, currency, reversal, code,
			description, status, payouts
		FROM bank_statement_lines`+w.sql()+` ORDER BY booked_on DESC, line_key COLLATE "C" DESC`+w.limit(f.Limit),
		w.args, []any{&l.Account, &l.LineKey, &l.Reference, &l.Format, &l.Statement, &l.BookedOn, &value, &l.Amount,
			&l.Currency, &l.Reversal, &l.Code, &l.Description, &l.Status, &payouts}, func() error {
			l.ValueOn = derefTime(value)
			l.Payouts = nil
			if err := json.Unmarshal(payouts, &l.Payouts); err != nil {
				return fmt.Errorf("bank line %s payouts: %w", l.LineKey, err)
			}
			return fn(l)
		})
}

// BankAccounts lists the bank accounts statements were imported into.
func (s *Store) BankAccounts(ctx context.Context) ([]string, error) {
	var out []string
	var a string
	err := s.each(ctx, "bank accounts", `SELECT DISTINCT account FROM bank_statement_lines ORDER BY 1`, nil, []any{&a},
		func() error { out = append(out, a); return nil })
	return out, err
}

// PayoutsChangedAt is when the payouts read model last changed (zero:
// empty): the bank matcher tells the accounts the payouts only then.
func (s *Store) PayoutsChangedAt(ctx context.Context) (time.Time, error) {
	var t *time.Time
	if err := s.pool.QueryRow(ctx, `SELECT max(updated_at) FROM payouts`).Scan(&t); err != nil {
		return time.Time{}, qwrap("payouts changed", err)
	}
	return derefTime(t), nil
}
