package projections

import (
	"context"
	"time"

	"github.com/google/uuid"

	"github.com/onceledger/onceledger/domain/bankstatement"
)

// The bank read models (bank_statement_lines, bank_statements,
// bank_payouts) are the payouts projection's: the last link of a payout's
// chain of proof, from the provider's report to the bank's statement. The
// bank account's events (domain/bankstatement) decode through
// payment.Decode (the bank package registers its codec; importing it here
// makes every reader of the feed know them).

// BankLineRow is one bank_statement_lines row.
type BankLineRow struct {
	Account, LineKey, Reference, Format, Statement string
	BookedOn, ValueOn                              time.Time
	Amount                                         int64
	Currency                                       string
	Reversal                                       bool
	Code, Description                              string
	Status                                         string // matched, suspense, returned
	Payouts                                        []bankstatement.PayoutRef
	EventID                                        uuid.UUID
	RecordedAt                                     time.Time
}

// BankLineMatch: a line in suspense matched later (or returned a payout).
type BankLineMatch struct {
	Account, LineKey, Status string
	Payouts                  []bankstatement.PayoutRef
}

// BankStatementRow is one bank_statements row.
type BankStatementRow struct {
	Account, Key, Format, StatementID string
	Seq, Page                         int64
	Covers                            time.Time
	Currency                          string
	Opening, Closing                  *int64
	OpeningOn, ClosingOn              time.Time
	Entries                           int
	EventID                           uuid.UUID
}

// BankPayoutRow: a payout a line banked (bank_payouts), and by what
// (bankstatement.ByTraceID …).
type BankPayoutRow struct {
	Provider, PayoutID, Account, LineKey string
	BookedOn                             time.Time
	Amount                               int64
	Currency                             string
	By                                   string
}

// BankMove: a line banks To instead of From (bankstatement.LineRematched).
type BankMove struct {
	From []bankstatement.PayoutRef
	To   BankPayoutRow
}

// BankChanges are what a batch says about the bank accounts, applied in
// this order: lines, matches, statements, banked payouts, returns.
type BankChanges struct {
	Lines      []BankLineRow
	Matches    []BankLineMatch
	Statements []BankStatementRow
	Banked     []BankPayoutRow
	Returned   []BankPayoutRow // only Provider and PayoutID count
	// Moves, in feed order, after the others: each takes its payouts
	// from the line (From, while the line holds them) and gives To to it,
	// from whichever line held it (a swap's second move follows).
	Moves []BankMove
}

func (c BankChanges) empty() bool {
	return len(c.Lines)+len(c.Matches)+len(c.Statements)+len(c.Banked)+len(c.Returned)+len(c.Moves) == 0
}

// BankWriter is what the payouts projection writes the bank read models
// through, beside SettlementWriter.
type BankWriter interface {
	// ApplyBank inserts lines and statements (keeping those on record),
	// updates matched lines, records banked payouts and marks returned
	// ones: a replayed batch changes nothing.
	ApplyBank(ctx context.Context, c BankChanges) error
}

// bankTables are the bank read models (the payouts projection's Tables).
var bankTables = []string{"bank_statement_lines", "bank_statements", "bank_payouts"}

// applyBank writes what batch says about the bank accounts.
func applyBank(ctx context.Context, w Writer, batch []Envelope) error {
	var c BankChanges
	for _, env := range batch {
		switch e := env.Event.(type) {
		case bankstatement.LineBooked:
			l := e.Line
			row := BankLineRow{Account: e.Account, LineKey: l.Key, Reference: l.Reference, Format: l.Format,
				Statement: l.Statement, BookedOn: l.BookedOn, ValueOn: l.ValueOn, Amount: l.Amount, Currency: string(l.Currency),
				Reversal: l.Reversal, Code: l.Code, Description: l.Text, Status: "suspense", EventID: env.Recorded.ID,
				RecordedAt: env.Recorded.RecordedAt}
			row.Status, row.Payouts = bankOutcome(e.Payouts, e.Returned)
			c.Lines = append(c.Lines, row)
			c.banked(e.Account, l.Key, l.BookedOn, l.Amount, string(l.Currency), e.By, e.Payouts, e.Returned)
		case bankstatement.LineMatched:
			status, refs := bankOutcome(e.Payouts, e.Returned)
			c.Matches = append(c.Matches, BankLineMatch{Account: e.Account, LineKey: e.LineKey, Status: status, Payouts: refs})
			c.banked(e.Account, e.LineKey, e.BookedOn, e.Amount, string(e.Currency), e.By, e.Payouts, e.Returned)
		case bankstatement.LineRematched:
			c.Matches = append(c.Matches, BankLineMatch{Account: e.Account, LineKey: e.LineKey, Status: "matched", Payouts: e.To})
			for _, p := range e.To {
				c.Moves = append(c.Moves, BankMove{From: e.From, To: BankPayoutRow{Provider: p.Provider, PayoutID: p.ID,
					Account: e.Account, LineKey: e.LineKey, BookedOn: e.BookedOn, Amount: e.Amount, Currency: string(e.Currency), By: e.By}})
			}
		case bankstatement.StatementRecorded:
			s := e.Statement
			row := BankStatementRow{Account: e.Account, Key: e.DedupKey, Format: s.Format, StatementID: s.ID, Seq: s.Seq,
				Page: s.Page, Covers: s.Covers, Currency: string(s.Currency), Entries: s.Entries, EventID: env.Recorded.ID}
			if b := s.Opening; b != nil {
				v := b.Amount
				row.Opening, row.OpeningOn = &v, b.Date
			}
			if b := s.Closing; b != nil {
				v := b.Amount
				row.Closing, row.ClosingOn = &v, b.Date
			}
			c.Statements = append(c.Statements, row)
		}
	}
	if c.empty() {
		return nil
	}
	return w.ApplyBank(ctx, c)
}

func bankOutcome(banked []bankstatement.PayoutRef, returned *bankstatement.PayoutRef) (string, []bankstatement.PayoutRef) {
	switch {
	case len(banked) > 0:
		return "matched", banked
	case returned != nil:
		return "returned", []bankstatement.PayoutRef{*returned}
	}
	return "suspense", nil
}

func (c *BankChanges) banked(account, line string, on time.Time, amount int64, currency, by string,
	banked []bankstatement.PayoutRef, returned *bankstatement.PayoutRef) {
	for _, p := range banked {
		c.Banked = append(c.Banked, BankPayoutRow{Provider: p.Provider, PayoutID: p.ID, Account: account, LineKey: line,
			BookedOn: on, Amount: amount, Currency: currency, By: by})
	}
	if returned != nil {
		c.Returned = append(c.Returned, BankPayoutRow{Provider: returned.Provider, PayoutID: returned.ID})
	}
}
