package readmodel

import (
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
